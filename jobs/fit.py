"""Batch fit job: `python jobs/fit.py SOURCE --out DIR [flags]`, the flags of `bnpdist fit`.

On a Dask cluster give `--scheduler ADDRESS` (or set DASK_SCHEDULER_ADDRESS, as the
dask-kubernetes DaskJob runner pod does); without one it starts a local cluster.
"""
import sys

from bnpdist.cli import cli

if __name__ == "__main__":
    cli.main(["fit", *sys.argv[1:]], prog_name="jobs/fit.py")
