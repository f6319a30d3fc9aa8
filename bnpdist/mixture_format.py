"""A fitted ``BNPMixture`` as a saved model: what ``model.json`` holds (its parameters, the given
and fitted prior and family, the fit's record) and what ``arrays.npz`` holds (statistics, cluster
probabilities, labels, the kept columns and their lift, the stream's kept rows, the hyperplanes),
and what is read back (:mod:`bnpdist.persist` writes and reads the folder,
:mod:`bnpdist.model_check` checks the arrays first)."""
from __future__ import annotations

from pathlib import Path

from .data.blocks import CSRBlock
from .data.locate import read_vocab
from .inference.features import Projection
from .obs import family_from_dict
from .obs.base import SuffStats
from .obs.span import Lift
from .priors import prior_from_dict

#: saved-model format read and written by this version
FORMAT_VERSION = 1
#: a CSR block's arrays, in :class:`~bnpdist.data.blocks.CSRBlock`'s field order (saved stream rows)
CSR_ARRAYS = ("indptr", "indices", "data")


def to_saved(est, params: tuple) -> tuple[dict, dict]:
    """(meta, arrays) of the fitted ``est`` whose parameters ``params`` are saved."""
    stats = est.stats_
    meta = {"format": "bnpdist.BNPMixture", "format_version": FORMAT_VERSION,
            "params": {k: getattr(est, k) for k in params},
            "prior": None if est.prior is None else est.prior.to_dict(),
            "obs": None if est.obs is None else est.obs.to_dict(),
            "prior_": est.prior_.to_dict(), "obs_": est.obs_.to_dict(),
            "family": stats.family, "seed": est.seed_, "U": est.U_,
            "n_rows_seen": est.n_rows_seen_, "history": est.history_,
            "hyper_search": getattr(est, "hyper_search_", None),
            "n_iter": getattr(est, "n_iter_", None), "converged": getattr(est, "converged_", None)}
    arrays = {**stats.to_arrays(), "ek": est.ek_}
    if getattr(est, "columns_", None) is not None:
        arrays.update({"columns": est.columns_, "lift.offset": est.lift_.offset, "lift.matrix": est.lift_.matrix})
    if hasattr(est, "labels_"):
        arrays["labels"] = est.labels_
    rows = getattr(est, "stream_rows_", None)
    if isinstance(rows, CSRBlock):
        arrays.update({f"stream_rows.{k}": getattr(rows, k) for k in CSR_ARRAYS})
    elif rows is not None:
        arrays["stream_rows"] = rows
    if getattr(est, "hyperplanes_", None) is not None:
        f = est.discriminative_features_
        arrays.update({"hyperplanes": est.hyperplanes_, "features.mean": f.mean, "features.components": f.components})
    return meta, arrays


def from_saved(cls, path: Path, meta: dict, arrays: dict):
    """The estimator ``cls(**params)`` with the fitted attributes of a saved model whose arrays
    :func:`bnpdist.model_check.check_saved` passed."""
    params = meta.get("params") or {}
    est = cls(prior=None if meta["prior"] is None else prior_from_dict(meta["prior"]),
              obs=None if meta["obs"] is None else family_from_dict(meta["obs"]), **params)
    est.prior_, est.obs_ = prior_from_dict(meta["prior_"]), family_from_dict(meta["obs_"])
    est.stats_ = SuffStats.from_arrays(meta["family"], arrays)
    est.ek_, est.U_ = arrays["ek"], float(meta["U"])
    est.n_rows_seen_, est.seed_, est.history_ = int(meta["n_rows_seen"]), meta["seed"], meta["history"]
    est.columns_ = arrays["columns"].astype(bool) if "columns" in arrays else None
    est.lift_ = None if est.columns_ is None else Lift(arrays["lift.offset"], arrays["lift.matrix"])
    if est.columns_ is not None and (est.columns_.sum() != est.obs_.n_features or
                                     est.lift_.matrix.shape != (len(est.columns_), est.obs_.n_features)):
        raise ValueError(f"{path / 'arrays.npz'}: 'columns' keeps {int(est.columns_.sum())} columns and "
                         f"'lift.matrix' has shape {est.lift_.matrix.shape}; the family has {est.obs_.n_features}")
    est.n_features_in_ = est._input_width()
    est.hyper_search_ = meta.get("hyper_search")
    est.n_iter_, est.converged_ = meta.get("n_iter"), meta.get("converged")
    est.vocabulary_ = read_vocab(str(path), None) if (path / "vocab.txt").is_file() else None
    if "labels" in arrays:
        est.labels_ = arrays["labels"]
    if "stream_rows" in arrays:
        est.stream_rows_ = arrays["stream_rows"]
    elif "stream_rows.indptr" in arrays:
        est.stream_rows_ = CSRBlock(*(arrays[f"stream_rows.{k}"] for k in CSR_ARRAYS), est.obs_.n_features)
    if "hyperplanes" in arrays:
        H, f = arrays["hyperplanes"], Projection(arrays["features.mean"], arrays["features.components"])
        if H.shape != (est.stats_.K, f.n_features) or f.mean.shape != (est.obs_.n_features,):
            raise ValueError(f"{path / 'arrays.npz'}: hyperplanes {H.shape} do not fit {est.stats_.K} "
                             f"clusters and features {f.components.shape}")
        est.hyperplanes_, est.discriminative_features_ = H, f
    return est
