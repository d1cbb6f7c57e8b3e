"""A kubeconfig read as clientcmd reads it: the current context (or a named one), its
cluster's server and CA, its user's token, token file or client certificate, inline
``-data`` or paths relative to the file."""

from __future__ import annotations

import base64
import datetime
import ssl
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from kubelet_sim.client.kubeconfig import ClientConfig, KubeconfigError, load_kubeconfig


def self_signed(name: str) -> tuple[bytes, bytes]:
    """A PEM certificate and key."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    return (cert.public_bytes(serialization.Encoding.PEM),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))


def write(path: Path, config: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(config))
    return path


def kubeconfig(clusters: list[Any], users: list[Any], contexts: list[Any],
               current: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Config", "clusters": clusters, "users": users,
            "contexts": contexts, "current-context": current}


def test_the_current_context_picks_the_cluster_user_and_namespace(tmp_path: Path) -> None:
    ca, _ = self_signed("ca")
    path = write(tmp_path / "config", kubeconfig(
        [{"name": "one", "cluster": {"server": "https://127.0.0.1:6443/",
                                     "certificate-authority-data":
                                         base64.b64encode(ca).decode()}},
         {"name": "two", "cluster": {"server": "https://10.0.0.1"}}],
        [{"name": "admin", "user": {"token": "secret-token"}}],
        [{"name": "a", "context": {"cluster": "one", "user": "admin", "namespace": "team"}},
         {"name": "b", "context": {"cluster": "two", "user": "admin"}}], "a"))
    config = load_kubeconfig(path)
    assert config.server == "https://127.0.0.1:6443" and config.namespace == "team"
    assert config.ca_data == ca and config.token == "secret-token"
    assert isinstance(config.ssl_context(), ssl.SSLContext)
    other = load_kubeconfig(path, context="b")
    assert other.server == "https://10.0.0.1" and other.namespace == "default"


def test_paths_are_relative_to_the_kubeconfig_and_a_client_certificate_loads(
        tmp_path: Path) -> None:
    ca, _ = self_signed("ca")
    cert, key = self_signed("system:node:sim-1")
    (tmp_path / "pki").mkdir()
    (tmp_path / "pki" / "ca.crt").write_bytes(ca)
    (tmp_path / "pki" / "node.crt").write_bytes(cert)
    (tmp_path / "pki" / "node.key").write_bytes(key)
    (tmp_path / "token").write_text("from-a-file\n")
    path = write(tmp_path / "config", kubeconfig(
        [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443",
                                   "certificate-authority": "pki/ca.crt"}}],
        [{"name": "node", "user": {"client-certificate": "pki/node.crt",
                                   "client-key": "pki/node.key", "tokenFile": "token"}}],
        [{"name": "x", "context": {"cluster": "c", "user": "node"}}], "x"))
    config = load_kubeconfig(path)
    assert config.ca_data == ca and config.client_cert == cert and config.client_key == key
    assert config.token == "from-a-file"
    assert isinstance(config.ssl_context(), ssl.SSLContext)  # the key pair loaded


def test_a_context_naming_a_missing_cluster_is_refused_in_one_sentence(tmp_path: Path) -> None:
    path = write(tmp_path / "config", kubeconfig(
        [], [], [{"name": "x", "context": {"cluster": "gone"}}], "x"))
    with pytest.raises(KubeconfigError, match="no cluster named 'gone'"):
        load_kubeconfig(path)


def test_a_kubeconfig_without_current_context_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "config", kubeconfig([], [], [], ""))
    with pytest.raises(KubeconfigError, match="no current-context"):
        load_kubeconfig(path)


def test_plain_http_needs_no_tls() -> None:
    assert ClientConfig(server="http://127.0.0.1:8080").ssl_context() is False
