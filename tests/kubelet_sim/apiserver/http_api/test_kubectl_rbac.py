"""Authentication and RBAC as kube-apiserver enforces them, driven with the real kubectl
against one `kubelet-sim apiserver` process: ServiceAccount tokens authenticate (and
stop doing so when expired, forged or their ServiceAccount is gone), every request but
the admin's is authorized by the Roles and bindings, denials are kube-apiserver's 403
Status, and `kubectl auth can-i` answers from the same rules."""

from __future__ import annotations

import json
import ssl
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import jwt
import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.fixtures.apiserver_process import ApiServerProcess, running_apiserver
from tests.fixtures.up_process import KUBECTL, PROJECT_ROOT

pytestmark = pytest.mark.skipif(not KUBECTL.exists(),
                                reason="kubectl not installed: run `make kubectl`")

KUBELET_RBAC = PROJECT_ROOT / "deploy" / "kubelet-rbac.yaml"
ISSUER = "https://kubernetes.default.svc.cluster.local"


def _decoded(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode()


class Cluster:
    def __init__(self, server: ApiServerProcess) -> None:
        self.server = server
        self.kubeconfig = server.kubeconfig
        config = yaml.safe_load(self.kubeconfig.read_text())
        self.url: str = config["clusters"][0]["cluster"]["server"]

    def run(self, *args: str, token: str = "", stdin: str | None = None
            ) -> subprocess.CompletedProcess[str]:
        auth = ["--token", token] if token else []
        return subprocess.run([str(KUBECTL), "--kubeconfig", str(self.kubeconfig), *auth,
                               *args], input=stdin, capture_output=True, text=True,
                              timeout=30, check=False)

    def ok(self, *args: str, token: str = "", stdin: str | None = None) -> str:
        done = self.run(*args, token=token, stdin=stdin)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    def refused(self, *args: str, token: str = "") -> str:
        done = self.run(*args, token=token)
        assert done.returncode != 0, done.stdout
        return done.stderr.strip()

    def can_i(self, *args: str, token: str = "") -> str:
        """`kubectl auth can-i`'s answer (it exits 1 on "no")."""
        done = self.run("auth", "can-i", *args, token=token)
        assert done.returncode in (0, 1), done.stderr
        return done.stdout.strip()

    def admin_token(self) -> str:
        token: str = yaml.safe_load(self.kubeconfig.read_text())["users"][0]["user"]["token"]
        return token

    def whoami(self, token: str) -> dict[str, str]:
        """`kubectl auth whoami`'s table: attribute -> value."""
        rows = self.ok("auth", "whoami", token=token).splitlines()[1:]
        return {a.strip(): v.strip() for a, v in (row.rsplit("  ", 1) for row in rows)}

    def service_account(self, namespace: str, name: str) -> str:
        """A new ServiceAccount and a token for it (TokenRequest, as `kubectl create token`)."""
        self.ok("create", "serviceaccount", name, "-n", namespace)
        return self.ok("create", "token", name, "-n", namespace).strip()

    def raw(self, method: str, path: str, token: str,
            headers: dict[str, str] | None = None, body: Any = None) -> tuple[int, Any]:
        """The code and the answer (JSON decoded, or the text: /healthz is "ok")."""
        tls = ssl.create_default_context(cafile=str(self.server.state / "pki" / "ca.crt"))
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.url}{path}", data=data, method=method,
                                         headers={"Authorization": f"Bearer {token}",
                                                  "Content-Type": "application/json",
                                                  **(headers or {})})
        try:
            with urllib.request.urlopen(request, context=tls, timeout=10) as answer:
                return answer.status, _decoded(answer.read())
        except urllib.error.HTTPError as e:
            return e.code, _decoded(e.read())

    def signed(self, claims: dict[str, Any], key: Any = None) -> str:
        """A JWT signed with the server's ServiceAccount key (or ``key``)."""
        if key is None:
            key = serialization.load_pem_private_key(
                (self.server.state / "pki" / "sa.key").read_bytes(), None)
        return jwt.encode(claims, key, algorithm="RS256")

    def claims_of(self, token: str) -> dict[str, Any]:
        decoded: dict[str, Any] = jwt.decode(token, options={"verify_signature": False})
        return decoded


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with running_apiserver() as server:
        yield Cluster(server)


