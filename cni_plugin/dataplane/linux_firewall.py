"""Firewall rules of the linux dataplane, as the reference sets them: iptables NAT
masquerading (ipMasq) and nft bridge rules against MAC spoofing (macspoofchk)."""

from __future__ import annotations

import contextlib
import json
import shlex
import shutil
from itertools import pairwise

from cni_plugin.dataplane.commands import CommandFailed, run
from cni_plugin.errors import CNIError, internal


def _iptables(cidr: str) -> str:
    tool = "ip6tables" if ":" in cidr else "iptables"
    if shutil.which(tool) is None:
        raise internal(f'failed to locate iptables: exec: "{tool}": '
                       "executable file not found in $PATH")
    return tool

def setup_masquerade(cidr: str, chain: str, comment: str) -> None:
    tool = _iptables(cidr)
    multicast = "ff00::/8" if ":" in cidr else "224.0.0.0/4"
    source = cidr.split("/")[0]
    nat = [tool, "--wait", "-t", "nat"]
    try:
        run([*nat, "-N", chain])
    except CommandFailed as e:
        if "exists" not in e.stderr:
            raise internal(f"failed to create chain {chain}: {e.reason()}") from e
    rules = [(chain, ["-d", cidr, "-j", "ACCEPT"]),
             (chain, ["!", "-d", multicast, "-j", "MASQUERADE"]),
             ("POSTROUTING", ["-s", source, "-j", chain])]
    for target, rule in rules:
        spec = [*rule, "-m", "comment", "--comment", comment]
        try:
            run([*nat, "-C", target, *spec])
        except CommandFailed:
            try:
                run([*nat, "-A", target, *spec])
            except CommandFailed as e:
                raise internal(f"running iptables -A {target}: {e.reason()}") from e

def teardown_masquerade(chain: str) -> None:
    for tool in ("iptables", "ip6tables"):
        if shutil.which(tool) is None:
            continue
        nat = [tool, "--wait", "-t", "nat"]
        try:
            rules = run([*nat, "-S", "POSTROUTING"]).splitlines()
        except CommandFailed:
            continue
        for rule in rules:
            words = shlex.split(rule)
            jumps_to_chain = any(a == "-j" and b == chain for a, b in pairwise(words))
            if words[:2] == ["-A", "POSTROUTING"] and jumps_to_chain:
                with contextlib.suppress(CommandFailed):  # raced with another DEL
                    run([*nat, "-D", *words[1:]])
        for op in ("-F", "-X"):
            with contextlib.suppress(CommandFailed):  # already gone
                run([*nat, op, chain])

def setup_macspoofchk(host_iface: str, mac: str, ref_id: str) -> None:
    """The reference's spoof check: bridge nat PREROUTING jumps, per port, to a chain
    that returns for the container's MAC and drops everything else."""
    chain = f"cni-br-iface-{ref_id}"
    comment = f'comment "macspoofchk-{ref_id}"'
    script = "\n".join([
        "add table bridge nat",
        "add chain bridge nat PREROUTING { type filter hook prerouting priority -300; "
        "policy accept; }",
        f"add chain bridge nat {chain}", f"add chain bridge nat {chain}-mac",
        f"flush chain bridge nat {chain}", f"flush chain bridge nat {chain}-mac",
        f'add rule bridge nat PREROUTING iifname "{host_iface}" jump {chain} {comment}',
        f"add rule bridge nat {chain} jump {chain}-mac {comment}",
        f"add rule bridge nat {chain}-mac ether saddr {mac} return {comment}",
        f"add rule bridge nat {chain}-mac drop {comment}", ""])
    try:
        run(["nft", "-f", "-"], stdin=script)
    except CommandFailed as e:
        raise internal(f"failed to setup spoof-check: {e.reason()}") from e

def teardown_macspoofchk(ref_id: str) -> None:
    chain = f"cni-br-iface-{ref_id}"
    try:
        listing = json.loads(run(["nft", "-j", "list", "chain", "bridge", "nat",
                                   "PREROUTING"]))
    except (CommandFailed, CNIError):
        listing = {"nftables": []}
    commands = [f"delete rule bridge nat PREROUTING handle {item['rule']['handle']}"
                for item in listing.get("nftables", [])
                if item.get("rule", {}).get("comment") == f"macspoofchk-{ref_id}"]
    for line in [*commands, f"delete chain bridge nat {chain}",
                 f"delete chain bridge nat {chain}-mac"]:
        with contextlib.suppress(CommandFailed):  # already gone
            run(["nft", line])

