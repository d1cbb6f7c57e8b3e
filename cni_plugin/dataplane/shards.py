"""The emulated dataplane's state document kept as small files (shards) in one directory.

The document (see emulated_records) is split so that a command reads and writes only
the few files it touches, whatever the number of pods on the node:

- ``host.json``: the host namespace's own links (bridges) and routes, forwarding, and
  whether the masquerade / macspoofchk tables exist;
- ``ns-<sha256 of the netns path>.json``: one sandbox namespace's links and routes, and
  the host ends of its veths (created and deleted with it: both ends of a pair are in one
  file, so no crash shows one without the other);
- ``masq-<sha256 of chain>.json``, ``spoof-<sha256 of ref>.json``: one masquerade chain,
  one spoof check;
- ``link-<sha256 of name>``: a symlink naming the shard that holds a host veth end, so
  a host link is found by name (and a random name checked free) without a scan.

Every file is replaced atomically (temp, fsync, rename, directory fsync) under one flock
on the directory, held only while the files in scope are read, changed and written. A
change spanning files (a veth and its masquerade chain) is written shard by shard: a
plugin killed in between leaves each file old or new, and the runtime's DEL or GC,
which tolerate missing pieces, clean up. Whole-node readers (GC, the simulator's
attachments()) read every shard. An old single-document ``state.json`` is ignored.
"""

from __future__ import annotations

from _sha256 import sha256  # hashlib's import costs a plugin exec more

from cni_plugin import posix_shim as posix_shim
from cni_plugin.dataplane.emulated_records import HOST
from cni_plugin.dataplane.statefile import (
    Lock,
    LockedTransaction,
    atomic_write,
    fsync_directory,
)
from cni_spec.errors import ERR_IO_FAILURE, CNIError
from cni_spec.gojson import dumps_compact, loads

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    # ("ns", netns key) | ("link", host link name) | ("masq", chain) | ("spoof", ref id)
    Scope = list[tuple[str, str]]

HOST_FILE = "host.json"
TABLES = ("masquerade", "macspoofchk")
_PREFIX = {"ns": "ns-", "masq": "masq-", "spoof": "spoof-"}


def _digest(text: str) -> str:
    return sha256(text.encode()).hexdigest()


def shard_name(kind: str, key: str) -> str:
    return f"{_PREFIX[kind]}{_digest(key)}.json"


def marker_name(host_link: str) -> str:
    return f"link-{_digest(host_link)}"


def _is_shard(name: str) -> bool:
    return name == HOST_FILE or (name.endswith(".json") and name.split("-", 1)[0] + "-"
                                 in _PREFIX.values())


