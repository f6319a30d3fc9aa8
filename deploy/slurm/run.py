"""Run a bnpdist command on a Dask cluster of Slurm jobs (dask-jobqueue), over mutual TLS.

    python deploy/slurm/run.py --jobs 4 -- bnpdist fit /scratch/corpus --out /scratch/models/fit

starts ``SLURMCluster`` (one Slurm job = one worker process, ``--cores`` threads) with
``protocol="tls://"`` and a ``distributed.Security`` requiring encryption, scales it to
``--jobs`` jobs, runs the command with ``--scheduler`` and the TLS files set, and shuts it
down. A scheduler on a shared HPC network runs whatever any client that reaches it submits,
so it never listens on plain tcp: the credentials (``ca.pem``, ``cert.pem``, ``key.pem``,
made by ``deploy/tls/make_certs.py`` on first use) live in ``--certs``, a folder that the
driver and every worker job read (default ``$HOME/.bnpdist/tls``; the key is readable by its
owner only). Needs ``pip install dask-jobqueue``; run it on a login node or from ``fit.sbatch``.
"""
import argparse
import importlib.util
import os
import socket
from pathlib import Path

from bnpdist.cli import cli
from bnpdist.distributed import tls_security


def credentials(folder: Path) -> dict:
    """``{"ca", "cert", "key"}`` paths in ``folder``, made there (for this host) if missing."""
    paths = {k: folder / f"{k}.pem" for k in ("ca", "cert", "key")}
    if all(p.is_file() for p in paths.values()):
        return paths
    spec = importlib.util.spec_from_file_location(
        "make_certs", Path(__file__).resolve().parents[1] / "tls" / "make_certs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    hosts = tuple(dict.fromkeys([socket.getfqdn(), socket.gethostname(), "localhost", "127.0.0.1"]))
    return module.make_credentials(folder, hosts)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=4, help="Slurm jobs (workers)")
    p.add_argument("--cores", type=int, default=4, help="cores per job")
    p.add_argument("--memory", default="16GB", help="memory per job")
    p.add_argument("--walltime", default="04:00:00")
    p.add_argument("--queue", default=None, help="Slurm partition")
    p.add_argument("--certs", type=Path, default=Path.home() / ".bnpdist" / "tls",
                   help="folder of the cluster's TLS files, shared with the worker jobs")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- bnpdist COMMAND ...")
    a = p.parse_args()
    args = [x for x in a.command if x != "--"]
    args = args[1:] if args[:1] == ["bnpdist"] else args
    from dask_jobqueue import SLURMCluster
    tls = {k: str(v) for k, v in credentials(a.certs).items()}
    scratch = os.environ.get("TMPDIR", "/tmp")
    numba_cache = os.environ.get("NUMBA_CACHE_DIR", f"{scratch}/numba-cache")   # the driver's
    with SLURMCluster(cores=a.cores, processes=1, memory=a.memory, walltime=a.walltime,
                      queue=a.queue, local_directory=scratch, protocol="tls://",
                      security=tls_security(tls["ca"], tls["cert"], tls["key"]),
                      job_script_prologue=[f"export NUMBA_CACHE_DIR={numba_cache}",
                                           "export OMP_NUM_THREADS=1"]) as cluster:
        cluster.scale(jobs=a.jobs)
        wait = [] if "--worker-timeout" in args else ["--worker-timeout", "3600"]   # queued jobs
        cli.main([*args, "--scheduler", cluster.scheduler_address, "--tls-ca", tls["ca"],
                  "--tls-cert", tls["cert"], "--tls-key", tls["key"], *wait], prog_name="bnpdist")


if __name__ == "__main__":
    main()
