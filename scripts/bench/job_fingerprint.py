"""The fingerprint stage inside the job against the same computation alone, side by side in one run.

    python scripts/bench/job_fingerprint.py                  # 80,000 pages of ~1.5 KB (issue 20's), one Parquet file
    python scripts/bench/job_fingerprint.py --source generated --pages 20000
    python scripts/bench/job_fingerprint.py --chars 500      # pages of 500 characters (~0.8 KB of man pages)

"job": the job's read and fingerprint stages as `pipeline.run` runs them, under its session settings
(`job_settings`: Arrow batches of --arrow-batch-size pages; `read_stage`, `fingerprint_stage`:
Parquet read, id check, UTF-8 validation and the cap in SQL, fingerprint + signature + short-text columns in
one mapInArrow, persist, the counting pass), timed by the job's own StageTimer; once as the job runs now and
once with `--input-partitions 1`, what a one-file input got before the job split inputs of fewer partitions
than cores.
"alone": `with_fingerprints`
with the same specifications over the same pages already cached in the JVM, counted (what
`fingerprint.py` calls the fingerprint stage in Spark). Rounds take turns; the best of each is printed,
as MB/s per core (MB of UTF-8 text / seconds / cores) and as the ratio job / alone.

Pages: `--source man` (default) cuts Debian's Chinese man pages (manpages-zh, as fingerprint.py uses:
Chinese prose with many ASCII option names and examples) into pages of about `--chars` characters;
`--source generated` writes pages of Chinese only (jieba's dictionary by word frequency), where the
segmenter does nearly all the work.
"""
from __future__ import annotations

import argparse
import os
import random
import shlex
import tempfile

import pyarrow as pa
import pyarrow.parquet as pq

from simhash_udf.evaluation.benchmark import Tables, add_json_option, bench_session, best, man_page_corpus, take_turns
from simhash_udf.evaluation.corpus import generated_body
from simhash_udf.job.config import load_config
from simhash_udf.job.pipeline import job_settings, read_stage
from simhash_udf.job.stages import StageTimer, fingerprint_stage
from simhash_udf.spark.fingerprint import with_fingerprints
from simhash_udf.spark.session import scoped_settings


def chinese_pages(n: int, chars: int, seed: int = 0) -> list[str]:
    """Generated Chinese pages (jieba's dictionary by word frequency, real punctuation) of about `chars`
    characters (~3 bytes each), each on one of 200 topics."""
    rng = random.Random(seed)
    return [generated_body(rng, "zh", rng.randrange(200), int(chars * rng.uniform(0.7, 1.3))) for _ in range(n)]


def man_pages(n: int, chars: int) -> list[str]:
    """n pages of about `chars` characters cut from the Chinese man pages, repeated as needed."""
    texts, source = man_page_corpus("zh", 8.0)
    if "manpages-zh" not in source:
        raise SystemExit(f"no Chinese man pages here ({source}): apt-get install manpages-zh, or --source generated")
    pieces = [t[i:i + chars] for t in dict.fromkeys(texts) for i in range(0, len(t) - chars // 2, chars)]
    return [pieces[i % len(pieces)] for i in range(n)]


def make_pages(source: str, n: int, chars: int | None, page_bytes: int) -> list[str]:
    """n pages of `chars` characters, or (chars None) of about `page_bytes` bytes of UTF-8 on average: the
    characters a page are scaled from 2,000 probe pages (man pages mix ASCII into the Chinese, and each text's
    last page is short)."""
    make = man_pages if source == "man" else chinese_pages
    if chars is None:
        chars = 1000
        for _ in range(2):
            probe = make(2000, chars)
            chars = max(1, round(chars * page_bytes * len(probe) / sum(len(t.encode("utf-8")) for t in probe)))
    return make(n, chars)


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=80_000)
    ap.add_argument("--chars", type=int, default=None, help="characters a page (default: --page-bytes decides)")
    ap.add_argument("--page-bytes", type=int, default=1500, help="UTF-8 bytes a page, about (issue 20's pages: 1.5 KB)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--source", choices=("man", "generated"), default="man")
    ap.add_argument("--workdir")
    ap.add_argument("--job-args", default="", help="more job options for every run, e.g. '--arrow-batch-size 10000'")
    add_json_option(ap)
    return ap.parse_args()


def job_run(spark, cfg):
    """The job's read and fingerprint stages as pipeline.run runs them, timed by its StageTimer."""
    def run() -> dict:
        timer, persisted = StageTimer(), []

        def keep(df):
            persisted.append(df.persist())
            return df

        with scoped_settings(spark, job_settings(cfg, spark)):  # the run's Arrow batch sizes, as pipeline.run
            loaded = read_stage(spark, cfg, None, keep, timer)
            fingerprint_stage(loaded.df, cfg, keep, timer)
        for df in persisted:
            df.unpersist()
        return {"seconds": timer.seconds["read"] + timer.seconds["fingerprint"], "read": timer.seconds["read"],
                "fingerprint": timer.seconds["fingerprint"]}
    return run


def main() -> None:
    args = parse_args()
    work = args.workdir or tempfile.mkdtemp(prefix="bench_job_fp_")
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, "pages.parquet")
    texts = make_pages(args.source, args.pages, args.chars, args.page_bytes)
    megabytes = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    pq.write_table(pa.table({"id": pa.array(range(len(texts)), pa.int64()), "text": texts}), path)
    del texts

    spark = bench_session("bench-job-fingerprint")
    cores = spark.sparkContext.defaultParallelism
    extra = shlex.split(args.job_args)
    cfg = load_config(["--input", path, "--output", os.path.join(work, "out"), *extra])
    one = load_config(["--input", path, "--output", os.path.join(work, "out"), *extra, "--input-partitions", "1"])
    short = None if cfg.short_text_off_because() else cfg.short_text
    cached = spark.read.parquet(path).select("id", "text").repartition(2 * cores, "id").cache()
    cached.count()

    def alone() -> None:
        with scoped_settings(spark, job_settings(cfg, spark)):
            with_fingerprints(cached, "text", cfg.features, short, cfg.signature).agg({"fingerprint": "count"}).first()

    alone()  # warm the Python workers (imports, the segmenter's dictionary)
    turns = take_turns({"job": job_run(spark, cfg), "job, --input-partitions 1": job_run(spark, one), "alone": alone},
                       args.rounds)
    spark.stop()
    job, split, alone_s = best(turns["job"]), best(turns["job, --input-partitions 1"]), best(turns["alone"])["seconds"]
    tables = Tables(args.json)
    tables.table(["run", "read s", "fingerprint s", "MB/s per core, fingerprint stage", "MB/s per core, read + fingerprint"],
                 [*([name, b["read"], b["fingerprint"], megabytes / b["fingerprint"] / cores, megabytes / b["seconds"] / cores]
                    for name, b in (("job", job), ("job, --input-partitions 1", split))),
                  [f"with_fingerprints over cached pages ({2 * cores} partitions)", "-", alone_s, megabytes / alone_s / cores,
                   "-"]],
                 [None, "{:.1f}", "{:.1f}", None, None],
                 title=f"{args.pages:,} Chinese pages ({args.source}, {megabytes * 1e3 / args.pages:.2f} KB on average), "
                       f"{megabytes:.1f} MB in one Parquet file, {cores} cores, best of {args.rounds}")
    tables.note(f"\njob (read + fingerprint) / alone: {job['seconds'] / alone_s:.2f} x the time; "
                f"one partition / split: {split['seconds'] / job['seconds']:.2f} x")
    tables.write()


if __name__ == "__main__":
    main()
