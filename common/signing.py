"""Ed25519 signing with the platform's key: pure functions, no Django, no database.

The platform key (setting `MEDR2_SIGNING_KEY`, from the environment only) signs the audit chain's
checkpoints (audit/services/checkpoints.py). Keys are read the way release signing keys always were
(releases/package/files.py): 64 hex characters, base64 of the 32 raw bytes, or an unencrypted PEM
PKCS#8 private key. Signatures and public keys travel as lowercase hex. Uses the `cryptography`
package (OpenSSL's Ed25519), already a dependency of the release packager.
"""
from __future__ import annotations

import base64
import binascii
import re

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

_HEX64 = re.compile(r"[0-9a-fA-F]{64}")
_HEX128 = re.compile(r"[0-9a-fA-F]{128}")


class SigningKeyError(ValueError):
    """A key that cannot be used. The message never repeats the key text."""


def generate_signing_key() -> str:
    """A fresh Ed25519 private key as 64 hex characters (for MEDR2_SIGNING_KEY)."""
    return Ed25519PrivateKey.generate().private_bytes_raw().hex()


def load_signing_key(text: str) -> bytes:
    """The raw 32-byte Ed25519 private key from 64 hex characters, base64 of the 32 bytes, or a PEM
    PKCS#8 private key (unencrypted). Anything else raises SigningKeyError."""
    if not isinstance(text, str) or not text.strip():
        raise SigningKeyError("missing signing key")
    text = text.strip()
    if text.startswith("-----BEGIN"):
        try:
            key = serialization.load_pem_private_key(text.encode("ascii"), password=None)
        except (ValueError, TypeError, UnicodeEncodeError, UnsupportedAlgorithm):
            raise SigningKeyError("signing key: not a readable unencrypted PEM private key") from None
        if not isinstance(key, Ed25519PrivateKey):
            raise SigningKeyError("signing key: the PEM key is not an Ed25519 key")
        return key.private_bytes_raw()
    if _HEX64.fullmatch(text):
        return bytes.fromhex(text)
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != 32:
        raise SigningKeyError("signing key: expected an Ed25519 private key as 64 hex characters, "
                              "base64 of 32 bytes, or a PEM PKCS#8 key")
    return raw


def _private_key(key: bytes) -> Ed25519PrivateKey:
    if not isinstance(key, bytes | bytearray) or len(key) != 32:
        raise SigningKeyError("missing signing key" if not key else "signing key: expected 32 raw bytes")
    return Ed25519PrivateKey.from_private_bytes(bytes(key))


def public_key_hex(key: bytes) -> str:
    """The public key of a raw private key, as 64 hex characters."""
    return _private_key(key).public_key().public_bytes_raw().hex()


def sign(key: bytes, data: bytes) -> str:
    """The Ed25519 signature of `data` as 128 hex characters."""
    return _private_key(key).sign(bytes(data)).hex()


def verify(public_key_hex: str, data: bytes, signature_hex: str) -> bool:
    """True when `signature_hex` is a valid signature of `data` by `public_key_hex`; False for a wrong
    signature and for a malformed key or signature (never raises on bad input)."""
    if not isinstance(public_key_hex, str) or not _HEX64.fullmatch(public_key_hex.strip()):
        return False
    if not isinstance(signature_hex, str) or not _HEX128.fullmatch(signature_hex.strip()):
        return False
    try:
        public = Ed25519PublicKey.from_public_bytes(bytes.fromhex(public_key_hex.strip()))
        public.verify(bytes.fromhex(signature_hex.strip()), bytes(data))
    except (ValueError, InvalidSignature):
        return False
    return True