def _forbidden(user: str, verb: str, resource: str, namespace: str = "",
               name: str = "") -> str:
    where = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    named = f' "{name}"' if name else ""
    return (f'Error from server (Forbidden): {resource}{named} is forbidden: User "{user}" '
            f'cannot {verb} resource "{resource}" in API group "" {where}')


# -- authentication -----------------------------------------------------------------------

def test_a_service_account_token_authenticates_as_the_service_account(cluster: Cluster) -> None:
    token = cluster.service_account("default", "who")
    rows = cluster.whoami(token)
    assert rows["Username"] == "system:serviceaccount:default:who"
    assert rows["Groups"] == ("[system:serviceaccounts system:serviceaccounts:default "
                              "system:authenticated]")
    uid = cluster.ok("get", "serviceaccount", "who", "-o", "jsonpath={.metadata.uid}")
    assert rows["UID"] == uid


def test_the_admin_token_is_the_cluster_admin_in_system_masters(cluster: Cluster) -> None:
    out = cluster.ok("auth", "whoami")
    assert "kubernetes-admin" in out and "system:masters" in out


def test_an_expired_or_not_yet_valid_service_account_token_is_401(cluster: Cluster) -> None:
    token = cluster.service_account("default", "expired")
    claims = cluster.claims_of(token)
    now = int(time.time())
    # past its expiry by more than the minute of leeway kube-apiserver allows
    expired = cluster.signed({**claims, "iat": now - 7200, "nbf": now - 7200,
                              "exp": now - 120})
    assert cluster.raw("GET", "/api/v1/namespaces/default/pods", token)[0] == 403
    code, status = cluster.raw("GET", "/api/v1/namespaces/default/pods", expired)
    assert (code, status["reason"], status["message"]) == (401, "Unauthorized", "Unauthorized")
    assert cluster.refused("auth", "whoami", token=expired) == (
        "error: You must be logged in to the server (Unauthorized)")
    not_yet = cluster.signed({**claims, "nbf": now + 600, "exp": now + 3600})
    assert cluster.raw("GET", "/api", not_yet)[0] == 401
    # within the minute of leeway either side, still good
    assert cluster.raw("GET", "/api", cluster.signed({**claims, "exp": now - 5}))[0] == 200


def test_a_token_not_signed_by_the_server_is_401(cluster: Cluster) -> None:
    claims = cluster.claims_of(cluster.service_account("default", "forged"))
    other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    forged = cluster.signed(claims, other_key)
    assert cluster.raw("GET", "/api", forged)[0] == 401
    wrong_audience = cluster.signed({**claims, "aud": ["https://elsewhere"]})
    assert cluster.raw("GET", "/api", wrong_audience)[0] == 401
    assert cluster.raw("GET", "/api", cluster.signed(claims))[0] == 200


def test_a_deleted_service_accounts_token_is_401(cluster: Cluster) -> None:
    token = cluster.service_account("default", "gone")
    assert cluster.raw("GET", "/api", token)[0] == 200
    cluster.ok("delete", "serviceaccount", "gone")
    assert cluster.raw("GET", "/api", token)[0] == 401
    cluster.ok("create", "serviceaccount", "gone")  # the same name, another uid
    assert cluster.raw("GET", "/api", token)[0] == 401


def test_a_token_bound_to_a_deleted_secret_is_401(cluster: Cluster) -> None:
    cluster.ok("create", "serviceaccount", "bound")
    cluster.ok("create", "secret", "generic", "binder", "--from-literal=a=b")
    token = cluster.ok("create", "token", "bound", "--bound-object-kind=Secret",
                       "--bound-object-name=binder").strip()
    assert cluster.raw("GET", "/api", token)[0] == 200
    cluster.ok("delete", "secret", "binder")
    assert cluster.raw("GET", "/api", token)[0] == 401


