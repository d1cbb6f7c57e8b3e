"""Our CNI executables: their names, the module each runs, and the script text that starts it.

Light on purpose (no ``os``): the install CLI writes the scripts from here, and a
plugin delegating to another of ours (emu-bridge -> emu-host-local) reads it to tell
whether the file on CNI_PATH is exactly one of ours started by this interpreter.
"""

from __future__ import annotations

import sys

from cni_plugin import posix_shim

# executable name -> module whose main() runs it
EXECUTABLES: dict[str, str] = {
    "emu-bridge": "cni_plugin.bridge",
    "emu-host-local": "cni_plugin.host_local",
    "emu-loopback": "cni_plugin.loopback",
    "emu-noop": "cni_plugin.noop",
}

PROJECT_ROOT = posix_shim.dirname(posix_shim.dirname(posix_shim.abspath(__file__)))


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
