"""The kubelet's prober: one worker per container and probe type (liveness, readiness,
startup), as ``pkg/kubelet/prober`` runs them, over the simulated outcomes of
probe_outcomes.py.

A worker probes every ``periodSeconds`` — here from the moment its container started,
so the same pod gives the same answers whenever the kubelet looks — skipping the probes
less than ``initialDelaySeconds`` after the start. A run of ``successThreshold``
successes or ``failureThreshold`` failures sets the worker's result; until then it is its
initial value: Failure for readiness (not ready), Success for liveness, Unknown for
startup. A startup probe gates the others: the container is ``started`` only once it
succeeds, and until then its liveness and readiness probes are not run. A liveness or
startup result of Failure kills the container (probe_kills.py), and that worker probes no
more until a new container is there. Without probes a running container is started and
ready.

Because the outcomes are a function of the time since the container started, each
worker's history is worked out from its ticks when asked (a few runs of equal results),
never kept: the same answers come from a kubelet that was restarted or a pass that came
late. ``timeoutSeconds`` is defaulted and shown but changes no simulated outcome.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from kubelet_sim.api.model import JSON, Resource, parse_time
from kubelet_sim.kubelet.probe_outcomes import outcomes

LIVENESS, READINESS, STARTUP = "liveness", "readiness", "startup"
PROBE_FIELDS = {LIVENESS: "livenessProbe", READINESS: "readinessProbe",
                STARTUP: "startupProbe"}
TITLES = {LIVENESS: "Liveness", READINESS: "Readiness", STARTUP: "Startup"}

# SetDefaults_Probe: what an unset field of a probe means
DEFAULT_TIMEOUT_SECONDS = 1
DEFAULT_PERIOD_SECONDS = 10
DEFAULT_SUCCESS_THRESHOLD = 1
DEFAULT_FAILURE_THRESHOLD = 3


def _positive(probe: JSON, name: str, default: int) -> int:
    value = probe.get(name)
    return value if isinstance(value, int) and value > 0 else default


@dataclass(frozen=True)
class ProbeSpec:
    """A container's probe, its unset fields defaulted as the API server does."""

    initial_delay: int = 0
    period: int = DEFAULT_PERIOD_SECONDS
    timeout: int = DEFAULT_TIMEOUT_SECONDS
    success_threshold: int = DEFAULT_SUCCESS_THRESHOLD
    failure_threshold: int = DEFAULT_FAILURE_THRESHOLD

    @classmethod
    def of(cls, probe: JSON) -> ProbeSpec:
        delay = probe.get("initialDelaySeconds")
        return cls(initial_delay=delay if isinstance(delay, int) and delay > 0 else 0,
                   period=_positive(probe, "periodSeconds", DEFAULT_PERIOD_SECONDS),
                   timeout=_positive(probe, "timeoutSeconds", DEFAULT_TIMEOUT_SECONDS),
                   success_threshold=_positive(probe, "successThreshold",
                                               DEFAULT_SUCCESS_THRESHOLD),
                   failure_threshold=_positive(probe, "failureThreshold",
                                               DEFAULT_FAILURE_THRESHOLD))

    def threshold(self, passing: bool) -> int:
        return self.success_threshold if passing else self.failure_threshold


@dataclass(frozen=True)
class Run:
    """Consecutive probes (ticks ``first`` to ``first + count - 1``) with one outcome."""

    passing: bool
    first: int
    count: int

    @property
    def last(self) -> int:
        return self.first + self.count - 1


@dataclass(frozen=True)
class Worker:
    """One probe worker's history up to now, as tick numbers (tick ``k`` probes ``k *
    period`` seconds after the container started)."""

    probe_type: str
    spec: ProbeSpec
    runs: tuple[Run, ...]
    result: bool | None  # the worker's result now (None: Unknown)
    decided_at: int | None  # the tick that turned ``result`` into a kill or a start
    end: int | None  # the last tick it probed (it stopped: a kill, or a start for startup)

    def failed_ticks(self, after: int = -1, limit: int = 1 << 20) -> list[int]:
        """The ticks past ``after`` whose probe failed, up to where the worker stopped
        (the last ``limit`` of them)."""
        out: list[int] = []
        for run in reversed(self.runs):
            last = run.last if self.end is None else min(run.last, self.end)
            if run.passing or last < run.first:
                continue
            first = max(run.first, after + 1, last - (limit - len(out)) + 1)
            out[:0] = range(first, last + 1)
            if len(out) >= limit or first <= after + 1:
                break
        return out


def _first_tick(seconds: float, period: int, *, after: bool = False) -> int:
    """The first tick at (or, ``after``, past) ``seconds`` after the start."""
    if after:
        return math.floor(seconds / period) + 1
    return max(0, math.ceil(seconds / period))


