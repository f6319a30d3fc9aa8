"""bnpdist's command line as a Spark application (the driver program spark-submit runs).

    spark-submit --master spark://head:7077 deploy/spark/bnpdist.py fit CORPUS --out MODEL --engine spark

Everything after the script is a ``bnpdist`` command line; with ``--engine spark`` and no
``--master`` it runs on the session spark-submit configured (its master, executors and
``--conf`` settings).  See submit.sh and docs/OPERATIONS.md, "Spark".
"""
import sys

from bnpdist.cli import cli

if __name__ == "__main__":
    cli.main(sys.argv[1:], prog_name="bnpdist")
