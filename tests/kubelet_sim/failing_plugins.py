"""CNI bin dirs with a plugin that fails on purpose, for tests that show a CNI error."""

from __future__ import annotations

from pathlib import Path

from cni_plugin.install import install as install_cni_plugins

FAILING_LOOPBACK_MESSAGE = "loopback is switched off for this test"
# Fails every ADD with a CNI error (code 11, try again later) and accepts the rest: the pod
# network's STATUS runs on the bridge, so the node stays ready and only sandboxes fail.
_FAILING_LOOPBACK = f"""#!/bin/sh
cat >/dev/null
if [ "$CNI_COMMAND" = ADD ]; then
  echo '{{"cniVersion":"1.1.0","code":11,"msg":"{FAILING_LOOPBACK_MESSAGE}"}}'
  exit 1
fi
"""


def bin_dir_with_failing_loopback(bin_dir: Path) -> Path:
    """Our CNI plugins laid out in ``bin_dir``, with ``emu-loopback`` failing every ADD."""
    install_cni_plugins(str(bin_dir))
    loopback = bin_dir / "emu-loopback"
    loopback.write_text(_FAILING_LOOPBACK)
    loopback.chmod(0o755)
    return bin_dir
