"""The call trace: phases numbered from 1, JSON lines naming phase and seq, and printed
request summaries cut only between fields."""

from __future__ import annotations

import json
from pathlib import Path

from kubelet_sim.utils.trace import Trace, read_trace_files, summarize, trace_lines


def test_calls_after_begin_are_numbered_from_1_in_their_phase() -> None:
    trace = Trace(phase="start-up")
    trace.record(node="n", component="kubelet", call="csi.Node/NodeGetInfo")
    trace.record(node="n", component="containerd", call="cni STATUS emu-bridge",
                 result="code 50: not ready")
    trace.begin("apply")
    trace.record(node="n", component="containerd", call="cni ADD emu-bridge")

    assert [(e.phase, e.seq) for e in trace] == [("start-up", 1), ("start-up", 2), ("apply", 1)]
    assert trace_lines(trace, "apply")[0] == (
        "  (before call 1, the cluster's start-up made 2 calls: NodeGetInfo, "
        "cni STATUS emu-bridge (failed))")
    assert trace_lines(trace, "apply")[1].startswith("    1 n ")


def test_trace_file_is_one_json_object_per_call_with_phase_and_seq(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text("left over from an earlier run\n")
    trace = Trace.to_file(path, phase="start-up")
    trace.record(node="n", component="kubelet", call="csi.Node/NodeGetInfo")
    trace.begin("apply")
    trace.record(node="n", component="kubelet", call="csi.Node/NodeStageVolume",
                 request={"volume_id": "v1"})
    trace.close()

    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(e["phase"], e["seq"], e["call"]) for e in lines] == [
        ("start-up", 1, "csi.Node/NodeGetInfo"), ("apply", 1, "csi.Node/NodeStageVolume")]
    assert lines[1]["request"] == {"volume_id": "v1"}


def test_summary_shows_whole_fields_that_fit_and_counts_the_rest() -> None:
    request = {"volume_id": "0123456789abcdef", "node_id": "node-1",
               "volume_capability": {"mount": {}, "access_mode": {"mode": "SINGLE_NODE_WRITER"}},
               "readonly": False, "secrets": {}}

    assert summarize(request, width=41) == \
        "volume_id=0123456789abcdef node_id=node-1 …+2 fields"
    assert summarize(request, width=200) == (
        'volume_id=0123456789abcdef node_id=node-1 volume_capability={"mount":{},'
        '"access_mode":{"mode":"SINGLE_NODE_WRITER"}} readonly=false')


def test_summary_shows_a_first_field_longer_than_the_width_whole() -> None:
    sandbox = "a" * 64
    assert summarize({"container_id": sandbox, "ifname": "eth0"}, width=20) == \
        f"container_id={sandbox} …+1 field"


def test_summary_replaces_the_work_dir_by_its_alias() -> None:
    request = {"staging_target_path": "/tmp/ksim-x/node-1/kubelet/plugins/globalmount"}
    assert summarize(request, aliases={"/tmp/ksim-x": "<work>"}) == \
        "staging_target_path=<work>/node-1/kubelet/plugins/globalmount"


def test_process_trace_files_append_and_merge_in_the_machine_clocks_order(
        tmp_path: Path) -> None:
    kubelet, sidecars = tmp_path / "kubelet-node-1.jsonl", tmp_path / "sidecars.jsonl"
    first = Trace.of_process(kubelet)
    first.record(node="node-1", component="kubelet", call="csi.Node/NodeGetInfo")
    first.close()
    provisioner = Trace.of_process(sidecars)
    provisioner.record(node="control-plane", component="external-provisioner",
                       call="csi.Controller/CreateVolume")
    restarted = Trace.of_process(kubelet)  # a kubelet started again adds to its file
    restarted.record(node="node-1", component="kubelet", call="csi.Node/NodeStageVolume")
    provisioner.close()
    restarted.close()

    merged = read_trace_files([kubelet, sidecars])
    assert [e.call for e in merged] == ["csi.Node/NodeGetInfo", "csi.Controller/CreateVolume",
                                        "csi.Node/NodeStageVolume"]
    assert merged[0].ts <= merged[1].ts <= merged[2].ts
