"""Per-unit keys and sealed outcomes: what lets a unit run away from the submitting supervisor without
giving up the run's secret or trusting the channel its outcome comes back on.

Each unit gets its own key, derived from the run's secret (which never leaves the submitting process):
the agent draws the unit's input contents from it, and seals the outcome it returns with it. A retry of
a unit gets a new key (the attempt is in the derivation), so contents seen by a candidate on a GPU that
died are not the ones it meets on the next. A key that leaks reveals one unit's inputs, never another's;
an outcome altered in transit (the object store, a proxy) no longer matches its seal and is refused.
"""

from __future__ import annotations

import hashlib
import hmac
import json


class SealError(Exception):
    """An outcome came back from a unit with a seal that does not match it: altered on the way. The
    executor records the scenario as `tampered` (solbench.executor.units.sealed_outcome)."""


def unit_key(secret: bytes, run_id: str, scenario_id: str, attempt: int) -> bytes:
    """16 bytes for one attempt at one scenario of one run."""
    message = f"solbench unit\0{run_id}\0{scenario_id}\0{attempt}".encode()
    return hmac.new(secret, message, hashlib.sha256).digest()[:16]


def retry_key(key: bytes) -> bytes:
    """The contents key of an agent's own second try at a unit (after running out of device memory): new
    contents, as for a retry on another GPU, so what a candidate stored of the first try replays nothing."""
    return hmac.new(key, b"solbench unit retried after out of memory", hashlib.sha256).digest()[:16]


def _canonical(doc: dict) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), allow_nan=True).encode()


def seal(doc: dict, key: bytes) -> str:
    """HMAC-SHA256 of a JSON document (canonical form), hex."""
    return hmac.new(key, _canonical(doc), hashlib.sha256).hexdigest()


def unseal(doc: dict, mac: str, key: bytes, where: str) -> dict:
    """`doc` if `mac` is its seal under `key`; SealError naming `where` otherwise."""
    if not isinstance(mac, str) or not hmac.compare_digest(seal(doc, key), mac):
        raise SealError(f"the outcome of {where} came back altered: it does not match the seal its agent "
                        "put on it, so the record keeps none of it")
    return doc
