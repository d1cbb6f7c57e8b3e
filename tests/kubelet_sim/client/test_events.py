"""The event recorder, client-go's ``record`` package role: each event is an Event object
written through the API server, named ``<object>.<hex nanoseconds>``; a repeat patches the
first one's count and lastTimestamp; many similar events are combined; the in-process
readers list what was recorded, the most recent occurrence ordering the warnings."""

from __future__ import annotations

import re

import pytest

from kubelet_sim.api import builders
from kubelet_sim.api.errors import BadRequest
from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.event_correlator import COMBINED_PREFIX, MAX_SIMILAR_MESSAGES
from kubelet_sim.client.events import EventRecorder
from kubelet_sim.controllers.base import wrote_objects
from kubelet_sim.testing.fake_clock import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def api(clock: FakeClock) -> APIServer:
    server = APIServer(clock=clock)
    server.create(builders.pod("web", containers=[builders.container("web", "nginx")]))
    return server


def stored(api: APIServer, selector: str = "") -> list[Resource]:
    return api.list("Event", field_selector=selector or None).items


def test_a_repeated_event_bumps_its_count_and_becomes_the_most_recent() -> None:
    recorder = EventRecorder()
    recorder.record("Pod", "default", "web", "Warning", "FailedMount", "not attached", "kubelet")
    recorder.record("Pod", "default", "web", "Warning", "NetworkNotReady", "no cni", "kubelet")
    recorder.record("Pod", "default", "web", "Warning", "FailedMount", "not attached", "kubelet")

    assert [(e.reason, e.count) for e in recorder.for_object("Pod", "web", "default")] == [
        ("FailedMount", 2), ("NetworkNotReady", 1)]
    assert [e.reason for e in recorder.warnings("Pod", "web", "default")] == [
        "NetworkNotReady", "FailedMount"]


def test_warnings_leave_out_normal_events_and_other_objects() -> None:
    recorder = EventRecorder()
    recorder.record("PersistentVolumeClaim", "default", "data", "Normal",
                    "WaitForFirstConsumer", "waiting", "persistentvolume-binder")
    recorder.record("Pod", "default", "other", "Warning", "FailedMount", "x", "kubelet")

    assert recorder.warnings("PersistentVolumeClaim", "data", "default") == []


def test_an_event_is_an_event_object_named_after_its_object_with_hex_nanoseconds(
        api: APIServer, clock: FakeClock) -> None:
    recorder = EventRecorder(api)
    recorder.record("Pod", "default", "web", "Normal", "Pulled", 'Container image "nginx" '
                    "already present on machine", "kubelet", host="node-1",
                    field_path="spec.containers{web}")

    (event,) = stored(api)
    pod = api.get("Pod", "web", "default")
    assert re.fullmatch(r"web\.[0-9a-f]{16}", event.name)
    assert int(event.name.split(".")[1], 16) == int(clock.now().timestamp() * 1e9)
    assert event.namespace == "default"
    assert event.body["involvedObject"] == {
        "kind": "Pod", "namespace": "default", "name": "web", "apiVersion": "v1",
        "uid": pod.metadata.uid, "resourceVersion": pod.metadata.resource_version,
        "fieldPath": "spec.containers{web}"}
    assert event.body["source"] == {"component": "kubelet", "host": "node-1"}
    assert (event.body["reportingComponent"], event.body["reportingInstance"]) == (
        "kubelet", "node-1")
    assert event.body["count"] == 1
    assert event.body["firstTimestamp"] == event.body["lastTimestamp"]


def test_a_repeat_patches_count_and_last_timestamp_of_the_first_event(
        api: APIServer, clock: FakeClock) -> None:
    recorder = EventRecorder(api)
    recorder.record("Pod", "default", "web", "Warning", "FailedMount", "not attached", "kubelet")
    (first,) = stored(api)
    clock.advance(30)
    recorder.record("Pod", "default", "web", "Warning", "FailedMount", "not attached", "kubelet")

    (event,) = stored(api)
    assert event.name == first.name and event.metadata.uid == first.metadata.uid
    assert event.body["count"] == 2
    assert event.body["firstTimestamp"] == first.body["firstTimestamp"]
    assert event.body["lastTimestamp"] > first.body["lastTimestamp"]
    assert recorder.for_object("Pod", "web", "default")[0].count == 2


def test_another_message_or_container_is_another_event_and_names_never_collide(
        api: APIServer) -> None:
    recorder = EventRecorder(api)  # the fake clock stands still: same instant for all
    recorder.record("Pod", "default", "web", "Normal", "Created", "Created container: a",
                    "kubelet", field_path="spec.containers{a}")
    recorder.record("Pod", "default", "web", "Normal", "Created", "Created container: b",
                    "kubelet", field_path="spec.containers{b}")
    recorder.record("Pod", "default", "web", "Normal", "Started", "Started container a",
                    "kubelet", field_path="spec.containers{a}")

    names = [e.name for e in stored(api)]
    assert len(set(names)) == 3
    assert [e.body["reason"] for e in stored(api)] == ["Created", "Created", "Started"]


