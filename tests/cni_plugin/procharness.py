"""Exec our installed plugin executables as real processes, as a runtime does."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from typing import Any

ALL_CNI_VARS = ("CNI_COMMAND", "CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME", "CNI_ARGS",
                "CNI_PATH", "CNI_NETNS_OVERRIDE")


@dataclass
class Proc:
    status: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def exec_plugin(executable: str, env: dict[str, str], stdin: bytes | str | dict,
                timeout: float = 30) -> Proc:
    if isinstance(stdin, dict):
        stdin = json.dumps(stdin)
    if isinstance(stdin, str):
        stdin = stdin.encode()
    full_env = {k: v for k, v in os.environ.items() if k not in ALL_CNI_VARS}
    full_env.update(env)
    proc = subprocess.run([executable], input=stdin, env=full_env, capture_output=True,
                          timeout=timeout, check=False)
    return Proc(proc.returncode, proc.stdout.decode(), proc.stderr.decode())


def cni_env(command: str, container_id: str, netns: str, ifname: str, path: str,
            **extra: str) -> dict[str, str]:
    env = {"CNI_COMMAND": command, "CNI_CONTAINERID": container_id, "CNI_NETNS": netns,
           "CNI_IFNAME": ifname, "CNI_PATH": path}
    env.update(extra)
    return env
