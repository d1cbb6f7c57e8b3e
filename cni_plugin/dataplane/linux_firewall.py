"""Firewall rules of the linux dataplane, as the reference sets them: iptables NAT
masquerading (ipMasq) and nft bridge rules against MAC spoofing (macspoofchk).

Each change is one atomic batch (`iptables-restore --noflush`, `nft -f -`) after at
most one listing, rather than a tool run per rule: the rules are the reference's.
"""

from __future__ import annotations

from itertools import pairwise

from cni_plugin.dataplane.commands import CommandFailed, run, which
from cni_spec.errors import CNIError, internal
from cni_spec.gojson import loads


def _iptables(cidr: str) -> str:
    tool = "ip6tables" if ":" in cidr else "iptables"
    if which(tool) is None:
        raise internal(f'failed to locate iptables: exec: "{tool}": '
                       "executable file not found in $PATH")
    return tool


def _quote(text: str) -> str:
    """An argument as iptables-save prints one (and iptables-restore reads it back)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def split_rule(line: str) -> list[str]:
    """The words of an `iptables -S` line (double quotes group, backslash escapes)."""
    words: list[str] = []
    word: list[str] = []
    quoted = escaped = started = False
    for ch in line:
        if escaped:
            word.append(ch)
            escaped = False
        elif ch == "\\" and quoted:
            escaped = True
        elif ch == '"':
            quoted, started = not quoted, True
        elif ch.isspace() and not quoted:
            if word or started:
                words.append("".join(word))
            word, started = [], False
        else:
            word.append(ch)
    if word or started:
        words.append("".join(word))
    return words


def _restore(tool: str, lines: list[str]) -> None:
    run([f"{tool}-restore", "--wait", "--noflush"], "\n".join(["*nat", *lines, "COMMIT", ""]))


def setup_masquerade(cidr: str, chain: str, comment: str) -> None:
    """The reference's SetupIPMasq: a chain accepting the subnet and masquerading the rest
    but multicast, jumped to from POSTROUTING for the container's address."""
    tool = _iptables(cidr)
    multicast = "ff00::/8" if ":" in cidr else "224.0.0.0/4"
    tail = ["-m", "comment", "--comment", comment]
    rules = [(chain, ["-d", cidr, "-j", "ACCEPT", *tail]),
             (chain, ["!", "-d", multicast, "-j", "MASQUERADE", *tail]),
             ("POSTROUTING", ["-s", cidr.split("/")[0], "-j", chain, *tail])]
    if which(f"{tool}-restore") is not None:
        batch = [f"-N {chain}"] + [f"-A {target} {' '.join(rule[:-1])} {_quote(comment)}"
                                   for target, rule in rules]
        try:
            _restore(tool, batch)  # all or nothing: fails when the chain is there already
            return
        except CommandFailed:
            pass
    nat = [tool, "--wait", "-t", "nat"]
    try:
        run([*nat, "-N", chain])
    except CommandFailed as e:
        if "exists" not in e.stderr:
            raise internal(f"failed to create chain {chain}: {e.reason()}") from e
    for target, rule in rules:
        try:
            run([*nat, "-C", target, *rule])
        except CommandFailed:
            try:
                run([*nat, "-A", target, *rule])
            except CommandFailed as e:
                raise internal(f"running iptables -A {target}: {e.reason()}") from e


def teardown_masquerade(chain: str) -> None:
    """Every POSTROUTING jump to the chain, then the chain; one listing per family and,
    when something is there, one batch."""
    for tool in ("iptables", "ip6tables"):
        if which(tool) is None:
            continue
        try:
            listing = run([tool, "--wait", "-t", "nat", "-S"]).splitlines()
        except CommandFailed:
            continue
        batch = []
        for rule in listing:
            words = split_rule(rule)
            if words[:2] == ["-A", "POSTROUTING"] and any(
                    a == "-j" and b == chain for a, b in pairwise(words)):
                batch.append("-D" + rule[2:])
        if f"-N {chain}" in listing:
            batch += [f"-F {chain}", f"-X {chain}"]
        if batch:
            try:  # noqa: SIM105 - raced with another DEL: theirs removed it
                _restore(tool, batch)
            except CommandFailed:
                pass


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
    """The rules and chains set up under ref_id: one listing, then one batch of what is
    there (an nft batch is all or nothing, so nothing absent may be named in it)."""
    chain = f"cni-br-iface-{ref_id}"
    try:
        listing = loads(run(["nft", "-j", "list", "table", "bridge", "nat"]))
    except (CommandFailed, CNIError, ValueError):
        return  # no bridge nat table: nothing of ours either
    items = listing.get("nftables", []) if isinstance(listing, dict) else []
    chains = {item["chain"]["name"] for item in items if "chain" in item}
    batch = [f"delete rule bridge nat PREROUTING handle {item['rule']['handle']}"
             for item in items
             if item.get("rule", {}).get("chain") == "PREROUTING"
             and item["rule"].get("comment") == f"macspoofchk-{ref_id}"]
    batch += [f"delete chain bridge nat {name}" for name in (chain, f"{chain}-mac")
              if name in chains]
    if batch:
        try:  # noqa: SIM105 - raced with another DEL: theirs removed it
            run(["nft", "-f", "-"], stdin="\n".join([*batch, ""]))
        except CommandFailed:
            pass
