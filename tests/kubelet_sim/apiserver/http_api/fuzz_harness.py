"""The API fuzzer's side of the wire: one HTTPS client to a running `up`, the properties
every answer must have, the counts, and the watchers of `/healthz` and the RSS.

Properties (issue 22): no answer is a 5xx; every error answer (4xx) is a `Status` — JSON,
or protobuf when the request asked for protobuf — whose ``code`` is the HTTP status and
which has a ``reason``; a request without the token, or with a forged one, is a 401; no
request goes unanswered (10 s).
"""

from __future__ import annotations

import http.client
import json
import os
import ssl
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from k8s_protos import meta_v1_pb2, runtime_pb2

PROTOBUF = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"
ANSWER_SECONDS = 10.0
REPORT = os.environ.get("KSIM_FUZZ_REPORT") == "1"


@dataclass
class Request:
    method: str
    path: str  # with its query
    body: bytes | None = None
    content_type: str | None = None
    accept: str = "application/json"
    token: str | None = ""  # "": the cluster's token; None: no Authorization header
    watch: bool = False
    verb: str = ""  # how the counts name it: create, patch/merge, status/update, ...
    # a kind served in JSON only: custom resources (the snapshot kinds)
    json_only: bool = False

    def short(self) -> str:
        shown = (self.body or b"")[:300]
        token = "own" if self.token == "" else "none" if self.token is None else "forged"
        return (f"{self.method} {self.path[:300]} ({self.content_type}, accept {self.accept},"
                f" token {token}) {shown!r}")


@dataclass
class Answer:
    status: int
    content_type: str
    body: bytes


class Client:
    """Raw HTTPS to one API server, one kept-alive connection, made again when it breaks."""

    def __init__(self, host: str, port: int, token: str, tls: ssl.SSLContext) -> None:
        self.host, self.port, self.token, self.tls = host, port, token, tls
        self._conn: http.client.HTTPSConnection | None = None

    def _connection(self) -> http.client.HTTPSConnection:
        if self._conn is None:
            self._conn = http.client.HTTPSConnection(self.host, self.port, context=self.tls,
                                                     timeout=ANSWER_SECONDS)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def send(self, request: Request) -> Answer:
        headers = {"Accept": request.accept}
        if request.token is not None:
            headers["Authorization"] = f"Bearer {request.token or self.token}"
        if request.content_type is not None:
            headers["Content-Type"] = request.content_type
        for attempt in (1, 2):  # a kept-alive connection the server closed: once more
            conn = self._connection()
            try:
                conn.request(request.method, request.path, body=request.body, headers=headers)
                response = conn.getresponse()
                kind = response.getheader("Content-Type", "")
                if request.watch and response.status == 200:
                    self.close()  # a watch runs until its timeout: hang up once it started
                    return Answer(200, kind, b"")
                body = response.read()
                if response.getheader("Connection", "").lower() == "close":
                    self.close()
                return Answer(response.status, kind, body)
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError,
                    http.client.CannotSendRequest, ssl.SSLEOFError):
                self.close()
                if attempt == 2:
                    raise
            except TimeoutError:
                self.close()
                raise
        raise AssertionError("unreachable")


def error_status(request: Request, answer: Answer) -> dict[str, Any]:
    """The Status an error answer carries, in the form it came in."""
    kind = answer.content_type.split(";")[0].strip()
    if kind == PROTOBUF:
        assert answer.body[:4] == MAGIC, answer.body[:100]
        unknown = runtime_pb2.Unknown.FromString(answer.body[4:])
        assert (unknown.typeMeta.apiVersion, unknown.typeMeta.kind) == ("v1", "Status")
        status = meta_v1_pb2.Status.FromString(unknown.raw)
        return {"kind": "Status", "code": status.code, "reason": status.reason,
                "message": status.message}
    if kind == "application/yaml":
        loaded: dict[str, Any] = yaml.safe_load(answer.body)
        return loaded
    assert kind == "application/json", f"an error answered as {kind!r}: {answer.body[:200]!r}"
    parsed: dict[str, Any] = json.loads(answer.body)
    return parsed


def violation(request: Request, answer: Answer) -> str | None:
    """What is wrong with ``answer`` to ``request``, None when it keeps the rules."""
    if answer.status >= 500:
        return f"{answer.status}"
    if request.token != "" and answer.status != 401:
        return f"{answer.status} without the token"
    if answer.status < 400:
        return None
    try:
        status = error_status(request, answer)
    except Exception as e:
        return f"{answer.status} not a Status ({type(e).__name__}: {e})"
    if not isinstance(status, dict) or status.get("kind") != "Status":
        return f"{answer.status} not a Status"
    if status.get("code") != answer.status:
        return f"{answer.status} with a Status of code {status.get('code')}"
    if not status.get("reason"):
        return f"{answer.status} Status without a reason"
    json_only = request.json_only and request.token == ""  # a 401 comes before the kind
    if PROTOBUF in request.accept.split(",")[0] and PROTOBUF not in answer.content_type \
            and not json_only:
        return f"{answer.status} asked in protobuf, answered {answer.content_type}"
    return None


