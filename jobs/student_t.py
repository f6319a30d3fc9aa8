"""Student-t clusters against the Gaussian, per set and seed (:mod:`bnpdist.algorithms.heavy_tails`).

    python jobs/student_t.py [--sets breast-cancer,wine] [--seeds 0,1,2] [--panel]

``--sets`` names league sets, the untuned panel's (with ``--panel``), or breast-cancer-quantile and
breast-cancer-yeo-johnson (scikit-learn's QuantileTransformer(100, normal) and PowerTransformer()).

For each set and seed: ``BNPMixture(obs=Gaussian())`` (the Gaussian alone, as before the t
clusters) and ``BNPMixture()`` (every default: the Gaussian fit, then the t clusters where their
evidence leads); prints one markdown row each with both fits' K and NMI, the Gaussian fit's
structure and c, the log joints the choice compared (the Gaussian fit's, the Gaussian after the
same moves and merges, the best t fit's at its ν and c), each c step's best ν and score, the
verdict and CPU seconds.  ``--panel``: the sets are the untuned panel's (``jobs/untuned_panel.py``).
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path


from bnpdist.league.sets import SETS, SetSpec
from bnpdist.metrics import nmi
from bnpdist.mixture import BNPMixture
from bnpdist.obs import Gaussian


def _breast_cancer(transform):
    def make(_seed, _quick):
        from sklearn.datasets import load_breast_cancer
        from sklearn.preprocessing import PowerTransformer, QuantileTransformer
        X, y = load_breast_cancer(return_X_y=True)
        step = {"quantile": QuantileTransformer(n_quantiles=100, output_distribution="normal"),
                "yeo-johnson": PowerTransformer()}[transform]
        return step.fit_transform(X), y
    return SetSpec(f"breast-cancer-{transform}", "dense", make, f"breast cancer, scikit-learn's {transform} transform")


#: preprocessings a user would try, beside the league's sets (``--sets`` names them too)
PREPROCESSED = {s.name: s for s in (_breast_cancer("quantile"), _breast_cancer("yeo-johnson"))}


def _fit(X, seed, **params):
    t0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = BNPMixture(random_state=seed, **params).fit(X)
    return est, time.process_time() - t0


def row(name: str, seed: int, spec=None) -> str:
    ls = (spec or PREPROCESSED.get(name) or SETS[name]).load(seed)
    gauss, tg = _fit(ls.X, seed, obs=Gaussian())
    est, td = _fit(ls.X, seed)
    head = (f"| {name} | {seed} | K {gauss.n_clusters_}, {nmi(ls.labels, gauss.labels_):.3f} | "
            f"K {est.n_clusters_}, {nmi(ls.labels, est.labels_):.3f} |")
    rec = (est.hyper_search_ or {}).get("tails")
    if rec is None:
        return head + f" not tried ({type(gauss.obs_).__name__}) | | | | {tg:.1f} / {td:.1f} |"
    chosen = gauss.hyper_search_["chosen"]
    steps = ", ".join(f"c {s['cov_fraction']:g}: ν {s['nu']:g} {s['score']:,.0f}" for s in rec["steps"])
    return (head + f" {chosen.get('obs.covariance', '')} c {chosen.get('obs.cov_fraction', 0):g} | "
            f"{rec['gaussian']:,.0f} / {rec['gaussian_moved']:,.0f} | {steps} | "
            f"{'t' if rec['kept'] else 'Gaussian'} (ν {rec['nu']:g}, c {rec['cov_fraction']:g}) | {tg:.1f} / {td:.1f} |")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sets", default="breast-cancer,iris,wine,blobs")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--panel", action="store_true", help="--sets name the untuned panel's sets")
    a = p.parse_args(argv)
    panel = {}
    if a.panel:
        sys.path.insert(0, str(Path(__file__).parent))
        from untuned_panel import PANEL as panel
    print("| set | seed | Gaussian K, NMI | default K, NMI | Gaussian structure, c | log joint: Gaussian / "
          "moved | best ν per c: score | kept | CPU s Gaussian / default |")
    print("|---|---|---|---|---|---|---|---|---|")
    rows = []
    for name in a.sets.split(","):
        for seed in (int(v) for v in a.seeds.split(",")):
            rows.append(row(name, seed, panel.get(name)))
            print(rows[-1], flush=True)
    return rows


if __name__ == "__main__":
    main()
