"""Regenerate this package from the Kubernetes schema in protos/k8s.io/ (`make protos`).

Uses the pinned grpcio-tools. The schema keeps upstream's file names
(``k8s.io/api/core/v1/generated.proto``), so the descriptors carry the same names as
kube-apiserver's; but ``k8s.io`` is no Python package, so each generated module is
renamed flat (``core_v1_pb2``, ``meta_v1_pb2``, ...) and the imports between them are
rewritten to match. Only messages: no services, no grpc stubs. ``check()`` regenerates
into a temp dir and compares (tests/test_protos.py).
"""

from __future__ import annotations

import re
import sys
import tempfile
from importlib import resources
from pathlib import Path

PACKAGE = "k8s_protos"
PACKAGE_DIR = Path(__file__).resolve().parent
PROTO_DIR = PACKAGE_DIR.parent / "protos"

# the schema's file (without /generated.proto) -> the module this package names it
MODULES = {
    "k8s.io/apimachinery/pkg/runtime": "runtime_pb2",
    "k8s.io/apimachinery/pkg/runtime/schema": "runtime_schema_pb2",
    "k8s.io/apimachinery/pkg/api/resource": "resource_pb2",
    "k8s.io/apimachinery/pkg/util/intstr": "intstr_pb2",
    "k8s.io/apimachinery/pkg/apis/meta/v1": "meta_v1_pb2",
    **{f"k8s.io/api/{gv}": gv.replace("/", "_") + "_pb2" for gv in (
        "core/v1", "storage/v1", "coordination/v1", "networking/v1", "events/v1",
        "policy/v1", "authentication/v1", "authorization/v1", "apps/v1", "batch/v1",
        "discovery/v1", "autoscaling/v1", "rbac/v1", "scheduling/v1")},
    "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1": "apiextensions_v1_pb2",
}


def _dotted(directory: str) -> str:
    """The Python module protoc derives from a schema file's directory."""
    return directory.replace("/", ".").replace("-", "_") + ".generated_pb2"


def _rename(text: str) -> str:
    """Rewrite protoc's module names (``k8s.io.api.core.v1.generated_pb2``) into ours."""
    for directory, module in MODULES.items():
        dotted = _dotted(directory)
        package, _, leaf = dotted.rpartition(".")
        text = text.replace(f"from {package} import {leaf} as", f"from . import {module} as")
        text = text.replace(f"'{dotted}'", f"'{PACKAGE}.{module}'")
    return text


def generate(out_dir: Path) -> list[Path]:
    """Run protoc on the schema into out_dir with our module names; return the files."""
    from grpc_tools import protoc  # dev dependency: only needed to regenerate

    include = str(resources.files("grpc_tools") / "_proto")
    written = []
    with tempfile.TemporaryDirectory() as raw:
        argv = ["protoc", f"-I{PROTO_DIR}", f"-I{include}", f"--python_out={raw}",
                f"--pyi_out={raw}",
                *(str(PROTO_DIR / directory / "generated.proto") for directory in MODULES)]
        if protoc.main(argv) != 0:
            raise RuntimeError("protoc failed on the Kubernetes schema")
        for directory, module in MODULES.items():
            for suffix in (".py", ".pyi"):
                made = Path(raw) / (_dotted(directory).replace(".", "/") + suffix)
                path = out_dir / f"{module}{suffix}"
                path.write_text(_rename(made.read_text()))
                written.append(path)
    unrenamed = [p.name for p in written
                 if re.search(r"\bk8s\.io\.\S+generated_pb2", p.read_text())]
    if unrenamed:
        raise RuntimeError(f"module names left as protoc wrote them in {unrenamed}")
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
