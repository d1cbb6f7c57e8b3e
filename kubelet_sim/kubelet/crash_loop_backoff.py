"""The kubelet's back-off before restarting a failed container (CrashLoopBackOff).

Kept per container (pod uid, container name, image), on the kubelet's clock, as the
kubelet's ``flowcontrol.Backoff``: the first exit restarts at once and arms a delay of
10 s; an exit within the delay of the one before waits it out (the container ``waiting``
with reason ``CrashLoopBackOff``), and each restart after a wait doubles the delay, up to
5 minutes. A container that ran longer than twice the maximum (10 minutes) before its
exit starts over at 10 s.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from kubelet_sim.api.model import Resource

INITIAL_SECONDS = 10.0
MAX_SECONDS = 300.0
CRASH_LOOP_BACK_OFF = "CrashLoopBackOff"

Key = tuple[str, str, str]


def pod_ref(pod: Resource) -> str:
    """``<name>_<namespace>(<uid>)``: how the kubelet names a pod in its messages."""
    return f"{pod.name}_{pod.namespace}({pod.metadata.uid})"


def back_off_message(delay: float, container: str, pod: Resource) -> str:
    return (f"back-off {_go_seconds(delay)} restarting failed container={container} "
            f"pod={pod_ref(pod)}")


def back_off_event(container: str, pod: Resource) -> str:
    return f"Back-off restarting failed container {container} in pod {pod_ref(pod)}"


def _go_seconds(delay: float) -> str:
    """A delay as Go prints a time.Duration of whole seconds (``10s``, ``5m0s``)."""
    total = int(delay)
    minutes, seconds = divmod(total, 60)
    return f"{minutes}m{seconds}s" if minutes else f"{seconds}s"


@dataclass
class _Entry:
    delay: float
    last_update: datetime


class CrashLoopBackOff:
    def __init__(self, initial: float = INITIAL_SECONDS, maximum: float = MAX_SECONDS) -> None:
        self.initial, self.maximum = initial, maximum
        self._entries: dict[Key, _Entry] = {}

    def _expired(self, entry: _Entry, exited_at: datetime) -> bool:
        return (exited_at - entry.last_update).total_seconds() > 2 * self.maximum

    def waiting(self, key: Key, exited_at: datetime, now: datetime) -> float | None:
        """The delay a container that exited at ``exited_at`` still waits out at ``now``;
        None when it may restart."""
        entry = self._entries.get(key)
        if entry is None or self._expired(entry, exited_at):
            return None
        return entry.delay if (now - exited_at).total_seconds() < entry.delay else None

    def restarted(self, key: Key, exited_at: datetime) -> None:
        """A restart after the exit at ``exited_at``: the next delay is armed."""
        entry = self._entries.get(key)
        if entry is None or self._expired(entry, exited_at):
            self._entries[key] = _Entry(self.initial, exited_at)
        else:
            entry.delay = min(2 * entry.delay, self.maximum)
            entry.last_update = exited_at

    def forget_pod(self, uid: str) -> None:
        for key in [k for k in self._entries if k[0] == uid]:
            del self._entries[key]
