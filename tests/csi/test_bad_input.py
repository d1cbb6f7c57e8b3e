"""Bad input: missing fields, oversize strings (>128 B), oversize maps (>4 KiB), node_id >256 B,
unknown ids, wrong paths → the spec's code, never UNKNOWN, and the server keeps serving
(Probe still answers after every case)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
import pytest

from csi_protos import csi_pb2
from tests.csi.driver_process import DriverProcess, Stubs
from tests.csi.sanity_support import (
    GiB,
    expect_error_code,
    make_create_volume_req,
    mount_capability,
)

INVALID = grpc.StatusCode.INVALID_ARGUMENT
NOT_FOUND = grpc.StatusCode.NOT_FOUND
LONG = "x" * 129
BIG_MAP = {f"k{i}": "v" * 100 for i in range(45)}  # > 4 KiB of keys and values
CAP = mount_capability()
Case = tuple[str, Callable[[Stubs], Any], Callable[[], Any], grpc.StatusCode]


def cv(**kw: Any) -> csi_pb2.CreateVolumeRequest:
    req = make_create_volume_req("bad-input", GiB)
    for key, value in kw.items():
        if key in ("parameters", "secrets", "mutable_parameters"):
            getattr(req, key).update(value)
        elif key == "capacity":
            req.capacity_range.required_bytes = value
        elif key == "caps":
            del req.volume_capabilities[:]
            req.volume_capabilities.extend(value)
        else:
            setattr(req, key, value)
    return req


CASES: list[Case] = [
    (
        "create: name > 128 bytes",
        lambda s: s.controller.CreateVolume,
        lambda: cv(name=LONG),
        INVALID,
    ),
    (
        "create: name of 65 two-byte characters (130 bytes)",
        lambda s: s.controller.CreateVolume,
        lambda: cv(name="é" * 65),
        INVALID,
    ),
    (
        "publish: node_id of exactly 256 bytes is valid but unknown",
        lambda s: s.controller.ControllerPublishVolume,
        lambda: csi_pb2.ControllerPublishVolumeRequest(
            volume_id="no-such-volume", node_id="n" * 256, volume_capability=CAP
        ),
        NOT_FOUND,
    ),
    (
        "get volume: volume_id of exactly 128 bytes is valid but unknown",
        lambda s: s.controller.ControllerGetVolume,
        lambda: csi_pb2.ControllerGetVolumeRequest(volume_id="v" * 128),
        NOT_FOUND,
    ),
    (
        "create: parameters > 4 KiB",
        lambda s: s.controller.CreateVolume,
        lambda: cv(parameters=BIG_MAP),
        INVALID,
    ),
    (
        "create: secrets > 4 KiB",
        lambda s: s.controller.CreateVolume,
        lambda: cv(secrets=BIG_MAP),
        INVALID,
    ),
    (
        "create: negative capacity",
        lambda s: s.controller.CreateVolume,
        lambda: cv(capacity=-1),
        INVALID,
    ),
    (
        "create: capability without access mode",
        lambda s: s.controller.CreateVolume,
        lambda: cv(caps=[csi_pb2.VolumeCapability(mount=csi_pb2.VolumeCapability.MountVolume())]),
        INVALID,
    ),
    (
        "create: capability without access type",
        lambda s: s.controller.CreateVolume,
        lambda: cv(caps=[csi_pb2.VolumeCapability(access_mode=CAP.access_mode)]),
        INVALID,
    ),
    (
        "create: unknown access mode",
        lambda s: s.controller.CreateVolume,
        lambda: cv(
            caps=[
                csi_pb2.VolumeCapability(
                    access_mode=csi_pb2.VolumeCapability.AccessMode(
                        mode=csi_pb2.VolumeCapability.AccessMode.UNKNOWN
                    ),
                    mount=CAP.mount,
                )
            ]
        ),
        INVALID,
    ),
    (
        "publish: node_id > 256 bytes",
        lambda s: s.controller.ControllerPublishVolume,
        lambda: csi_pb2.ControllerPublishVolumeRequest(
            volume_id="v", node_id="n" * 257, volume_capability=CAP
        ),
        INVALID,
    ),
    (
        "publish: volume_id > 128 bytes",
        lambda s: s.controller.ControllerPublishVolume,
        lambda: csi_pb2.ControllerPublishVolumeRequest(
            volume_id=LONG, node_id="n", volume_capability=CAP
        ),
        INVALID,
    ),
    (
        "publish: volume_context > 4 KiB",
        lambda s: s.controller.ControllerPublishVolume,
        lambda: csi_pb2.ControllerPublishVolumeRequest(
            volume_id="v", node_id="n", volume_capability=CAP, volume_context=BIG_MAP
        ),
        INVALID,
    ),
    (
        "snapshot: name > 128 bytes",
        lambda s: s.controller.CreateSnapshot,
        lambda: csi_pb2.CreateSnapshotRequest(name=LONG, source_volume_id="v"),
        INVALID,
    ),
    (
        "snapshot: unknown source volume",
        lambda s: s.controller.CreateSnapshot,
        lambda: csi_pb2.CreateSnapshotRequest(
            name="bad-input-snap", source_volume_id="no-such-volume"
        ),
        NOT_FOUND,
    ),
    (
        "validate: unknown volume",
        lambda s: s.controller.ValidateVolumeCapabilities,
        lambda: csi_pb2.ValidateVolumeCapabilitiesRequest(
            volume_id="no-such-volume", volume_capabilities=[CAP]
        ),
        NOT_FOUND,
    ),
    (
        "expand: no capacity range",
        lambda s: s.controller.ControllerExpandVolume,
        lambda: csi_pb2.ControllerExpandVolumeRequest(volume_id="no-such-volume"),
        INVALID,
    ),
    (
        "stage: unknown volume",
        lambda s: s.node.NodeStageVolume,
        lambda: csi_pb2.NodeStageVolumeRequest(
            volume_id="no-such-volume", staging_target_path="/tmp", volume_capability=CAP
        ),
        NOT_FOUND,
    ),
    (
        "publish at node: unknown volume",
        lambda s: s.node.NodePublishVolume,
        lambda: csi_pb2.NodePublishVolumeRequest(
            volume_id="no-such-volume",
            target_path="/tmp/target-of-no-such-volume",
            staging_target_path="/tmp",
            volume_capability=CAP,
        ),
        NOT_FOUND,
    ),
    (
        "stats: wrong path",
        lambda s: s.node.NodeGetVolumeStats,
        lambda: csi_pb2.NodeGetVolumeStatsRequest(
            volume_id="no-such-volume", volume_path="/nonexistent/p"
        ),
        NOT_FOUND,
    ),
    (
        "group snapshot: name > 128 bytes",
        lambda s: s.group_controller.CreateVolumeGroupSnapshot,
        lambda: csi_pb2.CreateVolumeGroupSnapshotRequest(name=LONG, source_volume_ids=["v"]),
        INVALID,
    ),
    (
        "list volumes: negative max_entries",
        lambda s: s.controller.ListVolumes,
        lambda: csi_pb2.ListVolumesRequest(max_entries=-5),
        INVALID,
    ),
    (
        "get capacity: bad capability",
        lambda s: s.controller.GetCapacity,
        lambda: csi_pb2.GetCapacityRequest(volume_capabilities=[csi_pb2.VolumeCapability()]),
        INVALID,
    ),
]


@pytest.mark.parametrize(
    ("label", "rpc", "request_factory", "code"), CASES, ids=[c[0] for c in CASES]
)
def test_bad_input_gets_the_spec_code_and_the_server_keeps_serving(
    driver: DriverProcess,
    label: str,
    rpc: Callable[[Stubs], Any],
    request_factory: Callable[[], Any],
    code: grpc.StatusCode,
) -> None:
    err = expect_error_code(rpc(driver.stubs), request_factory(), code)
    assert err.code() != grpc.StatusCode.UNKNOWN
    assert driver.stubs.identity.Probe(csi_pb2.ProbeRequest()).ready.value


@pytest.mark.parametrize(
    "path",
    ["relative/target", "/proc/1/target", "/nonexistent-parent/target", ""],
)
def test_node_publish_to_a_wrong_target_path_is_refused_without_unknown(
    driver: DriverProcess, path: str
) -> None:
    """A refused path gets a real code (never UNKNOWN/INTERNAL-by-crash) and the driver lives on."""
    req = csi_pb2.NodePublishVolumeRequest(
        volume_id="no-such-volume",
        target_path=path,
        staging_target_path="/tmp",
        volume_capability=CAP,
    )
    with pytest.raises(grpc.RpcError) as err:
        driver.stubs.node.NodePublishVolume(req)
    assert err.value.code() in (INVALID, NOT_FOUND, grpc.StatusCode.FAILED_PRECONDITION)
    assert driver.stubs.identity.Probe(csi_pb2.ProbeRequest()).ready.value


def test_a_garbage_payload_is_refused_and_the_server_keeps_serving(driver: DriverProcess) -> None:
    """Bytes that are not a CreateVolumeRequest (a truncated varint) fail cleanly."""
    call = driver.stubs.channel.unary_unary(
        "/csi.v1.Controller/CreateVolume",
        request_serializer=lambda b: b,
        response_deserializer=lambda b: b,
    )
    with pytest.raises(grpc.RpcError) as err:
        call(b"\x0a\xff\xff\xff\xff\xff")
    assert err.value.code() != grpc.StatusCode.OK
    assert driver.stubs.identity.Probe(csi_pb2.ProbeRequest()).ready.value


def test_an_unknown_method_is_unimplemented(driver: DriverProcess) -> None:
    call = driver.stubs.channel.unary_unary(
        "/csi.v1.Controller/NoSuchMethod",
        request_serializer=lambda b: b,
        response_deserializer=lambda b: b,
    )
    expect_error_code(call, b"", grpc.StatusCode.UNIMPLEMENTED)


def test_a_name_of_64_two_byte_characters_is_exactly_128_bytes_and_accepted(
    driver: DriverProcess,
) -> None:
    name = "é" * 64
    assert len(name.encode()) == 128
    rsp = driver.stubs.controller.CreateVolume(make_create_volume_req(name, GiB))
    driver.stubs.controller.DeleteVolume(
        csi_pb2.DeleteVolumeRequest(volume_id=rsp.volume.volume_id)
    )
