"""Command line → Config (the flags are the contract in the README)."""

from __future__ import annotations

import argparse
import os
import socket
from collections.abc import Sequence

from csi_driver import __version__
from csi_driver.config import (
    DEFAULT_DRIVER_NAME,
    DURABILITY_MODES,
    EXPANSION_MODES,
    MODES,
    MOUNT_METHODS,
    Config,
    default_state_dir,
    parse_size,
)


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


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="csi-mini-driver", description="CSI v1.12 plugin (csi-mini)")
    p.add_argument("--endpoint", default=os.environ.get("CSI_ENDPOINT"),
                   help="unix:///abs/path or /abs/path (default: $CSI_ENDPOINT)")
    p.add_argument("--node-id", default=socket.gethostname())
    p.add_argument("--driver-name", default=DEFAULT_DRIVER_NAME)
    p.add_argument("--vendor-version", default=__version__)
    p.add_argument("--state-dir", default=default_state_dir())
    p.add_argument("--mode", choices=MODES, default="all")
    p.add_argument("--socket-mode", type=_octal, default=0o600)
    flag = argparse.BooleanOptionalAction
    p.add_argument("--attach-required", action=flag, default=True)
    p.add_argument("--topology", action=flag, default=True)
    p.add_argument("--topology-segment", type=_pair, action="append", default=[],
                   metavar="KEY=VALUE")
    p.add_argument("--expansion", choices=EXPANSION_MODES, default="online")
    p.add_argument("--node-expansion", action=flag, default=True)
    p.add_argument("--snapshots", action=flag, default=True)
    p.add_argument("--group-snapshots", action=flag, default=True)
    p.add_argument("--snapshot-metadata", action=flag, default=True)
    p.add_argument("--modify-volume", action=flag, default=True)
    p.add_argument("--mutable-parameters", type=_names, default=("iops",))
    p.add_argument("--volume-condition", action=flag, default=True)
    p.add_argument("--single-node-multi-writer", action=flag, default=True)
    p.add_argument("--max-volumes-per-node", type=int, default=64)
    p.add_argument("--capacity", type=_pool, action="append", default=[], metavar="POOL=SIZE")
    p.add_argument("--max-volume-size", type=_size, default=1 << 40)
    p.add_argument("--secret", type=_pair, action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--mount-method", choices=MOUNT_METHODS, default="auto")
    p.add_argument("--durability", choices=DURABILITY_MODES, default="process",
                   help="process: every answered mutation survives kill -9 of the driver "
                   "(default); host: it also survives a host crash or power loss, each "
                   "commit waiting for the disk (slower)")
    p.add_argument("--registration-dir", default="",
                   help="node/all mode: also serve the kubelet plugin-registration API on "
                   "DIR/<driver-name>-reg.sock (as node-driver-registrar does), e.g. "
                   "/var/lib/kubelet/plugins_registry")
    return p


def parse_config(argv: Sequence[str] | None = None) -> Config:
    """Parse flags into a validated Config; argparse exits with status 2 on bad input."""
    parser = build_parser()
    a = parser.parse_args(argv)
    if not a.endpoint:
        parser.error("no endpoint: pass --endpoint or set CSI_ENDPOINT")
    cfg = Config(
        endpoint=a.endpoint,
        node_id=a.node_id,
        state_dir=os.path.abspath(a.state_dir),
        driver_name=a.driver_name,
        vendor_version=a.vendor_version,
        mode=a.mode,
        socket_mode=a.socket_mode,
        attach_required=a.attach_required,
        topology=a.topology,
        topology_segments=tuple(a.topology_segment),
        expansion=a.expansion,
        node_expansion=a.node_expansion,
        snapshots=a.snapshots,
        group_snapshots=a.group_snapshots,
        snapshot_metadata=a.snapshot_metadata,
        modify_volume=a.modify_volume,
        mutable_parameters=tuple(a.mutable_parameters),
        volume_condition=a.volume_condition,
        single_node_multi_writer=a.single_node_multi_writer,
        max_volumes_per_node=a.max_volumes_per_node,
        capacity=tuple(a.capacity) or (("default", 1 << 40),),
        max_volume_size=a.max_volume_size,
        secrets=tuple(a.secret),
        mount_method=a.mount_method,
        durability=a.durability,
        registration_dir=os.path.abspath(a.registration_dir) if a.registration_dir else "",
    )
    try:
        return cfg.validate()
    except ValueError as exc:
        parser.error(str(exc))
    except Exception as exc:  # InvalidArgument from validate()
        parser.error(str(exc))