def test_a_cluster_scoped_objects_events_live_in_default(api: APIServer) -> None:
    api.create(builders.storage_class("fast", "mini.csi.example.com"))
    recorder = EventRecorder(api)
    recorder.record("StorageClass", "", "fast", "Warning", "Broken", "x", "someone")

    (event,) = stored(api)
    assert event.namespace == "default"
    assert "namespace" not in event.body["involvedObject"]
    assert recorder.reasons("StorageClass", "fast") == ["Broken"]


def test_many_similar_events_are_combined_into_one_that_counts(api: APIServer) -> None:
    recorder = EventRecorder(api)
    for i in range(MAX_SIMILAR_MESSAGES + 2):
        recorder.record("Pod", "default", "web", "Warning", "FailedMount", f"attempt {i}",
                        "kubelet")

    events = stored(api, "reason=FailedMount")
    combined = [e for e in events if e.body["message"].startswith(COMBINED_PREFIX)]
    assert len(events) == MAX_SIMILAR_MESSAGES
    assert len(combined) == 1
    assert combined[0].body["count"] == 3
    assert combined[0].body["message"] == f"{COMBINED_PREFIX}attempt {MAX_SIMILAR_MESSAGES + 1}"


def test_an_event_that_cannot_be_written_is_dropped_but_still_listed_in_process(
        api: APIServer) -> None:
    recorder = EventRecorder(api)
    recorder.record("Pod", "missing-namespace", "ghost", "Warning", "FailedMount", "x",
                    "kubelet")

    assert stored(api) == []
    assert recorder.reasons("Pod", "ghost", "missing-namespace") == ["FailedMount"]


def test_events_are_selected_by_their_field_labels(api: APIServer) -> None:
    recorder = EventRecorder(api)
    recorder.record("Pod", "default", "web", "Normal", "Scheduled", "assigned",
                    "default-scheduler")
    recorder.record("Pod", "default", "web", "Warning", "FailedMount", "x", "kubelet")
    uid = api.get("Pod", "web", "default").metadata.uid

    def reasons(selector: str) -> list[str]:
        return [e.body["reason"] for e in stored(api, selector)]

    assert reasons(f"involvedObject.name=web,involvedObject.kind=Pod,involvedObject.uid={uid},"
                   "involvedObject.namespace=default") == ["Scheduled", "FailedMount"]
    assert reasons("type=Warning") == ["FailedMount"]
    assert reasons("source=default-scheduler") == ["Scheduled"]
    assert reasons("reason!=Scheduled") == ["FailedMount"]


@pytest.mark.parametrize("selector", ["involvedObject.foo=x", "spec.nodeName=n"])
def test_an_unknown_event_field_label_is_a_bad_request(api: APIServer, selector: str) -> None:
    with pytest.raises(BadRequest, match="field label not supported"):
        api.list("Event", field_selector=selector)


def test_recording_an_event_is_no_progress_for_settling(api: APIServer) -> None:
    version = api.resource_version
    EventRecorder(api).record("Pod", "default", "web", "Warning", "FailedMount", "x", "kubelet")
    assert not wrote_objects(api, version)
    api.create(builders.pod("other", containers=[builders.container("c", "nginx")]))
    assert wrote_objects(api, version)


def test_one_source_gets_25_events_per_object_then_one_per_five_minutes(
    api: APIServer, clock: FakeClock,
) -> None:
    """client-go's spam filter: a token bucket per source and object (burst 25, 1/300 s);
    what it drops is never written. Another source, or another object, has its own."""
    recorder = EventRecorder(api)
    for i in range(30):
        recorder.record("Pod", "default", "web", "Warning", f"Reason{i}", "m", "kubelet")
    assert len(stored(api, "source=kubelet")) == 25
    recorder.record("Pod", "default", "web", "Normal", "Scheduled", "ok", "default-scheduler")
    assert len(stored(api, "source=default-scheduler")) == 1

    clock.advance(300)  # one token back
    recorder.record("Pod", "default", "web", "Warning", "Late", "m", "kubelet")
    recorder.record("Pod", "default", "web", "Warning", "Later", "m", "kubelet")
    reasons = {e.body["reason"] for e in stored(api, "source=kubelet")}
    assert "Late" in reasons and "Later" not in reasons and len(reasons) == 26


async def test_an_event_goes_an_hour_after_its_last_write_and_watchers_see_it_go(
    api: APIServer, clock: FakeClock,
) -> None:
    """kube-apiserver's --event-ttl (1 h, from the last write: a repeat extends it)."""
    recorder = EventRecorder(api)
    recorder.record("Pod", "default", "web", "Normal", "Pulled", "image present", "kubelet")
    recorder.record("Pod", "default", "web", "Normal", "Started", "started", "kubelet")
    watch = api.watch("Event", resource_version=api.resource_version)
    clock.advance(1800)
    recorder.record("Pod", "default", "web", "Normal", "Started", "started", "kubelet")
    clock.advance(1801)  # Pulled: 3601 s since written; Started: 1801 s since its repeat
    assert [e.body["reason"] for e in stored(api)] == ["Started"]
    clock.advance(1800)
    assert stored(api) == []
    events = [(e.type, e.object.body["reason"]) for e in watch.drain()]
    assert events == [("MODIFIED", "Started"), ("DELETED", "Pulled"), ("DELETED", "Started")]
    watch.stop()
