#!/usr/bin/env bash
# Fit a Parquet corpus on a Spark cluster (standalone or YARN) with spark-submit.
#
# The driver (this host, client mode) scans the corpus and writes the model folder; the
# executors read the row groups, so CORPUS must be a path or URL every executor can read
# (HDFS, S3, a shared file system).  Every executor runs the Python that has bnpdist installed:
# the same venv path on every node (standalone), or a packed venv shipped with the job (YARN).
set -euo pipefail
CORPUS=${CORPUS:-hdfs:///data/corpus}
MODEL=${MODEL:-/srv/bnpdist/models/fit}
VENV=${VENV:-/opt/bnpdist/venv}
HERE="$(cd "$(dirname "$0")" && pwd)"

case "${1:-standalone}" in
  standalone)   # a Spark standalone master; bnpdist installed at $VENV on every node
    spark-submit --master "${SPARK_MASTER:-spark://spark-head:7077}" --deploy-mode client \
      --conf spark.pyspark.python="$VENV/bin/python" \
      --conf spark.executorEnv.NUMBA_CACHE_DIR=/var/cache/bnpdist/numba \
      --conf spark.executorEnv.OMP_NUM_THREADS=1 \
      --conf spark.task.maxFailures=4 \
      --executor-cores 4 --executor-memory 8g --total-executor-cores 16 \
      "$HERE/bnpdist.py" fit "$CORPUS" --out "$MODEL" --engine spark --n-iter 10
    ;;
  yarn)         # YARN: the venv packed once (venv-pack -o bnpdist-venv.tar.gz) and shipped
    spark-submit --master yarn --deploy-mode client \
      --archives bnpdist-venv.tar.gz#venv \
      --conf spark.pyspark.driver.python="$VENV/bin/python" \
      --conf spark.pyspark.python=./venv/bin/python \
      --conf spark.executorEnv.NUMBA_CACHE_DIR=./numba-cache \
      --conf spark.executorEnv.OMP_NUM_THREADS=1 \
      --num-executors 4 --executor-cores 4 --executor-memory 8g \
      "$HERE/bnpdist.py" fit "$CORPUS" --out "$MODEL" --engine spark --n-iter 10
    ;;
  *) echo "usage: $0 [standalone|yarn]" >&2; exit 2 ;;
esac
