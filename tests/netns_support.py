"""Fresh network namespaces, link names and the reference plugins, for the tests that
touch the kernel (root only): tests/cni and tests/kubelet_sim share these.

Everything created here has a unique `emt<random>` name and is deleted afterwards.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

REFERENCE_DIR = "/usr/lib/cni"  # Debian's containernetworking-plugins

needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("nsenter") is None,
    reason="needs root, iproute2 and nsenter")
needs_reference = pytest.mark.skipif(
    not os.path.exists(f"{REFERENCE_DIR}/bridge"),
    reason=f"reference CNI plugins not installed in {REFERENCE_DIR}")


def sh(*args: str, check: bool = True) -> str:
    """Run a command, return its stdout."""
    return subprocess.run(args, capture_output=True, text=True, check=check).stdout


def random_subnet_prefix() -> str:
    """The first three octets of a /24 no other test is likely to use at the same time."""
    return f"10.{secrets.choice(range(200, 250))}.{secrets.randbelow(250) + 1}"


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
