"""The league's records as Markdown: NMI matrices (dense and text sets), targets, details."""
from __future__ import annotations

import numpy as np

from .records import Record
from .targets import check

_VERDICT = {True: "pass", False: "**fail**", None: "n/a"}


def _group(records, set_name, estimator):
    return [r for r in records if r.set == set_name and r.estimator == estimator]


def _stats(rows):
    """(mean NMI, min NMI, mean ARI, K min, K max, mean seconds, seeds, mean CPU seconds or
    None, mean AMI or None) of the scored rows."""
    ok = [r for r in rows if r.nmi is not None]
    if not ok:
        return None
    ks = [r.k for r in ok]
    return (float(np.mean([r.nmi for r in ok])), min(r.nmi for r in ok),
            float(np.mean([r.ari for r in ok])), min(ks), max(ks),
            float(np.mean([r.seconds for r in ok])), len(ok),
            float(np.mean([r.cpu for r in ok])) if all(r.cpu is not None for r in ok) else None,
            float(np.mean([r.ami for r in ok])) if all(r.ami is not None for r in ok) else None)


def _krange(lo, hi) -> str:
    return f"{lo}" if lo == hi else f"{lo}–{hi}"


def _cell(rows) -> str:
    s = _stats(rows)
    if s is None:
        return "error" if rows else ""
    return f"{s[0]:.3f} ({s[1]:.3f}) K {_krange(s[3], s[4])}"


def _label(name: str, role: str) -> str:
    return f"{name} (ref.)" if role == "reference" else name


def matrix(records: list[Record], kind: str) -> str:
    """Sets of ``kind`` × estimators: 'mean NMI (min NMI) K min–max' over the seeds."""
    rows = [r for r in records if r.kind == kind]
    if not rows:
        return ""
    sets = list(dict.fromkeys(r.set for r in rows))
    ests = list(dict.fromkeys(r.estimator for r in rows))
    roles = {r.estimator: r.role for r in rows}
    first = {r.set: r for r in rows}
    head = ["set (n, d, true K)"] + [_label(e, roles[e]) for e in ests]
    out = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for s in sets:
        r = first[s]
        out.append(f"| {s} ({r.n:,}, {r.d:,}, {r.true_k}) | "
                   + " | ".join(_cell(_group(rows, s, e)) for e in ests) + " |")
    return "\n".join(out)


def targets_table(records: list[Record]) -> str:
    out = ["| set | kind | target | result | detail |", "|---|---|---|---|---|"]
    for t in check(records):
        out.append(f"| {t.set} | {t.kind} | {t.what} | {_VERDICT[t.passed]} | {t.detail} |")
    return "\n".join(out)


def details(records: list[Record]) -> str:
    """One row per set × estimator: NMI mean and min, ARI and AMI means, K range, seconds, seeds,
    errors."""
    out = ["| set | estimator | role | NMI mean | NMI min | ARI mean | AMI mean | K | wall s | CPU s | seeds | error |",
           "|---|---|---|---:|---:|---:|---:|---|---:|---:|---:|---|"]
    for s in dict.fromkeys(r.set for r in records):
        for e in dict.fromkeys(r.estimator for r in records if r.set == s):
            rows = _group(records, s, e)
            errors = "; ".join(sorted({f"seed {r.seed}: {r.error}" for r in rows if r.error}))
            st = _stats(rows)
            cells = (["", "", "", "", "", "", "", "0"] if st is None else
                     [f"{st[0]:.3f}", f"{st[1]:.3f}", f"{st[2]:.3f}", "" if st[8] is None else f"{st[8]:.3f}",
                      _krange(st[3], st[4]),
                      f"{st[5]:.1f}", "" if st[7] is None else f"{st[7]:.1f}", str(st[6])])
            out.append(f"| {s} | {e} | {rows[0].role} | " + " | ".join(cells) + f" | {errors} |")
    return "\n".join(out)


def summary(records: list[Record], notes=()) -> str:
    """The README block: the two matrices and the targets, with a legend."""
    n_pass = sum(t.passed is True for t in check(records))
    n_all = sum(t.passed is not None for t in check(records))
    seeds = {}
    for r in records:
        seeds.setdefault(r.estimator, set()).add(r.seed)
    by_count = {}
    for e, s in seeds.items():
        by_count.setdefault(len(s), []).append(e)
    legend = "; ".join(f"{', '.join(es)}: {n} seed{'s' * (n > 1)}" for n, es in sorted(by_count.items()))
    cpu = sum(r.cpu or 0.0 for r in records) / 60
    parts = ["Cells: mean NMI over the seeds (worst seed in brackets) and the range of K found. "
             f"Seeds: {legend}. (ref.) = given the true K, a reference line, not a competitor. "
             f"{len(records)} fits, {cpu:.0f} CPU minutes in all.",
             *[f"- {n}" for n in notes]]
    for kind in ("dense", "text"):
        m = matrix(records, kind)
        if m:
            parts.append(f"**{kind} sets**\n\n{m}")
    parts.append(f"**targets: {n_pass} of {n_all} met**\n\n{targets_table(records)}")
    return "\n\n".join(parts)


def render(records: list[Record], notes=()) -> str:
    """The whole report: :func:`summary`, then :func:`details`."""
    return summary(records, notes) + "\n\n**every set × estimator**\n\n" + details(records)


def compare(before: list[Record], after: list[Record]) -> str:
    """One paragraph on how a rerun differs from an earlier run: records with the same
    (set, estimator, seed) whose NMI or K changed, and the total fit seconds of each."""
    key = lambda r: (r.set, r.estimator, r.seed)
    old = {key(r): r for r in before}
    both = [(old[key(r)], r) for r in after if key(r) in old]
    changed = [(a, b) for a, b in both if (a.nmi, a.k, a.error is None) != (b.nmi, b.k, b.error is None)]
    secs = [sum(r.seconds or 0.0 for r in rs) for rs in ([a for a, _ in both], [b for _, b in both])]
    text = (f"{len(both)} fits in both runs; fit seconds {secs[0]:,.0f} then {secs[1]:,.0f}; "
            f"{len(both) - len(changed)} with the same NMI and K")
    if changed:
        fmt = lambda r: "error" if r.nmi is None else f"{r.nmi:.3f} K {r.k}"
        text += "; changed: " + ", ".join(f"{a.set} {a.estimator} seed {a.seed} {fmt(a)} → {fmt(b)}"
                                          for a, b in changed[:20])
        text += f" (and {len(changed) - 20} more)" if len(changed) > 20 else ""
    return text + "."
