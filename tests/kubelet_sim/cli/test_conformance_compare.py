"""`conformance --compare-to ours`, in process: how two runs' case results are set side by
side (outcomes, the first differing call, cases skipped or run on one side only), and
how the CNI transcript normalises ids and the interleaving of concurrent ADDs."""

from __future__ import annotations

from kubelet_sim.conformance.cni_transcript import CniSteps, result_shape
from kubelet_sim.conformance.compare import (
    END,
    NOT_RUN,
    Difference,
    case_differences,
    differences,
    differences_table,
)
from kubelet_sim.conformance.report import FAILED, PASSED, SKIPPED, CaseResult, Report
from kubelet_sim.utils.trace import Trace


def case(outcome: str, *calls: str, detail: str = "", name: str = "c") -> CaseResult:
    return CaseResult("cni", name, outcome, 0.1, detail, tuple(calls))


def test_the_same_outcome_and_calls_make_no_difference() -> None:
    same = case(PASSED, "c1 ADD bridge → OK", "c1 DEL bridge → OK")
    assert case_differences("c", same, same) == []


def test_a_different_result_code_is_shown_at_the_first_call_that_differs() -> None:
    target = case(FAILED, "c1 ADD bridge → OK", "c1 CHECK bridge → code 7",
                  detail="CHECK failed")
    ours = case(PASSED, "c1 ADD bridge → OK", "c1 CHECK bridge → OK", "c1 DEL bridge → OK")
    assert case_differences("c", target, ours) == [
        Difference("c", "outcome", "FAILED: CHECK failed", "PASSED"),
        Difference("c", "call 2 of 2/3", "c1 CHECK bridge → code 7", "c1 CHECK bridge → OK")]


def test_a_run_that_stops_early_differs_where_its_calls_end() -> None:
    target = case(PASSED, "- STATUS bridge → OK")
    ours = case(PASSED, "- STATUS bridge → OK", "- STATUS loopback → OK")
    assert case_differences("c", target, ours) == [
        Difference("c", "call 2 of 1/2", END, "- STATUS loopback → OK")]


def test_a_case_skipped_on_one_side_differs_in_outcome_only() -> None:
    target = case(SKIPPED, detail="STATUS and GC are CNI 1.1.0")
    ours = case(PASSED, "- STATUS bridge → OK")
    assert case_differences("c", target, ours) == [
        Difference("c", "outcome", "SKIPPED: STATUS and GC are CNI 1.1.0", "PASSED")]


def test_a_case_run_on_one_side_only_is_not_run_on_the_other() -> None:
    target, ours = Report(), Report()
    target.results.append(case(PASSED, name="add-check-del/1.0.0"))
    ours.results += [case(PASSED, name="add-check-del/1.0.0"),
                     case(PASSED, name="add-check-del/1.1.0")]
    found = differences(target, ours)
    assert found == [Difference("add-check-del/1.1.0", "outcome", NOT_RUN, "PASSED")]
    table = differences_table(found, target, ours)
    assert table.splitlines()[-1].startswith(
        "1 of 2 cases differ from ours (1 in outcome, 0 in calls only); ours: 2 cases: 2 passed")


def test_no_differences_say_none() -> None:
    report = Report()
    report.results.append(case(PASSED, "c1 ADD bridge → OK"))
    assert differences_table([], report, report).splitlines()[0] == \
        "DIFFERENCES (the target against ours): none"


def test_cni_steps_name_containers_by_first_appearance_and_keep_codes_only() -> None:
    steps = CniSteps()
    trace = Trace(listeners=[steps.on_event])
    trace.record(node="", component="x", call="cni VERSION bridge")  # no container: "-"
    mark = steps.mark()
    for command, cid, result in [("ADD", "9f3a", "OK"),  # two ADDs interleaved, one DEL
                                 ("ADD", "77b1", "code 11: try again later"),
                                 ("DEL", "9f3a", "OK")]:
        trace.record(node="", component="x", call=f"cni {command} bridge",
                     request={"container_id": cid}, result=result)
    trace.record(node="", component="x", call="csi.Node/NodeStageVolume")  # not CNI
    assert steps.since(mark) == ["c1 ADD bridge → OK", "c1 DEL bridge → OK",
                                 "c2 ADD bridge → code 11"]


def test_the_result_shape_counts_interfaces_and_names_ip_versions_without_addresses() -> None:
    result = {"cniVersion": "1.0.0",
              "interfaces": [{"name": "cni0"}, {"name": "veth1"}, {"name": "eth0"}],
              "ips": [{"address": "10.1.0.5/24"}, {"address": "fd00::5/64"}],
              "routes": [{"dst": "0.0.0.0/0"}]}
    assert result_shape(result) == "result 1.0.0: 3 interfaces, IPv4+IPv6, routes"
    assert result_shape({"cniVersion": "0.2.0", "ip4": {"ip": "10.1.0.5/24"}}) == \
        "result 0.2.0: 0 interfaces, IPv4, no routes"
