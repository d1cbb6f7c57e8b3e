"""Secrets as the CSI sidecars and the kubelet read them: GET the Secret a
SecretReference names from the API server, each time it is needed, and hand its
``data`` to the CSI call as strings (Go's ``string(bytes)``: invalid UTF-8 replaced)."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from kubelet_sim.api.errors import NotFound
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.in_process import as_client
from kubelet_sim.client.kube_client import KubeClient


class ApiSecrets:
    """The Secrets of one API server, by reference (``{"name", "namespace"}``)."""

    def __init__(self, api: APIServer | KubeClient) -> None:
        self.client = as_client(api)

    async def get(self, ref: Mapping[str, Any] | None) -> dict[str, str]:
        """The data of ``ref`` ({} for None); LookupError, worded as the sidecars word
        it, when the Secret does not exist."""
        if not ref:
            return {}
        name, namespace = str(ref.get("name", "")), str(ref.get("namespace", ""))
        try:
            secret = await self.client.get("Secret", name, namespace or "default")
        except NotFound:
            raise LookupError(f"error getting secret {name} in namespace {namespace}: "
                              f'secrets "{name}" not found') from None
        data = secret.body.get("data") or {}
        return {key: base64.b64decode(value).decode("utf-8", "replace")
                for key, value in data.items()}
