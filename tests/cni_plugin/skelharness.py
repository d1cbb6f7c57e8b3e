"""Run a plugin's handlers in-process through the skel with a swapped env, stdin and stdout."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from typing import Any

from cni_plugin.skel import Handlers, plugin_main


@dataclass
class Outcome:
    status: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def base_env(command: str, **extra: str) -> dict[str, str]:
    env = {"CNI_COMMAND": command, "CNI_CONTAINERID": "ctr1", "CNI_NETNS": "/var/run/netns/x",
           "CNI_IFNAME": "eth0", "CNI_PATH": "/opt/cni/bin"}
    env.update(extra)
    return env


def run_in_process(handlers: Handlers, env: dict[str, str], stdin: bytes | str | dict,
                   **kwargs: Any) -> Outcome:
    if isinstance(stdin, dict):
        stdin = json.dumps(stdin)
    if isinstance(stdin, str):
        stdin = stdin.encode()
    out, err = io.StringIO(), io.StringIO()
    status = plugin_main(handlers, about=kwargs.pop("about", "test plugin"), getenv=env.get,
                         stdin=io.BytesIO(stdin), stdout=out, stderr=err, **kwargs)
    return Outcome(status, out.getvalue(), err.getvalue())
