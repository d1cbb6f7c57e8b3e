"""Running iproute2/iptables/nft in child processes for the linux dataplane, with their
failures turned into the reference's wording."""

from __future__ import annotations

import contextlib
import json
import re
import subprocess

from cni_plugin.errors import CNIError, internal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

NOT_PERMITTED = "the linux dataplane needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN)"


class CommandFailed(Exception):
    def __init__(self, argv: list[str], returncode: int, stderr: str) -> None:
        super().__init__(stderr.strip() or f"exit status {returncode}")
        self.argv = argv
        self.returncode = returncode
        self.stderr = stderr.strip()

    def failed_line(self) -> int | None:
        """For `ip -batch`, which input line failed (1-based)."""
        m = re.search(r"Command failed -:(\d+)", self.stderr)
        return int(m.group(1)) if m else None

    def reason(self) -> str:
        """The kernel's answer, worded as Go prints an errno ("file exists")."""
        lines = [ln for ln in self.stderr.splitlines() if not ln.startswith("Command failed")]
        text = " ".join(lines)
        if text.startswith("RTNETLINK answers: "):
            text = text.removeprefix("RTNETLINK answers: ")
            text = text[:1].lower() + text[1:]
        return text.removeprefix("Error: ") or f"exit status {self.returncode}"


def run(argv: list[str], netns: str | None = None, stdin: str | None = None) -> str:
    if netns is not None:
        argv = ["nsenter", f"--net={netns}", *argv]
    try:
        proc = subprocess.run(argv, input=stdin, capture_output=True, text=True, check=False)
    except FileNotFoundError as e:
        raise internal(f'exec: "{argv[0]}": executable file not found in $PATH') from e
    if proc.returncode != 0:
        if "Operation not permitted" in proc.stderr:
            raise CNIError(999, f"{' '.join(argv)}: operation not permitted",
                           NOT_PERMITTED)
        raise CommandFailed(argv, proc.returncode, proc.stderr)
    return proc.stdout


def ip_json(args: list[str], netns: str | None = None) -> list[dict[str, Any]]:
    out = run(["ip", "-j", *args], netns)
    data = json.loads(out) if out.strip() else []
    return data if isinstance(data, list) else []


def write_sysctl(key: str, value: str, netns: str | None = None) -> None:
    """Best effort, as the reference ignores these errors."""
    with contextlib.suppress(CNIError, CommandFailed):
        run(["sysctl", "-q", "-w", f"{key}={value}"], netns)