@dataclass
class Tally:
    """What the fuzzer sent and what came back."""

    sent: int = 0
    codes: Counter[int] = field(default_factory=Counter)
    by_verb: dict[str, Counter[int]] = field(default_factory=dict)
    violations: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)  # the shortest per violation
    slowest: list[tuple[float, str]] = field(default_factory=list)  # (seconds, request)

    def record(self, request: Request, answer: Answer | None, problem: str | None,
               seconds: float = 0.0) -> None:
        self.sent += 1
        self.slowest = sorted([*self.slowest, (seconds, request.short()[:200])],
                              reverse=True)[:5]
        code = answer.status if answer is not None else 0
        self.codes[code] += 1
        self.by_verb.setdefault(request.verb, Counter())[code] += 1
        if problem is not None:
            key = f"{request.verb}: {problem}"
            self.violations[key] += 1
            shown = request.short() + (f" -> {answer.body[:300]!r}" if answer else "")
            if key not in self.examples or len(shown) < len(self.examples[key]):
                self.examples[key] = shown

    def summary(self) -> str:
        lines = [f"API fuzzer: {self.sent} requests; answers by code: "
                 + ", ".join(f"{c}: {n}" for c, n in sorted(self.codes.items()))]
        for verb in sorted(self.by_verb):
            lines.append(f"  {verb}: " + ", ".join(
                f"{c}: {n}" for c, n in sorted(self.by_verb[verb].items())))
        lines.append("slowest answers:")
        lines.extend(f"  {seconds * 1e3:.0f} ms: {shown}" for seconds, shown in self.slowest)
        if self.violations:
            lines.append(f"violations ({sum(self.violations.values())}):")
            for key, n in self.violations.most_common():
                lines.append(f"  {n} x {key}\n      e.g. {self.examples[key]}")
        return "\n".join(lines)


class HealthWatch:
    """Asks `/healthz` every 50 ms and keeps the answer times. The asking runs in a
    process of its own (``python -m ...fuzz_harness``): a thread beside the fuzzer would
    wait for the interpreter lock while Hypothesis draws, and measure that too."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.times: list[float] = []
        self.failures: list[str] = []
        self._proc: subprocess.Popen[str] | None = None

    def start(self) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-m", __name__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True, cwd=Path(__file__).resolve().parents[4])
        assert self._proc.stdin is not None
        ca = self.client.tls.get_ca_certs(binary_form=True)
        self._proc.stdin.write(json.dumps({
            "host": self.client.host, "port": self.client.port, "token": self.client.token,
            "ca": [ssl.DER_cert_to_PEM_cert(c) for c in ca]}) + "\n")
        self._proc.stdin.flush()

    def stop(self) -> None:
        """End the asking (closing its stdin) and collect the times."""
        if self._proc is None:
            return
        out, _ = self._proc.communicate(timeout=30)
        self._proc = None
        for line in out.splitlines():
            what, _, rest = line.partition(" ")
            if what == "ok":
                self.times.append(float(rest))
            else:
                self.failures.append(rest)

    def summary(self) -> str:
        if not self.times:
            return "/healthz: no answers"
        ordered = sorted(self.times)
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
        return (f"/healthz: {len(ordered)} answers, median {statistics.median(ordered)*1e3:.1f}"
                f" ms, p99 {p99*1e3:.1f} ms, max {ordered[-1]*1e3:.1f} ms, "
                f"{len(self.failures)} failures")


def _probe() -> None:
    """The asking process: its server and token on the first line of stdin; asks until
    stdin closes; prints ``ok SECONDS`` or ``fail WHAT`` per question."""
    config = json.loads(sys.stdin.readline())
    tls = ssl.create_default_context(cadata="".join(config["ca"]))
    client = Client(config["host"], int(config["port"]), config["token"], tls)
    done = threading.Event()

    def until_stdin_closes() -> None:
        sys.stdin.read()
        done.set()
    threading.Thread(target=until_stdin_closes, daemon=True).start()
    while not done.wait(0.05):
        began = time.perf_counter()
        try:
            answer = client.send(Request("GET", "/healthz"))
        except Exception as e:
            print(f"fail {type(e).__name__}: {e}", flush=True)
            continue
        took = time.perf_counter() - began
        if (answer.status, answer.body) == (200, b"ok"):
            print(f"ok {took:.6f}", flush=True)
        else:
            print(f"fail {answer.status} {answer.body[:100]!r}", flush=True)
    client.close()


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text(encoding="ascii").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for {pid}")


if __name__ == "__main__":
    _probe()
