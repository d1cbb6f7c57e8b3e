"""The event recorder: repeats aggregate with a count, and the most recent occurrence of
each event orders them, as ``lastTimestamp`` does in ``kubectl describe``."""

from __future__ import annotations

from kubelet_sim.client.events import EventRecorder


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
