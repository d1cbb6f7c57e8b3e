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

# executable name -> module whose main() runs it
EXECUTABLES: dict[str, str] = {
    "emu-bridge": "cni_plugin.bridge",
    "emu-host-local": "cni_plugin.host_local",
    "emu-loopback": "cni_plugin.loopback",
    "emu-noop": "cni_plugin.noop",
}

PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def script_text(module: str, interpreter: str = sys.executable,
                project_root: str = PROJECT_ROOT) -> str:
    # The kernel passes everything after the interpreter as ONE argument, so the
    # flags are written as the single cluster "-IS".
    return (f"#!{interpreter} -IS\n"
            "import sys\n"
            f"sys.path.insert(0, {project_root!r})\n"
            f"from {module} import main\n"
            "from cni_plugin.posix_shim import run_then_exit\n"
            "run_then_exit(main)\n")


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
