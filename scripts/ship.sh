#!/usr/bin/env bash
# What spark-submit ships to a cluster, in one step: dist/simhash_udf.zip (--py-files) and dist/env.tar.gz
# (--archives dist/env.tar.gz#env, with --conf spark.pyspark.python=./env/bin/python). Sets up .venv first,
# as demo.sh and test.sh do. Options: python scripts/ship.py --help.
HERE="$PWD"
source "$(dirname "$0")/_env.sh"
cd "$HERE"
exec "$VENV/bin/python" "$ROOT/scripts/ship.py" "$@"
