"""libcni's result cache: ``<cacheDir>/results/<network>-<containerID>-<ifname>``.

Each file is one attachment in libcni's ``cniCacheV1`` format (the same keys
in the same order, the network list bytes base64-encoded as Go encodes a
``[]byte``), so a real containerd or cnitool reading our cache dir sees its own
format. Files are written atomically (temp file, fsync, rename, fsync of the
directory): an ADD that answered survives a kill -9 of the runtime.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from typing import Any

CACHE_KIND_V1 = "cniCacheV1"
DEFAULT_CACHE_DIR = "/var/lib/cni"


@dataclass(frozen=True)
class CachedAttachment:
    container_id: str
    network: str
    ifname: str
    config: bytes
    netns: str = ""
    cni_args: tuple[tuple[str, str], ...] = ()
    capability_args: dict[str, Any] = field(default_factory=dict)
    result: dict[str, Any] | None = None


def cache_path(cache_dir: str, network: str, container_id: str, ifname: str) -> str:
    if not network or not container_id or not ifname:
        raise ValueError(
            f'cache file path requires network name ("{network}"), container ID '
            f'("{container_id}"), and interface name ("{ifname}")'
        )
    return os.path.join(cache_dir, "results", f"{network}-{container_id}-{ifname}")


def _sorted_maps(value: Any) -> Any:
    """Go marshals every map with sorted keys; lists keep their order."""
    if isinstance(value, dict):
        return {k: _sorted_maps(value[k]) for k in sorted(value)}
    if isinstance(value, list | tuple):
        return [_sorted_maps(v) for v in value]
    return value


def encode_attachment(att: CachedAttachment) -> bytes:
    doc: dict[str, Any] = {
        "kind": CACHE_KIND_V1,
        "containerId": att.container_id,
        "config": base64.b64encode(att.config).decode("ascii"),
        "ifName": att.ifname,
        "networkName": att.network,
    }
    if att.netns:
        doc["netns"] = att.netns
    if att.cni_args:
        doc["cniArgs"] = [[k, v] for k, v in att.cni_args]
    if att.capability_args:
        doc["capabilityArgs"] = _sorted_maps(att.capability_args)
    if att.result:
        doc["result"] = _sorted_maps(att.result)
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()


def decode_attachment(data: bytes) -> CachedAttachment | None:
    """A ``cniCacheV1`` document, or None when the bytes are not one."""
    try:
        doc = json.loads(data)
    except ValueError:
        return None
    if not isinstance(doc, dict) or doc.get("kind") != CACHE_KIND_V1:
        return None
    try:
        config = base64.b64decode(doc.get("config") or "")
        args = tuple((str(k), str(v)) for k, v in doc.get("cniArgs") or [])
    except (ValueError, TypeError):
        return None
    result = doc.get("result")
    return CachedAttachment(
        container_id=str(doc.get("containerId", "")),
        network=str(doc.get("networkName", "")),
        ifname=str(doc.get("ifName", "")),
        config=config,
        netns=str(doc.get("netns", "")),
        cni_args=args,
        capability_args=dict(doc.get("capabilityArgs") or {}),
        result=result if isinstance(result, dict) else None,
    )


def write_atomically(path: str, data: bytes, mode: int = 0o600) -> None:
    directory = os.path.dirname(path)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def store_attachment(cache_dir: str, att: CachedAttachment) -> str:
    path = cache_path(cache_dir, att.network, att.container_id, att.ifname)
    write_atomically(path, encode_attachment(att))
    return path


def read_cached_result(
    cache_dir: str, network: str, container_id: str, ifname: str
) -> dict[str, Any] | None:
    """The cached result of an attachment, or None when nothing is cached.

    A file that is not ``cniCacheV1`` is read as a bare result (libcni's
    legacy cache format).
    """
    path = cache_path(cache_dir, network, container_id, ifname)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    att = decode_attachment(data)
    if att is not None:
        return att.result
    try:
        legacy = json.loads(data)
    except ValueError as exc:
        raise ValueError(f"failed to parse cached result of network {network!r}: {exc}") from None
    return legacy if isinstance(legacy, dict) else None


def remove_attachment(cache_dir: str, network: str, container_id: str, ifname: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        os.unlink(cache_path(cache_dir, network, container_id, ifname))


def list_attachments(cache_dir: str, container_id: str = "") -> list[CachedAttachment]:
    """Every readable ``cniCacheV1`` attachment, by file name; optionally one container's."""
    directory = os.path.join(cache_dir, "results")
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        return []
    out = []
    for name in names:
        if container_id:
            pos = name.find(f"-{container_id}-")
            if pos <= 0 or pos + len(container_id) + 2 >= len(name):
                continue
        try:
            with open(os.path.join(directory, name), "rb") as f:
                att = decode_attachment(f.read())
        except OSError:
            continue
        if att is None or not att.ifname or not att.network:
            continue
        if container_id and att.container_id != container_id:
            continue
        out.append(att)
    return out
