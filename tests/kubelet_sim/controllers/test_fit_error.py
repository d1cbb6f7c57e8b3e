"""The scheduler's FailedScheduling message, as kube-scheduler's FitError and the
DefaultPreemption plugin word it."""

from __future__ import annotations

from collections import Counter

from kubelet_sim.api.model import Resource
from kubelet_sim.controllers.fit_error import fit_error
from kubelet_sim.controllers.volume_limits import EXCEEDED

TAINT = "node(s) had untolerated taint {node.kubernetes.io/unreachable: }"
SELECTOR = "node(s) didn't match Pod's node affinity/selector"


def pod(**spec: object) -> Resource:
    return Resource.from_dict({"kind": "Pod", "apiVersion": "v1",
                               "metadata": {"name": "p", "namespace": "default"},
                               "spec": {"containers": [{"name": "c"}], **spec}})


def test_a_taint_on_the_only_node_is_not_helped_by_preemption() -> None:
    assert fit_error(pod(), 1, Counter({TAINT: 1})) == (
        "0/1 nodes are available: 1 node(s) had untolerated taint "
        "{node.kubernetes.io/unreachable: }. preemption: 0/1 nodes are available: "
        "1 Preemption is not helpful for scheduling.")


def test_the_reasons_are_sorted_as_text_so_by_count_first() -> None:
    message = fit_error(pod(), 3, Counter({SELECTOR: 2, TAINT: 1}))
    assert message.startswith(f"0/3 nodes are available: 1 {TAINT}, 2 {SELECTOR}. ")


def test_a_pre_filter_rejection_comes_first_and_no_node_is_counted() -> None:
    assert fit_error(pod(), 3, Counter(), "pod has unbound immediate PersistentVolumeClaims") == (
        "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.")


def test_a_node_over_its_volume_limit_has_no_victims_to_preempt() -> None:
    assert fit_error(pod(), 2, Counter({EXCEEDED: 1, TAINT: 1})).endswith(
        "preemption: 0/2 nodes are available: 1 No preemption victims found for incoming "
        "pod, 1 Preemption is not helpful for scheduling.")


def test_a_pod_that_never_preempts_is_not_eligible() -> None:
    assert fit_error(pod(preemptionPolicy="Never"), 4, Counter({SELECTOR: 4})) == (
        f"0/4 nodes are available: 4 {SELECTOR}. preemption: not eligible due to "
        "preemptionPolicy=Never.")
