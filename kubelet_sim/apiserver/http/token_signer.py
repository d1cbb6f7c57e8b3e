"""The ServiceAccount token signer: an RSA key (``pki/sa.key``, 0600, made on first use
and kept across restarts) signing RS256 JWTs with PyJWT; the key id is kube-apiserver's
(the unpadded base64url SHA-256 of the public key's DER), and the public key is
published as a JWK set (``/openid/v1/jwks``)."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from kubelet_sim.api.model import JSON
from kubelet_sim.apiserver.http.credentials import _write_private

KEY_FILE = "sa.key"


class TokenSigner:
    """Signs with one RSA key: read from ``key_file`` (made there when missing), or kept
    in memory only when ``key_file`` is None."""

    def __init__(self, key_file: Path | None = None) -> None:
        self.key_file = key_file
        self._key: rsa.RSAPrivateKey | None = None

    @property
    def key(self) -> rsa.RSAPrivateKey:
        if self._key is None:
            self._key = self._load_or_create()
        return self._key

    def _load_or_create(self) -> rsa.RSAPrivateKey:
        if self.key_file is not None and self.key_file.exists():
            loaded = serialization.load_pem_private_key(self.key_file.read_bytes(), None)
            if not isinstance(loaded, rsa.RSAPrivateKey):
                raise ValueError(f"{self.key_file}: not an RSA private key")
            return loaded
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        if self.key_file is not None:
            self.key_file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            _write_private(self.key_file, key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption()))
        return key

    @property
    def key_id(self) -> str:
        der = self.key.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
        return base64.urlsafe_b64encode(hashlib.sha256(der).digest()).rstrip(b"=").decode()

    def sign(self, claims: JSON) -> str:
        return jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": self.key_id})

    def jwks(self) -> JSON:
        public: dict[str, Any] = json.loads(RSAAlgorithm.to_jwk(self.key.public_key()))
        return {"keys": [{"use": "sig", "kty": "RSA", "kid": self.key_id, "alg": "RS256",
                          "n": public["n"], "e": public["e"]}]}


def persistent_signer(state_dir: Path) -> TokenSigner:
    """The signer of ``state_dir/pki/sa.key``, its key read (or made) now: the first
    TokenRequest does not wait for an RSA key to be generated."""
    signer = TokenSigner(state_dir / "pki" / KEY_FILE)
    signer.key  # noqa: B018 - loads or makes the key
    return signer
