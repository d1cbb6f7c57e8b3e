"""kube-controller-manager's loops: scheduler, PV binder, PVC/PV protection, attach/detach
controller and snapshot-controller, on a common base (:mod:`kubelet_sim.controllers.base`).
The CSI sidecars are in :mod:`kubelet_sim.sidecars`; :mod:`kubelet_sim.control_plane`
builds the set a cluster runs."""

from kubelet_sim.controllers.base import Controller, ControllerManager, NotSettled

__all__ = ["Controller", "ControllerManager", "NotSettled"]
