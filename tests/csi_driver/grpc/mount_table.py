"""The mount table as util-linux's findmnt reports it: an oracle independent of the
driver's own mountinfo parser (names with spaces, backslashes or non-ASCII included)."""

from __future__ import annotations

import json
import subprocess


def mount_targets() -> list[str]:
    """Every mount point of this mount namespace, once per mount (stacked ones repeat)."""
    out = subprocess.run(["findmnt", "-J", "--list", "-o", "TARGET"], check=True,
                         capture_output=True, text=True).stdout
    return [fs["target"] for fs in json.loads(out)["filesystems"]]


def mount_count(path: str) -> int:
    return mount_targets().count(path)


def mounts_under(root: str) -> list[str]:
    return [t for t in mount_targets() if t == root or t.startswith(root.rstrip("/") + "/")]
