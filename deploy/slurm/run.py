"""Run a bnpdist command on a Dask cluster of Slurm jobs (dask-jobqueue).

    python deploy/slurm/run.py --jobs 4 -- bnpdist fit /scratch/corpus --out /scratch/models/fit

starts ``SLURMCluster`` (one Slurm job = one worker process, ``--cores`` threads), scales it to
``--jobs`` jobs, runs the command with ``--scheduler`` set to the cluster, and shuts it down.
Needs ``pip install dask-jobqueue``; run it on a login node or from ``fit.sbatch``.
"""
import argparse
import os

from bnpdist.cli import cli


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=4, help="Slurm jobs (workers)")
    p.add_argument("--cores", type=int, default=4, help="cores per job")
    p.add_argument("--memory", default="16GB", help="memory per job")
    p.add_argument("--walltime", default="04:00:00")
    p.add_argument("--queue", default=None, help="Slurm partition")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- bnpdist COMMAND ...")
    a = p.parse_args()
    args = [x for x in a.command if x != "--"]
    args = args[1:] if args[:1] == ["bnpdist"] else args
    from dask_jobqueue import SLURMCluster
    scratch = os.environ.get("TMPDIR", "/tmp")
    with SLURMCluster(cores=a.cores, processes=1, memory=a.memory, walltime=a.walltime,
                      queue=a.queue, local_directory=scratch,
                      job_script_prologue=[f"export NUMBA_CACHE_DIR={scratch}/numba-cache",
                                           "export OMP_NUM_THREADS=1"]) as cluster:
        cluster.scale(jobs=a.jobs)
        wait = [] if "--worker-timeout" in args else ["--worker-timeout", "3600"]   # queued jobs
        cli.main([*args, "--scheduler", cluster.scheduler_address, *wait], prog_name="bnpdist")


if __name__ == "__main__":
    main()
