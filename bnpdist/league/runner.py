"""Run the league: every chosen entrant on every chosen set and seed, one record each.

    from bnpdist.league import run_league, render
    records = run_league(sets=["iris", "news"], estimators=["default", "bgm-dp", "gsdmm"],
                         seeds=range(5))
    print(render(records))

Fits run one after another in this process (in-memory input: no Dask cluster), with library
warnings and log lines silenced; an exception in one fit becomes that record's ``error``.
"""
from __future__ import annotations

import json
import logging
import time
import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from sklearn.metrics import adjusted_mutual_info_score, adjusted_rand_score

from ..metrics import nmi
from .entrants import ENTRANTS
from .limits import FIT_CPU_SECONDS, FitTimeout, cpu_limit
from .records import Record
from .sets import LEAGUE_SETS, QUICK_SETS, SETS
from .wide_sets import WIDE_SETS

#: the seeds of a run unless given
SEEDS = tuple(range(5))
#: the seeds of ``quick=True`` unless given
QUICK_SEEDS = (0, 1)
#: every set a run may name: the league's and the generalisation league's
KNOWN_SETS = {**SETS, **WIDE_SETS}
#: records file and report file written by :func:`write_results`
JSON_NAME, MD_NAME = "league.json", "league.md"


@contextmanager
def quiet():
    """No warnings and no log lines below ERROR from the libraries while fitting."""
    names = ("distributed", "bnpdist", "numba", "sklearn")
    levels = {n: logging.getLogger(n).level for n in names}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in names:
            logging.getLogger(n).setLevel(logging.ERROR)
        try:
            yield
        finally:
            for n, lv in levels.items():
                logging.getLogger(n).setLevel(lv)


def _resolve(given, known: dict, what: str) -> dict:
    """Names (looked up in ``known``) or objects with a ``name`` → {name: object}."""
    out = {}
    for g in given:
        if isinstance(g, str):
            if g not in known:
                raise ValueError(f"unknown {what} {g!r}; choose from {', '.join(known)}")
            g = known[g]
        out[g.name] = g
    return out


def plan(sets=None, estimators=None, seeds=None, quick: bool = False):
    """``(jobs, sets, entrants, notes)``: ``jobs`` = ``[(set name, entrant name, seed), ...]``
    in run order; ``sets``/``entrants`` map names to :class:`SetSpec`/:class:`Entrant`
    (given by name, or as objects: a test's own sets); ``notes`` = why entrants could not play
    (e.g. "bnpy: not installed")."""
    sets = _resolve(sets or (QUICK_SETS if quick else LEAGUE_SETS), KNOWN_SETS, "set")
    ests = _resolve(estimators or ENTRANTS, ENTRANTS, "estimator")
    seeds = list(QUICK_SEEDS if quick and seeds is None else SEEDS if seeds is None else seeds)
    notes = [m for m in dict.fromkeys(e.missing() for e in ests.values()) if m]
    ests = {n: e for n, e in ests.items() if e.missing() is None}
    jobs = [(s, e, seed) for s, spec in sets.items() for e, ent in ests.items() if spec.kind in ent.kinds
            for seed in seeds[:ent.seeds or len(seeds)]]
    return jobs, sets, ests, notes


def _cpu() -> float:
    """CPU seconds of this process and of its finished children (bnpy runs in one)."""
    import resource
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def fit_one(ls, entrant, seed: int, cpu_seconds: float | None = FIT_CPU_SECONDS) -> Record:
    """Fit and score one entrant on one labelled set with one seed, within ``cpu_seconds``
    (:mod:`~bnpdist.league.limits`; None: no limit)."""
    base = dict(**ls.describe(), estimator=entrant.name, role=entrant.role, seed=seed, seeded=ls.seeded)
    t0, c0 = time.perf_counter(), _cpu()
    try:
        with quiet(), cpu_limit(cpu_seconds):
            labels = np.asarray(entrant.fit(ls, seed))
    except FitTimeout as e:
        return Record(**base, error=f"timeout: {e}")
    except Exception as e:  # one failing fit is a result, not the end of the league
        msg = str(e).strip().splitlines()
        return Record(**base, error=f"{type(e).__name__}: {msg[0] if msg else ''}"[:200])
    seconds, cpu = time.perf_counter() - t0, _cpu() - c0
    sizes = np.unique(labels, return_counts=True)[1]
    return Record(**base, nmi=nmi(ls.labels, labels), ari=float(adjusted_rand_score(ls.labels, labels)),
                  ami=float(adjusted_mutual_info_score(ls.labels, labels)), k=len(sizes),
                  median_size=float(np.median(sizes)), seconds=seconds, cpu=cpu)


