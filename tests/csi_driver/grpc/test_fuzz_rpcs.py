"""Property-based fuzzing of every CSI RPC against the real driver process (issue 8).

One driver (``python -m csi_driver`` on a unix socket, as root inside
``unshare --mount --propagation private`` so nothing it mounts reaches the host) serves
the whole module.  Its sandbox is a size-capped tmpfs that exists only in that mount
namespace: canaries around the state dir, and seed volumes, snapshots, attachments,
stages and publishes made first.  Hypothesis draws requests for
every RPC of Identity, Controller, GroupController, SnapshotMetadata and Node from
strategies that mix the seeds' ids and proper target paths with adversarial ids, paths,
maps, capabilities and page tokens (``fuzz_requests``); after every request the
properties in ``fuzz_harness`` are checked: never UNKNOWN, INTERNAL only for a body that
does not decode, nothing changed or mounted outside the state dir and the given paths,
the canaries intact, the driver still answering Probe.

Runs are bounded and derandomized (no example database), so CI sees the same examples
each time.  ``pytest -s`` prints the requests sent and the codes seen per RPC.
Knobs: ``CSI_FUZZ_REPORT=1`` records violations and prints them instead of failing;
``CSI_FUZZ_ALL_BUGS=1`` lets Hypothesis shrink and report every distinct failure, not
only the first; ``CSI_FUZZ_SCALE=N`` runs N times as many examples.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from google.protobuf.descriptor import MethodDescriptor
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

from tests.csi_driver.grpc.fuzz_harness import METHODS, REPORT, Call, FuzzHarness, rpc_name
from tests.csi_driver.grpc.fuzz_requests import (
    Vocabulary,
    capability,
    either,
    ids,
    is_path_like,
    maps,
    paths,
    raw_body,
)
from tests.csi_driver.grpc.fuzz_seeds import EPHEMERAL
from tests.fixtures.driver_process import short_tmpdir, unmount_under

pytestmark = [
    pytest.mark.root,
    pytest.mark.skipif(
        os.geteuid() != 0 or not (shutil.which("unshare") and shutil.which("nsenter")),
        reason="the driver runs as root in its own mount namespace (unshare, nsenter)",
    ),
]

SCALE = int(os.environ.get("CSI_FUZZ_SCALE", "1"))
EXAMPLES_PER_RPC = 40 * SCALE
# The RPCs that turn ids and paths into files and mounts get three times as many.
TOUCHING_FILES = frozenset({"CreateVolume", "CreateSnapshot", "CreateVolumeGroupSnapshot",
                            "NodeStageVolume", "NodeUnstageVolume", "NodePublishVolume",
                            "NodeUnpublishVolume", "NodeExpandVolume"})
LIFECYCLE_EXAMPLES = 250 * SCALE  # CSI_FUZZ_SCALE=2 runs the 500 of before
PATH_ID_LIFECYCLE_EXAMPLES = 150 * SCALE
RAW_EXAMPLES = 300 * SCALE
BY_NAME = {m.name: m for m in METHODS}
# A volume's way through a node and back, each step kept or left out by the draw.
LIFECYCLE = ("ControllerPublishVolume", "NodeStageVolume", "NodePublishVolume",
             "NodePublishVolume", "NodeGetVolumeStats", "NodeExpandVolume", "CreateSnapshot",
             "NodeUnpublishVolume", "NodeUnstageVolume", "ControllerUnpublishVolume",
             "DeleteVolume")


def fuzz_settings(max_examples: int) -> settings:
    return settings(
        max_examples=max_examples,
        deadline=None,
        derandomize=True,
        database=None,
        print_blob=False,
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=os.environ.get("CSI_FUZZ_ALL_BUGS") == "1",
        phases=(Phase.explicit, Phase.generate) if REPORT else tuple(Phase),
    )


@pytest.fixture(scope="module")
def fuzz() -> Iterator[FuzzHarness]:
    root = short_tmpdir("csifz").resolve()
    harness = FuzzHarness(root)
    try:
        harness.start()
        yield harness
    finally:
        print("\n" + harness.summary())
        harness.close()
        unmount_under(root)  # nothing expected: the driver mounted in its own namespace
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("method", METHODS, ids=rpc_name)
def test_every_rpc_answers_fuzzed_requests_within_the_rules(
    fuzz: FuzzHarness, method: MethodDescriptor
) -> None:
    @fuzz_settings(EXAMPLES_PER_RPC * (3 if method.name in TOUCHING_FILES else 1))
    @given(data=st.data())
    def one_request(data: st.DataObject) -> None:
        fuzz.begin()
        message = data.draw(fuzz.requests(method), label="request")
        call = fuzz.typed(method, message)
        assert fuzz.keeps_inside(call), f"the strategies must stay in the sandbox: {call}"
        fuzz.run([call], rpc_name(method))

    one_request()


def lifecycle_values(vocab: Vocabulary, ids_naming_paths: bool
                     ) -> st.SearchStrategy[dict[str, Any]]:
    """The fields every step of one lifecycle shares: one volume, one target, one
    staging path, one capability and one volume_context.  ``ids_naming_paths``: the
    volume id is always one that would name a path (issue 8 item 1), and the volume is
    inline (ephemeral) half the time, so that publish creates it and unpublish deletes it."""
    volume = ids(vocab, "volume")
    context = maps("volume_context", vocab)
    if ids_naming_paths:
        volume_id = st.sampled_from([i for i in vocab.bad_ids if is_path_like(i)])
        volume_context = st.one_of(st.just(EPHEMERAL), context.valid)
        cap = capability(vocab).valid
    else:
        # a seed or a new (inline) volume, or an adversarial id, equally often
        volume_id = st.one_of(volume.valid, st.sampled_from(vocab.bad_ids))
        volume_context = st.one_of(st.just(EPHEMERAL), context.valid, context.adversarial)
        cap = either(capability(vocab))
    return st.fixed_dictionaries({
        "volume_id": volume_id,
        "target_path": either(paths(vocab)),
        "staging_target_path": either(paths(vocab)),
        "volume_capability": cap,
        "volume_context": volume_context,
    }).map(lambda d: {**d, "source_volume_id": d["volume_id"], "volume_path": d["target_path"],
                      "node_id": vocab.node_id})


@pytest.mark.parametrize("ids_naming_paths", [False, True], ids=["any ids", "ids naming paths"])
def test_fuzzed_node_lifecycles_touch_only_the_given_paths(
    fuzz: FuzzHarness, ids_naming_paths: bool
) -> None:
    """Publish after stage, publish twice, snapshot, unpublish after publish, delete: the
    sequences whose later steps act on what the earlier ones made, sharing one id and
    one set of paths."""
    examples = PATH_ID_LIFECYCLE_EXAMPLES if ids_naming_paths else LIFECYCLE_EXAMPLES

    @fuzz_settings(examples)
    @given(data=st.data())
    def lifecycle(data: st.DataObject) -> None:
        fuzz.begin()
        values = fuzz.strategy(f"lifecycle {ids_naming_paths}",
                               lambda v: lifecycle_values(v, ids_naming_paths))
        shared = dict(data.draw(values, label="shared"))
        calls: list[Call] = []
        for step in LIFECYCLE:
            if not data.draw(st.booleans(), label=step):
                continue
            method = BY_NAME[step]
            if calls and calls[-1].method is method:  # the same publish again
                calls.append(calls[-1])
                continue
            # the other fields valid: the shared ones carry what is adversarial
            message = type(drawn := data.draw(fuzz.requests(method, valid=True), label=step))()
            message.CopyFrom(drawn)
            for fd in method.input_type.fields:
                if fd.name not in shared:
                    continue
                value = shared[fd.name]
                if fd.message_type is None:
                    setattr(message, fd.name, value)
                    continue
                field = getattr(message, fd.name)
                if fd.message_type.GetOptions().map_entry:
                    field.clear()
                    field.update(value)
                else:
                    field.CopyFrom(value)
            calls.append(fuzz.typed(method, message))
        assert all(fuzz.keeps_inside(c) for c in calls), "the strategies must stay inside"
        fuzz.run(calls, "lifecycle")

    lifecycle()


def test_raw_request_bodies_are_internal_only_when_undecodable(fuzz: FuzzHarness) -> None:
    """Random bytes, valid bodies cut short or with a byte changed, and string fields
    holding invalid UTF-8, sent to random methods as they are (identity serializers)."""

    @fuzz_settings(RAW_EXAMPLES)
    @given(data=st.data())
    def raw(data: st.DataObject) -> None:
        fuzz.begin()
        method = data.draw(st.sampled_from(METHODS), label="method")
        body = data.draw(fuzz.strategy(f"raw {method.full_name}",
                                       lambda v: raw_body(method.input_type, v)), label="body")
        call = Call.raw(method, body)
        assume(fuzz.keeps_inside(call))  # a changed byte may turn a path into a host one
        fuzz.run([call], "raw")

    raw()