def test_a_pod_bound_token_names_its_pod_and_outlives_its_deletion_by_a_minute_at_most(
        cluster: Cluster) -> None:
    cluster.ok("create", "serviceaccount", "runner")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "runner"},
           "spec": {"serviceAccountName": "runner", "nodeName": "elsewhere",
                    "containers": [{"name": "c", "image": "busybox"}]}}
    cluster.ok("create", "-f", "-", stdin=json.dumps(pod))
    token = cluster.ok("create", "token", "runner", "--bound-object-kind=Pod",
                       "--bound-object-name=runner").strip()
    uid = cluster.ok("get", "pod", "runner", "-o", "jsonpath={.metadata.uid}")
    rows = cluster.whoami(token)
    assert (rows["Extra: authentication.kubernetes.io/pod-name"],
            rows["Extra: authentication.kubernetes.io/pod-uid"]) == ("[runner]", f"[{uid}]")
    # deleted gracefully (its node would stop it): the token still works meanwhile
    cluster.ok("delete", "pod", "runner", "--wait=false")
    assert cluster.ok("get", "pod", "runner", "-o", "jsonpath={.metadata.deletionTimestamp}")
    assert cluster.raw("GET", "/api", token)[0] == 200
    cluster.ok("delete", "pod", "runner", "--force", "--grace-period=0")
    assert cluster.raw("GET", "/api", token)[0] == 401


# -- authorization ------------------------------------------------------------------------

def test_a_service_account_may_not_list_secrets_until_a_role_binding_allows_it(
        cluster: Cluster) -> None:
    cluster.ok("create", "namespace", "team-a")
    token = cluster.service_account("team-a", "reader")
    user = "system:serviceaccount:team-a:reader"
    assert cluster.refused("get", "secrets", "-n", "team-a", token=token) == _forbidden(
        user, "list", "secrets", "team-a")
    assert cluster.refused("get", "secret", "x", "-n", "team-a", token=token) == _forbidden(
        user, "get", "secrets", "team-a", "x")
    cluster.ok("create", "role", "secret-reader", "-n", "team-a", "--verb=get,list",
               "--resource=secrets")
    cluster.ok("create", "rolebinding", "reader", "-n", "team-a", "--role=secret-reader",
               "--serviceaccount=team-a:reader")
    assert "No resources found" in cluster.run("get", "secrets", "-n", "team-a",
                                               token=token).stderr
    # a RoleBinding grants nothing outside its namespace
    assert cluster.refused("get", "secrets", "-n", "default", token=token) == _forbidden(
        user, "list", "secrets", "default")
    assert cluster.refused("get", "secrets", "-A", token=token) == _forbidden(
        user, "list", "secrets")


def test_a_cluster_role_binding_allows_in_every_namespace(cluster: Cluster) -> None:
    token = cluster.service_account("default", "everywhere")
    cluster.ok("create", "clusterrole", "secret-lister", "--verb=list", "--resource=secrets")
    cluster.ok("create", "clusterrolebinding", "everywhere", "--clusterrole=secret-lister",
               "--serviceaccount=default:everywhere")
    for args in (("-n", "kube-system"), ("-A",)):
        assert cluster.run("get", "secrets", *args, token=token).returncode == 0
    # list, not get, and not delete
    assert cluster.refused("delete", "secret", "x", "-n", "kube-system", token=token) == \
        _forbidden("system:serviceaccount:default:everywhere", "delete", "secrets",
                   "kube-system", "x")


