"""Names Kubernetes derives for CSI objects, shared by the kubelet and the controllers."""

from __future__ import annotations

import functools
import hashlib


def ephemeral_volume_handle(pod_uid: str, volume_name: str) -> str:
    """The handle the kubelet gives an inline ephemeral volume: ``csi-<sha256(podUID+name)>``."""
    return "csi-" + hashlib.sha256(f"{pod_uid}{volume_name}".encode()).hexdigest()


@functools.lru_cache(maxsize=16384)  # the attach/detach controller asks every pass
def attachment_name(volume_handle: str, driver: str, node_name: str) -> str:
    """VolumeAttachment name: ``csi-<sha256(volumeHandle + driver + nodeName)>``."""
    return "csi-" + hashlib.sha256(f"{volume_handle}{driver}{node_name}".encode()).hexdigest()
