"""The committed Kubernetes schema is k8s.io/api, k8s.io/apimachinery and
k8s.io/apiextensions-apiserver v0.35.7's, and the generated code is current."""

from __future__ import annotations

import hashlib
import importlib

from k8s_protos import generate

# sha256 of each serialized FileDescriptorProto that protoc (libprotoc 35.1, from
# grpcio-tools 1.85.1) produces from upstream's generated.proto at tag v0.35.7 (json_name
# cleared, as the Python generator leaves it out). Comments do not enter a descriptor, so
# ours hash the same only with the same names, numbers, types, labels, options and order.
UPSTREAM_V0_35_7_DESCRIPTOR_SHA256 = {
    "runtime_pb2": "57ac418dbba2e0f795854badb5f0b4781af521c82bc0189927d3aef7c9763ec8",
    "runtime_schema_pb2": "3d2939fd4df1047fb9e325c36c10ca50416a40933d8264d7b4995ca06f5d8c36",
    "resource_pb2": "a573184bbf1db12d8063d7ecf834bbb4e3f2ecbc4a902108a584e60175c1b41c",
    "intstr_pb2": "c63c695a5230c332a0c4cc6c40357e5ae58669848fe8224e8f3c8fec7dbc4184",
    "meta_v1_pb2": "0c4697d73ad24f9a93c3eb4f6e92083cf4cb3c3cc48b3ca3a6fd939f7c5cde79",
    "core_v1_pb2": "40aaeccd37895ddc21bdc9b670af3905c3f6fa3ec031cd1cbcc26a5a929d4650",
    "storage_v1_pb2": "3751c9d3b8a838b477af6ce9ae5497b60a6aaa9207bcb84ee23d0b15af7beef0",
    "coordination_v1_pb2": "c3b65e53eb7c146401f69dda8f73eb4022755f8e1c963b44581f67223b300d6f",
    "networking_v1_pb2": "9efdc414f18ca613135ea0e59735cd707789077dbb1bcce4071223dda98dd03b",
    "events_v1_pb2": "6834072a8e91bf4916ee047273d3a890dadda8811751040256e27f57c2862355",
    "policy_v1_pb2": "062e7b1da372c4f9702def3f3aff87adec1042be1d6c927ec8238fb9ec43e854",
    "authentication_v1_pb2": "b0fedbecc2fb44bebd738f4adf851473430e36eff319ed24d79863d0712491d9",
    "authorization_v1_pb2": "a38446845b4e5e3dcf3a585da804f8a5bf5d61025816bfa7b6dcde5d956dda2a",
    "apps_v1_pb2": "0a49b6ccd23aa7b72562b19ddf0c3fd82eca813002f473c02b9efccb9dcee27c",
    "batch_v1_pb2": "cbb65c5b68a891c4123f4ea24dca0938d693c2e69b4d44596252bd7aa7228185",
    "discovery_v1_pb2": "c5be25110cdf1709a8b1838a89e3a61536c752aa5cf5974c0eafc39ec29cec59",
    "autoscaling_v1_pb2": "87c79ad67d657768ed8ccc7bf513b4fbb490e04fdbd163ea3fe5a9cb3c4b41b3",
    # k8s.io/apiextensions-apiserver's pkg/apis/apiextensions/v1 at the same tag
    "apiextensions_v1_pb2": "acfb13a114ecd2509add50e09bc9a86696cdae69d48fd66664aff68702e57a77",
    "rbac_v1_pb2": "ef5055759fb1448b7181defa67d9682e2dbe3b4a3103a08c2d7b3996856aeb07",
    "scheduling_v1_pb2": "d9ad171e34edb3b4a19c38f9e067fbac2082a5d1a430fdf78db95427e03de323",
}


def test_generated_kubernetes_code_is_what_make_protos_produces() -> None:
    assert generate.check() == []


def test_every_schema_file_is_compiled_into_one_module() -> None:
    assert sorted(UPSTREAM_V0_35_7_DESCRIPTOR_SHA256) == sorted(generate.MODULES.values())


def test_each_kubernetes_descriptor_equals_upstream_v0_35_7() -> None:
    differ = []
    for module, expected in UPSTREAM_V0_35_7_DESCRIPTOR_SHA256.items():
        descriptor = importlib.import_module(f"k8s_protos.{module}").DESCRIPTOR
        if hashlib.sha256(descriptor.serialized_pb).hexdigest() != expected:
            differ.append(module)
    assert differ == []


def test_descriptors_keep_upstream_file_and_package_names() -> None:
    from k8s_protos import core_v1_pb2, meta_v1_pb2

    assert core_v1_pb2.DESCRIPTOR.name == "k8s.io/api/core/v1/generated.proto"
    assert core_v1_pb2.Pod.DESCRIPTOR.full_name == "k8s.io.api.core.v1.Pod"
    assert meta_v1_pb2.ObjectMeta.DESCRIPTOR.full_name == \
        "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta"
