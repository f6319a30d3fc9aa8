"""The generalisation league's halves, fixed by each set's name alone.

A set's half is the parity of the first byte of SHA-256 of its name: even → ``tune``, odd →
``check``. It depends on nothing else, so adding or removing sets never moves another set.
Defaults may be chosen on the tune half only; the check half is run and reported as it comes.
The sets the defaults were already tuned on (every set of :data:`~bnpdist.league.sets.SETS`, the
league's and its extra ones, and the untuned panel's, ``jobs/untuned_panel.py``) are in neither
half: they form the ``seen`` group.

A generated set's parameters come from :func:`name_seed` (a different digest of the name, so the
parameters do not follow the half).
"""
from __future__ import annotations

import hashlib

HALVES = ("tune", "check")
SEEN = "seen"


def half(name: str) -> str:
    """``"tune"`` or ``"check"``: the parity of SHA-256(name)'s first byte."""
    return HALVES[hashlib.sha256(name.encode()).digest()[0] & 1]


def name_seed(name: str) -> int:
    """A 64-bit seed fixed by the name: SHA-256 of ``"params:" + name``, first 8 bytes."""
    return int.from_bytes(hashlib.sha256(f"params:{name}".encode()).digest()[:8], "little")
