"""The generalisation league's targets, in AMI, by half, and its table.

Every set × seed row of ``default`` is compared with the peers' fits of the same set and seed:

- dense: **met** when AMI ≥ the best AMI of ``bgm`` and ``gmm-bic`` − 0.01 and K ≤ 2 × true K;
  its **floor** holds when AMI ≥ half the best peer's AMI. A half meets the dense target when at
  least 90 % of its rows are met and every row holds its floor.
- text: **met** when AMI ≥ the best AMI of ``gsdmm``, ``tfidf-kmeans-true-k`` and
  ``lda-true-k`` − 0.02 and K ≤ 3 × true K; a half meets the text target when at least 80 % of
  its rows are met and every row's median cluster size is ≥ 5 documents.
- speed (dense rows): the default's CPU seconds ≤ 3 × ``bgm``'s on sets under 10^4 rows,
  ≤ 1 × from 10^4 rows (reported, one run's measurement).

AMI is chance-adjusted (Vinh, Epps & Bailey 2010): hundreds of tiny clusters score about 0,
where NMI rewards them. A peer that failed or ran out of time is left out of the best (the row
says so); a row with no peer has no verdict; a default that fails fails its row. Sets of the
league's own registry (:data:`~bnpdist.league.sets.SETS`) are the ``seen`` group, reported apart.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..mixture import ALGORITHMS, SAMPLERS
from .records import Record
from .sets import SETS
from .split import HALVES, SEEN, half

DENSE_PEERS = ("bgm", "gmm-bic")
TEXT_PEERS = ("gsdmm", "tfidf-kmeans-true-k", "lda-true-k")
#: the entrants of a generalisation run
ESTIMATORS = ("default",) + DENSE_PEERS + TEXT_PEERS
#: bnpdist's samplers with every default, judged by the default's targets in a table of their own
SAMPLER_ENTRANTS = tuple(a for a in ALGORITHMS if a in SAMPLERS)
#: (AMI slack, K factor, share of rows to meet) per kind
RULES = {"dense": (0.01, 2, 0.90), "text": (0.02, 3, 0.80)}
#: the dense floor: AMI ≥ this share of the best peer's; the text floor: median cluster size
FLOOR_SHARE, MIN_MEDIAN_SIZE = 0.5, 5
#: speed: the default's CPU ≤ factor × bgm's, by n below / from LARGE_N
SPEED = (3.0, 1.0)
LARGE_N = 10_000


def group(name: str) -> str:
    """``seen`` for the league's own sets, else the set's half."""
    return SEEN if name in SETS else half(name)


@dataclass
class Row:
    """One set × seed of the judged entrant (the default, or a sampler) with its peers and
    verdicts (None: no verdict)."""

    default: Record
    group: str
    peers: dict = field(default_factory=dict)   # name -> Record
    best: tuple | None = None                   # (peer name, AMI)
    met: bool | None = None
    floor: bool | None = None                   # dense: AMI floor; text: median size
    speed: bool | None = None
    why: str = ""


def _timed_out(r: Record) -> bool:
    return (r.error or "").startswith("timeout")


def _peer_note(r: Record) -> str:
    return f"{r.estimator} {'timeout' if _timed_out(r) else 'failed'}"


def rows(records: list[Record], who: str = "default") -> list[Row]:
    """A :class:`Row` for every record of ``who`` (the default, or a sampler judged by the
    default's targets), in the records' order."""
    by = {(r.set, r.estimator, r.seed): r for r in records}
    out = []
    for d in (r for r in records if r.estimator == who):
        peers_of = DENSE_PEERS if d.kind == "dense" else TEXT_PEERS
        row = Row(d, group(d.set), {p: by[d.set, p, d.seed] for p in peers_of if (d.set, p, d.seed) in by})
        slack, k_factor, _ = RULES[d.kind]
        scored = {p: r.ami for p, r in row.peers.items() if r.ami is not None}
        notes = [_peer_note(r) for r in row.peers.values() if r.ami is None]
        if scored:
            row.best = max(scored.items(), key=lambda kv: kv[1])
        if d.ami is None:
            row.met, notes = False, [f"{who}: {d.error}"] + notes
        elif row.best is not None:
            k_ok = d.k <= k_factor * d.true_k
            row.met = bool(d.ami >= row.best[1] - slack and k_ok)
            if d.ami < row.best[1] - slack:
                notes.append(f"AMI {d.ami:.3f} < {row.best[1]:.3f} − {slack:g}")
            if not k_ok:
                notes.append(f"K {d.k} > {k_factor}×{d.true_k}")
        if d.kind == "dense":
            if d.ami is not None and row.best is not None:
                row.floor = bool(d.ami >= FLOOR_SHARE * row.best[1])
            bgm = row.peers.get("bgm")
            if d.cpu is not None and bgm is not None and bgm.cpu is not None and bgm.ami is not None:
                row.speed = bool(d.cpu <= SPEED[d.n >= LARGE_N] * bgm.cpu)
        else:
            row.floor = None if d.median_size is None else bool(d.median_size >= MIN_MEDIAN_SIZE)
            if row.floor is False:
                notes.append(f"median cluster size {d.median_size:g} < {MIN_MEDIAN_SIZE}")
        row.why = "; ".join(notes)
        out.append(row)
    return out


@dataclass(frozen=True)
class Verdict:
    group: str
    kind: str
    rows: int
    judged: int
    met: int
    floor_misses: int
    speed_met: int
    speed_judged: int
    passed: bool | None

    @property
    def needed(self) -> int:
        return _needed(self.kind, self.judged)


def _needed(kind: str, judged: int) -> int:
    """Rows a target needs met: its share (RULES) of the judged rows, rounded up."""
    return int(np.ceil(RULES[kind][2] * judged))


def verdicts(all_rows: list[Row]) -> list[Verdict]:
    """The target of each group (tune, check, seen) and kind that has rows."""
    out = []
    for g in (*HALVES, SEEN):
        for kind in ("dense", "text"):
            rs = [r for r in all_rows if r.group == g and r.default.kind == kind]
            if not rs:
                continue
            judged = [r for r in rs if r.met is not None]
            met = sum(r.met for r in judged)
            floors = sum(r.floor is False for r in rs)
            speed = [r for r in rs if r.speed is not None]
            passed = None if not judged else bool(met >= _needed(kind, len(judged)) and floors == 0)
            out.append(Verdict(g, kind, len(rs), len(judged), met, floors, sum(r.speed for r in speed),
                               len(speed), passed))
    return out


_YES = {True: "yes", False: "**no**", None: "—"}


def _fmt(r: Record | None) -> str:
    if r is None:
        return ""
    if r.ami is None:
        return "timeout" if _timed_out(r) else "error"
    return f"{r.ami:.3f} K {r.k}"


def summary_table(vs: list[Verdict]) -> str:
    out = ["| group | kind | rows | met | needed | floor misses | target | speed met |",
           "|---|---|---:|---:|---:|---:|---|---:|"]
    for v in vs:
        floor = "median size < 5" if v.kind == "text" else "AMI < ½ best"
        speed = f"{v.speed_met} of {v.speed_judged}" if v.speed_judged else "—"
        out.append(f"| {v.group} | {v.kind} | {v.rows} | {v.met} of {v.judged} | {v.needed} | "
                   f"{v.floor_misses} ({floor}) | {_YES[v.passed]} | {speed} |")
    return "\n".join(out)


def rows_table(all_rows: list[Row], kind: str) -> str:
    """Every row of ``kind``: group, set, seed, the default's AMI first, the peers', verdicts."""
    peers = DENSE_PEERS if kind == "dense" else TEXT_PEERS
    head = (["group", "set (n, d, true K)", "seed", "AMI", "NMI", "ARI", "K", "med. size"]
            + [f"{p} AMI" for p in peers] + ["CPU s default / bgm" if kind == "dense" else "CPU s default",
                                               "met", "floor", "why"])
    out = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    order = {g: i for i, g in enumerate((*HALVES, SEEN))}
    for r in sorted((r for r in all_rows if r.default.kind == kind),
                    key=lambda r: (order[r.group], r.default.set, r.default.seed)):
        d = r.default
        scores = (["error"] * 3 if d.ami is None else [f"{d.ami:.3f}", f"{d.nmi:.3f}", f"{d.ari:.3f}"])
        cpu = "" if d.cpu is None else f"{d.cpu:.1f}"
        if kind == "dense" and "bgm" in r.peers and r.peers["bgm"].cpu is not None:
            cpu += f" / {r.peers['bgm'].cpu:.1f}"
        out.append(f"| {r.group} | {d.set} ({d.n:,}, {d.d:,}, {d.true_k}) | {d.seed} | "
                   + " | ".join(scores) + f" | {'' if d.k is None else d.k} | "
                   + f"{'' if d.median_size is None else f'{d.median_size:g}'} | "
                   + " | ".join(_fmt(r.peers.get(p)) for p in peers)
                   + f" | {cpu} | {_YES[r.met]} | {_YES[r.floor]} | {r.why} |")
    return "\n".join(out)


def samplers_summary(records: list[Record]) -> str:
    """Each sampler's targets by group and kind, judged as the default's: met rows of judged,
    floor misses, speed against bgm, and its CPU seconds over the rows beside the default's."""
    out = ["| sampler | group | kind | rows | met | needed | floor misses | speed met | CPU s (default's) |",
           "|---|---|---|---:|---:|---:|---:|---:|---|"]
    cpu = {(r.set, r.estimator, r.seed): r.cpu for r in records}
    for who in SAMPLER_ENTRANTS:
        rs = rows(records, who)
        for v in verdicts(rs):
            mine = [r.default for r in rs if r.group == v.group and r.default.kind == v.kind]
            own = sum(r.cpu or 0.0 for r in mine)
            base = sum(cpu.get((r.set, "default", r.seed)) or 0.0 for r in mine)
            timeouts = sum(_timed_out(r) for r in mine)
            speed = f"{v.speed_met} of {v.speed_judged}" if v.speed_judged else "—"
            out.append(f"| {who} | {v.group} | {v.kind} | {v.rows} | {v.met} of {v.judged} | {v.needed} | "
                       f"{v.floor_misses} | {speed} | {own:.1f} ({base:.1f})"
                       + f"{f', {timeouts} past the CPU limit' if timeouts else ''} |")
    return "\n".join(out)


def samplers_table(records: list[Record]) -> str:
    """Every set × seed with sampler records: the default's AMI and K, each sampler's, the best
    peer's, in group order."""
    present = [s for s in SAMPLER_ENTRANTS if any(r.estimator == s for r in records)]
    by = {(r.set, r.estimator, r.seed): r for r in records}
    base = {(r.default.set, r.default.seed): r for r in rows(records)}
    kind = {r.set: r.kind for r in records}
    order = {g: i for i, g in enumerate((*HALVES, SEEN))}
    keys = sorted({(r.set, r.seed) for r in records if r.estimator in present},
                  key=lambda k: (order[group(k[0])], kind[k[0]], k))
    head = ["group", "kind", "set", "seed", "default"] + present + ["best peer"]
    out = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for name, seed in keys:
        row = base.get((name, seed))
        best = "" if row is None or row.best is None else f"{row.best[0]} {row.best[1]:.3f}"
        out.append(f"| {group(name)} | {kind[name]} | {name} | {seed} | {_fmt(by.get((name, 'default', seed)))} | "
                   + " | ".join(_fmt(by.get((name, s, seed))) for s in present) + f" | {best} |")
    return "\n".join(out)


def render(records: list[Record]) -> str:
    """The summary by group and kind, then every dense row and every text row; where samplers
    ran, their summary and rows after."""
    rs = rows(records)
    parts = [summary_table(verdicts(rs))]
    for kind in ("dense", "text"):
        if any(r.default.kind == kind for r in rs):
            parts.append(f"**{kind} rows** (AMI of the default, then its NMI, ARI, K and median cluster "
                         f"size; the peers' AMI and K on the same set and seed)\n\n{rows_table(rs, kind)}")
    if any(r.estimator in SAMPLER_ENTRANTS for r in records):
        parts.append("**samplers** (`BNPMixture(algorithm=A)` with every other default, judged by the "
                     f"default's targets)\n\n{samplers_summary(records)}\n\n"
                     f"AMI and K of each\n\n{samplers_table(records)}")
    return "\n\n".join(parts)


def sets_table(specs: dict) -> str:
    """The sets (``name → SetSpec``) with their half and kind, tune half first."""
    out = ["| set | half | kind | what |", "|---|---|---|---|"]
    for g in HALVES:
        for kind in ("dense", "text"):
            for name, s in specs.items():
                if group(name) == g and s.kind == kind:
                    out.append(f"| `{name}` | {g} | {kind}{', seeded' * s.seeded} | {s.about} |")
    return "\n".join(out)
