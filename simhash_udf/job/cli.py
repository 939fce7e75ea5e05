"""Command line: `spark-submit jobs/dedup_job.py ...`, `python -m simhash_udf.job.cli ...` or `simhash-dedup ...`.

Exit codes: 0 done; 2 a problem the user can fix (the message says what to change); 143 stopped by SIGTERM
(the output left as it was); anything else a bug (with its traceback)."""
from __future__ import annotations

import json
import logging
import sys

from ..errors import DedupError
from . import termination
from .config import load_config


def main(argv: list[str] | None = None, script: str | None = None) -> int:
    """script: the spark-submit entry point being run (jobs/dedup_job.py), which may run spark-submit again with
    the JVM a large local input needs (session.relaunch_if_faster); None: never relaunched."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("py4j").setLevel(logging.WARNING)  # its INFO lines are connection housekeeping
    try:
        cfg = load_config(argv)
    except DedupError as exc:
        print(f"simhash-dedup: error: {exc}", file=sys.stderr)
        return 2
    if cfg.plan:  # no Spark: the table plan and the cost model only
        from .sizing import format_plan, plan_report

        print(format_plan(plan_report(cfg.plan, cfg)))
        return 0
    from pyspark.sql import SparkSession

    from ..spark.py4j_converters import use_lighter_numpy_converters
    from ..spark.session import relaunch_if_faster, start_job_session, stopped_by_its_jvm

    use_lighter_numpy_converters()  # before the first JVM call: none imports pandas (py4j_converters)

    if script is not None:  # before the pipeline's imports, which a relaunched process makes again
        relaunch_if_faster(cfg.input, [script, *(sys.argv[1:] if argv is None else argv)])
    from .pipeline import run

    callers = SparkSession.getActiveSession()  # called from a notebook or a driver program: not ours to stop
    with termination.handle_sigterm():
        spark = start_job_session(cfg.input)
        try:
            # a session of its own: a one-off process, in a JVM started for it
            report = run(cfg, spark, new_process=callers is None)
        except BaseException as exc:
            if termination.requested():  # whatever the cancelled job raised on its way out
                print(f"simhash-dedup: stopped by SIGTERM: the run was aborted, its staging directory removed and its "
                      f"lock released; {cfg.output} is as it was before this run", file=sys.stderr)
                return termination.EXIT_CODE
            if isinstance(exc, DedupError):
                print(f"simhash-dedup: error: {exc}", file=sys.stderr)
                return 2
            raise
        finally:
            if callers is None and not stopped_by_its_jvm(spark.sparkContext.master):
                spark.stop()
    if termination.requested():
        print("simhash-dedup: SIGTERM arrived once the output was being committed; the run completed", file=sys.stderr)
    summary = {k: report[k] for k in ("input_rows", "kept", "duplicates", "exact_duplicates", "near_duplicates")}
    print("simhash-dedup: done " + json.dumps(summary) + f" -> {cfg.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
