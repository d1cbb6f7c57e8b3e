"""Read nameservers, domain, search and options from a resolv.conf, as host-local does."""

from __future__ import annotations

from cni_plugin.ipam.disk import os_error_text


class ResolvConf:
    __slots__ = ("domain", "nameservers", "options", "search")

    def __init__(self) -> None:
        self.nameservers: list[str] = []
        self.domain = ""
        self.search: list[str] = []
        self.options: list[str] = []


def parse_resolv_conf(path: str) -> ResolvConf:
    """Parse ``path``; OSError becomes ValueError worded as Go's os.Open error."""
    try:
        with open(path, "rb") as f:
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError as exc:
        raise ValueError(os_error_text("open", path, exc)) from exc
    conf = ResolvConf()
    for line in lines:
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        fields = line.split()
        if len(fields) < 2:
            continue
        keyword, values = fields[0], fields[1:]
        if keyword == "nameserver":
            conf.nameservers.append(values[0])
        elif keyword == "domain":
            conf.domain = values[0]
        elif keyword == "search":
            conf.search.extend(values)
        elif keyword == "options":
            conf.options.extend(values)
    return conf
