"""`bench cluster` at a small size: its table holds the rows it promises, and the calls it
counts per pod are exactly the Kubernetes sequence (2 CNI ADD + 2 DEL per pod; with a
claim, the 11 CSI calls of provisioning, attach, stage, publish and back to
DeleteVolume), and each of the three open-loop runs reports its tail and that no pod was
started by a periodic pass."""

from __future__ import annotations

import pytest

from bench import cluster_bench


def test_a_small_run_counts_exactly_the_kubernetes_calls_per_pod(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cluster_bench.main(["--pods", "4", "--pods", "8", "--pvc-pods", "3",
                               "--rate", "10", "--seconds", "0.5"]) == 0

    out = capsys.readouterr().out
    rows = {tuple(line.split()[:2]): line.split() for line in out.splitlines()
            if line.startswith(("pods ", "pvc-pods "))}
    assert set(rows) == {("pods", "4"), ("pods", "8"), ("pvc-pods", "3")}
    for (case, _), cells in rows.items():
        cni_per_pod, csi_per_pod = float(cells[6]), float(cells[7])
        assert cni_per_pod == 4.0
        assert csi_per_pod == (11.0 if case == "pvc-pods" else 0.0)
        assert float(cells[2]) > 0 and float(cells[3]) > 0  # created/s, deleted/s
    assert "bursts, pods started by a periodic pass: pods 4: 0, pods 8: 0, pvc-pods 3: " in out
    runs = [line for line in out.splitlines() if line.startswith("open loop ")]
    assert [line.split(":")[0] for line in runs] == ["open loop 1", "open loop 2",
                                                      "open loop 3"]
    for line in runs:
        assert "5 pods at 10/s, creation → Running p50" in line and ", max " in line
        # every pod was started by its own event, none by a periodic pass of a kubelet
        assert "started by a periodic pass 0 of 5;" in line
    assert "open loop, worst of 3: p99" in out and "started by a periodic pass 0 (target 0)" in out
    assert "resident memory: simulator" in out
