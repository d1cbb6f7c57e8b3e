"""Bad input: missing fields, oversize strings (>128 B), oversize maps (>4 KiB), node_id >256 B,
unknown ids, wrong paths → the spec's code, never UNKNOWN, and the server keeps serving
(Probe still answers after every case)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
import pytest

from csi_protos import csi_pb2
from tests.csi_driver.grpc.conftest import SpawnDriver
from tests.csi_driver.grpc.sanity_support import (
    GiB,
    expect_error_code,
    make_create_volume_req,
    mount_capability,
)
from tests.fixtures.driver_process import DriverProcess, Stubs, log_lines

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
    (
        "group snapshot: a source volume id > 128 bytes (repeated field)",
        lambda s: s.group_controller.CreateVolumeGroupSnapshot,
        lambda: csi_pb2.CreateVolumeGroupSnapshotRequest(name="g", source_volume_ids=["v", LONG]),
        INVALID,
    ),
    (
        "delete group snapshot: a snapshot id > 128 bytes (repeated field)",
        lambda s: s.group_controller.DeleteVolumeGroupSnapshot,
        lambda: csi_pb2.DeleteVolumeGroupSnapshotRequest(group_snapshot_id="g",
                                                         snapshot_ids=[LONG]),
        INVALID,
    ),
    (
        "create: a mount flag > 128 bytes (repeated field of a nested message)",
        lambda s: s.controller.CreateVolume,
        lambda: cv(caps=[mount_with(mount_flags=[LONG])]),
        INVALID,
    ),
    (
        "create: topology segments > 4 KiB (a map in a repeated message)",
        lambda s: s.controller.CreateVolume,
        lambda: with_requisite(cv(), BIG_MAP),
        INVALID,
    ),
]


def mount_with(**mount: Any) -> csi_pb2.VolumeCapability:
    return csi_pb2.VolumeCapability(
        access_mode=CAP.access_mode, mount=csi_pb2.VolumeCapability.MountVolume(**mount)
    )


def with_requisite(req: csi_pb2.CreateVolumeRequest, segments: dict[str, str]
                   ) -> csi_pb2.CreateVolumeRequest:
    req.accessibility_requirements.requisite.add().segments.update(segments)
    return req


def with_snapshot_source(req: csi_pb2.CreateVolumeRequest, snapshot_id: str
                         ) -> csi_pb2.CreateVolumeRequest:
    req.volume_content_source.snapshot.snapshot_id = snapshot_id
    return req


NulCase = tuple[str, Callable[[Stubs], Any], Callable[[], Any]]


def streamed(call: Callable[..., Any]) -> Callable[..., Any]:
    """A server-streaming call as a unary one: its answer is the drained stream."""
    return lambda request, timeout: list(call(request, timeout=timeout))


# A NUL byte in any string (ids, names, paths, map keys and values, repeated items):
# no id, name or path may hold one (it would cut a C string, a file name, a log line).
NUL_CASES: list[NulCase] = [
    ("create: name", lambda s: s.controller.CreateVolume, lambda: cv(name="a\0b")),
    ("create: a parameters key", lambda s: s.controller.CreateVolume,
     lambda: cv(parameters={"k\0": "v"})),
    ("create: a parameters value", lambda s: s.controller.CreateVolume,
     lambda: cv(parameters={"k": "v\0"})),
    ("create: a secrets value", lambda s: s.controller.CreateVolume,
     lambda: cv(secrets={"token": "s\0"})),
    ("create: a mutable parameters key", lambda s: s.controller.CreateVolume,
     lambda: cv(mutable_parameters={"iops\0": "1"})),
    ("create: a mount flag", lambda s: s.controller.CreateVolume,
     lambda: cv(caps=[mount_with(mount_flags=["ro", "x\0"])])),
    ("create: fs_type", lambda s: s.controller.CreateVolume,
     lambda: cv(caps=[mount_with(fs_type="ext4\0")])),
    ("create: volume_mount_group", lambda s: s.controller.CreateVolume,
     lambda: cv(caps=[mount_with(volume_mount_group="1\0")])),
    ("create: a topology segment", lambda s: s.controller.CreateVolume,
     lambda: with_requisite(cv(), {"zone": "a\0"})),
    ("create: the source snapshot id", lambda s: s.controller.CreateVolume,
     lambda: with_snapshot_source(cv(), "snap\0")),
    ("delete: volume_id", lambda s: s.controller.DeleteVolume,
     lambda: csi_pb2.DeleteVolumeRequest(volume_id="v\0")),
    ("controller publish: node_id", lambda s: s.controller.ControllerPublishVolume,
     lambda: csi_pb2.ControllerPublishVolumeRequest(volume_id="v", node_id="n\0",
                                                    volume_capability=CAP)),
    ("stage: staging_target_path", lambda s: s.node.NodeStageVolume,
     lambda: csi_pb2.NodeStageVolumeRequest(volume_id="v", staging_target_path="/tmp/\0s",
                                            volume_capability=CAP)),
    ("node publish: target_path", lambda s: s.node.NodePublishVolume,
     lambda: csi_pb2.NodePublishVolumeRequest(volume_id="v", target_path="/tmp/t\0",
                                              staging_target_path="/tmp",
                                              volume_capability=CAP)),
    ("node publish: a volume_context value", lambda s: s.node.NodePublishVolume,
     lambda: csi_pb2.NodePublishVolumeRequest(
         volume_id="v", target_path="/tmp/t", staging_target_path="/tmp",
         volume_capability=CAP, volume_context={"csi.storage.k8s.io/ephemeral": "true\0"})),
    ("stats: volume_path", lambda s: s.node.NodeGetVolumeStats,
     lambda: csi_pb2.NodeGetVolumeStatsRequest(volume_id="v", volume_path="/tmp\0")),
    ("snapshot: source_volume_id", lambda s: s.controller.CreateSnapshot,
     lambda: csi_pb2.CreateSnapshotRequest(name="s", source_volume_id="v\0")),
    ("list snapshots: snapshot_id", lambda s: s.controller.ListSnapshots,
     lambda: csi_pb2.ListSnapshotsRequest(snapshot_id="s\0")),
    ("group snapshot: a source volume id", lambda s: s.group_controller.CreateVolumeGroupSnapshot,
     lambda: csi_pb2.CreateVolumeGroupSnapshotRequest(name="g", source_volume_ids=["v", "w\0"])),
    ("modify: a mutable parameters key", lambda s: s.controller.ControllerModifyVolume,
     lambda: csi_pb2.ControllerModifyVolumeRequest(volume_id="v",
                                                   mutable_parameters={"\0": "1"})),
    ("metadata: snapshot_id", lambda s: streamed(s.snapshot_metadata.GetMetadataAllocated),
     lambda: csi_pb2.GetMetadataAllocatedRequest(snapshot_id="s\0")),
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


@pytest.mark.parametrize(("rpc", "request_factory"), [c[1:] for c in NUL_CASES],
                         ids=[c[0] for c in NUL_CASES])
def test_a_nul_byte_in_any_string_field_is_invalid_argument(
    driver: DriverProcess, rpc: Callable[[Stubs], Any], request_factory: Callable[[], Any]
) -> None:
    err = expect_error_code(rpc(driver.stubs), request_factory(), INVALID)
    assert "NUL" in (err.details() or "")
    assert driver.stubs.identity.Probe(csi_pb2.ProbeRequest()).ready.value


def test_error_details_are_cut_to_fit_grpc_metadata_and_the_cut_is_marked(
    driver: DriverProcess,
) -> None:
    """30 unknown mutable keys of 128 bytes each (under the 4 KiB map limit) would make a
    message that percent-encodes past the 8 KiB metadata limit: the client would see
    RESOURCE_EXHAUSTED from its own transport instead of the answer."""
    keys = {"é" * 63 + f"{i:02d}": "1" for i in range(30)}
    err = expect_error_code(
        driver.stubs.controller.ControllerModifyVolume,
        csi_pb2.ControllerModifyVolumeRequest(volume_id="any", mutable_parameters=keys),
        INVALID,
    )
    details = err.details() or ""
    assert details.startswith("unsupported mutable parameters: ")
    assert details.endswith("…[cut]")
    assert "\ufffd" not in details  # cut at a character boundary
    assert len(details.encode()) <= 2048


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


def _string_field(message: type, field: str, raw: bytes) -> bytes:
    """The wire bytes of ``message`` with only string ``field`` set to ``raw`` (any bytes)."""
    number = message.DESCRIPTOR.fields_by_name[field].number  # type: ignore[attr-defined]
    assert number < 16 and len(raw) < 128  # a one-byte tag and a one-byte length
    return bytes([number << 3 | 2, len(raw)]) + raw


UNDECODABLE = [
    pytest.param("/csi.v1.Controller/CreateVolume", b"\x0a\xff\xff\xff\xff\xff", "",
                 id="a truncated varint"),
    pytest.param("/csi.v1.Controller/CreateVolume",
                 _string_field(csi_pb2.CreateVolumeRequest, "name", b"\xff\xfe"), "utf-8",
                 id="invalid UTF-8 in a string field"),
    pytest.param("/csi.v1.Node/NodePublishVolume",
                 _string_field(csi_pb2.NodePublishVolumeRequest, "target_path", b"/tmp/\xc3"),
                 "utf-8", id="a path cut inside a UTF-8 sequence"),
    pytest.param("/csi.v1.SnapshotMetadata/GetMetadataAllocated",
                 _string_field(csi_pb2.GetMetadataAllocatedRequest, "snapshot_id", b"\x80"),
                 "utf-8", id="invalid UTF-8 to a streaming RPC"),
]


@pytest.mark.parametrize(("method", "body", "named"), UNDECODABLE)
def test_an_undecodable_body_is_internal_naming_the_decode_failure(
    driver: DriverProcess, method: str, body: bytes, named: str
) -> None:
    """As Go gRPC servers answer: INTERNAL "grpc: error unmarshalling request: …"."""
    channel = driver.stubs.channel
    raw = {"request_serializer": bytes, "response_deserializer": bytes}
    call = (streamed(channel.unary_stream(method, **raw)) if "Metadata" in method
            else channel.unary_unary(method, **raw))
    details = expect_error_code(call, body, grpc.StatusCode.INTERNAL).details() or ""
    prefix = "grpc: error unmarshalling request: "
    assert details.startswith(prefix) and len(details) > len(prefix)
    assert named in details.lower()
    assert driver.stubs.identity.Probe(csi_pb2.ProbeRequest()).ready.value


def test_an_undecodable_body_is_logged_as_one_json_line(spawn_driver: SpawnDriver) -> None:
    proc = spawn_driver()
    body = _string_field(csi_pb2.CreateVolumeRequest, "name", b"\xff")
    call = proc.stubs.channel.unary_unary("/csi.v1.Controller/CreateVolume",
                                          request_serializer=lambda b: b,
                                          response_deserializer=lambda b: b)
    with pytest.raises(grpc.RpcError):
        call(body, timeout=30)
    proc.stubs.identity.Probe(csi_pb2.ProbeRequest())
    assert log_lines(proc, "Probe")  # written after the CreateVolume line
    lines = log_lines(proc, "/CreateVolume")
    assert len(lines) == 1
    assert lines[0]["code"] == "INTERNAL"
    assert lines[0]["error"].startswith("grpc: error unmarshalling request: ")
    assert lines[0]["request_bytes"] == len(body)
    assert "Traceback" not in proc.stderr()


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
