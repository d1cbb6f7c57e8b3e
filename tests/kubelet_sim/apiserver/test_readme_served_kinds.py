"""The README's list of served kinds says exactly what discovery serves: every kind and
subresource the API server answers is named there, and every kind named there is served."""

from __future__ import annotations

import re
from pathlib import Path

from kubelet_sim.apiserver.http.discovery import group_versions, subresources

README = Path(__file__).resolve().parents[3] / "README.md"


def served_block() -> str:
    text = README.read_text()
    start = text.index("- the kinds served, with their subresources")
    end = text.index("a write of a `status` subresource", start)
    return text[start:end]


def test_every_served_kind_and_subresource_is_named_in_the_readme() -> None:
    block = served_block()
    words = set(re.findall(r"[A-Za-z]+", block))
    missing = [r.kind for resources in group_versions().values() for r in resources
               if r.kind not in words]
    assert not missing, f"served but not in README: {missing}"
    subs = {s.name for resources in group_versions().values() for r in resources
            for s in subresources(r)}
    assert not sorted(subs - words), f"subresources not in README: {sorted(subs - words)}"


def test_every_group_version_in_the_readme_is_served() -> None:
    named = set(re.findall(r"\b([a-z0-9.]+\.k8s\.io/v1|apps/v1|batch/v1|core/v1|policy/v1)",
                           served_block()))
    served = {("core/v1" if gv == "v1" else gv) for gv in group_versions()}
    assert named <= served, f"named in README, not served: {sorted(named - served)}"
    assert served <= named, f"served, not named in README: {sorted(served - named)}"
