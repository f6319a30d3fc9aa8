"""The main job: `python jobs/demo.py --out DIR`, the flags of `bnpdist demo` (bundled digits and
bars, known-groups model, ADF + EP mixtures, models and reports under DIR).
"""
import sys

from bnpdist.cli import cli

if __name__ == "__main__":
    cli.main(["demo", *sys.argv[1:]], prog_name="jobs/demo.py")
