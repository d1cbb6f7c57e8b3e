"""What a client needs to trust and reach the server: a self-signed CA, the server's
certificate for 127.0.0.1, a bearer token, and a kubeconfig holding them (mode 0600).

The CA and the token are made once per state dir and kept, so a kubeconfig written
before a restart still works after it.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class Credentials:
    ca_cert: Path
    server_cert: Path
    server_key: Path
    token: str


def _write_private(path: Path, data: bytes) -> None:
    """Atomically, mode 0600 whatever the umask."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _make_pki(directory: Path) -> None:
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(_name("cni-csi-mini-ca"))
          .issuer_name(_name("cni-csi-mini-ca")).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=3650))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False,
                                       encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    sans = x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
    cert = (x509.CertificateBuilder().subject_name(_name("kube-apiserver"))
            .issuer_name(ca.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=3650))
            .add_extension(sans, critical=False)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    _write_private(directory / "server.key", key.private_bytes(
        pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    _write_private(directory / "server.crt", cert.public_bytes(pem))
    _write_private(directory / "ca.crt", ca.public_bytes(pem))


def load_or_create(state_dir: Path) -> Credentials:
    directory = state_dir / "pki"
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not (directory / "ca.crt").exists():
        _make_pki(directory)
    token_file = directory / "token"
    if not token_file.exists():
        _write_private(token_file, secrets.token_urlsafe(32).encode())
    return Credentials(directory / "ca.crt", directory / "server.crt", directory / "server.key",
                       token_file.read_text().strip())


def write_kubeconfig(path: Path, server: str, creds: Credentials,
                     name: str = "cni-csi-mini") -> Path:
    """A kubeconfig for ``server`` (0600): the CA inline, the bearer token, one context."""
    ca_data = base64.b64encode(creds.ca_cert.read_bytes()).decode()
    config = {
        "apiVersion": "v1", "kind": "Config", "preferences": {},
        "clusters": [{"name": name, "cluster": {"server": server,
                                                "certificate-authority-data": ca_data}}],
        "users": [{"name": f"{name}-admin", "user": {"token": creds.token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": f"{name}-admin",
                                                "namespace": "default"}}],
        "current-context": name,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_private(path, yaml.safe_dump(config, sort_keys=False).encode())
    return path
