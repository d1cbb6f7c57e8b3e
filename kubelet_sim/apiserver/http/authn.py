"""Who sent a request: kube-apiserver's bearer-token authenticators, as this server has
them.

- The server's own token (the kubeconfig's) is the cluster admin: ``kubernetes-admin``
  in ``system:masters`` (as kubeadm's admin.conf), a constant compared in constant time.
- A ServiceAccount token our signer issued (TokenRequest, ``kubectl create token``) is
  ``system:serviceaccount:<ns>:<name>`` in ``system:serviceaccounts``,
  ``system:serviceaccounts:<ns>`` and ``system:authenticated``, when its RS256 signature
  is the signer's, its issuer ours, one of its audiences the API server's, it is neither
  expired nor not yet valid (a minute's leeway, as upstream, on the API server's clock),
  and the ServiceAccount (same uid) and the object it is bound to (Pod, Secret or Node,
  same uid; a Pod or Secret not deleted over a minute ago) still exist. The bound Pod
  and Node and the token's id are the user's ``extra``, as upstream.

Anything else is None (the caller answers 401 Unauthorized): there are no anonymous
requests (as ``--anonymous-auth=false``), no client certificates, no legacy Secret-based
ServiceAccount tokens.
"""

from __future__ import annotations

import hmac
from datetime import datetime, timedelta
from typing import Any

import jwt

from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.model import parse_time
from kubelet_sim.apiserver.http.token_signer import TokenSigner
from kubelet_sim.apiserver.rbac_authorizer import (
    AUTHENTICATED,
    MASTERS,
    UserInfo,
    service_account_user,
)
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.apiserver.token_request import API_AUDIENCES, ISSUER

ADMIN = UserInfo("kubernetes-admin", (MASTERS, AUTHENTICATED))
LEEWAY_SECONDS = 60  # go-jose's default leeway on exp and nbf
DELETED_GRACE_SECONDS = 60  # a bound object being deleted still counts this long
CREDENTIAL_ID = "authentication.kubernetes.io/credential-id"
POD_NAME, POD_UID = "authentication.kubernetes.io/pod-name", "authentication.kubernetes.io/pod-uid"
NODE_NAME = "authentication.kubernetes.io/node-name"
NODE_UID = "authentication.kubernetes.io/node-uid"


def bearer_token(header: str) -> str:
    """The token of an ``Authorization: Bearer <token>`` header ("" when none)."""
    parts = header.strip().split(" ", 2)
    if len(parts) < 2 or parts[0].lower() != "bearer":
        return ""
    return parts[1]


class Authenticator:
    def __init__(self, api: APIServer, admin_token: str) -> None:
        self.api = api
        self._admin = admin_token.encode()

    def authenticate(self, authorization: str) -> UserInfo | None:
        token = bearer_token(authorization)
        if not token:
            return None
        if hmac.compare_digest(token.encode(), self._admin):
            return ADMIN
        return self._service_account(token)

    def _public_key(self) -> Any:
        signer = self.api.token_signer
        return signer.key.public_key() if isinstance(signer, TokenSigner) else None

    def _service_account(self, token: str) -> UserInfo | None:
        key = self._public_key()
        if key is None or token.count(".") != 2:
            return None
        try:
            claims = jwt.decode(token, key, algorithms=["RS256"], audience=list(API_AUDIENCES),
                                issuer=ISSUER, options={
                                    "verify_exp": False, "verify_nbf": False,
                                    "verify_iat": False, "require": ["exp", "sub"]})
        except jwt.PyJWTError:
            return None
        if not self._in_time(claims, self.api.clock.now()):
            return None
        private = claims.get("kubernetes.io")
        if not isinstance(private, dict):
            return None
        return self._still_valid(private, str(claims.get("jti") or ""))

    @staticmethod
    def _in_time(claims: dict[str, Any], now: datetime) -> bool:
        moment = now.timestamp()
        try:
            expires = float(claims["exp"])
            not_before = float(claims.get("nbf", moment))
        except (TypeError, ValueError):
            return False
        return moment <= expires + LEEWAY_SECONDS and moment >= not_before - LEEWAY_SECONDS

    def _object(self, kind: str, ref: Any, namespace: str) -> Any:
        """The stored object a claim names, when it is still the same one (uid)."""
        if not isinstance(ref, dict):
            return None
        try:
            obj = self.api.get(kind, str(ref.get("name") or ""), namespace)
        except NotFound:
            return None
        return obj if obj.metadata.uid == ref.get("uid") else None

    def _gone(self, obj: Any) -> bool:
        """Missing, or being deleted for over a minute (a pod's token outlives its
        deletion that long, as upstream, while the pod's containers stop)."""
        if obj is None:
            return True
        deleting = obj.metadata.deletion_timestamp
        return bool(deleting) and parse_time(deleting) < self.api.clock.now() - timedelta(
            seconds=DELETED_GRACE_SECONDS)

    def _still_valid(self, private: dict[str, Any], jti: str) -> UserInfo | None:
        namespace = str(private.get("namespace") or "")
        account = self._object("ServiceAccount", private.get("serviceaccount"), namespace)
        if account is None:
            return None
        extra: dict[str, tuple[str, ...]] = {}
        if "pod" in private:
            pod = self._object("Pod", private["pod"], namespace)
            if self._gone(pod):
                return None
            extra[POD_NAME], extra[POD_UID] = (pod.name,), (pod.metadata.uid,)
        elif "secret" in private:
            if self._gone(self._object("Secret", private["secret"], namespace)):
                return None
        elif "node" in private and self._object("Node", private["node"], "") is None:
            return None
        node = private.get("node")
        if isinstance(node, dict) and node.get("name"):
            extra[NODE_NAME] = (str(node["name"]),)
            if node.get("uid"):
                extra[NODE_UID] = (str(node["uid"]),)
        if jti:
            extra[CREDENTIAL_ID] = (f"JTI={jti}",)
        return service_account_user(namespace, account.name, account.metadata.uid, extra)
