"""The fingerprint stage inside the job, warm and cold, on uniform pages and on a crawl's page mix.

    python scripts/bench/job_fingerprint.py                  # both page sets, warm best of 3 and 3 cold runs
    python scripts/bench/job_fingerprint.py --pages-set mix --warm-rounds 0 --compare /work/wt/base
    python scripts/bench/job_fingerprint.py --pages-set uniform --chars 500 --cold-runs 0
    python scripts/bench/job_fingerprint.py --pages-set mix --cold-runs 0 --key-cost 3   # what sentence keys cost
    python scripts/bench/job_fingerprint.py --warm-rounds 0 --cold-runs 0 --python-pass 3  # the Python pass alone

Two page sets, each written as one Parquet file:

- "uniform": `--pages` pages of about `--page-bytes` (1.5 KB) cut from Debian's Chinese man pages (manpages-zh:
  Chinese prose with many ASCII option names and examples), or with `--source generated` pages of Chinese only
  (jieba's dictionary by word frequency), where the segmenter does nearly all the work.
- "mix": about `--mix-mb` MB of pages as a crawl delivers them, cut from the prose paragraphs of the same
  Chinese man pages (70% of the pages) and of the machine's English man pages (30%): 60% of the pages are
  short (20-139 characters, a window of one paragraph: a post, a caption, a title page), the others of a
  log-normal length (median 1,000 characters, clipped to 140-19,999: consecutive paragraphs of one page), and
  a tail of very long pages (20,000-150,000 characters: consecutive pages, as a forum thread or a manual
  on one page) holding 10% of the bytes. Seeded, so the same pages on every run of the same machine.

Two ways of running the stage, each reported as MB/s per core (MB of UTF-8 text / seconds / cores):

- warm (`--warm-rounds`, best of them, in this process after an untimed pass): "job", the job's read and
  fingerprint stages as `pipeline.run` runs them under its session settings, timed by its StageTimer (Parquet
  read, id check, UTF-8 validation and the cap in SQL, the fingerprint, signature and short-text columns in
  one mapInArrow, persist, the counting pass); once as the job runs and once with `--input-partitions 1`;
  and "alone", `with_fingerprints` with the same specifications over the same pages cached in the JVM.
  With `--key-cost N` also "alone" with the longest-sentence keys (`--sentence-keys N`) beside it.
- cold (`--cold-runs`): a whole `spark-submit jobs/dedup_job.py` per run (`benchmark.run_job_process`: a
  new JVM and new Python workers, no warm-up, `local[2]`), the stage's seconds from its report.json, and the CPU
  seconds of the run's Python workers (mostly the fingerprint pass) and of its JVM; a user's daily run. With
  `--compare DIR` the same runs of another checkout take turns with this one's.
- the Python pass (`--python-pass R`, best of R rounds taking turns, no Spark): `fingerprint_record_batches` over
  the page set's Arrow batches of the job's size in this process, as the job's stage runs it (its sentence keys and
  prose) and without the sentence keys, in MB of text per CPU second of this process.
"""
from __future__ import annotations

import argparse
import glob
import math
import os
import random
import shlex
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from simhash_udf.core.sentence_keys import PROSE_MIN_LETTERS, SentenceKeySpec
from simhash_udf.evaluation.benchmark import (
    EN_MAN_PAGES,
    ZH_MAN_PAGES,
    Tables,
    add_json_option,
    bench_session,
    best,
    checkout_name,
    checkouts,
    ensure_manpages_zh,
    man_page_corpus,
    run_job_process,
    stop_jvm,
    take_turns,
)
from simhash_udf.evaluation.corpus import generated_body, man_page_paragraphs
from simhash_udf.job.config import load_config
from simhash_udf.job.pipeline import job_settings, read_stage
from simhash_udf.job.stages import StageTimer, fingerprint_stage
from simhash_udf.job.stages.fingerprint import REPLACEMENT_FLAG
from simhash_udf.spark.fingerprint import fingerprint_record_batches, with_fingerprints
from simhash_udf.spark.session import scoped_settings

