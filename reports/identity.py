"""Model identity without secrets or server paths (pure: no database).

A model's parameters are copied into the report only after `public_parameters` has withheld every value
that is a secret (by its name: api_key, token, password, ...; or by its look: "Bearer ...", "sk-...")
or a location on a server (by its name: path, dir, url, host, ...; or by its look: an absolute path, a
URL). The report lists the names of what it withheld, never the values. `*_env` names (which name an
environment variable, not its value) stay. Long values (a fitted baseline's table, a system prompt) are
replaced by their SHA-256, so the report pins them without printing them."""
from __future__ import annotations

import hashlib
import json
import re

# names whose value is a secret, or where a server keeps something
SECRET_NAME = re.compile(r"(^|[_\-.])(api_?key|key|token|access_?token|password|passwd|pwd|secret|client_secret|"
                         r"bearer|authorization|auth|credentials?|cookie|private_?key|access_?key|signature)$",
                         re.IGNORECASE)
LOCATION_NAME = re.compile(r"(^|[_\-.])(path|paths|dir|directory|folder|file|filename|url|uri|host|hostname|"
                           r"endpoint|address|root|mount|bucket|socket)$", re.IGNORECASE)
SECRET_VALUE = re.compile(r"^\s*(bearer|basic|token)\s+\S+|^(sk|pk|rk|hf|ghp|gho|xox[abp])[-_][A-Za-z0-9]",
                          re.IGNORECASE)
LOCATION_VALUE = re.compile(r"^\s*([a-z][a-z0-9+.\-]*://|/|~|\\\\|[a-z]:[\\/]|\.{1,2}[\\/])", re.IGNORECASE)
LONG_VALUE = 256          # characters of canonical JSON above which a value is pinned by its hash
WEIGHT_HASH_KEYS = ("weights_sha256", "weights_hash", "model_sha256")


def _canonical(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _withhold_name(name: str) -> bool:
    return not name.lower().endswith("_env") and bool(SECRET_NAME.search(name) or LOCATION_NAME.search(name))


def _withhold_value(value) -> bool:
    return isinstance(value, str) and bool(SECRET_VALUE.search(value) or LOCATION_VALUE.search(value))


def public_parameters(parameters) -> dict:
    """{"parameters": the parameters with secrets and server locations removed and long values pinned by
    hash, "withheld": dotted names removed, "pinned": dotted names replaced by {"sha256", "chars"}}."""
    withheld, pinned = [], []

    def clean(value, where: str):
        if isinstance(value, dict):
            out = {}
            for key in sorted(value, key=str):
                name = f"{where}.{key}" if where else str(key)
                if _withhold_name(str(key)) or _withhold_value(value[key]):
                    withheld.append(name)
                    continue
                out[str(key)] = clean(value[key], name)
            value = out
        elif isinstance(value, (list, tuple)):
            kept = []
            for i, v in enumerate(value):
                if _withhold_value(v):
                    withheld.append(f"{where}[{i}]")
                    continue
                kept.append(clean(v, f"{where}[{i}]"))
            value = kept
        text = _canonical(value)
        if where and len(text) > LONG_VALUE:
            pinned.append(where)
            return {"sha256": sha256_text(text), "chars": len(text)}
        return value

    cleaned = clean(parameters if isinstance(parameters, dict) else {}, "")
    return {"parameters": cleaned, "withheld": sorted(withheld), "pinned": sorted(pinned)}


def weights_hash(snapshot: dict) -> str | None:
    """A weights hash recorded at run time (in the provenance entry or its parameters), if any. A
    parameter that merely names where the weights are is never hashed here: the files a report server
    can see now need not be the ones the worker loaded then."""
    params = snapshot.get("parameters") or {}
    for source in (snapshot, params):
        for key in WEIGHT_HASH_KEYS:
            value = source.get(key) if isinstance(source, dict) else None
            if isinstance(value, str) and re.fullmatch(r"[0-9a-fA-F]{64}", value):
                return value.lower()
    return None


def model_identity(snapshot: dict, *, role: str, local_weights: bool) -> dict:
    """What identifies one model in one run, from the run's provenance snapshot of its endpoint."""
    template = snapshot.get("prompt_template")
    recorded = snapshot.get("prompt_template_hash") or None
    recomputed = sha256_text(template) if isinstance(template, str) else None
    public = public_parameters(snapshot.get("parameters") or {})
    return {
        "name": snapshot.get("name", ""), "backend": snapshot.get("backend", ""), "role": role,
        "queue": snapshot.get("queue", ""), "box_format": snapshot.get("box_format", ""),
        "parameters": public["parameters"], "withheld": public["withheld"], "pinned": public["pinned"],
        "prompt_template_sha256": recorded or recomputed,
        "prompt_template_hash_matches": (recorded == recomputed) if recorded and recomputed else None,
        "local_weights": local_weights,
        "weights_sha256": weights_hash(snapshot),
        "fitted_split": snapshot.get("fitted_split"),
    }
