#!/usr/bin/env bash
# What spark-submit ships to a cluster, in one step: dist/simhash_udf.zip (--py-files) and dist/env.tar.gz
# (--archives dist/env.tar.gz#env, with --conf spark.pyspark.python=./env/bin/python). Sets up .venv first,
# as demo.sh and test.sh do, and the driver's class archive. Options: python scripts/ship.py --help.
HERE="$PWD"
source "$(dirname "$0")/_env.sh"
cd "$HERE"
"$VENV/bin/python" "$ROOT/scripts/ship.py" "$@" || exit $?
case " $* " in *" -h "*|*" --help "*) exit 0 ;; esac
# Once per installation: the driver's class archive (simhash_udf/spark/class_archive.py). A later spark-submit of a
# small local input runs in a JVM that maps Spark's classes from it instead of loading them again (a few seconds a
# run). Skipped when it is up to date; SIMHASH_DEDUP_CLASS_ARCHIVE= bash scripts/ship.sh leaves it out.
say "the driver's class archive (once per installation; about a minute the first time)"
"$VENV/bin/python" "$ROOT/scripts/class_archive.py" >&2 || say "no class archive: the job runs as fast as without one"
