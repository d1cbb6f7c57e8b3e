"""A real container runtime for the CNI tests: Debian's podman on its CNI network backend,
isolated from the host (root only).

Each ``PodmanSandbox`` owns a temp dir and one holder process in its own mount AND
network namespace: podman, conmon, crun and every CNI plugin they start run inside
them. There /run, /var/lib and /dev/shm are bind mounts of the temp dir, so podman's
state, crun's state, the netns files and libcni's cache (/var/lib/cni) are the
sandbox's own; the bridge and the host ends of the veths live in the holder's network
namespace, so the host's links, routes and sysctls are never touched. Podman is
configured only through files in the temp dir (CONTAINERS_CONF, CONTAINERS_STORAGE_CONF):
``network_backend = "cni"``, our conflist in its network config dir, the plugin dirs
given, cgroups disabled (the host's cgroup tree is not ours to write). Killing the
holder takes down whatever a failed test left: mounts, netns, links.

No registry is reachable here, so the image is built locally: Debian's static busybox
and its applet links in a rootfs tarball, loaded with ``podman import``.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import resource
import shutil
import struct
import subprocess
import tarfile
import tempfile
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

BUSYBOX = "/bin/busybox"  # Debian's busybox-static
IMAGE = "localhost/emu-busybox:latest"
APPLETS = ("sh", "ip", "sleep", "cat", "ls", "true")
HOLDER_READY = "ready"
# The kernel's hybrid cgroup layout makes crun refuse to start a container (even one
# without cgroups); inside the holder's mount namespace the v2 half is simply unmounted.
HYBRID_CGROUP2 = "/sys/fs/cgroup/unified"


class RuntimeUnavailable(Exception):
    """Podman cannot run here; the message says why (the tests skip with it)."""


def is_static_elf(path: str) -> bool:
    """True for an ELF executable without a program interpreter (PT_INTERP)."""
    with open(path, "rb") as f:
        header = f.read(64)
        if header[:4] != b"\x7fELF" or header[4] != 2:  # 64-bit only, as on this machine
            return False
        endian = "<" if header[5] == 1 else ">"
        phoff, = struct.unpack_from(endian + "Q", header, 0x20)
        phentsize, phnum = struct.unpack_from(endian + "HH", header, 0x36)
        for index in range(phnum):
            f.seek(phoff + index * phentsize)
            p_type, = struct.unpack(endian + "I", f.read(4))
            if p_type == 3:  # PT_INTERP: needs a dynamic loader the image does not have
                return False
    return True


def unavailable_reason() -> str | None:
    """Why podman cannot run here, or None."""
    if os.geteuid() != 0:
        return "podman with the CNI backend as root needs root"
    missing = [tool for tool in ("podman", "crun", "unshare", "nsenter", "ip")
               if shutil.which(tool) is None]
    if missing:
        return f"not installed: {', '.join(missing)} (make system-deps)"
    if not os.path.exists(BUSYBOX) or not is_static_elf(BUSYBOX):
        return f"{BUSYBOX} is not a static busybox (make system-deps installs busybox-static)"
    return None


def write_busybox_rootfs(tar_path: Path) -> None:
    """A root filesystem of one static busybox and its applet links, as a tarball."""
    with tarfile.open(tar_path, "w") as tar:
        tar.add(BUSYBOX, arcname="bin/busybox")
        for applet in APPLETS:
            link = tarfile.TarInfo(f"bin/{applet}")
            link.type = tarfile.SYMTYPE
            link.linkname = "busybox"
            tar.addfile(link)
        for directory in ("etc", "proc", "sys", "dev", "tmp", "run"):
            entry = tarfile.TarInfo(directory)
            entry.type = tarfile.DIRTYPE
            entry.mode = 0o755
            tar.addfile(entry, io.BytesIO())


def _ulimit(limit: int, wanted: int = 1024) -> str:
    # Podman asks for large RLIMIT_NOFILE/NPROC by default; root here lacks
    # CAP_SYS_RESOURCE, so crun may only lower them.
    _soft, hard = resource.getrlimit(limit)
    value = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    return f"{value}:{value}"


class PodmanSandbox:
    """One isolated podman whose default network is the conflist ``network_for(root)``
    returns (given the sandbox's temp dir, for the paths it names)."""

    def __init__(self, network_for: Callable[[Path], dict[str, Any]],
                 plugin_dirs: Sequence[str]) -> None:
        self.plugin_dirs = list(plugin_dirs)
        # Short: conmon's attach socket lives below the run root (sun_path is 108 bytes).
        self.root = Path(tempfile.mkdtemp(prefix="emp", dir="/tmp"))
        self.conflist = network_for(self.root)
        self.network: str = self.conflist["name"]
        self._holder: subprocess.Popen[str] | None = None

    # --- paths -------------------------------------------------------------------
    @property
    def libcni_cache(self) -> Path:
        """/var/lib/cni/results as the runtime sees it."""
        return self.root / "var-lib" / "cni" / "results"

    def path(self, name: str) -> Path:
        return self.root / name

    # --- life cycle --------------------------------------------------------------
    def __enter__(self) -> PodmanSandbox:
        try:
            self._write_config()
            self._start_holder()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._holder is not None and self._holder.poll() is None:
            with contextlib.suppress(subprocess.SubprocessError, OSError):
                self.podman("rm", "--all", "--force", "--time", "0", timeout=60)
            self._holder.kill()
            self._holder.wait()
        self._holder = None
        shutil.rmtree(self.root, ignore_errors=True)

    def _write_config(self) -> None:
        for directory in ("run", "var-lib", "shm", "storage", "runroot", "tmp", "net.d"):
            self.path(directory).mkdir()
        (self.path("net.d") / f"{self.network}.conflist").write_text(json.dumps(self.conflist))
        dirs = ", ".join(json.dumps(d) for d in self.plugin_dirs)
        ulimits = (f'"nofile={_ulimit(resource.RLIMIT_NOFILE)}", '
                   f'"nproc={_ulimit(resource.RLIMIT_NPROC)}"')
        self.path("containers.conf").write_text(f"""\
[containers]
cgroups = "disabled"
default_ulimits = [{ulimits}]
log_driver = "k8s-file"

[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "{self.root}/events.log"
runtime = "crun"
static_dir = "{self.root}/storage/libpod"
tmp_dir = "{self.root}/tmp"
volume_path = "{self.root}/storage/volumes"

[network]
network_backend = "cni"
cni_plugin_dirs = [{dirs}]
network_config_dir = "{self.root}/net.d"
default_network = "{self.network}"
""")
        self.path("storage.conf").write_text(f"""\
[storage]
driver = "overlay"
graphroot = "{self.root}/storage"
runroot = "{self.root}/runroot"
""")

    def _start_holder(self) -> None:
        script = (
            "set -e\n"
            f"mount --bind {self.root}/run /run\n"
            f"mount --bind {self.root}/var-lib /var/lib\n"
            f"mount --bind {self.root}/shm /dev/shm\n"
            f"if mountpoint -q {HYBRID_CGROUP2}; then umount {HYBRID_CGROUP2}; fi\n"
            "ip link set lo up\n"
            f"echo {HOLDER_READY}\n"
            "exec sleep infinity\n")
        self._holder = subprocess.Popen(
            ["unshare", "--mount", "--net", "--propagation", "private", "sh", "-c", script],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self._holder.stdout is not None
        if self._holder.stdout.readline().strip() != HOLDER_READY:
            _out, err = self._holder.communicate(timeout=10)
            self._holder = None
            raise RuntimeUnavailable(f"cannot make the runtime's namespaces: {err.strip()}")

    # --- commands ----------------------------------------------------------------
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if k not in ("XDG_RUNTIME_DIR", "CONTAINER_HOST", "CONTAINER_CONNECTION")}
        env.update(CONTAINERS_CONF=str(self.path("containers.conf")),
                   CONTAINERS_STORAGE_CONF=str(self.path("storage.conf")),
                   TMPDIR=str(self.path("tmp")))
        return env

    def in_namespaces(self, *argv: str) -> list[str]:
        """argv run in the holder's mount and network namespaces."""
        assert self._holder is not None, "sandbox not entered"
        return ["nsenter", "-t", str(self._holder.pid), "-m", "-n", "--", *argv]

    def run(self, *argv: str, timeout: float = 60,
            check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(self.in_namespaces(*argv), env=self.env(), capture_output=True,
                              text=True, timeout=timeout, check=False)
        if check and proc.returncode != 0:
            raise subprocess.CalledProcessError(proc.returncode, argv, proc.stdout, proc.stderr)
        return proc

    def podman(self, *args: str, timeout: float = 60,
               check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run("podman", *args, timeout=timeout, check=check)

    def import_busybox_image(self) -> None:
        tar_path = self.path("rootfs.tar")
        write_busybox_rootfs(tar_path)
        self.podman("import", str(tar_path), IMAGE)

    def check_can_run_containers(self) -> None:
        """Start and remove one container without a network; RuntimeUnavailable with
        podman's words when this kernel or sandbox refuses."""
        info = self.podman("info", "--format", "{{.Host.NetworkBackend}}", check=False)
        if info.returncode != 0 or info.stdout.strip() != "cni":
            raise RuntimeUnavailable("podman has no CNI network backend here: "
                                     f"{(info.stdout + info.stderr).strip()}")
        probe = f"probe{uuid.uuid4().hex[:8]}"
        proc = self.podman("run", "--rm", "--name", probe, "--network", "none", IMAGE,
                           "true", check=False)
        if proc.returncode != 0:
            raise RuntimeUnavailable(f"podman cannot run a container here: {proc.stderr.strip()}")

    def start_container(self, name: str, network: str | None = None) -> str:
        """A detached container on ``network`` (the sandbox's own by default); its id."""
        proc = self.podman("run", "--detach", "--name", name,
                           "--network", network or self.network, IMAGE, "sleep", "3600")
        return proc.stdout.strip()

    def stop_container(self, name: str) -> None:
        # busybox sleep as PID 1 ignores SIGTERM: no grace period, so stop kills it.
        self.podman("stop", "--time", "0", name)

    def remove_container(self, name: str) -> None:
        self.podman("rm", "--force", "--time", "0", name)

    def container_pid(self, name: str) -> int:
        return int(self.podman("inspect", "--format", "{{.State.Pid}}", name).stdout)

    def container_exec(self, name: str, *argv: str) -> str:
        return self.podman("exec", name, *argv).stdout

    def container_ip(self, name: str, *args: str) -> list[dict[str, Any]]:
        """``ip -j ARGS`` in the container's network namespace (busybox's ip has no JSON)."""
        pid = self.container_pid(name)
        out = subprocess.run(["nsenter", "-t", str(pid), "-n", "ip", "-j", *args],
                             capture_output=True, text=True, check=True).stdout
        return json.loads(out) if out.strip() else []

    def host_links(self) -> list[dict[str, Any]]:
        """The links of the runtime's host side (the holder's network namespace)."""
        return json.loads(self.run("ip", "-d", "-j", "link").stdout)

    def cache_entries(self) -> dict[str, dict[str, Any]]:
        """libcni's cached results, by file name."""
        if not self.libcni_cache.is_dir():
            return {}
        return {p.name: json.loads(p.read_text()) for p in sorted(self.libcni_cache.iterdir())}

    def files_under(self, directory: Path) -> list[str]:
        """Every file below ``directory``, relative (what a runtime or plugin left there)."""
        if not directory.exists():
            return []
        return sorted(str(p.relative_to(directory)) for p in directory.rglob("*")
                      if not p.is_dir())


def decoded_cache_config(entry: dict[str, Any]) -> dict[str, Any]:
    """The network configuration libcni keeps, base64, in a cache entry."""
    return json.loads(base64.b64decode(entry["config"]))


@contextlib.contextmanager
def podman_sandbox(network_for: Callable[[Path], dict[str, Any]],
                   plugin_dirs: Sequence[str]) -> Iterator[PodmanSandbox]:
    """A sandbox with the busybox image loaded, checked able to run a container."""
    reason = unavailable_reason()
    if reason is not None:
        raise RuntimeUnavailable(reason)
    with PodmanSandbox(network_for, plugin_dirs) as sandbox:
        sandbox.import_busybox_image()
        sandbox.check_can_run_containers()
        yield sandbox
