"""bnpdist: distributed Bayesian nonparametric clustering (DP / NGGP mixtures) on Dask."""
__version__ = "0.1.0"

_LAZY = {"BNPMixture": "mixture", "BNPHMM": "hmm", "KnownGroupsDMM": "models"}


def __getattr__(name):
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(name)


__all__ = ["BNPMixture", "BNPHMM", "KnownGroupsDMM", "__version__"]