def _runs(pod: Resource, probe_type: str, container: str, spec: ProbeSpec,
          gate: float | None, elapsed: float) -> tuple[Run, ...]:
    """The runs of equal outcomes of the ticks up to ``elapsed`` seconds after the start
    that are past the initial delay and (``gate``) after the container was started."""
    period = spec.period
    if gate == math.inf:  # never started: not probed
        return ()
    lowest = _first_tick(spec.initial_delay, period)
    if gate is not None:
        lowest = max(lowest, _first_tick(gate, period, after=True))
    latest = math.floor(elapsed / period)
    runs: list[Run] = []
    for segment in outcomes(pod, probe_type, container).segments():
        first = max(lowest, _first_tick(segment.start, period))
        last = latest if segment.end == math.inf else \
            min(latest, _first_tick(segment.end, period) - 1)
        if last < first:
            continue
        if runs and runs[-1].passing == segment.passing:  # nothing passed in between
            runs[-1] = Run(segment.passing, runs[-1].first, last - runs[-1].first + 1)
        else:
            runs.append(Run(segment.passing, first, last - first + 1))
    return tuple(runs)


def _worker(pod: Resource, probe_type: str, container: JSON, gate: float | None,
            elapsed: float) -> Worker:
    spec = ProbeSpec.of(container[PROBE_FIELDS[probe_type]] or {})
    runs = _runs(pod, probe_type, str(container.get("name", "")), spec, gate, elapsed)
    result: bool | None = {READINESS: False, LIVENESS: True, STARTUP: None}[probe_type]
    for run in runs:
        if run.count < spec.threshold(run.passing):
            continue
        decided = run.first + spec.threshold(run.passing) - 1
        if probe_type == READINESS:
            result = run.passing
        elif not run.passing or probe_type == STARTUP:
            # a liveness or startup failure, or the start: this worker is done
            return Worker(probe_type, spec, runs, run.passing, decided, decided)
    return Worker(probe_type, spec, runs, result, None, None)


@dataclass(frozen=True)
class ContainerProbes:
    """What a running container's probe workers say now."""

    started_at: datetime
    workers: dict[str, Worker]

    @property
    def started(self) -> bool:
        startup = self.workers.get(STARTUP)
        return startup is None or startup.result is True

    @property
    def ready(self) -> bool:
        """Started, and its readiness probe (if any) says Success."""
        readiness = self.workers.get(READINESS)
        return self.started and (readiness is None or readiness.result is True)

    def tick_time(self, probe_type: str, tick: int) -> datetime:
        period = self.workers[probe_type].spec.period
        return self.started_at + timedelta(seconds=tick * period)

    def kill(self) -> tuple[str, datetime] | None:
        """(probe type, when) of the liveness or startup failure that kills it."""
        for probe_type in (STARTUP, LIVENESS):
            worker = self.workers.get(probe_type)
            if worker is not None and worker.result is False and worker.decided_at is not None:
                return probe_type, self.tick_time(probe_type, worker.decided_at)
        return None


def container_spec(pod: Resource, name: str) -> JSON | None:
    """The app container ``name``, or the sidecar (an init container with
    ``restartPolicy: Always``, whose probes run as an app container's do)."""
    sidecars = [c for c in pod.spec.get("initContainers") or []
                if c.get("restartPolicy") == "Always"]
    return next((c for c in [*(pod.spec.get("containers") or []), *sidecars]
                 if c.get("name") == name), None)


def has_probes(container: JSON | None) -> bool:
    return container is not None and any(container.get(f) for f in PROBE_FIELDS.values())


def probe_container(pod: Resource, status: JSON, now: datetime) -> ContainerProbes | None:
    """The probe workers of the running container of ``status``; None when it is not
    running or has no probe."""
    running = (status.get("state") or {}).get("running")
    container = container_spec(pod, str(status.get("name", "")))
    if running is None or not running.get("startedAt") or not has_probes(container):
        return None
    assert container is not None
    started_at = parse_time(running["startedAt"])
    elapsed = (now - started_at).total_seconds()
    workers: dict[str, Worker] = {}
    gate: float | None = None
    if container.get(PROBE_FIELDS[STARTUP]):
        startup = workers[STARTUP] = _worker(pod, STARTUP, container, None, elapsed)
        if startup.result is not True or startup.decided_at is None:
            gate = math.inf  # not started: liveness and readiness wait
        else:
            gate = startup.decided_at * startup.spec.period
    for probe_type in (LIVENESS, READINESS):
        if container.get(PROBE_FIELDS[probe_type]):
            workers[probe_type] = _worker(pod, probe_type, container, gate, elapsed)
    return ContainerProbes(started_at, workers)
