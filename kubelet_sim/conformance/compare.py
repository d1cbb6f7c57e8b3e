"""``--compare-to ours``: the same cases run against our own plugins (CNI) or driver (CSI),
and where the target behaved differently.

Per case, two kinds of difference: the outcome (passed, failed, skipped) and the
transcript, the normalised calls the case made (see `~kubelet_sim.conformance.report`
and each suite's transcriber); for a transcript, the first step where the two runs
part is shown (not for a case skipped on either side: its calls stop at the skip). A
case run on one side only (``--focus`` is the same for both, so this
happens only when a suite adds cases by what the target claims, as CNI's
``add-check-del/<version>`` does) differs in its outcome (``not run``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import kubelet_sim
from kubelet_sim.conformance.report import SKIPPED, CaseResult, Report

NOT_RUN = "not run"
END = "(no more calls)"
# our CNI executables are named emu-<type>; the reference's <type> runs ours too
OUR_PREFIX = "emu-"


@dataclass(frozen=True)
class Difference:
    case: str
    what: str  # "outcome" or "call <n>"
    target: str
    ours: str


DETAIL_WIDTH = 80  # of a case's detail in the DIFFERENCES table (the first table has all)


def _outcome(result: CaseResult | None) -> str:
    if result is None:
        return NOT_RUN
    detail = result.detail.replace("\n", " ")
    if len(detail) > DETAIL_WIDTH:
        detail = detail[:DETAIL_WIDTH - 1] + "…"
    return f"{result.outcome.upper()}: {detail}" if detail else result.outcome.upper()


def case_differences(case: str, target: CaseResult | None,
                     ours: CaseResult | None) -> list[Difference]:
    found: list[Difference] = []
    if target is None or ours is None or target.outcome != ours.outcome:
        found.append(Difference(case, "outcome", _outcome(target), _outcome(ours)))
    left = target.transcript if target is not None else ()
    right = ours.transcript if ours is not None else ()
    # a case skipped on one side made only the calls before its Skip: nothing to set
    # beside the other side's
    compared = target is not None and ours is not None and SKIPPED not in (
        target.outcome, ours.outcome)
    if left != right and compared:
        at = next((i for i, (a, b) in enumerate(zip(left, right, strict=False)) if a != b),
                  min(len(left), len(right)))
        found.append(Difference(
            case, f"call {at + 1} of {len(left)}/{len(right)}",
            left[at] if at < len(left) else END, right[at] if at < len(right) else END))
    return found


def differences(target: Report, ours: Report) -> list[Difference]:
    mine = {r.case: r for r in ours.results}
    theirs = {r.case: r for r in target.results}
    cases = list(dict.fromkeys([*theirs, *mine]))
    return [d for case in cases for d in case_differences(case, theirs.get(case),
                                                          mine.get(case))]


def differences_table(found: list[Difference], target: Report, ours: Report) -> str:
    rows = [("CASE", "DIFFERS IN", "TARGET", "OURS")] + [
        (d.case, d.what, d.target.replace("\n", " "), d.ours.replace("\n", " ")) for d in found]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = ["DIFFERENCES (the target against ours)" + ("" if found else ": none")]
    lines += ["  ".join([*(cell.ljust(widths[i]) for i, cell in enumerate(row[:3])),
                         row[3]]).rstrip() for row in rows] if found else []
    cases = len({r.case for r in target.results} | {r.case for r in ours.results})
    differing = len({d.case for d in found})
    by_outcome = len({d.case for d in found if d.what == "outcome"})
    lines.append(f"{differing} of {cases} cases differ from ours ({by_outcome} in outcome, "
                 f"{differing - by_outcome} in calls only); ours: "
                 f"{ours.table().splitlines()[-1]}")
    return "\n".join(lines)


def install_our_cni_plugins(bin_dir: Path) -> Path:
    """Our executables in ``bin_dir`` (``python -m cni_plugin.install``, run as a process:
    the simulator never imports the plugins), each also under the reference's name
    (``bridge`` → ``emu-bridge``), so the target's list runs unchanged."""
    root = Path(kubelet_sim.__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-m", "cni_plugin.install", str(bin_dir)],
                          cwd=root, capture_output=True, text=True, check=False, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"could not install our CNI plugins: {done.stderr.strip()}")
    for name in done.stdout.split():
        alias = bin_dir / Path(name).name.removeprefix(OUR_PREFIX)
        if not alias.exists():
            os.symlink(Path(name).name, alias)
    return bin_dir
