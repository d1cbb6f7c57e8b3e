"""The simulator's CSI boundary: a small typed async client for one CSI driver socket.

`CsiClient.call` sends any Identity, Controller, GroupController or Node request to the
method that takes it (found in the CSI descriptor) and returns the response message, or
raises `CsiError` carrying the gRPC status code. Every call is recorded to the `Trace` (node,
component, ``csi.<Service>/<Method>``, a request summary with the ``csi_secret`` fields
left out, ``OK`` or ``<CODE>: <message>``, duration); the trace's request observers
also get the whole request (how the conformance suite sees the secrets a call carried).

Two backends share that surface: `GrpcCsiClient` talks grpc.aio over a unix socket (the real
driver, or any CSI driver), `kubelet_sim.testing.fake_csi.FakeCsiClient` answers in memory for fast
tests. Callers that act as a different component (external-provisioner, ...) take a view
with `with_component`; views share the connection.
"""

from __future__ import annotations

import copy
import time
from abc import ABC, abstractmethod
from typing import Any, TypeVar

import grpc
from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message

from csi_protos import csi_pb2, csi_pb2_grpc
from kubelet_sim.utils.trace import Trace

# The kubelet's CSI timeout for node operations (pkg/volume/csi: csiTimeout = 2 minutes).
NODE_CALL_TIMEOUT_SECONDS = 120.0

# Codes after which the operation may still be in progress on the driver side
# (the kubelet's isFinalError): the volume is then "uncertain", not "failed".
NON_FINAL_CODES = frozenset({
    grpc.StatusCode.CANCELLED,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
    grpc.StatusCode.ABORTED,
})

R = TypeVar("R", bound=Message)


class CsiError(Exception):
    """A CSI call that did not return OK: the status code and message the driver sent."""

    def __init__(self, call: str, code: grpc.StatusCode, message: str) -> None:
        super().__init__(f"{call}: {code.name}: {message}")
        self.call = call
        self.code = code
        self.message = message

    @property
    def final(self) -> bool:
        """False when the driver may still be working on it (timeouts, ABORTED, ...)."""
        return self.code not in NON_FINAL_CODES


class DriverNotRegistered(LookupError):
    """No CSI driver of that name is registered on the node (yet): a transient failure."""


def _is_secret(field: Any) -> bool:
    return bool(field.GetOptions().Extensions[csi_pb2.csi_secret])


def request_summary(message: Message) -> dict[str, Any]:
    """The request as a dict (proto field names), with every csi_secret field left out."""
    summary: dict[str, Any] = MessageToDict(message, preserving_proto_field_name=True)
    _drop_secrets(message, summary)
    return summary


def _drop_secrets(message: Message, summary: dict[str, Any]) -> None:
    for field in message.DESCRIPTOR.fields:
        if field.name not in summary:
            continue
        if _is_secret(field):
            del summary[field.name]
        elif field.message_type is not None and not field.message_type.GetOptions().map_entry:
            value = getattr(message, field.name)
            if field.is_repeated:
                for item, item_summary in zip(value, summary[field.name], strict=False):
                    _drop_secrets(item, item_summary)
            else:
                _drop_secrets(value, summary[field.name])


def _method_index() -> dict[str, tuple[str, str, str]]:
    """Request message name -> (service, method, response message name), from the CSI
    descriptor: every request type is used by exactly one method."""
    index: dict[str, tuple[str, str, str]] = {}
    for service in csi_pb2.DESCRIPTOR.services_by_name.values():
        for method in service.methods:
            index[method.input_type.full_name] = (
                service.name, method.name, method.output_type.full_name)
    return index


METHODS = _method_index()


class CsiClient(ABC):
    """Every CSI call the simulator makes, traced; backends implement `_invoke`."""

    def __init__(
        self,
        *,
        trace: Trace,
        node: str,
        component: str = "kubelet",
        timeout: float = NODE_CALL_TIMEOUT_SECONDS,
    ) -> None:
        self.trace = trace
        self.node = node
        self.component = component
        self.timeout = timeout

    def with_component(self, component: str, *, timeout: float | None = None) -> CsiClient:
        """A view of the same connection that records its calls as another component."""
        view = copy.copy(self)
        view.component = component
        if timeout is not None:
            view.timeout = timeout
        return view

    @abstractmethod
    async def _invoke(self, service: str, method: str, request: Message, timeout: float) -> Message:
        """Send one request; raise `CsiError` for any non-OK status."""

    async def close(self) -> None:  # noqa: B027 - a no-op unless the backend holds a connection
        """Release the connection (shared by every view)."""

    async def call(self, request: Message, response_type: type[R],
                   timeout: float | None = None) -> R:
        """Send ``request`` to the CSI method that takes it (``CreateVolumeRequest`` goes to
        ``Controller/CreateVolume``) and return its ``response_type`` answer; the call and
        its result are traced. ``timeout`` defaults to the client's."""
        try:
            service, method, answer = METHODS[request.DESCRIPTOR.full_name]
        except KeyError:
            raise TypeError(f"{request.DESCRIPTOR.full_name} is not a CSI request") from None
        if answer != response_type.DESCRIPTOR.full_name:
            raise TypeError(f"{service}/{method} answers {answer}, not "
                            f"{response_type.DESCRIPTOR.full_name}")
        call = f"csi.{service}/{method}"
        started = time.monotonic()
        try:
            response = await self._invoke(service, method, request, timeout or self.timeout)
        except CsiError as err:
            self._record(call, request, f"{err.code.name}: {err.message}", started)
            raise
        self._record(call, request, "OK", started)
        if not isinstance(response, response_type):
            raise TypeError(f"{call} answered {type(response).__name__}")
        return response

    def _record(self, call: str, request: Message, result: str, started: float) -> None:
        event = self.trace.record(
            node=self.node, component=self.component, call=call,
            request=request_summary(request), result=result,
            duration_ms=(time.monotonic() - started) * 1000.0,
        )
        for observe in self.trace.request_observers:
            observe(event, request)


def socket_target(endpoint: str) -> str:
    """A grpc target for a CSI endpoint given as ``unix:///abs/path`` or a bare path."""
    if endpoint.startswith("unix://"):
        return endpoint
    if endpoint.startswith("/"):
        return f"unix://{endpoint}"
    raise ValueError(f"CSI endpoint must be unix:///abs/path or an absolute path: {endpoint!r}")


class GrpcCsiClient(CsiClient):
    """A CSI client over grpc.aio to one driver socket."""

    _STUBS = {
        "Identity": csi_pb2_grpc.IdentityStub,
        "Controller": csi_pb2_grpc.ControllerStub,
        "GroupController": csi_pb2_grpc.GroupControllerStub,
        "Node": csi_pb2_grpc.NodeStub,
    }

    def __init__(self, endpoint: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.endpoint = endpoint
        self._channel = grpc.aio.insecure_channel(socket_target(endpoint))
        self._stubs = {name: make(self._channel) for name, make in self._STUBS.items()}

    async def _invoke(self, service: str, method: str, request: Message, timeout: float) -> Message:
        rpc = getattr(self._stubs[service], method)
        try:
            response: Message = await rpc(request, timeout=timeout)
        except grpc.aio.AioRpcError as err:
            raise CsiError(f"csi.{service}/{method}", err.code(), err.details() or "") from err
        return response

    async def close(self) -> None:
        await self._channel.close(None)