def _data(spec, seed: int, quick: bool, cache: dict):
    """The set's data for ``seed``, loaded once into ``cache`` (one set's data kept at a time)."""
    key = (spec.name, seed if spec.seeded else 0, quick)
    if key not in cache:
        for old in [k for k in cache if k[0] != spec.name]:
            del cache[old]
        cache[key] = spec.load(seed, quick)
    return cache[key]


#: a worker process's loaded sets
_WORKER_CACHE: dict = {}


def _job(set_name: str, entrant_name: str, seed: int, quick: bool, cpu_seconds) -> Record:
    """One fit in a worker process: the set and entrant looked up by name."""
    return fit_one(_data(KNOWN_SETS[set_name], seed, quick, _WORKER_CACHE), ENTRANTS[entrant_name], seed,
                   cpu_seconds)


def _parallel(jobs, specs, entrants, quick, cpu_seconds, n_jobs, bar, on_record):
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    custom = [n for n, o in specs.items() if KNOWN_SETS.get(n) is not o]
    custom += [n for n, o in entrants.items() if ENTRANTS.get(n) is not o]
    if custom:
        raise ValueError(f"n_jobs > 1 runs sets and estimators by name only; {custom} are not in the registry")
    out = [None] * len(jobs)
    with ProcessPoolExecutor(n_jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(_job, s, e, seed, quick, cpu_seconds): i
                   for i, (s, e, seed) in enumerate(jobs)}
        for f in as_completed(futures):
            out[futures[f]] = f.result()
            if on_record is not None:
                on_record([r for r in out if r is not None])
            if bar is not None:
                bar.update(1)
    return out


def run_league(sets=None, estimators=None, seeds=None, *, quick: bool = False, n_jobs: int = 1,
               cpu_seconds: float | None = FIT_CPU_SECONDS, progress=None, notes: list | None = None,
               on_record=None, reuse=None) -> list[Record]:
    """Records of every (set, entrant, seed) of :func:`plan`, in plan order.

    ``sets``/``estimators``: names in :data:`~bnpdist.league.sets.SETS` /
    :data:`~bnpdist.league.entrants.ENTRANTS` or such objects (default: every entrant and the
    sets of :data:`~bnpdist.league.sets.LEAGUE_SETS`, not the ``extra`` ones; ``quick``: the small
    versions of :data:`~bnpdist.league.sets.QUICK_SETS`); ``seeds`` default 0–4 (``quick``: 0,
    1), capped per entrant by ``Entrant.seeds``. ``n_jobs`` > 1 runs the fits in that many
    worker processes (registry names only; each fit's seconds are then measured beside the
    others). A fit past ``cpu_seconds`` CPU seconds stops and is recorded as a timeout (None:
    no limit). ``progress(iterable, total) -> iterable`` wraps the jobs (e.g. tqdm); ``notes``,
    a list, receives the lines about entrants that could not play; ``on_record(records so
    far)`` is called after every fit (e.g. to save partial results). ``reuse(labelled set,
    entrant name, seed) -> Record | None`` may return an earlier record of that fit to keep
    instead of fitting again (e.g. peers' records cached on disk; one process only).
    """
    jobs, specs, entrants, missing = plan(sets, estimators, seeds, quick)
    if notes is not None:
        notes.extend(missing)
    if n_jobs > 1:
        if reuse is not None:
            raise ValueError("reuse runs in one process only (n_jobs=1)")
        bar = progress(None, len(jobs)) if progress else None
        try:
            return _parallel(jobs, specs, entrants, quick, cpu_seconds, n_jobs, bar, on_record)
        finally:
            if bar is not None:
                bar.close()
    records, cache = [], {}
    bar = progress(jobs, len(jobs)) if progress else jobs
    for s, e, seed in bar:
        if hasattr(bar, "set_postfix_str"):   # a tqdm bar: show what runs now
            bar.set_postfix_str(f"{s} {e} seed {seed}")
        ls = _data(specs[s], seed, quick, cache)
        kept = None if reuse is None else reuse(ls, e, seed)
        records.append(kept if kept is not None else fit_one(ls, entrants[e], seed, cpu_seconds))
        if on_record is not None:
            on_record(records)
    return records


def write_results(records: list[Record], out, notes=(), header: str = "") -> tuple[Path, Path]:
    """Write ``league.json`` (every record) and ``league.md`` (:func:`~bnpdist.league.table.render`)
    under the folder ``out``, each atomically. Returns their paths."""
    from ..data.atomic import write_json, write_text
    from .table import render
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    js, md = out / JSON_NAME, out / MD_NAME
    write_json(js, {"notes": list(notes), "records": [r.to_dict() for r in records]})
    write_text(md, (header + "\n\n" if header else "") + render(records, notes) + "\n")
    return js, md


def read_results(path) -> tuple[list[Record], list[str]]:
    """The records and notes of a ``league.json``."""
    obj = json.loads(Path(path).read_text())
    return [Record.from_dict(d) for d in obj["records"]], obj.get("notes", [])
