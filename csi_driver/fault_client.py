"""``python -m csi_driver faults --control PATH {add,list,remove,clear}``: change the
fault rules of a running driver (started with ``--fault-control PATH``).

    python -m csi_driver faults --control /tmp/csi.faults add --method NodeStageVolume \\
        --code UNAVAILABLE --message "injected by the test" --times 2
    python -m csi_driver faults --control /tmp/csi.faults add --file rules.yaml
    python -m csi_driver faults --control /tmp/csi.faults list
    python -m csi_driver faults --control /tmp/csi.faults clear

Prints the driver's JSON answer; exits 1 when it refused (the reason is in ``error``).
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

RULE_FLAGS = ("method", "volume_id", "node_id", "code", "message", "delay", "after", "times",
              "probability", "seed")


def request(control: str, message: dict[str, Any], timeout: float = 10.0) -> dict[str, Any]:
    """Send one request over the control socket; the driver's answer."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(timeout)
        conn.connect(control)
        conn.sendall(json.dumps(message).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
    answer: dict[str, Any] = json.loads(data)
    return answer


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m csi_driver faults",
                                description="change a running driver's fault rules")
    p.add_argument("--control", required=True, metavar="PATH",
                   help="the driver's --fault-control socket")
    ops = p.add_subparsers(dest="op", required=True)
    add = ops.add_parser("add", help="add rules (from flags, or --file)")
    add.add_argument("--file", type=Path, help="a YAML/JSON list of rules")
    add.add_argument("--method", help="method name or glob (NodeStageVolume, Node*, ...)")
    add.add_argument("--volume-id", dest="volume_id", help="only calls with this volume_id")
    add.add_argument("--node-id", dest="node_id", help="only calls with this node_id")
    add.add_argument("--code", help="answer this status, e.g. UNAVAILABLE")
    add.add_argument("--message", help="the status message")
    add.add_argument("--delay", type=float, help="wait this many seconds, then serve")
    add.add_argument("--hang", action="store_true", help="never answer")
    add.add_argument("--after", type=int, help="let this many matching calls through first")
    add.add_argument("--times", type=int, help="act on this many calls")
    add.add_argument("--probability", type=float, help="act with this chance")
    add.add_argument("--seed", type=int, help="seed for --probability")
    ops.add_parser("list", help="the rules with their match/fire counts")
    remove = ops.add_parser("remove", help="remove one rule")
    remove.add_argument("id", type=int)
    ops.add_parser("clear", help="remove every rule")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    message: dict[str, Any] = {"op": args.op}
    if args.op == "add":
        if args.file is not None:
            message["rules"] = yaml.safe_load(args.file.read_text()) or []
        else:
            rule = {k: getattr(args, k) for k in RULE_FLAGS if getattr(args, k) is not None}
            if args.hang:
                rule["hang"] = True
            message["rules"] = [rule]
    elif args.op == "remove":
        message["id"] = args.id
    try:
        answer = request(args.control, message)
    except OSError as err:
        print(f"csi_driver faults: cannot reach {args.control}: {err}", file=sys.stderr)
        return 1
    print(json.dumps(answer, indent=2))
    return 0 if answer.get("ok") else 1
