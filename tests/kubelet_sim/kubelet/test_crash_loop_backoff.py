"""The kubelet's back-off before restarting a failed container, on a fake clock: the
first exit restarts at once, the next ones wait CrashLoopBackOff for 10 s doubling up to
5 minutes, with the kubelet's messages and BackOff events; 10 minutes of running start
the back-off over."""

from __future__ import annotations

from datetime import datetime, timedelta

from kubelet_sim.api import builders
from kubelet_sim.api.model import JSON, Resource, format_time
from kubelet_sim.kubelet.container_exit import EXIT_AFTER, EXIT_CODE, Exits, exited
from kubelet_sim.kubelet.crash_loop_backoff import CrashLoopBackOff
from kubelet_sim.testing.fake_clock import FakeClock


def crashing(after: str = "1s") -> tuple[Resource, FakeClock]:
    clock = FakeClock()
    pod = builders.pod("p")
    pod.metadata.uid = "u1"
    pod.metadata.annotations.update({EXIT_AFTER: after, EXIT_CODE: "1"})
    pod.status = {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True"}, {"type": "ContainersReady", "status": "True"}],
        "containerStatuses": [{"name": "main", "ready": True, "restartCount": 0,
                               "containerID": "containerd://abc",
                               "state": {"running": {"startedAt": format_time(clock.now())}}}]}
    return pod, clock


def step(pod: Resource, backoff: CrashLoopBackOff, at: datetime) -> Exits:
    out = exited(pod, at, backoff)
    out.commit(backoff)
    return out


def main(pod: Resource) -> JSON:
    status: JSON = pod.status["containerStatuses"][0]
    return status


def test_the_first_exit_restarts_at_once_and_the_second_waits_ten_seconds() -> None:
    pod, clock = crashing()
    backoff = CrashLoopBackOff()
    t0 = clock.now()
    first = step(pod, backoff, t0 + timedelta(seconds=1))
    assert [e.reason for e in first.events] == ["Pulled", "Created", "Started"]
    assert main(pod)["restartCount"] == 1 and "running" in main(pod)["state"]
    assert main(pod)["containerID"] != "containerd://abc"
    second = step(pod, backoff, t0 + timedelta(seconds=2))
    waiting = main(pod)["state"]["waiting"]
    assert waiting == {"reason": "CrashLoopBackOff", "message":
                       "back-off 10s restarting failed container=main pod=p_default(u1)"}
    assert [(e.reason, e.message, e.warning) for e in second.events] == [
        ("BackOff", "Back-off restarting failed container main in pod p_default(u1)", True)]
    terminated = main(pod)["lastState"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (1, "Error")
    assert terminated["finishedAt"] == format_time(t0 + timedelta(seconds=2))
    assert main(pod)["restartCount"] == 1 and main(pod)["ready"] is False
    ready = next(c for c in pod.status["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["message"]) == ("False",
                                                    "containers with unready status: [main]")
    assert not step(pod, backoff, t0 + timedelta(seconds=11))  # still backing off
    assert step(pod, backoff, t0 + timedelta(seconds=12))
    assert main(pod)["restartCount"] == 2 and "running" in main(pod)["state"]


def test_the_delay_doubles_up_to_five_minutes() -> None:
    pod, clock = crashing()
    backoff = CrashLoopBackOff()
    now = clock.now()
    delays = []
    for _ in range(8):
        now += timedelta(seconds=1)  # it runs one second, exits
        step(pod, backoff, now)
        waiting = main(pod)["state"].get("waiting")
        if waiting:
            delays.append(waiting["message"].split()[1])
            now += timedelta(minutes=5)
            step(pod, backoff, now)
    assert delays == ["10s", "20s", "40s", "1m20s", "2m40s", "5m0s", "5m0s"]


def test_ten_minutes_of_running_start_the_back_off_over() -> None:
    pod, clock = crashing("11m")
    backoff = CrashLoopBackOff()
    t0 = clock.now()
    step(pod, backoff, t0 + timedelta(minutes=11))  # first exit: at once
    step(pod, backoff, t0 + timedelta(minutes=22))  # ran 11 minutes: at once again
    assert main(pod)["restartCount"] == 2 and "running" in main(pod)["state"]
