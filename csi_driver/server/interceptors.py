"""The one place where domain errors become gRPC status codes, plus the per-RPC log line.

- ``CsiError`` subclasses → their status code, the message as details (no rich
  status details: the spec wants them empty).
- A request body that does not decode (corrupt wire data, invalid UTF-8 in a
  string field) → INTERNAL "grpc: error unmarshalling request: …", as Go gRPC
  servers answer; the deserializer hands the servicer wrapper a marker instead
  of raising, so grpc does not answer UNKNOWN on its own.
- Anything else → INTERNAL with the traceback logged; never UNKNOWN.
- Details are cut (at a character boundary, marked) to ``MAX_DETAILS_BYTES``:
  grpc-message is percent-encoded, up to three times longer, and a status whose
  trailers pass the peer's metadata limit (8 KiB by default) never arrives.
- Before the servicer runs: the spec's size limits, no NUL in any string and,
  when configured, the required secrets on the requests the e2e mock guards
  (missing → INVALID_ARGUMENT, wrong → UNAUTHENTICATED).
- After: one JSON line on stderr with method, redacted request, code, duration,
  the details of a failure (``error``) and the ids a create answered with.
  Redacted fields are those carrying the ``csi_secret`` field option (1059),
  found from the descriptors, not from a hand-written list.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

import grpc
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from csi_driver.domain.inflight import Activity
from csi_driver.errors import CsiError, Internal, InvalidArgument, Unauthenticated
from csi_driver.server.faults import FaultInjector, FaultRule, inject
from csi_driver.service.validation import check_string_fields
from csi_protos import csi_pb2

if TYPE_CHECKING:
    from csi_driver.server.metrics import DriverMetrics

log = logging.getLogger(__name__)
REDACTED = "***stripped***"
CSI_PREFIX = "/csi.v1."
# With --secret, the requests whose secrets are checked: those the Kubernetes e2e mock
# (kubernetes-csi/csi-test's driver) authenticates.  Other requests with a secrets
# field (expand, modify, node expand, group snapshots, snapshot metadata) carry them
# only when a CO is configured to, and csi-sanity has no secret for some of them.
GUARDED_REQUESTS = frozenset({
    "CreateVolumeRequest", "DeleteVolumeRequest", "ControllerPublishVolumeRequest",
    "ControllerUnpublishVolumeRequest", "ValidateVolumeCapabilitiesRequest",
    "NodeStageVolumeRequest", "NodePublishVolumeRequest", "CreateSnapshotRequest",
    "DeleteSnapshotRequest", "ListSnapshotsRequest", "GetSnapshotRequest",
})
# Three times as long at worst once percent-encoded: well inside the 8 KiB default metadata limit.
MAX_DETAILS_BYTES = 2048
CUT_MARK = " …[cut]"
_JSON = json.JSONEncoder(separators=(",", ":"))  # json.dumps builds one per call otherwise


class _Clock:
    """UTC timestamps as ``2026-01-02T03:04:05.678+00:00`` (what
    ``datetime.isoformat(timespec="milliseconds")`` writes), the part up to the
    second formatted once per second."""

    def __init__(self) -> None:
        self._second = -1
        self._prefix = ""

    def now(self) -> str:
        ms_total = int(time.time() * 1000)
        second, ms = divmod(ms_total, 1000)
        if second != self._second:
            self._second = second
            self._prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        return f"{self._prefix}.{ms:03d}+00:00"


@dataclass(frozen=True)
class Undecodable:
    """Stands in for a request whose bytes did not decode."""

    reason: str
    size: int


Deserializer = Callable[[bytes], Any]


def tolerant(deserialize: Deserializer | None) -> Deserializer | None:
    """``deserialize`` returning an ``Undecodable`` instead of raising."""
    if deserialize is None:
        return None

    def decode(raw: bytes) -> Any:
        try:
            return deserialize(raw)
        except Exception as exc:  # DecodeError, or anything the parser raises
            return Undecodable(str(exc), len(raw))

    return decode


def capped(details: str, limit: int = MAX_DETAILS_BYTES) -> str:
    """``details`` as valid UTF-8 of at most ``limit`` bytes, a cut marked at its end."""
    raw = details.encode("utf-8", "backslashreplace")  # a lone surrogate cannot go out
    if len(raw) <= limit:
        return raw.decode()
    kept = raw[:limit - len(CUT_MARK.encode())]
    return kept.decode("utf-8", "ignore") + CUT_MARK  # "ignore" drops a split character


def created_ids(response: Message) -> dict[str, Any]:
    """The ids a Create* response hands out, for the log line."""
    name = response.DESCRIPTOR.name
    if name == "CreateVolumeResponse":
        return {"volume_id": response.volume.volume_id}  # type: ignore[attr-defined]
    if name == "CreateSnapshotResponse":
        return {"snapshot_id": response.snapshot.snapshot_id}  # type: ignore[attr-defined]
    if name == "CreateVolumeGroupSnapshotResponse":
        group = response.group_snapshot  # type: ignore[attr-defined]
        return {"group_snapshot_id": group.group_snapshot_id,
                "snapshot_ids": [s.snapshot_id for s in group.snapshots]}
    return {}


def secret_fields(descriptor: Descriptor, _seen: frozenset[str] = frozenset()) -> dict[str, Any]:
    """{field name: True for a secret field, or a nested plan for a message field holding one}."""
    plan: dict[str, Any] = {}
    if descriptor.full_name in _seen:
        return plan
    seen = _seen | {descriptor.full_name}
    for fd in descriptor.fields:
        if fd.GetOptions().Extensions[csi_pb2.csi_secret]:  # type: ignore[index]
            plan[fd.name] = True
        elif fd.message_type is not None and not fd.message_type.GetOptions().map_entry:
            nested = secret_fields(fd.message_type, seen)
            if nested:
                plan[fd.name] = nested
    return plan


def _scalar(fd: FieldDescriptor, value: Any) -> Any:
    if fd.type == FieldDescriptor.TYPE_ENUM:
        assert fd.enum_type is not None
        enum_value = fd.enum_type.values_by_number.get(value)
        return enum_value.name if enum_value is not None else value
    if fd.type == FieldDescriptor.TYPE_BYTES:
        return base64.b64encode(value).decode()
    return value


def loggable(message: Message, plan: dict[str, Any]) -> dict[str, Any]:
    """The set fields of ``message`` as JSON-ready data, secret values replaced.

    A hand-rolled walk over ListFields(): several times cheaper than
    json_format.MessageToDict, and it runs on every RPC."""
    out: dict[str, Any] = {}
    for fd, value in message.ListFields():
        sub = plan.get(fd.name)
        if sub is True:
            is_map = fd.message_type is not None and fd.message_type.GetOptions().map_entry
            out[fd.name] = {k: REDACTED for k in value} if is_map else REDACTED
        elif fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            value_fd = fd.message_type.fields_by_name["value"]
            if value_fd.message_type is None:
                out[fd.name] = {k: _scalar(value_fd, v) for k, v in value.items()}
            else:
                out[fd.name] = {k: loggable(v, {}) for k, v in value.items()}
        elif fd.message_type is not None:
            nested = sub if isinstance(sub, dict) else {}
            if fd.is_repeated:
                out[fd.name] = [loggable(item, nested) for item in value]
            else:
                out[fd.name] = loggable(value, nested)
        elif fd.is_repeated:
            out[fd.name] = [_scalar(fd, item) for item in value]
        else:
            out[fd.name] = _scalar(fd, value)
    return out


class CsiInterceptor(grpc.aio.ServerInterceptor):
    def __init__(self, secrets: dict[str, str], stream: TextIO | None = None,
                 activity: Activity | None = None, faults: FaultInjector | None = None,
                 metrics: DriverMetrics | None = None) -> None:
        self.secrets = secrets
        self.metrics = metrics
        self.activity = activity or Activity()
        self.stream = stream or sys.stderr
        self.faults = faults if faults is not None else FaultInjector()
        self._plans: dict[str, dict[str, Any]] = {}
        self._handlers: dict[str, grpc.RpcMethodHandler] = {}  # the wrapped, per method
        self._clock = _Clock()

    def _begin(self) -> float:
        self.activity.started()
        return time.perf_counter()

    def _admit(self, method: str, request: Message | Undecodable) -> FaultRule | None:
        """Check the request, then pick the fault rule that acts on the call, if any (a
        malformed request gets its real answer, not an injected one)."""
        self.check_request(request)
        return self.faults.pick(method, request) if self.faults else None

    def _plan(self, message: Message) -> dict[str, Any]:
        name = message.DESCRIPTOR.full_name
        plan = self._plans.get(name)
        if plan is None:
            plan = self._plans[name] = secret_fields(message.DESCRIPTOR)  # type: ignore[arg-type]
        return plan

    def redacted(self, request: Message | Undecodable) -> dict[str, Any]:
        if isinstance(request, Undecodable):
            return {}
        return loggable(request, self._plan(request))

    def check_request(self, request: Message | Undecodable) -> None:
        if isinstance(request, Undecodable):
            raise Internal(f"grpc: error unmarshalling request: {request.reason}")
        check_string_fields(request)
        if self.secrets and request.DESCRIPTOR.name in GUARDED_REQUESTS:
            given = dict(getattr(request, "secrets"))  # noqa: B009
            missing = sorted(k for k in self.secrets if k not in given)
            if missing:
                raise InvalidArgument(f"missing secrets: {', '.join(missing)}")
            if any(given[k] != value for k, value in self.secrets.items()):
                raise Unauthenticated("a secret does not match")

    def _log(self, method: str, request: Message | Undecodable, code: grpc.StatusCode,
             start: float, outcome: str | Message | None = None,
             injected: FaultRule | None = None) -> None:
        """Measure now; format and write right after the response is handed to grpc, so
        the log line costs the caller no latency.  ``outcome``: the details of a
        failure, or the response of a unary success."""
        duration_ms = round((time.perf_counter() - start) * 1000, 3)
        asyncio.get_running_loop().call_soon(
            self._write_log, method, request, code, duration_ms, outcome, injected
        )

    def _write_log(self, method: str, request: Message | Undecodable, code: grpc.StatusCode,
                   duration_ms: float, outcome: str | Message | None,
                   injected: FaultRule | None = None) -> None:
        line: dict[str, Any] = {
            "ts": self._clock.now(),
            "method": method,
            "request": self.redacted(request),
            "code": code.name,
            "duration_ms": duration_ms,
        }
        if isinstance(request, Undecodable):
            line["request_bytes"] = request.size
        if injected is not None:
            line["injected"] = {"rule": injected.id, "action": injected.action}
        if self.metrics is not None:
            self.metrics.observe(method, code.name, duration_ms / 1000.0)
        if isinstance(outcome, str):
            line["error"] = outcome
        elif outcome is not None:
            line.update(created_ids(outcome))
        self.stream.write(_JSON.encode(line) + "\n")
        if not getattr(self.stream, "line_buffering", False):  # stderr is line-buffered
            self.stream.flush()

    @staticmethod
    def _status(exc: BaseException, method: str) -> tuple[grpc.StatusCode, str]:
        if isinstance(exc, CsiError):
            code = getattr(grpc.StatusCode, exc.code)
            details = exc.message
        else:
            log.error("unexpected error in %s", method, exc_info=exc)
            code = grpc.StatusCode.INTERNAL
            details = f"internal error: {type(exc).__name__}: {exc}"
        return code, capped(details)

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        method = handler_call_details.method
        wrapped = self._handlers.get(method)
        if wrapped is not None:  # the services are fixed once the server runs
            return wrapped
        handler = await continuation(handler_call_details)
        if handler is None or not method.startswith(CSI_PREFIX):
            return handler
        wrapped = self._wrap(method, handler)
        self._handlers[method] = wrapped
        return wrapped

    def _wrap(self, method: str, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(
                self._wrap_unary(method, handler.unary_unary),
                request_deserializer=tolerant(handler.request_deserializer),
                response_serializer=handler.response_serializer,
            )
        if handler.unary_stream is not None:
            return grpc.unary_stream_rpc_method_handler(
                self._wrap_stream(method, handler.unary_stream),
                request_deserializer=tolerant(handler.request_deserializer),
                response_serializer=handler.response_serializer,
            )
        return handler

    def _wrap_unary(self, method: str, behavior: Any) -> Any:
        async def wrapped(request: Message | Undecodable,
                          context: grpc.aio.ServicerContext) -> Any:
            start, injected = self._begin(), None
            try:
                injected = self._admit(method, request)
                await inject(injected)
                response = await behavior(request, context)
            except Exception as exc:  # every failure is mapped here, nowhere else
                code, details = self._status(exc, method)
                self._log(method, request, code, start, details, injected)
                await context.abort(code, details)
            finally:
                self.activity.finished()
            self._log(method, request, grpc.StatusCode.OK, start, response, injected)
            return response

        return wrapped

    def _wrap_stream(self, method: str, behavior: Any) -> Any:
        async def wrapped(request: Message | Undecodable, context: grpc.aio.ServicerContext
                          ) -> AsyncIterator[Any]:
            start, injected = self._begin(), None
            try:
                injected = self._admit(method, request)
                await inject(injected)
                async for response in behavior(request, context):
                    yield response
            except Exception as exc:
                code, details = self._status(exc, method)
                self._log(method, request, code, start, details, injected)
                await context.abort(code, details)
            finally:
                self.activity.finished()
            self._log(method, request, grpc.StatusCode.OK, start, injected=injected)

        return wrapped
