"""The namespaces kube-apiserver's system namespaces controller keeps in every cluster
(``kube-system``, ``kube-public``, ``kube-node-lease``; ``default`` is the bootstrap
controller's), made again when missing at start."""

from __future__ import annotations

import contextlib

from kubelet_sim.api import builders
from kubelet_sim.api.errors import AlreadyExists
from kubelet_sim.apiserver.server import APIServer

SYSTEM_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease")


def ensure_system_namespaces(api: APIServer) -> None:
    for name in SYSTEM_NAMESPACES:
        with contextlib.suppress(AlreadyExists):
            api.create(builders.namespace(name))
