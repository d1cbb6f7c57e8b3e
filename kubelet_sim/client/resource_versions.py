"""Telling whether an informer cache already shows a component's own write: the
resourceVersion the write returned against the one the cache holds. kube-apiserver's
(etcd's revision) and our server's are decimal counters of one sequence; anything else is
opaque, and then nothing is known."""

from __future__ import annotations


def newer(version: str, than: str) -> bool:
    """Whether resourceVersion ``version`` is later than ``than`` (False when unknown)."""
    return version.isdigit() and than.isdigit() and int(version) > int(than)