# The crawl's page mix (the module's docstring)
SHORT_SHARE, SHORT_CHARS = 0.6, (20, 139)
MEDIUM_MEDIAN, MEDIUM_SIGMA, MEDIUM_CHARS = 1000, 1.0, (140, 19_999)
LONG_BYTES_SHARE, LONG_CHARS = 0.1, (20_000, 150_000)
ZH_SHARE = 0.7
EN_MAN_FILES = 600  # English man pages read (of ~18,000): enough prose, a second to read


def chinese_pages(n: int, chars: int, seed: int = 0) -> list[str]:
    """Generated Chinese pages (jieba's dictionary by word frequency, real punctuation) of about `chars`
    characters (~3 bytes each), each on one of 200 topics."""
    rng = random.Random(seed)
    return [generated_body(rng, "zh", rng.randrange(200), int(chars * rng.uniform(0.7, 1.3))) for _ in range(n)]


def man_pages(n: int, chars: int) -> list[str]:
    """n pages of about `chars` characters cut from the Chinese man pages, repeated as needed."""
    if not ensure_manpages_zh():
        raise SystemExit("Debian's manpages-zh is not installed: apt-get install manpages-zh, or --source generated")
    texts, _ = man_page_corpus("zh", 8.0)
    pieces = [t[i:i + chars] for t in dict.fromkeys(texts) for i in range(0, len(t) - chars // 2, chars)]
    return [pieces[i % len(pieces)] for i in range(n)]


def uniform_pages(source: str, n: int, chars: int | None, page_bytes: int) -> list[str]:
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


def man_paragraphs(pattern: str, limit: int) -> list[list[str]]:
    """The prose paragraphs of up to `limit` man pages (a seeded choice of the sorted files), one list a page."""
    files = sorted(f for f in glob.glob(pattern) if not os.path.basename(f).startswith(("gcloud", "bq")))
    random.Random(7).shuffle(files)
    return [paras for paras in map(man_page_paragraphs, files[:limit]) if paras]


def _run_of(rng: random.Random, pages: list[list[str]], chars: int) -> str:
    """`chars` characters of consecutive paragraphs from a random paragraph on (going on to the next pages)."""
    p = rng.randrange(len(pages))
    i = rng.randrange(len(pages[p]))
    out, size = [], 0
    while size < chars:
        out.append(pages[p][i])
        size += len(out[-1]) + 2
        i += 1
        if i == len(pages[p]):
            p, i = (p + 1) % len(pages), 0
    return "\n\n".join(out)[:chars]


def crawl_mix(megabytes: float, seed: int = 0) -> list[str]:
    """About `megabytes` MB of pages in the crawl's mix (the module's docstring), shuffled."""
    installed = ensure_manpages_zh()
    zh, en = man_paragraphs(ZH_MAN_PAGES, 10_000), man_paragraphs(EN_MAN_PAGES, EN_MAN_FILES)
    if not installed or not zh or not en:
        raise SystemExit("the page mix needs the Chinese (manpages-zh) and the English man pages installed")
    rng = random.Random(seed)
    pages, size, long_size = [], 0, 0
    while size < megabytes * 1e6 * (1 - LONG_BYTES_SHARE):
        source = zh if rng.random() < ZH_SHARE else en
        if rng.random() < SHORT_SHARE:
            paragraph = rng.choice(rng.choice(source))
            chars = rng.randint(*SHORT_CHARS)
            start = rng.randrange(max(1, len(paragraph) - chars + 1))
            page = paragraph[start:start + chars]
        else:
            chars = int(min(max(rng.lognormvariate(math.log(MEDIUM_MEDIAN), MEDIUM_SIGMA), MEDIUM_CHARS[0]),
                            MEDIUM_CHARS[1]))
            page = _run_of(rng, source, chars)
        pages.append(page)
        size += len(page.encode("utf-8"))
    while long_size < megabytes * 1e6 * LONG_BYTES_SHARE:
        pages.append(_run_of(rng, zh if rng.random() < ZH_SHARE else en, rng.randint(*LONG_CHARS)))
        long_size += len(pages[-1].encode("utf-8"))
    rng.shuffle(pages)
    return pages


def describe(texts: list[str]) -> str:
    chars = [len(t) for t in texts]
    size = [len(t.encode("utf-8")) for t in texts]
    short = sum(c < 140 for c in chars) / len(texts)
    long = sum(s for s, c in zip(size, chars) if c > 20_000) / sum(size)
    han = sum(sum("\u4e00" <= ch <= "\u9fff" for ch in t) for t in texts[:5000]) / max(1, sum(chars[:5000]))
    return (f"{len(texts):,} pages, {sum(size) / 1e6:.1f} MB ({sum(size) / len(texts) / 1e3:.2f} KB on average; "
            f"{short:.0%} under 140 characters, {long:.0%} of the bytes in pages over 20,000, {han:.0%} of the "
            f"characters Han)")


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages-set", choices=("uniform", "mix", "both"), default="both")
    ap.add_argument("--pages", type=int, default=80_000, help="uniform pages")
    ap.add_argument("--chars", type=int, default=None, help="characters a uniform page (default: --page-bytes decides)")
    ap.add_argument("--page-bytes", type=int, default=1500, help="UTF-8 bytes a uniform page, about (1.5 KB)")
    ap.add_argument("--source", choices=("man", "generated"), default="man", help="of the uniform pages")
    ap.add_argument("--mix-mb", type=float, default=120.0, help="MB of the page mix")
    ap.add_argument("--warm-rounds", type=int, default=3)
    ap.add_argument("--cold-runs", type=int, default=3)
    ap.add_argument("--compare", action="append", default=[], metavar="DIR",
                    help="another checkout whose cold runs take turns with this one's (repeatable)")
    ap.add_argument("--key-cost", type=int, default=0, metavar="N",
                    help="also time 'alone' with --sentence-keys N (warm)")
    ap.add_argument("--python-pass", type=int, default=0, metavar="R",
                    help="also time the Python pass alone (fingerprint_record_batches, no Spark), best of R rounds")
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


def warm_rows(path: str, work: str, megabytes: float, args) -> list[list]:
    """The warm variants, taking turns: (name, read s, fingerprint s, MB/s per core of the stage, of both)."""
    spark = bench_session("bench-job-fingerprint")
    cores = spark.sparkContext.defaultParallelism
    extra = shlex.split(args.job_args)
    cfg = load_config(["--input", path, "--output", os.path.join(work, "out"), *extra])
    one = load_config(["--input", path, "--output", os.path.join(work, "out"), *extra, "--input-partitions", "1"])
    short = None if cfg.short_text_off_because() else cfg.short_text
    cached = spark.read.parquet(path).select("id", "text").repartition(2 * cores, "id").cache()
    cached.count()

    def alone(sentences: SentenceKeySpec | None = None):
        def run() -> None:
            with scoped_settings(spark, job_settings(cfg, spark)):
                with_fingerprints(cached, "text", cfg.features, short, cfg.signature,
                                  sentences=sentences).agg({"fingerprint": "count"}).first()
        return run

    variants = {"job": job_run(spark, cfg), "job, --input-partitions 1": job_run(spark, one), "alone": alone()}
    if args.key_cost:
        variants[f"alone, --sentence-keys {args.key_cost}"] = alone(SentenceKeySpec(args.key_cost))
    alone()()  # warm the Python workers (imports, the segmenter's dictionary)
    turns = take_turns(variants, args.warm_rounds)
    stop_jvm(spark)
    rows = []
    for name, results in turns.items():
        b = best(results)
        if name.startswith("job"):
            rows.append([f"warm {name}", b["read"], b["fingerprint"], megabytes / b["fingerprint"] / cores,
                         megabytes / b["seconds"] / cores])
        else:
            rows.append([f"warm {name}: with_fingerprints over cached pages ({2 * cores} partitions)", "-",
                         b["seconds"], megabytes / b["seconds"] / cores, "-"])
    return rows


def cold_rows(path: str, work: str, megabytes: float, args) -> list[list]:
    """Whole cold spark-submits of each checkout, taking turns: the report's read and fingerprint seconds."""
    extra = shlex.split(args.job_args)
    codes = checkouts(args.compare)

    def cold(code: str, i: int):
        def run() -> dict:
            r = run_job_process(os.path.join(work, f"cold{i}"), ["--input", path, *extra], code=code, submit=True)
            s = r["report"]["seconds"]
            spent = r["report"].get("driver_jvm") or {}
            return {"wall": r["wall"], "read": s["read"], "fingerprint": s["fingerprint"],
                    "cpu_workers": r.get("cpu_workers", math.nan), "cpu_jvm": r.get("cpu_jvm", math.nan),
                    "jit": spent.get("compile_seconds", math.nan), "gc": spent.get("gc_seconds", math.nan)}
        return run

    turns = take_turns({checkout_name(c): cold(c, i) for i, c in enumerate(codes)}, args.cold_runs)
    cores = 2  # run_job_process's local[2]
    rows = []
    for name, results in turns.items():
        b = best(results, "fingerprint")
        fp = sorted(r["fingerprint"] for r in results)
        rows.append([f"cold spark-submit, {name} (fingerprint s of {len(fp)} runs: "
                     f"{', '.join(f'{s:.1f}' for s in fp)}; wall {b['wall']:.0f} s; CPU s of the whole run: Python workers "
                     f"{b['cpu_workers']:.1f}, JVM {b['cpu_jvm']:.1f}, of which JIT {b['jit']:.1f}; GC {b['gc']:.1f} s)",
                     b["read"], b["fingerprint"],
                     megabytes / b["fingerprint"] / cores, megabytes / (b["read"] + b["fingerprint"]) / cores])
    return rows


def python_pass_rows(path: str, megabytes: float, args) -> list[list]:
    """The Python pass alone over the page set's Arrow batches, as the job's stage runs it and without the sentence
    keys, taking turns: (name, CPU s, MB per CPU s)."""
    cfg = load_config(["--input", path, "--output", "unused", *shlex.split(args.job_args)])
    table = pq.read_table(path).select(["id", "text"])
    batches = table.append_column(REPLACEMENT_FLAG, pa.array(np.zeros(len(table), dtype=bool))).to_batches(
        max_chunksize=cfg.arrow_batch_size)
    short = None if cfg.short_text_off_because() else cfg.short_text

    def timed(**kw):
        def run() -> dict:
            start = time.process_time()
            for _ in fingerprint_record_batches(iter(batches), "text", cfg.features, short, cfg.signature,
                                                REPLACEMENT_FLAG, **kw):
                pass
            return {"seconds": time.process_time() - start}
        return run

    variants = {"the job's pass (sentence keys and prose)": timed(sentences=cfg.sentences or SentenceKeySpec(0),
                                                                   prose_min=PROSE_MIN_LETTERS),
                "without the sentence keys and prose": timed()}
    turns = take_turns(variants, args.python_pass)
    return [[f"Python pass alone, {name}", best(results)["seconds"], megabytes / best(results)["seconds"]]
            for name, results in turns.items()]


def main() -> None:
    args = parse_args()
    work = args.workdir or tempfile.mkdtemp(prefix="bench_job_fp_")
    os.makedirs(work, exist_ok=True)
    tables = Tables(args.json)
    sets = ("uniform", "mix") if args.pages_set == "both" else (args.pages_set,)
    for name in sets:
        path = os.path.join(work, f"{name}.parquet")
        texts = (uniform_pages(args.source, args.pages, args.chars, args.page_bytes) if name == "uniform"
                 else crawl_mix(args.mix_mb))
        megabytes = sum(len(t.encode("utf-8")) for t in texts) / 1e6
        source = ("Chinese and English man pages" if name == "mix" else
                  "Chinese man pages" if args.source == "man" else "generated Chinese")
        title = f"{name}: {describe(texts)}, {source}, one Parquet file, 2 cores"
        pq.write_table(pa.table({"id": pa.array(range(len(texts)), pa.int64()), "text": texts}), path)
        del texts
        rows = (warm_rows(path, work, megabytes, args) if args.warm_rounds else []) + (
            cold_rows(path, work, megabytes, args) if args.cold_runs else [])
        if rows:
            tables.table(["run", "read s", "fingerprint s", "MB/s per core, fingerprint stage",
                          "MB/s per core, read + fingerprint"], rows, [None, "{:.1f}", "{:.1f}", None, None], title=title)
        if args.python_pass:
            tables.table(["run", "CPU s", "MB per CPU s"], python_pass_rows(path, megabytes, args),
                         [None, "{:.2f}", "{:.1f}"], title=title)
    tables.write()


if __name__ == "__main__":
    main()
