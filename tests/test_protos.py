"""The committed schema and generated code are the CSI v1.12.0 ones, and current."""

from __future__ import annotations

import hashlib
from typing import Any

from google.protobuf import descriptor_pb2

from csi_protos import csi_pb2, generate, pluginregistration_pb2

# sha256 of the serialized FileDescriptorProto that protoc (libprotoc 35.1, the
# one in grpcio-tools 1.85.1) produces from the upstream csi.proto at tag
# v1.12.0 of container-storage-interface/spec. Comments do not enter the
# descriptor, so ours must hash the same: same names, numbers, types, labels,
# options and declaration order.
UPSTREAM_V1_12_0_DESCRIPTOR_SHA256 = (
    "1c2906dec23c6f360d8bf46c2e68d9e5b91a072fa9235c9f92343ce07d428046"
)


def test_generated_code_is_what_make_protos_produces() -> None:
    assert generate.check() == []


def test_csi_descriptor_equals_upstream_v1_12_0() -> None:
    digest = hashlib.sha256(csi_pb2.DESCRIPTOR.serialized_pb).hexdigest()
    assert digest == UPSTREAM_V1_12_0_DESCRIPTOR_SHA256


def test_csi_schema_has_the_five_services_in_package_csi_v1() -> None:
    fd = descriptor_pb2.FileDescriptorProto.FromString(csi_pb2.DESCRIPTOR.serialized_pb)
    assert fd.package == "csi.v1"
    assert [s.name for s in fd.service] == [
        "Identity", "Controller", "GroupController", "SnapshotMetadata", "Node",
    ]


def test_secret_fields_carry_the_csi_secret_option() -> None:
    field = csi_pb2.CreateVolumeRequest.DESCRIPTOR.fields_by_name["secrets"]
    extensions: Any = field.GetOptions().Extensions  # the stubs type the key too narrowly
    assert extensions[csi_pb2.csi_secret] is True
    assert csi_pb2.csi_secret.number == 1059
    assert csi_pb2.alpha_field.number == 1060


def test_plugin_registration_schema_matches_kubelet_names() -> None:
    svc = pluginregistration_pb2.DESCRIPTOR.services_by_name["Registration"]
    assert svc.full_name == "pluginregistration.Registration"
    assert [m.name for m in svc.methods] == ["GetInfo", "NotifyRegistrationStatus"]
    info = pluginregistration_pb2.PluginInfo.DESCRIPTOR
    assert [(f.name, f.number) for f in info.fields] == [
        ("type", 1), ("name", 2), ("endpoint", 3), ("supported_versions", 4),
    ]
