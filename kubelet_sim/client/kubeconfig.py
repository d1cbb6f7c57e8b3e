"""A kubeconfig file as a client reads it: the current context's cluster (server URL, CA)
and user (bearer token or token file, client certificate and key), inline ``*-data`` or
paths relative to the file, as client-go's clientcmd resolves them; and the TLS context
that trusts that CA and presents that certificate.
"""

from __future__ import annotations

import base64
import os
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


class KubeconfigError(ValueError):
    """The kubeconfig cannot be used: what is missing or wrong, in one sentence."""


@dataclass(frozen=True)
class ClientConfig:
    """What the HTTP client needs to reach one API server."""

    server: str
    namespace: str = "default"
    ca_data: bytes | None = None  # PEM; None: the system's trust store
    insecure: bool = False  # insecure-skip-tls-verify
    token: str = ""
    client_cert: bytes | None = None  # PEM
    client_key: bytes | None = None  # PEM
    tls_server_name: str = ""

    def ssl_context(self) -> ssl.SSLContext | bool:
        """The TLS context for ``server`` (False for plain http)."""
        if not self.server.startswith("https://"):
            return False
        ctx = ssl.create_default_context(
            cadata=self.ca_data.decode() if self.ca_data else None)
        if self.insecure:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        if self.client_cert and self.client_key:
            _load_client_cert(ctx, self.client_cert, self.client_key)
        return ctx


def _load_client_cert(ctx: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    """ssl loads a certificate chain from files only: written to a private temp dir,
    loaded, removed."""
    with tempfile.TemporaryDirectory(prefix="kubeconfig-") as tmp:
        paths = []
        for name, data in (("client.crt", cert), ("client.key", key)):
            path = Path(tmp) / name
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            paths.append(path)
        ctx.load_cert_chain(paths[0], paths[1])


def _named(entries: Any, name: str, what: str) -> dict[str, Any]:
    for entry in entries or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            found = entry.get(what)
            return found if isinstance(found, dict) else {}
    raise KubeconfigError(f"the kubeconfig has no {what} named {name!r}")


def _data(section: dict[str, Any], key: str, base: Path) -> bytes | None:
    """``<key>-data`` (base64) or the file ``<key>`` names (relative to ``base``)."""
    inline = section.get(f"{key}-data")
    if inline:
        return base64.b64decode(str(inline))
    path = section.get(key)
    if path:
        return (base / str(path)).expanduser().read_bytes()
    return None


def load_kubeconfig(path: Path, context: str = "") -> ClientConfig:
    """The client configuration of ``context`` (default: the current context)."""
    try:
        raw = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as err:
        raise KubeconfigError(f"cannot read kubeconfig {path}: {err}") from None
    if not isinstance(raw, dict):
        raise KubeconfigError(f"kubeconfig {path} is not a mapping")
    name = context or str(raw.get("current-context") or "")
    if not name:
        raise KubeconfigError(f"kubeconfig {path} has no current-context")
    ctx = _named(raw.get("contexts"), name, "context")
    cluster = _named(raw.get("clusters"), str(ctx.get("cluster") or ""), "cluster")
    user = _named(raw.get("users"), str(ctx.get("user") or ""), "user") \
        if ctx.get("user") else {}
    server = str(cluster.get("server") or "").rstrip("/")
    if not server:
        raise KubeconfigError(f"cluster {ctx.get('cluster')!r} in {path} has no server")
    base = path.parent
    token = str(user.get("token") or "")
    if not token and user.get("tokenFile"):
        token = (base / str(user["tokenFile"])).read_text().strip()
    return ClientConfig(
        server=server, namespace=str(ctx.get("namespace") or "default"),
        ca_data=_data(cluster, "certificate-authority", base),
        insecure=bool(cluster.get("insecure-skip-tls-verify")),
        token=token,
        client_cert=_data(user, "client-certificate", base),
        client_key=_data(user, "client-key", base),
        tls_server_name=str(cluster.get("tls-server-name") or ""),
    )