def test_a_denial_is_kube_apiservers_forbidden_status(cluster: Cluster) -> None:
    token = cluster.service_account("default", "denied")
    code, status = cluster.raw("GET", "/apis/apps/v1/namespaces/default/deployments/web",
                               token)
    assert code == 403
    assert status == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'deployments.apps "web" is forbidden: User '
                   '"system:serviceaccount:default:denied" cannot get resource '
                   '"deployments" in API group "apps" in the namespace "default"',
        "reason": "Forbidden", "details": {"name": "web", "group": "apps",
                                           "kind": "deployments"},
        "code": 403}
    code, status = cluster.raw("GET", "/metrics", token)
    assert (code, status["message"], status["details"]) == (
        403, 'forbidden: User "system:serviceaccount:default:denied" cannot get path '
        '"/metrics"', {})
    # authorization comes before routing: a path the server lacks is still a 403
    assert cluster.raw("GET", "/api/v1/namespaces/default/nothings", token)[0] == 403


def test_a_binding_to_a_missing_role_says_so_in_the_denial(cluster: Cluster) -> None:
    token = cluster.service_account("default", "dangling")
    cluster.ok("create", "rolebinding", "dangling", "--role=absent",
               "--serviceaccount=default:dangling")
    assert cluster.refused("get", "configmaps", token=token).endswith(
        'in the namespace "default": RBAC: role.rbac.authorization.k8s.io "absent" not found')


def test_every_authenticated_user_may_discover_and_review_itself(cluster: Cluster) -> None:
    token = cluster.service_account("default", "plain")
    assert "pods" in cluster.ok("api-resources", "--cached=false", token=token)
    assert cluster.raw("GET", "/version", token)[0] == 200
    assert cluster.raw("GET", "/healthz", token)[0] == 200
    names = cluster.ok("get", "clusterrolebindings", "-o", "name").split()
    for bootstrap in ("cluster-admin", "system:discovery", "system:basic-user",
                      "system:public-info-viewer"):
        assert f"clusterrolebinding.rbac.authorization.k8s.io/{bootstrap}" in names


def test_the_view_role_aggregates_what_is_labelled_for_it(cluster: Cluster) -> None:
    token = cluster.service_account("default", "viewer")
    cluster.ok("create", "rolebinding", "viewer", "--clusterrole=view",
               "--serviceaccount=default:viewer")
    assert cluster.run("get", "pods", token=token).returncode == 0
    assert cluster.can_i("list", "secrets", token=token) == "no"  # view never has them
    cluster.ok("apply", "-f", "-", stdin="""
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: secret-viewer
  labels: {rbac.authorization.k8s.io/aggregate-to-view: "true"}
rules:
- {apiGroups: [""], resources: [secrets], verbs: [list]}
""")
    assert cluster.can_i("list", "secrets", token=token) == "yes"
    assert cluster.run("get", "secrets", token=token).returncode == 0
    assert cluster.can_i("list", "secrets", "-n", "kube-system", token=token) == "no"


# -- auth can-i, impersonation ------------------------------------------------------------

def test_auth_can_i_answers_yes_and_no_from_the_same_rules(cluster: Cluster) -> None:
    token = cluster.service_account("default", "asker")
    cluster.ok("create", "role", "pod-getter", "--verb=get", "--resource=pods",
               "--resource-name=web")
    cluster.ok("create", "rolebinding", "asker", "--role=pod-getter",
               "--serviceaccount=default:asker")
    assert cluster.can_i("get", "pods/web", token=token) == "yes"
    assert cluster.can_i("get", "pods/db", token=token) == "no"
    assert cluster.can_i("list", "pods", token=token) == "no"
    as_asker = "--as=system:serviceaccount:default:asker"
    assert cluster.can_i("get", "pods/web", as_asker) == "yes"
    assert cluster.can_i("delete", "pods/web", as_asker) == "no"
    assert cluster.can_i("create", "pods") == "yes"  # the admin
    listed = cluster.ok("auth", "can-i", "--list", token=token)
    assert any(row.split()[:4] == ["pods", "[]", "[web]", "[get]"]
               for row in listed.splitlines())


