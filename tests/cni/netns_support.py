"""Fresh network namespaces and bridge names for linux-dataplane tests (root only).

Everything created here has a unique `emt<random>` name and is deleted afterwards.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("nsenter") is None,
    reason="needs root, iproute2 and nsenter")


def unique_name(prefix: str = "emt") -> str:
    return prefix + uuid.uuid4().hex[:8]  # 11 chars: fits IFNAMSIZ


def ip(*args: str, netns: str | None = None) -> str:
    argv = ["ip", *args]
    if netns is not None:
        argv = ["nsenter", f"--net={netns}", *argv]
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout


def ip_json(*args: str, netns: str | None = None) -> list[dict[str, Any]]:
    out = ip("-j", *args, netns=netns)
    return json.loads(out) if out.strip() else []


@contextlib.contextmanager
def fresh_netns() -> Iterator[str]:
    """A new named netns; its path is what CNI_NETNS carries."""
    name = unique_name()
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        yield f"/var/run/netns/{name}"
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False)


def delete_link(name: str) -> None:
    subprocess.run(["ip", "link", "del", name], capture_output=True, check=False)


def host_link_exists(name: str) -> bool:
    return subprocess.run(["ip", "link", "show", "dev", name], capture_output=True,
                          check=False).returncode == 0
