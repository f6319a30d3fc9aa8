"""Nightly job: `python jobs/recluster.py --model STORE --new DIR [flags]`, the flags of
`bnpdist recluster` (fold in, EP passes, publish STORE/<timestamp>, switch STORE/latest).
"""
import sys

from bnpdist.cli import cli

if __name__ == "__main__":
    cli.main(["recluster", *sys.argv[1:]], prog_name="jobs/recluster.py")
