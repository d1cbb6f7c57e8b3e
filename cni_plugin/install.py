"""Lay our plugin executables into a CNI bin dir: python -m cni_plugin.install /ABS/DIR.

Each executable is a tiny script whose shebang starts this interpreter directly
with -I -S (isolated, no site import: nothing but the stdlib and this project
is imported) and which puts the project's import path on sys.path itself; it ends
without the interpreter's teardown (posix_shim.run_then_exit).
The names never collide with the reference plugins'.
"""

from __future__ import annotations

import os
import sys

from cni_plugin.executables import EXECUTABLES, PROJECT_ROOT, script_text

__all__ = ["EXECUTABLES", "PROJECT_ROOT", "install", "main", "script_text"]

def install(bin_dir: str, interpreter: str = sys.executable) -> list[str]:
    """Write (atomically) every executable whose module exists; the paths written."""
    os.makedirs(bin_dir, exist_ok=True)
    written = []
    for name, module in EXECUTABLES.items():
        source = os.path.join(PROJECT_ROOT, *module.split(".")) + ".py"
        if not os.path.exists(source):
            continue
        path = os.path.join(bin_dir, name)
        tmp = f"{path}.tmp.{os.getpid()}"
        with open(tmp, "w") as f:
            f.write(script_text(module, interpreter))
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o755)
        os.replace(tmp, path)
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    import argparse  # the CLI only: importers (tests, kubelet_sim) call install()

    parser = argparse.ArgumentParser(
        prog="python -m cni_plugin.install",
        description="Lay the emu-* CNI plugin executables into a CNI bin dir (created if "
                    "missing); each starts this interpreter. Prints the paths written.")
    parser.add_argument("dir", metavar="DIR",
                        help="absolute path of the CNI bin dir, e.g. /opt/cni/bin "
                             "(a runtime finds plugins by CNI_PATH, a list of absolute dirs)")
    args = parser.parse_args(argv)
    if not os.path.isabs(args.dir):
        parser.error(f"DIR must be an absolute path, got {args.dir!r}")
    for path in install(args.dir):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
