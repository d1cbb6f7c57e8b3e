"""`kubectl logs`, `exec`, `attach` and `port-forward` on a simulated pod: no container
runs, so each fails with a clear message (non-zero exit), not a missing-path 404."""

from __future__ import annotations

import pytest

from .conftest import POD, Served, needs_kubectl

pytestmark = needs_kubectl


@pytest.mark.parametrize(("args", "what"), [
    (("logs", "web"), "pod logs are not available"),
    (("exec", "web", "--", "true"), "exec into a container is not available"),
    (("attach", "web"), "attach to a container is not available"),
    (("port-forward", "pod/web", "18080:80"), "port forwarding to a pod is not available"),
])
def test_container_access_is_refused_clearly(served: Served, args: tuple[str, ...],
                                             what: str) -> None:
    served.kubectl("apply", "-f", "-", stdin=POD)
    pod = served.api.get("Pod", "web", "default")  # as a kubelet would have reported it
    pod.status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    served.api.update_status(pod)
    done = served.kubectl(*args, check=False, timeout=20)
    assert done.returncode != 0
    assert what in done.stderr, done.stderr
    assert "kubelet-sim runs no containers" in done.stderr


def test_logs_of_a_missing_pod_is_not_found(served: Served) -> None:
    done = served.kubectl("logs", "nobody", check=False)
    assert done.returncode != 0
    assert 'pods "nobody" not found' in done.stderr


def test_the_log_status_is_a_bad_request(served: Served) -> None:
    served.kubectl("apply", "-f", "-", stdin=POD)
    done = served.kubectl("get", "--raw", "/api/v1/namespaces/default/pods/web/log",
                          check=False)
    assert done.returncode != 0
    assert "Error from server (BadRequest): pod logs are not available" in done.stderr
