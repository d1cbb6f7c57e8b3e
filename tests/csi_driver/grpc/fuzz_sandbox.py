"""The fuzzer's sandbox and what it observes of the driver's effects on it.

Everything a fuzzed request may name lives under one directory, a size-capped tmpfs
that exists only in the driver's private mount namespace::

    <root>/state/          the driver's --state-dir
    <root>/cwd/            the driver's working directory (a relative path lands here)
    <root>/canary/file     data the driver never made: it must never change
    <root>/canary/dir/file
    <root>/link            a symlink to canary/dir (paths "through a symlinked parent")
    <root>/seed/           staging and target paths of the seed volumes
    <root>/work/exN/       one directory per example, with an empty dir and an empty file
                           (targets a CO may have made) and a non-empty dir and file

The test makes and reads it through ``/proc/<driver pid>/root``: the driver's view, with
the bind mounts of its own mount namespace; its mounts come from
``/proc/<driver pid>/mountinfo``.  ``changes_outside`` and ``mount_violations`` hold the
rules: the driver may change what is below its state dir and at or below a target or
staging path it was given (absolute, normalised, inside the sandbox, not data it did not
make); anything else it creates, removes, changes or mounts over is a violation.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

CANARY_TEXT = b"canary: data the driver did not make\n"
FULL_TEXT = b"a file the test made, with data in it\n"
ENTRY_LIMIT = 200_000  # only a guard against a walk that never ends


class Entry(NamedTuple):
    kind: str  # "dir", "file", "link" or "other"
    mode: int
    ino: int
    size: int
    mtime_ns: int
    link: str

    def same_as(self, other: Entry) -> bool:
        """Equal for the fuzzer's purpose: a directory's size and mtime change whenever an
        entry below it does, which the walk reports by itself."""
        if self.kind == "dir" and other.kind == "dir":
            return (self.mode, self.ino) == (other.mode, other.ino)
        return self == other


Tree = dict[str, Entry]
SKIPPED = Entry("skipped", 0, 0, 0, 0, "")


class Mount(NamedTuple):
    point: str
    root: str  # the mounted directory, relative to the root of its filesystem
    dev: str  # major:minor


def _entry(path: str) -> Entry:
    st = os.lstat(path)
    if os.path.islink(path):
        return Entry("link", st.st_mode, st.st_ino, 0, 0, os.readlink(path))
    if os.path.isdir(path):
        return Entry("dir", st.st_mode, st.st_ino, 0, 0, "")
    kind = "file" if os.path.isfile(path) else "other"
    return Entry(kind, st.st_mode, st.st_ino, st.st_size, st.st_mtime_ns, "")


def is_under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def is_normalised_absolute(path: str) -> bool:
    """What a CO sends: absolute, no NUL, no ``.``/``..``/empty component, no trailing slash."""
    return (
        path.startswith("/")
        and "\x00" not in path
        and not path.startswith("//")
        and os.path.normpath(path) == path
    )


_OCTAL = re.compile(rb"\\([0-7]{3})")


def _unescape(field: bytes) -> str:
    """mountinfo writes space, tab, newline and backslash as \\ooo; other bytes are raw."""
    return os.fsdecode(_OCTAL.sub(lambda m: bytes([int(m.group(1), 8)]), field))


def read_mounts(pid: int) -> list[Mount]:
    """The mounts of process ``pid``'s mount namespace."""
    mounts: list[Mount] = []
    with open(f"/proc/{pid}/mountinfo", "rb") as f:
        for line in f:
            fields = line.split(b" ")
            if len(fields) > 4:
                mounts.append(Mount(_unescape(fields[4]), _unescape(fields[3]),
                                    fields[2].decode()))
    return mounts


# The driver's wrapper: a private mount namespace, a size-capped tmpfs on the sandbox
# (so no request can fill the host's disk, and everything vanishes with the process),
# the state dir, then the driver itself, started in the sandbox's cwd/.
_WRAPPER = ('mount -t tmpfs -o size={size},mode=0755 csi-fuzz "$0" && mkdir -p "$0/state" '
            '"$0/cwd" && cd "$0/cwd" && exec "$@"')


