"""PATCH as kube-apiserver applies it: JSON patch (:mod:`.json_patch`), JSON merge patch
(:mod:`.merge`), strategic merge patch (:mod:`.strategic`) and server-side apply with the
``managedFields`` every write keeps (:mod:`.managed`), all driven by the kind's schema
from the type table (:mod:`.schema`)."""

from kubelet_sim.apiserver.patch.json_patch import apply_json_patch, decode_operations
from kubelet_sim.apiserver.patch.managed import (
    Applied,
    Write,
    apply,
    manager_from_user_agent,
    track_update,
)
from kubelet_sim.apiserver.patch.merge import apply_merge_patch
from kubelet_sim.apiserver.patch.schema import Node, has_schema, kind_node
from kubelet_sim.apiserver.patch.strategic import apply_strategic_merge_patch

__all__ = ["Applied", "Node", "Write", "apply", "apply_json_patch", "apply_merge_patch",
           "apply_strategic_merge_patch", "decode_operations", "has_schema", "kind_node",
           "manager_from_user_agent", "track_update"]
