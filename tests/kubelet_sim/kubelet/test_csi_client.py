"""The CSI client surface with the in-memory driver: tracing, error mapping, views."""

from __future__ import annotations

import grpc
import pytest

from csi_protos import csi_pb2
from kubelet_sim.csi.client import CsiError, request_summary, socket_target
from kubelet_sim.testing.fake_csi import FakeCsiClient, FakeCsiDriver
from kubelet_sim.utils.trace import Trace


@pytest.fixture
def trace() -> Trace:
    return Trace()


@pytest.fixture
def client(trace: Trace) -> FakeCsiClient:
    return FakeCsiClient(FakeCsiDriver(), trace=trace, node="node-1")


async def test_every_call_is_recorded_with_node_component_call_and_result(
    client: FakeCsiClient, trace: Trace,
) -> None:
    await client.call(csi_pb2.ProbeRequest(), csi_pb2.ProbeResponse)
    await client.call(csi_pb2.CreateVolumeRequest(
        name="pvc-1", capacity_range=csi_pb2.CapacityRange(required_bytes=1024)),
        csi_pb2.CreateVolumeResponse)

    probe, create = trace.events
    assert (probe.node, probe.component, probe.call, probe.result) == (
        "node-1", "kubelet", "csi.Identity/Probe", "OK")
    assert create.call == "csi.Controller/CreateVolume"
    assert create.request == {"name": "pvc-1", "capacity_range": {"required_bytes": "1024"}}
    assert create.duration_ms >= 0


async def test_a_failed_call_raises_csi_error_and_records_the_code_and_message(
    client: FakeCsiClient, trace: Trace,
) -> None:
    with pytest.raises(CsiError) as info:
        await client.call(csi_pb2.NodeStageVolumeRequest(
            volume_id="missing", staging_target_path="/tmp/x"), csi_pb2.NodeStageVolumeResponse)

    assert info.value.code == grpc.StatusCode.NOT_FOUND
    assert info.value.call == "csi.Node/NodeStageVolume"
    assert trace.events[-1].result == "NOT_FOUND: volume missing not found"


async def test_secrets_never_reach_the_trace(client: FakeCsiClient, trace: Trace) -> None:
    client.driver.add_volume("vol-1")
    await client.call(csi_pb2.ControllerPublishVolumeRequest(
        volume_id="vol-1", node_id="n1", secrets={"password": "hunter2"},
        volume_context={"k": "v"}), csi_pb2.ControllerPublishVolumeResponse)

    event = trace.events[-1]
    assert "secrets" not in event.request
    assert "hunter2" not in event.to_json()
    assert event.request["volume_context"] == {"k": "v"}


def test_secrets_inside_nested_messages_are_dropped_too() -> None:
    request = csi_pb2.CreateVolumeGroupSnapshotRequest(
        name="g", source_volume_ids=["a"], secrets={"token": "s3cret"}, parameters={"p": "1"})

    assert request_summary(request) == {"name": "g", "source_volume_ids": ["a"],
                                        "parameters": {"p": "1"}}


async def test_a_component_view_shares_the_driver_and_records_its_own_name(
    client: FakeCsiClient, trace: Trace,
) -> None:
    provisioner = client.with_component("external-provisioner", timeout=15.0)

    await provisioner.call(csi_pb2.CreateVolumeRequest(name="pvc-2"), csi_pb2.CreateVolumeResponse)
    await client.call(csi_pb2.NodeGetInfoRequest(), csi_pb2.NodeGetInfoResponse)

    assert trace.calls(component="external-provisioner") == ["csi.Controller/CreateVolume"]
    assert trace.calls(component="kubelet") == ["csi.Node/NodeGetInfo"]
    assert provisioner.timeout == 15.0 and client.timeout == 120.0
    assert "pvc-2" in client.driver.volumes


async def test_an_rpc_the_fake_does_not_serve_is_unimplemented(client: FakeCsiClient) -> None:
    with pytest.raises(CsiError) as info:
        await client.call(csi_pb2.ListSnapshotsRequest(), csi_pb2.ListSnapshotsResponse)
    assert info.value.code == grpc.StatusCode.UNIMPLEMENTED


async def test_each_request_goes_to_the_one_method_that_takes_it(
    client: FakeCsiClient, trace: Trace,
) -> None:
    await client.call(csi_pb2.NodeGetInfoRequest(), csi_pb2.NodeGetInfoResponse)
    await client.call(csi_pb2.GetPluginInfoRequest(), csi_pb2.GetPluginInfoResponse)
    assert trace.calls() == ["csi.Node/NodeGetInfo", "csi.Identity/GetPluginInfo"]


async def test_a_response_type_the_method_does_not_answer_is_refused_before_sending(
    client: FakeCsiClient, trace: Trace,
) -> None:
    with pytest.raises(TypeError, match=r"CreateVolume answers csi\.v1\.CreateVolumeResponse"):
        await client.call(csi_pb2.CreateVolumeRequest(name="x"), csi_pb2.DeleteVolumeResponse)
    with pytest.raises(TypeError, match=r"csi\.v1\.Volume is not a CSI request"):
        await client.call(csi_pb2.Volume(), csi_pb2.CreateVolumeResponse)
    assert trace.calls() == []
    assert "x" not in client.driver.volumes


@pytest.mark.parametrize(("code", "final"), [
    (grpc.StatusCode.DEADLINE_EXCEEDED, False),
    (grpc.StatusCode.ABORTED, False),
    (grpc.StatusCode.UNAVAILABLE, False),
    (grpc.StatusCode.RESOURCE_EXHAUSTED, False),
    (grpc.StatusCode.NOT_FOUND, True),
    (grpc.StatusCode.INTERNAL, True),
])
def test_errors_after_which_the_driver_may_still_be_working_are_not_final(
    code: grpc.StatusCode, final: bool,
) -> None:
    assert CsiError("csi.Node/NodeStageVolume", code, "x").final is final


@pytest.mark.parametrize(("endpoint", "target"), [
    ("unix:///run/csi/csi.sock", "unix:///run/csi/csi.sock"),
    ("/run/csi/csi.sock", "unix:///run/csi/csi.sock"),
])
def test_endpoints_are_unix_urls_or_absolute_paths(endpoint: str, target: str) -> None:
    assert socket_target(endpoint) == target


def test_a_relative_endpoint_is_refused() -> None:
    with pytest.raises(ValueError):
        socket_target("csi.sock")