@dataclass
class Sandbox:
    """The sandbox at ``root``: an empty dir on the host, a tmpfs in the driver's mount
    namespace.  The test reaches it through ``/proc/<pid>/root`` (``view``)."""

    root: str
    pid: int = 0

    def wrapper(self, size: str = "1g") -> list[str]:
        return ["unshare", "--mount", "--propagation", "private",
                "sh", "-c", _WRAPPER.format(size=size), self.root]

    def populate(self, pid: int) -> None:
        """Lay out the sandbox of a freshly started driver ``pid``."""
        self.pid = pid
        for d in (self.seed_dir, self.work_dir):
            os.makedirs(self.view(d), exist_ok=True)
        os.makedirs(self.view(self.canary_dir))
        for path, text in self.canaries().items():
            Path(self.view(path)).write_bytes(text)
        os.symlink(self.canary_dir, self.view(self.link))

    # -- layout ------------------------------------------------------------------

    def path(self, *parts: str) -> str:
        return os.path.join(self.root, *parts)

    def view(self, path: str) -> str:
        """``path`` as the driver sees it (through its mount namespace)."""
        return f"/proc/{self.pid}/root{path}"

    @property
    def state_dir(self) -> str:
        return self.path("state")

    @property
    def cwd(self) -> str:
        return self.path("cwd")

    @property
    def seed_dir(self) -> str:
        return self.path("seed")

    @property
    def work_dir(self) -> str:
        return self.path("work")

    @property
    def canary_dir(self) -> str:
        return self.path("canary", "dir")

    @property
    def canary_file(self) -> str:
        return self.path("canary", "file")

    @property
    def link(self) -> str:
        return self.path("link")

    def canaries(self) -> dict[str, bytes]:
        return {self.canary_file: CANARY_TEXT,
                os.path.join(self.canary_dir, "file"): CANARY_TEXT}

    def make_dirs(self, *paths: str) -> None:
        for path in paths:
            os.makedirs(self.view(path), exist_ok=True)

    def make_example_dir(self, n: int) -> str:
        """work/exN with what a CO or a user may have left at a target path."""
        ex = os.path.join(self.work_dir, f"ex{n}")
        os.makedirs(self.view(os.path.join(ex, "made-dir")))
        Path(self.view(os.path.join(ex, "made-file"))).touch()
        os.makedirs(self.view(os.path.join(ex, "full-dir")))
        Path(self.view(os.path.join(ex, "full-dir", "keep"))).write_bytes(FULL_TEXT)
        Path(self.view(os.path.join(ex, "full-file"))).write_bytes(FULL_TEXT)
        return ex

    def keeps_inside(self, value: str, is_path: bool) -> bool:
        """Whether a string the driver may use as a file name stays in the sandbox: a path
        (relative ones start from the driver's cwd), or an id (joined below
        state/volumes or state/snapshots).  Only a path may be "/" itself: a bind mount
        there stays in the driver's namespace, while an id "/" would name the host's
        root for a recursive delete.  The sandbox is a tmpfs, the rest of the tree the
        host's own disk, so a request that could leave it is never sent."""
        if "\x00" in value:
            return True  # every file call of the driver refuses it
        base = self.cwd if is_path else os.path.join(self.state_dir, "volumes")
        resolved = os.path.normpath(os.path.join(base, value))
        return (is_path and resolved == "/") or is_under(resolved, self.root)

    def protected(self) -> list[str]:
        """Paths the driver must never change, nor mount over, even when it is given them."""
        return [self.root, self.path("canary"), self.link, self.state_dir, self.cwd,
                self.seed_dir, self.work_dir]

    # -- observation -------------------------------------------------------------

    def snapshot(self, skip: Iterable[str] = ()) -> Tree:
        """Every entry below the sandbox as the driver sees it; the entries in ``skip``
        (earlier examples' dirs) only as names, and the state dir without what is in it
        (the driver may change that at will; its mounts and own entries are checked
        apart)."""
        skipped = set(skip)
        opaque = {self.state_dir}
        prefix = self.view("")
        tree: Tree = {}
        stack = [self.root]
        while stack:
            current = stack.pop()
            try:
                entry = _entry(prefix + current)
            except OSError:
                continue
            tree[current] = entry
            if len(tree) > ENTRY_LIMIT:
                raise RuntimeError(f"more than {ENTRY_LIMIT} entries below {self.root}")
            if entry.kind != "dir" or current in opaque:
                continue
            try:
                names = os.listdir(prefix + current)
            except OSError:
                continue
            for name in names:
                path = f"{current}/{name}"
                if path in skipped:  # noted as there, without the cost of reading it
                    tree[path] = SKIPPED
                else:
                    stack.append(path)
        return tree

    def damaged_canaries(self) -> list[str]:
        damaged = []
        for path, text in self.canaries().items():
            try:
                ok = Path(self.view(path)).read_bytes() == text
            except OSError:
                ok = False
            if not ok:
                damaged.append(path)
        try:
            if os.readlink(self.view(self.link)) != self.canary_dir:
                damaged.append(self.link)
        except OSError:
            damaged.append(self.link)
        return damaged

    def mounts(self) -> list[Mount]:
        """The driver's mounts in the sandbox, and on "/" (the only path outside it that
        a request names).  Its namespace started as a copy of the host's; the host's own
        mounts elsewhere come and go with other tests, and are none of the driver's doing."""
        return [m for m in read_mounts(self.pid) if m.point == "/" or is_under(m.point, self.root)]

    def used_share(self) -> float:
        st = os.statvfs(self.view(self.root))
        return 1 - st.f_bavail / st.f_blocks if st.f_blocks else 0.0

    def state_skeleton(self) -> set[str]:
        """The state dir's top-level directories and database files (not its journals)."""
        try:
            names = os.listdir(self.view(self.state_dir))
        except OSError:
            return set()
        return {n for n in names if not n.endswith(("-wal", "-shm", "-journal", ".tmp"))}


