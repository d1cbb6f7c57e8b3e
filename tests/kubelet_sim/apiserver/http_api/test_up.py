"""`python -m kubelet_sim up` as a user runs it: the cluster keeps running, kubectl drives
it through the kubeconfig it printed, pods get real CNI addresses and CSI volumes, and
SIGTERM tears it down in order (pods deleted, volumes released, plugins stopped)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.fixtures.up_process import PROJECT_ROOT, running_up, wait_for

from .conftest import needs_kubectl

pytestmark = needs_kubectl


def write_lease(directory: Path, name: str, owner_uid: str) -> Path:
    """A Lease manifest in ``directory``, owned (blocking) by Lease "owner" when given."""
    meta: dict = {"name": name}
    if owner_uid:
        meta["ownerReferences"] = [{"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                    "name": "owner", "uid": owner_uid,
                                    "blockOwnerDeletion": True}]
    path = directory / f"lease-{name}.json"
    path.write_text(json.dumps({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                "metadata": meta, "spec": {}}))
    return path


def test_up_serves_kubectl_runs_pods_with_volumes_and_tears_down() -> None:
    with running_up("--nodes", "2") as up:
        state = up.state
        kubeconfig = up.kubeconfig
        assert Path(kubeconfig) == state / "kubeconfig"
        assert os.stat(kubeconfig).st_mode & 0o777 == 0o600

        kubectl = up.kubectl
        nodes = kubectl("get", "nodes").splitlines()[1:]
        assert [n.split()[:2] for n in nodes] == [["node-1", "Ready"], ["node-2", "Ready"]]
        kubectl("apply", "-f", str(PROJECT_ROOT / "examples" / "pod-with-pvc.yaml"))

        def pods() -> dict[str, dict]:
            items = json.loads(kubectl("get", "pods", "-o", "json"))["items"]
            return {p["metadata"]["name"]: p for p in items}

        wait_for(lambda: pods() and all(p["status"].get("phase") == "Running"
                                        for p in pods().values()), what="pods Running")
        for pod in pods().values():
            assert pod["status"]["podIP"].startswith("10.244.")
        claim = json.loads(kubectl("get", "pvc", "db-data", "-o", "json"))
        assert claim["status"]["phase"] == "Bound"
        attached = json.loads(kubectl("get", "volumeattachments", "-o", "json"))["items"]
        assert [a["status"]["attached"] for a in attached] == [True]
        table = kubectl("get", "pods", "-o", "wide").splitlines()
        assert table[0].split()[:7] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP",
                                        "NODE"]
        assert all(row.split()[1:3] == ["1/1", "Running"] for row in table[1:])

        leases = kubectl("get", "leases", "-n", "kube-node-lease").splitlines()
        assert leases[0].split() == ["NAME", "HOLDER", "AGE"]
        assert [row.split()[:2] for row in leases[1:]] == [["node-1", "node-1"],
                                                            ["node-2", "node-2"]]
        # the components' events, as kubectl describe and kubectl get events show them
        claim_events = kubectl("get", "events", "--field-selector",
                               "involvedObject.kind=PersistentVolumeClaim,"
                               "involvedObject.name=db-data")
        assert claim_events.splitlines()[0].split() == ["LAST", "SEEN", "TYPE", "REASON",
                                                        "OBJECT", "MESSAGE"]
        assert "ProvisioningSucceeded" in claim_events
        assert "persistentvolumeclaim/db-data" in claim_events
        described = kubectl("describe", "pvc", "db-data")
        assert "ProvisioningSucceeded" in described.split("Events:", 1)[1]
        # the garbage collector runs as a loop: a foreground delete of an owner returns
        # once its blocking dependent is gone (the owner goes last)
        kubectl("create", "-f", str(write_lease(state, "owner", "")))
        owner_uid = kubectl("get", "lease", "owner", "-o", "jsonpath={.metadata.uid}")
        kubectl("create", "-f", str(write_lease(state, "dependent", owner_uid)))
        kubectl("delete", "lease", "owner", "--cascade=foreground", "--timeout=30s")
        assert "dependent" not in kubectl("get", "leases", "-o", "name")

        def mounted() -> tuple[list[Path], list[Path]]:
            kubelets = [state / "cluster" / n / "kubelet" for n in ("node-1", "node-2")]
            return ([v for k in kubelets for v in (k / "pods").glob("*/volumes/*/*")],
                    [g for k in kubelets
                     for g in k.glob("plugins/kubernetes.io/csi/*/*/globalmount")])

        assert all(mounted())  # published and staged while the pod runs
        rest = up.stop()
        assert up.proc.returncode == 0, rest
        assert "shutting down: deleting pods" in rest and rest.rstrip().endswith("cluster down")
        assert "still terminating" not in rest and "still attached" not in rest
        # unpublished and unstaged on every node: no pod volume dir, no staging dir left;
        # the claim's data stays (a shutdown deletes no PersistentVolumeClaim)
        assert mounted() == ([], [])
        assert len(list((state / "cluster" / "storage-array" / "volumes").iterdir())) == 1
