"""Regenerate the Python code in this package from protos/ (run by `make protos`).

Uses the pinned grpcio-tools. protoc writes `import csi_pb2` in the *_grpc
modules; we rewrite that into a package-relative import so the generated code
lives in one package. `check()` regenerates into a temp dir and compares, which
is what tests/test_protos.py uses to prove the committed code is current.
"""

from __future__ import annotations

import re
import sys
import tempfile
from importlib import resources
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
PROTO_DIR = PACKAGE_DIR.parent / "protos"
PROTO_FILES = ("csi.proto", "pluginregistration.proto")


def _generated_names(proto: str) -> list[str]:
    stem = proto.removesuffix(".proto")
    return [f"{stem}_pb2.py", f"{stem}_pb2.pyi", f"{stem}_pb2_grpc.py"]


def generate(out_dir: Path) -> list[Path]:
    """Run protoc on every schema into out_dir and fix imports; return the files."""
    from grpc_tools import protoc  # dev dependency: only needed to regenerate

    include = str(resources.files("grpc_tools") / "_proto")
    for proto in PROTO_FILES:
        argv = [
            "protoc",
            f"-I{PROTO_DIR}",
            f"-I{include}",
            f"--python_out={out_dir}",
            f"--pyi_out={out_dir}",
            f"--grpc_python_out={out_dir}",
            str(PROTO_DIR / proto),
        ]
        if protoc.main(argv) != 0:
            raise RuntimeError(f"protoc failed on {proto}")
    written = []
    for proto in PROTO_FILES:
        for name in _generated_names(proto):
            path = out_dir / name
            text = re.sub(
                r"^import (\w+_pb2) as", r"from . import \1 as", path.read_text(), flags=re.M
            )
            path.write_text(text)
            written.append(path)
    return written


def check() -> list[str]:
    """Names of committed generated files that differ from a fresh generation."""
    with tempfile.TemporaryDirectory() as tmp:
        stale = []
        for fresh in generate(Path(tmp)):
            committed = PACKAGE_DIR / fresh.name
            if not committed.exists() or committed.read_text() != fresh.read_text():
                stale.append(fresh.name)
        return stale


def main() -> int:
    for path in generate(PACKAGE_DIR):
        print(f"generated {path.relative_to(PACKAGE_DIR.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