@dataclass
class Allowance:
    """Where one example's requests may change things."""

    state_dir: str
    given: list[str]  # target/staging paths the driver may create, mount over and remove

    @classmethod
    def for_paths(cls, box: Sandbox, paths: Iterable[str], mounts: list[Mount]) -> Allowance:
        """A given path counts when a CO could mean it: absolute and normalised, inside
        the sandbox, not reached through a symlink, not one of the sandbox's own dirs nor
        a top-level dir of the state dir, and either a mount point of the driver (its
        publish) or absent, an empty dir or an empty file (the issue: "a target that
        exists but is empty and not mounted is fine")."""
        protected = box.protected()
        points = {m.point for m in mounts}
        given = []
        for path in paths:
            if not is_normalised_absolute(path) or not is_under(path, box.root):
                continue
            if path in protected or is_under(path, box.path("canary")) \
                    or is_under(path, box.link) or os.path.dirname(path) == box.state_dir:
                continue
            if path not in points and _holds_data(box.view(path)):
                continue
            given.append(path)
        return cls(box.state_dir, given)

    def allows(self, path: str, created_dir: bool) -> bool:
        if path != self.state_dir and is_under(path, self.state_dir):
            return True
        if any(is_under(path, g) for g in self.given):
            return True
        # like the reference driver, a publish may create a target's missing parents
        return created_dir and any(is_under(g, path) for g in self.given)


def _holds_data(path: str) -> bool:
    """Anything but an absent path, an empty dir or an empty regular file."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    if os.path.isdir(path) and not os.path.islink(path):
        return bool(os.listdir(path))
    return not os.path.isfile(path) or os.path.islink(path) or st.st_size > 0


def changes_outside(before: Tree, after: Tree, allowance: Allowance) -> list[str]:
    """Every created, removed or changed entry that the allowance does not cover."""
    problems = []
    for path in sorted(set(before) | set(after)):
        old, new = before.get(path), after.get(path)
        if old is not None and new is not None and old.same_as(new):
            continue
        if old is None and new is not None:
            what = f"created {new.kind}"
        elif new is None and old is not None:
            what = f"removed {old.kind}"
        else:
            what = f"changed {old.kind if old else '?'} → {new.kind if new else '?'}"
        created_dir = old is None and new is not None and new.kind == "dir"
        if not allowance.allows(path, created_dir):
            problems.append(f"{what} {path!r}")
    return problems


class MountProblem(NamedTuple):
    kind: str  # "mounted", "stacked", "unmounted" or "removed the data"
    text: str
    mount: Mount


def mount_violations(box: Sandbox, before: list[Mount], after: list[Mount],
                     allowance: Allowance) -> list[MountProblem]:
    """New mounts only at given paths, never stacked, and only of one volume's data (on
    the state dir's filesystem: a direct child of <state>/volumes); removed mounts only
    at given paths; the data behind a mount never removed."""
    problems = []
    volumes_fs = _fs_location(os.path.join(box.state_dir, "volumes"), before)
    gone, added = Counter(before) - Counter(after), Counter(after) - Counter(before)
    for mount in list(added.elements()):
        # the same mount, its source removed: the kernel marks the root "//deleted"
        was = mount._replace(root=mount.root.removesuffix("//deleted"))
        if mount.root.endswith("//deleted") and gone[was]:
            problems.append(MountProblem("removed the data",
                                         f"removed the data mounted at {mount.point!r}", mount))
            added[mount] -= 1
            gone[was] -= 1
    points = Counter(m.point for m in after)
    for mount in sorted((+added).elements()):
        if not any(mount.point == g for g in allowance.given):
            problems.append(MountProblem("mounted", f"mounted over {mount.point!r}, "
                                         "not a given path", mount))
        elif volumes_fs is not None and mount.dev == volumes_fs[0] and \
                os.path.dirname(mount.root) != volumes_fs[1]:
            problems.append(MountProblem("mounted", f"mounted {mount.root!r}, not a volume's "
                                         f"data, at {mount.point!r}", mount))
        if points[mount.point] > 1 and mount.point in allowance.given:
            problems.append(MountProblem("stacked", "stacked a second mount at "
                                         f"{mount.point!r}", mount))
    for mount in sorted((+gone).elements()):
        if not any(mount.point == g for g in allowance.given):
            problems.append(MountProblem("unmounted", f"unmounted {mount.point!r}, "
                                         "not a given path", mount))
    return problems


def unmount_in(pid: int, point: str) -> bool:
    """Lazily unmount ``point`` in the mount namespace of process ``pid``."""
    done = subprocess.run(["nsenter", "--target", str(pid), "--mount", "umount", "-l", point],
                          capture_output=True, check=False)
    return done.returncode == 0


def _fs_location(path: str, mounts: list[Mount]) -> tuple[str, str] | None:
    """(device, path relative to its filesystem's root) of ``path``."""
    best: Mount | None = None
    for m in mounts:
        if is_under(path, m.point) and (best is None or len(m.point) >= len(best.point)):
            best = m
    if best is None:
        return None
    rest = path[len(best.point):].lstrip("/") if best.point != "/" else path.lstrip("/")
    return best.dev, os.path.join(best.root, rest) if rest else best.root
