"""Operations: batch fit/predict jobs, a versioned model store, exactly-once streaming,
nightly reclustering and quarantine of bad inputs.

- ``manifest``: the consumed input files (path, size, sha256) stored with each model
- ``store``: versioned model folders and the atomic ``latest`` switch
- ``batch``: ``fit`` into a model folder, ``predict`` into an assignments table
- ``stream`` / ``recluster``: the streaming and nightly jobs
- ``quarantine``: bad files moved aside with their reason
"""
from .batch import fit_to_dir, predict_to_file
from .manifest import Entry, Manifest
from .quarantine import quarantine
from .recluster import ReclusterResult, recluster
from .store import ModelStore, StoreBusy
from .stream import StreamResult, run_stream

__all__ = ["fit_to_dir", "predict_to_file", "Entry", "Manifest", "quarantine", "recluster",
           "ReclusterResult", "ModelStore", "StoreBusy", "run_stream", "StreamResult"]
