"""PodDisruptionBudget arithmetic: what a budget covers, how many pods it wants healthy,
and how long an eviction keeps a pod out of the healthy count."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kubelet_sim.api.model import Resource, format_time, new
from kubelet_sim.apiserver.disruption_budget import computed_status, covers

NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)


def pod(name: str, ready: bool = True, labels: dict[str, str] | None = None) -> Resource:
    obj = new("Pod", name, "default", labels=labels or {"app": "web"},
              spec={"containers": [{"name": "c", "image": "busybox"}]})
    obj.status = {"phase": "Running",
                  "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    return obj


def budget(selector: Any = None, **spec: Any) -> Resource:
    obj = new("PodDisruptionBudget", "web", "default",
              spec={"selector": {"matchLabels": {"app": "web"}} if selector is None
                    else selector, **spec})
    obj.metadata.generation = 1
    return obj


@pytest.mark.parametrize(("spec", "desired", "allowed"), [
    ({"minAvailable": 2}, 2, 1),
    ({"minAvailable": "50%"}, 2, 1),   # 50% of 4, rounded up
    ({"maxUnavailable": 1}, 3, 0),
    ({"maxUnavailable": "30%"}, 2, 1),  # 4 - ceil(1.2)
])
def test_the_healthy_pods_a_budget_wants_count_from_its_selected_pods(
        spec: dict[str, Any], desired: int, allowed: int) -> None:
    pods = [pod("a"), pod("b"), pod("c"), pod("d", ready=False)]
    status = computed_status(budget(**spec), pods, NOW)
    assert (status["expectedPods"], status["currentHealthy"], status["desiredHealthy"],
            status["disruptionsAllowed"]) == (4, 3, desired, allowed)


def test_an_empty_or_missing_selector_covers_no_pod() -> None:
    assert covers(budget(), pod("a"))
    assert not covers(budget(selector={}), pod("a"))
    assert not covers(budget(selector={"matchLabels": {"app": "db"}}), pod("a"))


def test_a_recently_evicted_pod_is_not_healthy_until_its_entry_times_out() -> None:
    pdb = budget(minAvailable=1)
    pdb.status = {"disruptedPods": {"a": format_time(NOW - timedelta(seconds=30))}}
    fresh = computed_status(pdb, [pod("a"), pod("b")], NOW)
    assert fresh["currentHealthy"] == 1 and list(fresh["disruptedPods"]) == ["a"]
    later = computed_status(pdb, [pod("a"), pod("b")], NOW + timedelta(minutes=3))
    assert later["currentHealthy"] == 2 and "disruptedPods" not in later
