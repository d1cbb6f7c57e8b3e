"""The emulated dataplane's state document: namespaces keyed by path (the host is ""),
each with its links and routes, and the removals the kernel would make.

A state is ``{"namespaces": {key: {"links": {ifname: link}, "routes": [...]}}, ...}``.
"""

from __future__ import annotations

from cni_plugin import posix_shim
from cni_plugin.dataplane.base import Link

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

HOST = ""
LOOPBACK_ADDRS = ["127.0.0.1/8", "::1/128"]


def netns_key(netns: str | None) -> str:
    return HOST if netns is None else posix_shim.abspath(netns)


def namespace_of(state: dict[str, Any], netns: str | None) -> dict[str, Any]:
    spaces = state.setdefault("namespaces", {})
    return spaces.setdefault(netns_key(netns), {"links": {}, "routes": []})


def to_link(d: dict[str, Any]) -> Link:
    return Link.from_dict(d)



def idle_loopback() -> Link:
    return Link(name="lo", kind="loopback", mac="00:00:00:00:00:00", mtu=65536,
                addrs=list(LOOPBACK_ADDRS))


def drop_link(state: dict[str, Any], key: str, ifname: str) -> dict[str, Any] | None:
    """Remove a sandbox link, its routes and its veth peer; a namespace left with nothing
    is not kept (no empty records). The link removed, None if there was none."""
    spaces = state.get("namespaces", {})
    space = spaces.get(key)
    if space is None:
        return None
    link = space["links"].pop(ifname, None)
    if link is not None:
        space["routes"] = [r for r in space.get("routes", []) if r["dev"] != ifname]
        if link["kind"] == "veth":
            spaces.get(HOST, {}).get("links", {}).pop(link["peer_name"], None)
    if not space["links"]:
        del spaces[key]
    return link


def drop_namespace(state: dict[str, Any], key: str) -> None:
    """The namespace is gone, and with it (as the kernel does) its links and veth peers."""
    gone = state.get("namespaces", {}).pop(key, None)
    host = state.get("namespaces", {}).get(HOST, {}).get("links", {})
    for link in (gone or {"links": {}})["links"].values():
        if link["kind"] == "veth" and link["peer_netns"] == HOST:
            host.pop(link["peer_name"], None)
