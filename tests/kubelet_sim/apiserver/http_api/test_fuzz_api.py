"""Property-based fuzzing of the API server of a real `up` over HTTPS (issue 22).

One `up` serves the module. For every resource discovery lists, every verb it lists, and
the subresources (status, eviction, binding, the refused pod connections), Hypothesis
draws requests (``fuzz_requests``): valid objects first, then objects grown from the
Kubernetes type table and mutated — wrong JSON types, huge numbers, nesting 500+ deep,
long strings, NUL bytes — raw bodies, odd content types and Accept headers, forged
continue tokens, bogus query parameters, missing and forged tokens (``fuzz_bodies``).
Every answer is checked (``fuzz_harness``): never a 5xx, every error a `Status` whose
code is the HTTP status and which has a reason, in protobuf when protobuf was asked
for, 401 without the token. Meanwhile a thread asks `/healthz`; at the end its answer
times, the server's RSS before and after, and a pod run to Running on the same cluster
are checked.

Runs are bounded (about a minute) and derandomized: CI sees the same requests each time.
``pytest -s`` prints the requests sent and the answers per status code and verb.
Knobs: ``KSIM_FUZZ_SCALE=N`` runs N times as many examples; ``KSIM_FUZZ_REPORT=1``
records violations and prints them instead of failing.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import ssl
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.fixtures.up_process import Up, running_up, wait_for
from tests.kubelet_sim.apiserver.http_api.fuzz_bodies import NAMESPACE
from tests.kubelet_sim.apiserver.http_api.fuzz_harness import (
    REPORT,
    Client,
    HealthWatch,
    Request,
    Tally,
    rss_mib,
    violation,
)
from tests.kubelet_sim.apiserver.http_api.fuzz_requests import Target, requests, targets

from .conftest import needs_kubectl

pytestmark = needs_kubectl

SCALE = int(os.environ.get("KSIM_FUZZ_SCALE", "1"))
EXAMPLES_PER_TARGET = 20 * SCALE
RSS_GROWTH_MIB = 50


@dataclass
class Fuzzing:
    up: Up
    client: Client
    health: HealthWatch
    tally: Tally
    rss_start: float
    log: list[str]  # what `up` printed meanwhile (read all along: a full pipe stalls it)


def drain(up: Up, into: list[str]) -> threading.Thread:
    def read() -> None:
        assert up.proc.stdout is not None
        for line in up.proc.stdout:
            into.append(line.rstrip("\n"))
    thread = threading.Thread(target=read, name="up-output", daemon=True)
    thread.start()
    return thread


def _client(up: Up) -> Client:
    kubeconfig = yaml.safe_load(Path(up.kubeconfig).read_text())
    server = kubeconfig["clusters"][0]["cluster"]
    tls = ssl.create_default_context(cadata=base64.b64decode(
        server["certificate-authority-data"]).decode())
    host, port = server["server"].removeprefix("https://").rsplit(":", 1)
    return Client(host, int(port), kubeconfig["users"][0]["user"]["token"], tls)


@pytest.fixture(scope="module")
def fuzzing() -> Iterator[Fuzzing]:
    # the API is fuzzed, not the controllers: a fuzzed Deployment of 100 replicas would
    # have the kubelets start pods (CNI execs) all through the /healthz measurement
    with running_up("--no-workload-controllers") as up:
        up.kubectl("create", "namespace", NAMESPACE)
        log: list[str] = []
        reader = drain(up, log)
        health = HealthWatch(_client(up))
        fuzz = Fuzzing(up, _client(up), health, Tally(), rss_mib(up.proc.pid), log)
        health.start()
        try:
            yield fuzz
        finally:
            health.stop()
            fuzz.client.close()
            up.proc.send_signal(signal.SIGTERM)
            reader.join(timeout=150)
            up.proc.wait(timeout=30)
            found = tracebacks(log)
            print("\n" + fuzz.tally.summary() + "\n" + health.summary()
                  + f"\n`up` printed {len(log)} lines, {sum(found.values())} tracebacks")
            for block, n in found.items():
                print(f"{n} x {block}")


def tracebacks(log: list[str]) -> Counter[str]:
    """The tracebacks in ``log``, each with its last frames, counted."""
    found: Counter[str] = Counter()
    for i, line in enumerate(log):
        if not line.startswith("Traceback"):
            continue
        end = next((j for j in range(i + 1, len(log)) if not log[j].startswith(" ")),
                   len(log) - 1)
        found["\n".join(log[max(i + 1, end - 8):end + 1])] += 1
    return found


def fuzz_settings(max_examples: int) -> settings:
    return settings(max_examples=max_examples, deadline=None, derandomize=True, database=None,
                    print_blob=False, suppress_health_check=list(HealthCheck),
                    phases=(Phase.explicit, Phase.generate) if REPORT else tuple(Phase))


def send(fuzz: Fuzzing, request: Request) -> None:
    began = time.perf_counter()
    try:
        answer = fuzz.client.send(request)
    except (TimeoutError, ConnectionError, OSError) as e:
        fuzz.tally.record(request, None, f"no answer ({type(e).__name__})")
        assert REPORT, f"no answer to {request.short()}: {e}"
        return
    problem = violation(request, answer)
    fuzz.tally.record(request, answer, problem, time.perf_counter() - began)
    assert REPORT or problem is None, (
        f"{problem}: {request.short()}\n-> {answer.content_type} {answer.body[:500]!r}")


@pytest.mark.parametrize("target", targets(), ids=lambda t: t.label)
def test_every_served_verb_answers_fuzzed_requests_with_a_status_and_never_a_5xx(
        fuzzing: Fuzzing, target: Target) -> None:
    @fuzz_settings(EXAMPLES_PER_TARGET)
    @given(data=st.data())
    def one_request(data: st.DataObject) -> None:
        send(fuzzing, data.draw(requests(target), label="request"))

    one_request()


def test_after_the_fuzzing_healthz_always_answered_the_rss_bounded_and_a_pod_runs(
        fuzzing: Fuzzing) -> None:
    up, health = fuzzing.up, fuzzing.health
    health.stop()
    rss_end = rss_mib(up.proc.pid)
    print(f"\n{fuzzing.tally.sent} requests; {health.summary()}; "
          f"RSS {fuzzing.rss_start:.0f} -> {rss_end:.0f} MiB")
    assert not health.failures, health.failures[:5]
    # every probe answered ok; how fast is printed above and measured in `bench api-abuse`
    # and `bench lists` (speed is never a timed assertion here: the machine is shared)
    assert health.times, "no /healthz answers"
    assert rss_end - fuzzing.rss_start < RSS_GROWTH_MIB
    assert fuzzing.tally.sent >= len(targets()), "the fuzzer sent too little"
    assert REPORT or not fuzzing.tally.violations, fuzzing.tally.summary()
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "after-fuzz"},
           "spec": {"nodeSelector": {"kubernetes.io/hostname": "node-1"},
                    "containers": [{"name": "c", "image": "busybox"}]}}
    up.kubectl("create", "-f", "-", stdin=json.dumps(pod))

    def phase() -> bool:
        got = json.loads(up.kubectl("get", "pod", "after-fuzz", "-o", "json"))
        return bool(got["status"].get("phase") == "Running")
    wait_for(phase, "the pod made after the fuzzing to run", timeout=90)