def test_impersonation_needs_the_impersonate_verb(cluster: Cluster) -> None:
    token = cluster.service_account("default", "actor")
    # (raw: kubectl's discovery, refused first, would print only "unknown")
    code, status = cluster.raw("GET", "/api/v1/namespaces/default/pods", token,
                               {"Impersonate-User": "someone"})
    assert (code, status["message"], status["details"]) == (
        403, 'users "someone" is forbidden: User "system:serviceaccount:default:actor" '
        'cannot impersonate resource "users" in API group "" at the cluster scope',
        {"name": "someone", "kind": "users"})
    cluster.ok("create", "clusterrole", "impersonator", "--verb=impersonate",
               "--resource=users", "--resource-name=someone")
    cluster.ok("create", "clusterrolebinding", "actor", "--clusterrole=impersonator",
               "--serviceaccount=default:actor")
    assert cluster.refused("get", "pods", "--as=someone", token=token) == _forbidden(
        "someone", "list", "pods", "default")


def test_the_admin_impersonating_a_service_account_gets_its_groups(cluster: Cluster) -> None:
    out = cluster.ok("auth", "whoami", "--as=system:serviceaccount:kube-system:anyone")
    assert ("[system:serviceaccounts system:serviceaccounts:kube-system "
            "system:authenticated]") in out


def test_impersonating_a_group_without_a_user_is_a_400(cluster: Cluster) -> None:
    code, status = cluster.raw("GET", "/api", cluster.admin_token(),
                               {"Impersonate-Group": "system:foo"})
    assert (code, status["reason"], status["message"]) == (
        400, "BadRequest", "requested [{Group  system:foo    }] without impersonating a user")


SAR = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


def _access_review(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "authorization.k8s.io/v1", "kind": kind, "spec": spec}


def test_a_subject_access_review_answers_for_the_user_and_groups_it_names(
        cluster: Cluster) -> None:
    cluster.ok("create", "serviceaccount", "subject")
    cluster.ok("create", "rolebinding", "subject", "--clusterrole=view",
               "--serviceaccount=default:subject")
    admin = cluster.admin_token()
    asked = {"user": "system:serviceaccount:default:subject",
             "resourceAttributes": {"verb": "list", "resource": "pods", "namespace": "default"}}
    code, review = cluster.raw("POST", SAR, admin, body=_access_review(
        "SubjectAccessReview", asked))
    assert (code, review["status"]) == (201, {
        "allowed": True, "reason": 'RBAC: allowed by RoleBinding "subject/default" of '
        'ClusterRole "view" to ServiceAccount "subject/default"'})
    denied = {**asked, "resourceAttributes": {"verb": "delete", "resource": "pods",
                                              "namespace": "default"}}
    assert cluster.raw("POST", SAR, admin, body=_access_review(
        "SubjectAccessReview", denied))[1]["status"] == {"allowed": False}
    local = "/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews"
    code, review = cluster.raw("POST", local, admin, body=_access_review(
        "LocalSubjectAccessReview", asked))
    assert (code, review["metadata"]["namespace"], review["status"]["allowed"]) == (
        201, "default", True)
    # a ServiceAccount of its own may not ask (system:basic-user has only the self reviews)
    assert cluster.raw("POST", SAR, cluster.service_account("default", "nosy"),
                       body=_access_review("SubjectAccessReview", asked))[0] == 403


def test_a_subject_access_review_without_a_subject_is_invalid(cluster: Cluster) -> None:
    code, status = cluster.raw("POST", SAR, cluster.admin_token(), body=_access_review(
        "SubjectAccessReview", {"nonResourceAttributes": {"path": "/x", "verb": "get"}}))
    assert (code, status["reason"], status["message"]) == (
        422, "Invalid", 'SubjectAccessReview.authorization.k8s.io "" is invalid: spec.user: '
        'Invalid value: "": at least one of user or group must be specified')


# -- RBAC object names ----------------------------------------------------------------------

