"""The floor under ``bench csi``: a bare grpc.aio server with the same generated CSI stubs
and nothing else — no interceptor, no validation, no log line, no state.  Probe answers
an empty ProbeResponse, CreateVolume a Volume with a fresh id and the requested size,
DeleteVolume an empty response.  Whatever a real Python driver adds per call sits on
top of what this process costs, so its pairs/s is the most grpcio can give.

    .venv/bin/python -m bench.grpc_floor --endpoint unix:///tmp/x/csi.sock [--registered]

The services go in as generic handlers only, as our driver registers them (grpc.aio
otherwise waits on one pending request per registered method for every call);
``--registered`` keeps the generated registration for comparison.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import uuid
from typing import Any

import grpc

from csi_protos import csi_pb2, csi_pb2_grpc


class FloorIdentity(csi_pb2_grpc.IdentityServicer):
    async def GetPluginInfo(self, request: csi_pb2.GetPluginInfoRequest, context: Any
                            ) -> csi_pb2.GetPluginInfoResponse:
        return csi_pb2.GetPluginInfoResponse(name="grpc-floor.bench", vendor_version="0")

    async def Probe(self, request: csi_pb2.ProbeRequest, context: Any) -> csi_pb2.ProbeResponse:
        return csi_pb2.ProbeResponse()


class FloorController(csi_pb2_grpc.ControllerServicer):
    async def CreateVolume(self, request: csi_pb2.CreateVolumeRequest, context: Any
                           ) -> csi_pb2.CreateVolumeResponse:
        return csi_pb2.CreateVolumeResponse(volume=csi_pb2.Volume(
            volume_id=str(uuid.uuid4()), capacity_bytes=request.capacity_range.required_bytes))

    async def DeleteVolume(self, request: csi_pb2.DeleteVolumeRequest, context: Any
                           ) -> csi_pb2.DeleteVolumeResponse:
        return csi_pb2.DeleteVolumeResponse()


class _GenericOnly:
    """What the generated ``add_*Servicer_to_server`` see: generic handlers go through,
    the registered-method table is dropped (the generic handler serves those methods)."""

    def __init__(self, server: grpc.aio.Server) -> None:
        self._server = server

    def add_generic_rpc_handlers(self, handlers: tuple[grpc.GenericRpcHandler, ...]) -> None:
        self._server.add_generic_rpc_handlers(handlers)

    def add_registered_method_handlers(self, service: str, handlers: dict[str, object]) -> None:
        pass


async def serve(endpoint: str, registered: bool) -> None:
    server = grpc.aio.server()
    target: Any = server if registered else _GenericOnly(server)
    csi_pb2_grpc.add_IdentityServicer_to_server(FloorIdentity(), target)
    csi_pb2_grpc.add_ControllerServicer_to_server(FloorController(), target)
    server.add_insecure_port(endpoint)
    await server.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await server.stop(1.0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.grpc_floor", description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", required=True, help="unix:///path/to/csi.sock")
    parser.add_argument("--registered", action="store_true",
                        help="keep the generated registered-method handlers too")
    args = parser.parse_args(argv)
    asyncio.run(serve(args.endpoint, args.registered))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
