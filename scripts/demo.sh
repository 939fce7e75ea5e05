#!/usr/bin/env bash
# Run the job on a generated sample crawl with spark-submit in local mode and print a summary.
#   bash scripts/demo.sh            (everything it needs is installed on first use)
source "$(dirname "$0")/_env.sh"
WORK="$ROOT/work/demo"
mkdir -p "$WORK"
say "generating a sample crawl (Chinese and English pages with planted near-duplicates)"
"$VENV/bin/python" -m simhash_udf.evaluation.sample_corpus "$WORK/crawl.jsonl" >/dev/null
say "running: spark-submit jobs/dedup_job.py --input $WORK/crawl.jsonl --output $WORK/out"
# a one-off small run: the JVM options of session.SHORT_RUN_JAVA_OPTIONS (client compiler, parallel collector)
# start a small job faster (docs/performance.md); a long run should not use them
SHORT_RUN=$("$VENV/bin/python" -c 'from simhash_udf.spark.session import SHORT_RUN_JAVA_OPTIONS as o; print(o)')
"$VENV/bin/spark-submit" --master "local[*]" \
  --conf spark.ui.showConsoleProgress=false \
  --driver-java-options "-Dlog4j2.level=WARN $SHORT_RUN" \
  "$ROOT/jobs/dedup_job.py" --input "$WORK/crawl.jsonl" --output "$WORK/out" --overwrite --related 5 \
  > "$WORK/job.log" 2>&1 || { tail -n 40 "$WORK/job.log" >&2; die "the job failed (full log: $WORK/job.log)"; }
grep "simhash-dedup: done" "$WORK/job.log" >&2 || true
echo
"$VENV/bin/python" "$ROOT/scripts/summarize.py" "$WORK/out" "$WORK/crawl.jsonl"
echo
echo "output: $WORK/out (clusters/, kept/, report.json, _SUCCESS); job log: $WORK/job.log"
[ -f "$WORK/out/report.html" ] || die "the job wrote no report.html (full log: $WORK/job.log)"
echo "report for a person (open it in a browser): $WORK/out/report.html"
