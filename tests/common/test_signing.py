"""common.signing: the platform's Ed25519 keys, signatures and their refusals (no database)."""
from __future__ import annotations

import base64

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from common.signing import SigningKeyError, generate_signing_key, load_signing_key, public_key_hex, sign, verify


def _pem(key) -> str:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode("ascii")


def test_a_generated_key_signs_and_its_public_key_verifies():
    key = load_signing_key(generate_signing_key())
    public = public_key_hex(key)
    assert len(public) == 64 and int(public, 16) >= 0
    signature = sign(key, b"head #42")
    assert len(signature) == 128
    assert verify(public, b"head #42", signature)
    assert not verify(public, b"head #43", signature)


def test_a_tampered_signature_or_another_key_does_not_verify():
    key = load_signing_key(generate_signing_key())
    signature = sign(key, b"data")
    flipped = ("0" if signature[0] != "0" else "1") + signature[1:]
    assert not verify(public_key_hex(key), b"data", flipped)
    other = public_key_hex(load_signing_key(generate_signing_key()))
    assert not verify(other, b"data", signature)


@pytest.mark.parametrize("public,signature", [("", "00" * 64), ("zz" * 32, "00" * 64), ("00" * 32, "abc"),
                                              (None, None), ("00" * 32, "00" * 64)])
def test_malformed_keys_and_signatures_are_false_never_an_exception(public, signature):
    assert verify(public, b"data", signature) is False


def test_the_three_key_formats_load_to_the_same_raw_key():
    private = Ed25519PrivateKey.generate()
    raw = private.private_bytes_raw()
    assert load_signing_key(raw.hex()) == raw
    assert load_signing_key(raw.hex().upper()) == raw
    assert load_signing_key(base64.b64encode(raw).decode()) == raw
    assert load_signing_key("\n" + _pem(private) + "\n") == raw


def test_keys_load_as_release_signing_keys_always_did():
    from releases.package.files import load_signing_key as release_load, public_key_hex as release_public

    text = generate_signing_key()
    assert load_signing_key(text) == release_load(text)
    assert public_key_hex(load_signing_key(text)) == release_public(release_load(text))


@pytest.mark.parametrize("text,message", [
    ("", "missing signing key"),
    ("   ", "missing signing key"),
    ("ab" * 31, "expected an Ed25519 private key"),
    ("not a key at all, but a secret-ish sentence", "expected an Ed25519 private key"),
    (base64.b64encode(b"x" * 31).decode(), "expected an Ed25519 private key"),
    ("-----BEGIN PRIVATE KEY-----\nZm9vYmFy\n-----END PRIVATE KEY-----", "not a readable unencrypted PEM"),
])
def test_unusable_keys_are_refused_without_repeating_them(text, message):
    with pytest.raises(SigningKeyError, match=message) as caught:
        load_signing_key(text)
    assert isinstance(caught.value, ValueError)
    if text.strip():
        assert text.strip() not in str(caught.value)


def test_a_pem_key_of_another_algorithm_is_refused():
    with pytest.raises(SigningKeyError, match="not an Ed25519 key"):
        load_signing_key(_pem(ec.generate_private_key(ec.SECP256R1())))


def test_signing_with_a_malformed_raw_key_is_refused():
    with pytest.raises(SigningKeyError):
        sign(b"short", b"data")
    with pytest.raises(SigningKeyError, match="missing"):
        public_key_hex(b"")