def test_rbac_names_are_path_segments_so_colons_are_accepted(cluster: Cluster) -> None:
    assert cluster.ok("create", "clusterrole", "system:foo", "--verb=get",
                      "--resource=nodes").strip() == (
        "clusterrole.rbac.authorization.k8s.io/system:foo created")
    assert cluster.ok("get", "clusterrole", "system:foo", "-o", "name").strip() == (
        "clusterrole.rbac.authorization.k8s.io/system:foo")
    # what is not one path segment is refused by the server (kubectl apply would refuse it
    # itself): POSTed raw
    refused = cluster.run("create", "--raw", "/apis/rbac.authorization.k8s.io/v1/clusterroles",
                          "-f", "-", stdin=json.dumps({
                              "apiVersion": "rbac.authorization.k8s.io/v1",
                              "kind": "ClusterRole", "metadata": {"name": "50%"}})).stderr
    assert "metadata.name: Invalid value: \"50%\": may not contain '%'" in refused


# -- the simulated kubelet's role (deploy/kubelet-rbac.yaml) ---------------------------------

KUBELET_MAY = [
    ("create", "nodes", ()),
    ("patch", "nodes", ("--subresource=status",)),
    ("update", "nodes", ("--subresource=status",)),
    ("update", "leases.coordination.k8s.io", ("-n", "kube-node-lease")),
    ("create", "leases.coordination.k8s.io", ("-n", "kube-node-lease")),
    ("get", "pods", ("-A",)),
    ("update", "pods", ("--subresource=status", "-n", "default")),
    ("create", "events", ("-n", "default")),
    ("create", "serviceaccounts", ("--subresource=token", "-n", "default")),
    ("get", "secrets", ("-n", "default")),
]
KUBELET_MAY_NOT = [
    ("delete", "nodes", ()),
    ("update", "leases.coordination.k8s.io", ("-n", "default")),
    ("create", "pods", ("-n", "default")),
]


@pytest.fixture(scope="module")
def kubelet_role(cluster: Cluster) -> str:
    if not KUBELET_RBAC.exists():
        pytest.skip(f"{KUBELET_RBAC.relative_to(PROJECT_ROOT)} is not in this tree")
    cluster.ok("apply", "-f", str(KUBELET_RBAC))
    return "--as=system:serviceaccount:kube-system:kubelet-sim"


@pytest.mark.parametrize(("verb", "resource", "extra"), KUBELET_MAY)
def test_the_kubelet_role_allows_what_a_kubelet_does(
        cluster: Cluster, kubelet_role: str, verb: str, resource: str,
        extra: tuple[str, ...]) -> None:
    assert cluster.can_i(verb, resource, *extra, kubelet_role) == "yes"


@pytest.mark.parametrize(("verb", "resource", "extra"), KUBELET_MAY_NOT)
def test_the_kubelet_role_allows_nothing_more(
        cluster: Cluster, kubelet_role: str, verb: str, resource: str,
        extra: tuple[str, ...]) -> None:
    assert cluster.can_i(verb, resource, *extra, kubelet_role) == "no"


def test_a_kubelet_token_registers_a_node_and_may_not_delete_it(
        cluster: Cluster, kubelet_role: str) -> None:
    token = cluster.ok("create", "token", "kubelet-sim", "-n", "kube-system").strip()
    node = json.dumps({"apiVersion": "v1", "kind": "Node",
                       "metadata": {"name": f"sim-{uuid.uuid4().hex[:6]}"}})
    name = json.loads(node)["metadata"]["name"]
    assert cluster.ok("create", "-f", "-", stdin=node, token=token).strip() == (
        f"node/{name} created")
    assert cluster.refused("delete", "node", name, token=token) == (
        f'Error from server (Forbidden): nodes "{name}" is forbidden: User '
        '"system:serviceaccount:kube-system:kubelet-sim" cannot delete resource "nodes" in '
        'API group "" at the cluster scope')