def split(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The files that hold `doc`: file name -> its content."""
    files: dict[str, dict[str, Any]] = {}
    spaces = doc.get("namespaces", {})
    for key, space in spaces.items():
        if key != HOST:
            files[shard_name("ns", key)] = {"key": key, "links": space["links"],
                                            "routes": space.get("routes", []),
                                            "host_links": {}}
    host = {k: v for k, v in doc.items() if k not in ("namespaces", *TABLES)}
    host.update({table: {} for table in TABLES if table in doc})
    host_space = spaces.get(HOST)
    if host_space is not None:
        own = {}
        for name, link in host_space["links"].items():
            peer = link.get("peer_netns", HOST) if link["kind"] == "veth" else HOST
            if peer != HOST and peer in spaces:  # beside its sandbox end
                files[shard_name("ns", peer)]["host_links"][name] = link
            else:
                own[name] = link
        host["host"] = {"links": own, "routes": host_space.get("routes", [])}
    if host:
        files[HOST_FILE] = host
    for chain, entry in doc.get("masquerade", {}).items():
        files[shard_name("masq", chain)] = {"chain": chain, "entry": entry}
    for ref_id, entry in doc.get("macspoofchk", {}).items():
        files[shard_name("spoof", ref_id)] = {"ref": ref_id, "entry": entry}
    return files


def _host_space(doc: dict[str, Any]) -> dict[str, Any]:
    return doc.setdefault("namespaces", {}).setdefault(HOST, {"links": {}, "routes": []})


def merge(doc: dict[str, Any], files: dict[str, dict[str, Any]]) -> None:
    """Add the content of `files` (none of which is in `doc` yet) to `doc`."""
    host = files.get(HOST_FILE)
    if host is not None:
        for field, value in host.items():
            if field == "host":
                space = _host_space(doc)
                space["links"].update(value["links"])
                space["routes"] = value["routes"]
            elif field in TABLES:
                doc.setdefault(field, {})
            else:
                doc[field] = value
    shards = [content for name, content in files.items() if name.startswith("ns-")]
    for shard in sorted(shards, key=lambda s: str(s["key"])):
        doc.setdefault("namespaces", {})[shard["key"]] = {"links": shard["links"],
                                                          "routes": shard["routes"]}
        if shard["host_links"]:
            _host_space(doc)["links"].update(shard["host_links"])
    for name, content in sorted(files.items()):
        if name.startswith("masq-"):
            doc.setdefault("masquerade", {})[content["chain"]] = content["entry"]
        elif name.startswith("spoof-"):
            doc.setdefault("macspoofchk", {})[content["ref"]] = content["entry"]


def _veth_ends(files: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Host veth end name -> the shard holding it."""
    return {link: name for name, content in files.items() if name.startswith("ns-")
            for link in content["host_links"]}


class ShardedState:
    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.lock_path = posix_shim.join(directory, "lock")

    def _path(self, name: str) -> str:
        return posix_shim.join(self.directory, name)

    def _read(self, name: str) -> tuple[str, dict[str, Any]] | None:
        path = self._path(name)
        try:
            with open(path, "rb") as f:
                raw = f.read()
            content = loads(raw)
        except FileNotFoundError:
            return None
        except ValueError as e:
            raise CNIError(ERR_IO_FAILURE, f"corrupt dataplane state {path}: {e}") from e
        if not isinstance(content, dict):
            raise CNIError(ERR_IO_FAILURE, f"corrupt dataplane state {path}: not an object")
        return raw.decode(), content

    def _all_names(self) -> list[str]:
        try:
            return sorted(n for n in posix_shim.listdir(self.directory) if _is_shard(n))
        except FileNotFoundError:
            return []

    def resolve(self, scope: Scope | None) -> list[str]:
        """The files a scope covers (every shard when None); host.json always."""
        if scope is None:
            return self._all_names()
        names = {HOST_FILE}
        for kind, key in scope:
            if kind != "link":
                names.add(shard_name(kind, key))
                continue
            try:
                target = posix_shim.readlink(self._path(marker_name(key)))
            except FileNotFoundError:
                continue  # a bridge (host.json), or no such link
            if target.startswith("ns-") and "/" not in target:
                names.add(target)
        return sorted(names)

    def host_link_taken(self, name: str) -> bool:
        """Whether a host veth end named `name` is recorded (its marker exists)."""
        return posix_shim.exists(self._path(marker_name(name)))

    def exists(self) -> bool:
        return bool(self._all_names())

    def read(self, names: list[str]) -> dict[str, tuple[str, dict[str, Any]]]:
        """The text and content of each of `names` that exists (no lock taken)."""
        out = {}
        for name in names:
            found = self._read(name)
            if found is not None:
                out[name] = found
        return out

    def read_unlocked(self, scope: Scope | None = None) -> dict[str, Any]:
        """The document of `scope` without the lock (nothing created): a hint, since
        files may change between two reads."""
        doc: dict[str, Any] = {}
        merge(doc, {n: c for n, (_, c) in self.read(self.resolve(scope)).items()})
        return doc

    def extend(self, doc: dict[str, Any], loaded: set[str], scope: Scope) -> None:
        """Add to `doc` the files of `scope` not in `loaded` yet (a batch's trial view)."""
        with Lock(self, shared=True):
            names = [n for n in self.resolve(scope) if n not in loaded]
            loaded.update(names)
            merge(doc, {n: c for n, (_, c) in self.read(names).items()})

    def snapshot(self, scope: Scope | None = None) -> dict[str, Any]:
        """The document of `scope` (of the whole node when None) under the shared lock."""
        with Lock(self, shared=True):
            return self.read_unlocked(scope)

    def transaction(self, scope: Scope | None = None) -> Transaction:
        """`with state.transaction(scope) as doc:` change the document of `scope` in
        place; the files that changed are written back when the block succeeds."""
        return Transaction(self, scope)

    def write_back(self, names: list[str] | None, before: dict[str, str],
                   old_ends: dict[str, str], doc: dict[str, Any]) -> None:
        """Write what changed of the files `names` (of any file when None) whose texts
        were `before`, and the markers of the host veth ends (`old_ends` before)."""
        files = split(doc)
        after = {n: dumps_compact(c) for n, c in files.items()}
        outside = set() if names is None else set(after) - set(names)
        if outside:
            raise RuntimeError(f"dataplane change outside its scope: {sorted(outside)}")
        new_ends = _veth_ends(files)
        for link, shard in new_ends.items():  # markers first: a crash leaves a spare one
            if old_ends.get(link) != shard:
                self._mark(link, shard)
        for name in sorted(after, key=lambda n: n == HOST_FILE):
            if after[name] != before.get(name):
                atomic_write(self._path(name), after[name].encode())
        gone = [n for n in before if n not in after]
        gone += [marker_name(link) for link in old_ends if link not in new_ends]
        for name in gone:
            try:  # noqa: SIM105 - contextlib costs a plugin exec its import
                posix_shim.unlink(self._path(name))
            except FileNotFoundError:
                pass
        if gone:
            fsync_directory(self.directory)

    def _mark(self, link: str, shard: str) -> None:
        path = self._path(marker_name(link))
        try:  # noqa: SIM105 - contextlib costs a plugin exec its import
            posix_shim.unlink(path)
        except FileNotFoundError:
            pass
        posix_shim.symlink(shard, path)  # made durable by the shard's directory fsync


class Transaction(LockedTransaction):
    def __init__(self, state: ShardedState, scope: Scope | None) -> None:
        super().__init__(state)
        self.state = state
        self.scope = scope
        self.names: list[str] = []
        self.before: dict[str, str] = {}
        self.old_ends: dict[str, str] = {}

    def read(self) -> dict[str, Any]:
        self.names = self.state.resolve(self.scope)
        found = self.state.read(self.names)
        self.before = {n: text for n, (text, _) in found.items()}
        self.old_ends = _veth_ends({n: c for n, (_, c) in found.items()})
        doc: dict[str, Any] = {}
        merge(doc, {n: c for n, (_, c) in found.items()})
        return doc

    def write(self) -> None:
        self.state.write_back(None if self.scope is None else self.names,
                              self.before, self.old_ends, self.data)
