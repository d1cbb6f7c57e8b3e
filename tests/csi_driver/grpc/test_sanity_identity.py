"""csi-sanity port: "Identity Service" (pkg/sanity/identity.go, 3 specs)."""

from __future__ import annotations

import re

from csi_protos import csi_pb2
from tests.fixtures.driver_process import DriverProcess

KNOWN_SERVICES = {
    csi_pb2.PluginCapability.Service.CONTROLLER_SERVICE,
    csi_pb2.PluginCapability.Service.VOLUME_ACCESSIBILITY_CONSTRAINTS,
    csi_pb2.PluginCapability.Service.GROUP_CONTROLLER_SERVICE,
    csi_pb2.PluginCapability.Service.SNAPSHOT_METADATA_SERVICE,
}
KNOWN_EXPANSION = {
    csi_pb2.PluginCapability.VolumeExpansion.ONLINE,
    csi_pb2.PluginCapability.VolumeExpansion.OFFLINE,
}
PLUGIN_NAME = re.compile(r"^[a-zA-Z][A-Za-z0-9-\\._]{0,61}[a-zA-Z]$")


class TestGetPluginCapabilities:
    def test_should_return_appropriate_capabilities(self, driver: DriverProcess) -> None:
        """Identity Service / GetPluginCapabilities / should return appropriate capabilities."""
        rsp = driver.stubs.identity.GetPluginCapabilities(csi_pb2.GetPluginCapabilitiesRequest())
        assert rsp.capabilities, "all features are on: capabilities must be advertised"
        for cap in rsp.capabilities:
            kind = cap.WhichOneof("type")
            if kind == "service":
                assert cap.service.type in KNOWN_SERVICES, f"unknown service {cap.service.type}"
            elif kind == "volume_expansion":
                assert cap.volume_expansion.type in KNOWN_EXPANSION
            else:
                raise AssertionError(f"unknown capability {cap}")


class TestProbe:
    def test_should_return_appropriate_information(self, driver: DriverProcess) -> None:
        """Identity Service / Probe / should return appropriate information."""
        rsp = driver.stubs.identity.Probe(csi_pb2.ProbeRequest())
        # csi-sanity asks only for an answer; `ready` may be left unset (csi-mini sets it:
        # tests/csi_driver/grpc/test_server.py).
        if rsp.HasField("ready"):
            assert isinstance(rsp.ready.value, bool)


class TestGetPluginInfo:
    def test_should_return_appropriate_information(self, driver: DriverProcess) -> None:
        """Identity Service / GetPluginInfo / should return appropriate information."""
        rsp = driver.stubs.identity.GetPluginInfo(csi_pb2.GetPluginInfoRequest())
        assert rsp.name
        assert len(rsp.name) <= 63
        assert PLUGIN_NAME.match(rsp.name), rsp.name
        assert rsp.vendor_version, "vendor_version is REQUIRED"
