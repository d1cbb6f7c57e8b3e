"""Command line → Config (the flags are the contract in the README)."""

from __future__ import annotations

import argparse
import dataclasses
import os
import socket
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from csi_driver import __version__
from csi_driver.config import (
    DEFAULT_DRIVER_NAME,
    DURABILITY_MODES,
    EXPANSION_MODES,
    FS_BACKENDS,
    MODES,
    MOUNT_METHODS,
    Config,
    default_state_dir,
    parse_size,
)
from csi_driver.errors import CsiError
from csi_driver.server.faults import load_rules


def _pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def _pool(text: str) -> tuple[str, int]:
    name, value = _pair(text)
    try:
        return name, parse_size(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _octal(text: str) -> int:
    try:
        return int(text, 8)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected an octal mode, got {text!r}") from exc


def _names(text: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in text.split(",") if n.strip())


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from exc
    if not value >= 0 or value == float("inf"):  # also refuses nan
        raise argparse.ArgumentTypeError(f"expected a finite number of seconds ≥ 0, got {text!r}")
    return value


def _root(text: str) -> str:
    if not os.path.isabs(text):
        raise argparse.ArgumentTypeError(f"expected an absolute path, got {text!r}")
    return os.path.normpath(text)


class _HelpFormatter(argparse.HelpFormatter):
    """Every option's help ends with its default, unless the text already names it."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "default:" in text or action.default is argparse.SUPPRESS or not action.option_strings:
            return text
        return f"{text} (default: %(default)s)"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="csi-mini-driver", description="CSI v1.12 plugin (csi-mini)",
                                formatter_class=_HelpFormatter)
    p.add_argument("--endpoint", default=os.environ.get("CSI_ENDPOINT"),
                   help="unix:///abs/path or /abs/path of the socket to serve "
                   "(default: $CSI_ENDPOINT)")
    p.add_argument("--node-id", default=socket.gethostname(),
                   help="this node's id in NodeGetInfo and the attach records")
    p.add_argument("--driver-name", default=DEFAULT_DRIVER_NAME,
                   help="the name GetPluginInfo reports")
    p.add_argument("--vendor-version", default=__version__,
                   help="the vendor_version GetPluginInfo reports")
    p.add_argument("--state-dir", default=default_state_dir(),
                   help="where the state database and the volume data live; processes of "
                   "one storage array share it")
    p.add_argument("--socket-mode", type=_octal, default="0600",
                   help="permission bits of the socket (octal)")
    p.add_argument("--mode", choices=MODES, default="all",
                   help="controller: the controller services; node: the node service; "
                   "all: both")
    flag = argparse.BooleanOptionalAction
    p.add_argument("--attach-required", action=flag, default=True,
                   help="offer ControllerPublish/Unpublish (PUBLISH_UNPUBLISH_VOLUME)")
    p.add_argument("--topology", action=flag, default=True,
                   help="report accessible topology (VOLUME_ACCESSIBILITY_CONSTRAINTS)")
    p.add_argument("--topology-segment", type=_pair, action="append", default=[],
                   metavar="KEY=VALUE",
                   help="a topology segment of this node besides its node key (repeatable; "
                   "default: none)")
    p.add_argument("--expansion", choices=EXPANSION_MODES, default="online",
                   help="ControllerExpandVolume while published (online), only while not "
                   "(offline), or not at all (none)")
    p.add_argument("--node-expansion", action=flag, default=True,
                   help="offer NodeExpandVolume (EXPAND_VOLUME on the node)")
    p.add_argument("--snapshots", action=flag, default=True,
                   help="offer snapshots (CREATE_DELETE_SNAPSHOT, LIST_SNAPSHOTS, "
                   "GET_SNAPSHOT)")
    p.add_argument("--group-snapshots", action=flag, default=True,
                   help="offer the GroupController service (volume group snapshots)")
    p.add_argument("--snapshot-metadata", action=flag, default=True,
                   help="offer the SnapshotMetadata service (allocated/changed blocks)")
    p.add_argument("--snapshots-block-delete", action=flag, default=False,
                   help="DeleteVolume of a volume that still has snapshots fails with "
                   "FAILED_PRECONDITION, as on backends whose snapshots depend on their "
                   "volume; off, the snapshots (independent copies) stay usable")
    p.add_argument("--modify-volume", action=flag, default=True,
                   help="offer ControllerModifyVolume (MODIFY_VOLUME)")
    p.add_argument("--mutable-parameters", type=_names, default="iops",
                   help="comma-separated mutable parameter keys volumes accept")
    p.add_argument("--volume-condition", action=flag, default=True,
                   help="report volume condition (VOLUME_CONDITION, GET_VOLUME)")
    p.add_argument("--single-node-multi-writer", action=flag, default=True,
                   help="offer the SINGLE_NODE_SINGLE/MULTI_WRITER access modes")
    p.add_argument("--volume-mount-group", action=flag, default=False,
                   help="offer VOLUME_MOUNT_GROUP on the node: the CO passes the pod's "
                   "fsGroup as volume_mount_group instead of changing ownership itself")
    p.add_argument("--max-volumes-per-node", type=int, default=64,
                   help="max_volumes_per_node in NodeGetInfo; ControllerPublish beyond it "
                   "is RESOURCE_EXHAUSTED (0: no limit)")
    p.add_argument("--capacity", type=_pool, action="append", default=[], metavar="POOL=SIZE",
                   help="a capacity pool (repeatable; the 'pool' parameter picks one, the "
                   "first is the default; default: default=1Ti)")
    p.add_argument("--max-volume-size", type=_size, default="1Ti",
                   help="largest volume CreateVolume and expansion accept")
    p.add_argument("--secret", type=_pair, action="append", default=[], metavar="KEY=VALUE",
                   help="require this secret on the RPCs the Kubernetes e2e mock guards "
                   "(repeatable; default: none)")
    p.add_argument("--mount-method", choices=MOUNT_METHODS, default="auto",
                   help="how NodePublish exposes data at target_path: bind mount, symlink, "
                   "or auto (bind when the process may mount)")
    p.add_argument("--fs-backend", choices=FS_BACKENDS, default="auto",
                   help="loop: each filesystem volume is a sparse ext4 image loop-mounted "
                   "at stage, with a real size (needs root and e2fsprogs; where the kernel "
                   "denies growing a mounted filesystem, expansion becomes OFFLINE); dir: a "
                   "plain directory; auto: loop where all of it works, else dir")
    p.add_argument("--allowed-target-root", type=_root, action="append", default=[], metavar="DIR",
                   help="NodeStage and NodePublish only below DIR (absolute; repeatable; "
                   "default: anywhere)")
    p.add_argument("--durability", choices=DURABILITY_MODES, default="process",
                   help="process: every answered mutation survives kill -9 of the driver; "
                   "host: it also survives a host crash or power loss, each commit "
                   "waiting for the disk (slower)")
    p.add_argument("--orphan-sweep-interval", type=_seconds, default=300.0, metavar="SECONDS",
                   help="controller/all mode: every SECONDS, remove volume and snapshot "
                   "data that has no record (left by a crash mid-create)")
    p.add_argument("--orphan-min-age", type=_seconds, default=60.0, metavar="SECONDS",
                   help="the sweep removes such data only once nothing in it changed for "
                   "SECONDS, so data another process is creating right now is never touched")
    p.add_argument("--registration-dir", default="",
                   help="node/all mode: also serve the kubelet plugin-registration API on "
                   "DIR/<driver-name>-reg.sock (as node-driver-registrar does), e.g. "
                   "/var/lib/kubelet/plugins_registry (default: off)")
    p.add_argument("--metrics-address", default="", metavar="HOST:PORT",
                   help="serve Prometheus metrics at http://HOST:PORT/metrics")
    p.add_argument("--faults", default="", metavar="FILE",
                   help="inject faults by these rules (YAML or JSON list: method glob, "
                   "optional volume_id/node_id; code+message, delay or hang; after, times, "
                   "probability, seed)")
    p.add_argument("--fault-control", default="", metavar="PATH",
                   help="serve a unix socket at PATH through which `python -m csi_driver "
                   "faults --control PATH` adds, lists and clears rules while running")
    return p


# Config fields whose flag is repeatable and named in the singular.
FLAG_DEST = {"topology_segments": "topology_segment", "secrets": "secret",
             "allowed_target_roots": "allowed_target_root"}


def parse_config(argv: Sequence[str] | None = None) -> Config:
    """Parse flags into a validated Config; argparse exits with status 2 on bad input."""
    parser = build_parser()
    a = parser.parse_args(argv)
    if not a.endpoint:
        parser.error("no endpoint: pass --endpoint or set CSI_ENDPOINT")
    values: dict[str, Any] = {}
    for f in dataclasses.fields(Config):  # each Config field has its flag
        raw = getattr(a, FLAG_DEST.get(f.name, f.name))
        values[f.name] = tuple(raw) if isinstance(raw, list) else raw  # repeatable flags
    values["state_dir"] = os.path.abspath(a.state_dir)
    values["capacity"] = values["capacity"] or Config.capacity
    values["registration_dir"] = os.path.abspath(a.registration_dir) if a.registration_dir else ""
    if a.faults:
        values["faults"] = os.path.abspath(a.faults)
        try:
            load_rules(Path(a.faults).read_text())
        except (OSError, CsiError) as exc:
            parser.error(f"--faults {a.faults}: {exc}")
    cfg = Config(**values)
    try:
        return cfg.validate()
    except ValueError as exc:
        parser.error(str(exc))
    except Exception as exc:  # InvalidArgument from validate()
        parser.error(str(exc))
