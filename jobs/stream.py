"""Streaming job: `python jobs/stream.py --watch DIR --model STORE [--once] [flags]`, the flags
of `bnpdist stream` (exactly-once ADF fold-in of each new Parquet file).
"""
import sys

from bnpdist.cli import cli

if __name__ == "__main__":
    cli.main(["stream", *sys.argv[1:]], prog_name="jobs/stream.py")
