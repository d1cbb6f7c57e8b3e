"""The TokenRequest subresource (``POST serviceaccounts/<name>/token``,
``authentication.k8s.io/v1``) as kube-apiserver answers it.

The ServiceAccount must exist; ``spec.expirationSeconds`` defaults to 3600 and may not be
under 600 (ten minutes) nor over 2^32; no ``spec.audiences`` means the API server's own
(its issuer). A ``boundObjectRef`` names a Pod, Secret or Node: the object must exist
(NotFound), a given ``uid`` must be its uid (Conflict), a Pod must run as this
ServiceAccount (BadRequest), and any other kind is refused (BadRequest). The token is a
JWT with kube-apiserver's claims: ``iss``, ``sub`` (``system:serviceaccount:NS:NAME``),
``aud``, ``exp``, ``iat``, ``nbf``, ``jti`` and ``kubernetes.io`` (namespace, the
ServiceAccount's name and uid, and the bound Pod or Secret and the Pod's Node). The
signing is the ``signer``'s (:mod:`kubelet_sim.apiserver.http.token_signer`: RS256).
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from kubelet_sim.api.errors import (
    ApiError,
    BadRequest,
    Conflict,
    FieldError,
    Invalid,
    InvalidObject,
    NotFound,
)
from kubelet_sim.api.model import JSON, format_time

if TYPE_CHECKING:
    from kubelet_sim.apiserver.server import APIServer

ISSUER = "https://kubernetes.default.svc.cluster.local"  # kubeadm's --service-account-issuer
API_AUDIENCES = (ISSUER,)  # --api-audiences: the issuer when not given
MIN_EXPIRATION_SECONDS = 600
DEFAULT_EXPIRATION_SECONDS = 3600
MAX_EXPIRATION_SECONDS = 1 << 32
KIND, API_VERSION = "TokenRequest", "authentication.k8s.io/v1"


class Signer(Protocol):
    """What signs the tokens and publishes its public keys."""

    def sign(self, claims: JSON) -> str: ...

    def jwks(self) -> JSON: ...


class ReferencedNotFound(ApiError):
    """An object the request names is missing (404), worded with its own resource:
    ``pods "web" not found``."""

    code, reason = 404, "NotFound"

    def __init__(self, plural: str, name: str) -> None:
        super().__init__(f'{plural} "{name}" not found')


def subject(namespace: str, name: str) -> str:
    return f"system:serviceaccount:{namespace}:{name}"


def _invalid(name: str, field: str, value: Any, why: str) -> InvalidObject:
    return InvalidObject(f"{KIND}.authentication.k8s.io", name, [
        FieldError("FieldValueInvalid", field, f"Invalid value: {value}: {why}")])


def _spec(body: JSON, name: str) -> JSON:
    spec = dict(body.get("spec") or {})
    expiration = spec.get("expirationSeconds")
    if expiration is None:
        expiration = DEFAULT_EXPIRATION_SECONDS
    if isinstance(expiration, bool) or not isinstance(expiration, int):
        raise Invalid("spec.expirationSeconds", "must be an integer")
    if expiration < MIN_EXPIRATION_SECONDS:
        raise _invalid(name, "spec.expirationSeconds", expiration,
                       "may not specify a duration less than 10 minutes")
    if expiration > MAX_EXPIRATION_SECONDS:
        raise _invalid(name, "spec.expirationSeconds", expiration,
                       "may not specify a duration larger than 2^32 seconds")
    spec["expirationSeconds"] = expiration
    audiences = spec.get("audiences") or list(API_AUDIENCES)
    if not isinstance(audiences, list) or not all(isinstance(a, str) for a in audiences):
        raise Invalid("spec.audiences", "must be a list of strings")
    spec["audiences"] = audiences
    return spec


def _bound(api: APIServer, namespace: str, name: str, ref: JSON) -> JSON:
    """The ``kubernetes.io`` claims of the bound object (``pod``/``secret``/``node``)."""
    kind, api_version = ref.get("kind", ""), ref.get("apiVersion", "")
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    ref_name = str(ref.get("name") or "")
    if group or kind not in ("Pod", "Secret", "Node"):
        shown = f"{group}/{api_version.rpartition('/')[2]}, Kind={kind}"
        raise BadRequest(f'cannot bind token for serviceaccount "{name}" to object of kind '
                         f'"{shown}"')
    try:
        obj = api.get(kind, ref_name, "" if kind == "Node" else namespace)
    except NotFound:
        plural = {"Pod": "pods", "Secret": "secrets", "Node": "nodes"}[kind]
        raise ReferencedNotFound(plural, ref_name) from None
    if ref.get("uid") and ref["uid"] != obj.metadata.uid:
        detail = (f"the UID in the bound object reference ({ref['uid']}) does not match the "
                  "UID in record. The object might have been deleted and then recreated")
        raise Conflict(f'Operation cannot be fulfilled on {kind} "{ref_name}": {detail}')
    claims: JSON = {kind.lower(): {"name": obj.name, "uid": obj.metadata.uid}}
    if kind == "Pod":
        if (obj.spec.get("serviceAccountName") or "default") != name:
            raise BadRequest(f'cannot bind token for serviceaccount "{name}" to pod running '
                             "with different serviceaccount name.")
        node_name = obj.spec.get("nodeName")
        if node_name:
            try:
                node = api.get("Node", node_name)
                claims["node"] = {"name": node.name, "uid": node.metadata.uid}
            except NotFound:
                pass
    return claims


def issue(api: APIServer, signer: Signer, namespace: str, name: str, body: JSON,
          now: datetime) -> JSON:
    """The answered TokenRequest (what POST returns, 201) for ServiceAccount ``name``."""
    if body.get("kind", KIND) != KIND or body.get("apiVersion", API_VERSION) != API_VERSION:
        raise BadRequest(f"the API version in the data ({body.get('apiVersion')}) and kind "
                         f"({body.get('kind')}) do not match {API_VERSION} {KIND}")
    try:
        account = api.get("ServiceAccount", name, namespace)
    except NotFound:
        raise ReferencedNotFound("serviceaccounts", name) from None
    spec = _spec(body, name)
    private: JSON = {"namespace": namespace}
    ref = spec.get("boundObjectRef")
    if ref:
        private.update(_bound(api, namespace, name, ref))
    private["serviceaccount"] = {"name": account.name, "uid": account.metadata.uid}
    issued = int(now.timestamp())
    expires = issued + int(spec["expirationSeconds"])
    claims: JSON = {"aud": list(spec["audiences"]), "exp": expires, "iat": issued,
                    "iss": ISSUER, "jti": str(uuid.uuid4()), "kubernetes.io": private,
                    "nbf": issued, "sub": subject(namespace, name)}
    meta = dict(body.get("metadata") or {})
    meta.update({"name": name, "namespace": namespace})
    meta.setdefault("creationTimestamp", None)
    return {"kind": KIND, "apiVersion": API_VERSION, "metadata": meta, "spec": spec,
            "status": {"token": signer.sign(claims),
                       "expirationTimestamp": format_time(
                           now.replace(microsecond=0) + timedelta(
                               seconds=int(spec["expirationSeconds"])))}}


def validate_token_requests(requests: Any) -> None:
    """A CSIDriver's ``spec.tokenRequests``: audiences unique, ``expirationSeconds`` (when
    given) from ten minutes to 2^32 seconds, as ValidateCSIDriver checks them."""
    seen: set[str] = set()
    for i, request in enumerate(requests or []):
        path = f"spec.tokenRequests[{i}]"
        audience = str(request.get("audience") or "")
        if audience in seen:
            raise Invalid(f"{path}.audience", f"Duplicate value: {json.dumps(audience)}")
        seen.add(audience)
        seconds = request.get("expirationSeconds")
        if seconds is None:
            continue
        if seconds < MIN_EXPIRATION_SECONDS:
            raise Invalid(f"{path}.expirationSeconds",
                          f"Invalid value: {seconds}: may not specify a duration less than 10 "
                          "minutes")
        if seconds > MAX_EXPIRATION_SECONDS:
            raise Invalid(f"{path}.expirationSeconds",
                          f"Invalid value: {seconds}: may not specify a duration larger than "
                          "2^32 seconds")


def openid_configuration(external_url: str) -> JSON:
    """``/.well-known/openid-configuration`` as kube-apiserver serves it."""
    return {"issuer": ISSUER, "jwks_uri": f"{external_url}/openid/v1/jwks",
            "response_types_supported": ["id_token"], "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"]}
