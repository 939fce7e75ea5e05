"""Fingerprint throughput per core: bare segmentation vs our fingerprint (pure Python, and the Arrow UDF
inside a one-core local Spark), on the same Chinese and English text, one process per segmentation
backend (jieba, rjieba), printed side by side.

    python scripts/bench/fingerprint.py [--mb 8] [--backends jieba,rjieba]
    python scripts/bench/fingerprint.py --sweep        # also the Arrow batch limits (rjieba)
    python scripts/bench/fingerprint.py --big-page     # only one 20 MB page under several --max-text-chars caps
    python scripts/bench/fingerprint.py --agreement    # only: do jieba and rjieba cut the Chinese text alike?

Chinese text: Debian's Chinese man pages (package manpages-zh, installed if missing and we are root),
English text: the English man pages of the same machine; both with troff markup stripped. Without them
the generated sample corpus is used (and the output says so).

--agreement: the two segmentation backends on every Chinese man page: the share of pages whose token
sequences are identical, the tokens that differ, the Hamming distances between the fingerprints each
backend gives the same page (rjieba is the default because they agree; the backend is part of the
fingerprint version), and each backend's segmentation speed.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import tracemalloc
from collections import Counter

import numpy as np
import pyarrow as pa
from pyspark.sql import functions as F

from simhash_udf.core.fingerprint import FeatureSpec, fingerprint_arrow, fingerprint_batch
from simhash_udf.core.signature import SignatureSpec
from simhash_udf.core.text import normalize_chars, segmenter, tokens_auto
from simhash_udf.core.text_batch import split_pages
from simhash_udf.evaluation.benchmark import (
    ZH_MAN_PAGES,
    Tables,
    add_json_option,
    bench_session,
    man_page_corpus,
    man_page_texts,
    take_turns,
)
from simhash_udf.job.config import DedupConfig
from simhash_udf.spark.fingerprint import with_fingerprints


def mb(texts: list[str]) -> float:
    return sum(len(t.encode("utf-8")) for t in texts) / 1e6


REPEATS = 5  # every timing is the best of REPEATS rounds: the machines are shared, noise only slows a run down


def best_of(fns: dict) -> dict[str, float]:
    """Best seconds of each function over REPEATS rounds, the functions taking turns in every round: the
    ratios compare runs made under the same load, not one function's quiet minute with another's busy one."""
    turns = take_turns(fns, REPEATS, log=False)
    return {name: min(r["seconds"] for r in results) for name, results in turns.items()}


def time_it(fn, texts) -> float:
    return best_of({"one": lambda: fn(texts)})["one"]


def bare_segmentation(backend: str):
    cut = segmenter(backend)

    def run(texts):
        for t in texts:
            cut(t)

    return run


def arrow_batches(texts: list[str], size: int = 2000) -> list:
    """The pages as Arrow string arrays of `size` pages, as the stage receives them with the default limits."""
    return [pa.array(texts[i : i + size], pa.string()) for i in range(0, len(texts), size)]


def python_fingerprints(spec, texts, signature=None):
    """What the stage does to each Arrow batch of 2,000 pages, without Spark (the arrays are built before);
    with `signature`, the verification signature too (the job's default)."""
    arrays = arrow_batches(texts)

    def run(_):
        for array in arrays:
            fingerprint_arrow(array, spec, signature)

    return run


def per_page_count(texts: list[str]) -> int:
    """How many pages the batch split leaves to the per-page path (characters outside its table)."""
    return int(sum(split_pages(array)[2].sum() for array in arrow_batches(texts)))


def spark_seconds(spark, texts, spec) -> dict[str, float]:
    """Seconds, warm, of three queries over the same cached DataFrame and Arrow batches: the fingerprint
    stage ("udf"), the backend's bare cut() of each page inside the same kind of mapInArrow ("bare"), and
    a no-op that only turns the text column into Python strings ("noop": the JVM -> Python -> JVM round
    trip and the query's fixed cost)."""
    backend = spec.segmenter

    def text_lengths(batches):
        for batch in batches:
            texts = batch.column("text").to_pylist()
            yield pa.RecordBatch.from_arrays([pa.array([len(t) for t in texts], pa.int64())], ["n"])

    def cut_counts(batches):
        cut = segmenter(backend)
        for batch in batches:
            texts = batch.column("text").to_pylist()
            yield pa.RecordBatch.from_arrays([pa.array([len(cut(t)) for t in texts], pa.int64())], ["n"])

    df = spark.createDataFrame([(i, t) for i, t in enumerate(texts)], "id long, text string").cache()
    df.count()
    queries = {
        "udf": with_fingerprints(df, "text", spec).agg(F.count("fingerprint")),
        "udf_sig": with_fingerprints(df, "text", spec, None, SignatureSpec()).agg(F.count("signature")),
        "bare": df.mapInArrow(cut_counts, "n long").agg(F.count("n")),
        "noop": df.mapInArrow(text_lengths, "n long").agg(F.count("n")),
    }
    for query in queries.values():
        query.first()  # warm the Python worker (imports, the segmenter's dictionary)
    seconds = best_of({name: query.first for name, query in queries.items()})
    df.unpersist()
    return seconds


def batch_sweep(spark, texts, spec, records: list[int], megabytes: list[int]) -> list[dict]:
    """The fingerprint stage's throughput for Arrow batch limits (documents, MB), and the Python memory one
    batch of that size needs at its peak (tracemalloc over fingerprint_arrow), relative to the batch's text."""
    df = spark.createDataFrame([(i, t) for i, t in enumerate(texts)], "id long, text string").cache()
    df.count()
    rows = []
    for n in records:
        for cap in megabytes:
            spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(n))
            spark.conf.set("spark.sql.execution.arrow.maxBytesPerBatch", str(cap << 20))
            query = with_fingerprints(df, "text", spec).agg(F.count("fingerprint"))
            query.first()
            seconds = time_it(lambda _: query.first(), None)
            batch, size = [], 0
            for t in texts:  # the first batch Spark would cut with these limits
                if len(batch) == n or size + len(t.encode()) > cap << 20:
                    break
                batch.append(t)
                size += len(t.encode())
            array = pa.array(batch, pa.string())
            tracemalloc.start()
            fingerprint_arrow(array, spec)
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            rows.append({"records": n, "cap_mb": cap, "mb_s": mb(texts) / seconds, "batch_mb": size / 1e6,
                         "peak_mb": peak / 1e6})
    df.unpersist()
    return rows


def measure(backend: str, megabytes: float, sweep: bool = False) -> list[dict]:
    """All measurements of one backend (run in a process of its own)."""
    spark = bench_session("bench-fingerprint", master="local[1]")  # one core: throughput per core
    config = DedupConfig()  # the job's Arrow batch limits
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(config.arrow_batch_size))
    spark.conf.set("spark.sql.execution.arrow.maxBytesPerBatch", str(config.arrow_batch_mb << 20))
    spec = FeatureSpec(segmenter=backend)
    segmenter(backend)("预热")  # load the dictionary outside the timings
    rows = []
    for lang in ("zh", "en"):
        texts, source = man_page_corpus(lang, megabytes)
        size = mb(texts)
        in_spark = spark_seconds(spark, texts, spec)
        bare, python = bare_segmentation(backend), python_fingerprints(spec, texts)
        python_sig = python_fingerprints(spec, texts, SignatureSpec())
        in_python = best_of({"bare": lambda: bare(texts), "python": lambda: python(texts),
                             "python_sig": lambda: python_sig(texts)})
        rows.append({
            "backend": backend, "lang": lang, "source": source, "docs": len(texts), "mb": size,
            "bare": size / in_python["bare"],
            "python": size / in_python["python"],
            "udf": size / in_spark["udf"],
            "udf_sig": size / in_spark["udf_sig"],
            "python_sig": size / in_python["python_sig"],
            "bare_spark": size / in_spark["bare"],
            "noop": size / in_spark["noop"],
            "per_page": per_page_count(texts),
        })
        if sweep:
            rows[-1]["sweep"] = batch_sweep(spark, texts, spec, [500, 2000, 10000], [4, 16, 64])
    spark.stop()
    return rows


def big_page(megabytes: float = 20.0) -> list[dict]:
    """One huge Chinese page (man pages glued together) fingerprinted with several --max-text-chars caps:
    seconds and Python peak memory, to choose a cap under which no page can stall a task."""
    texts, _ = man_page_corpus("zh", megabytes)
    page = "\n".join(texts)
    rows = []
    for cap in (100_000, 1_000_000, 5_000_000, None):
        text = page if cap is None else page[:cap]
        array = pa.array([text], pa.string())
        tracemalloc.start()
        start = time.perf_counter()
        fingerprint_arrow(array, FeatureSpec())
        seconds = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        rows.append({"cap": cap, "chars": len(text), "mb": len(text.encode()) / 1e6, "seconds": seconds,
                     "peak_mb": peak / 1e6})
    return rows


def agreement(tables: Tables, k: int) -> None:
    """--agreement: jieba and rjieba on the same Chinese pages (man pages, else 2 MB of generated text)."""
    texts, source = man_page_texts(ZH_MAN_PAGES), ZH_MAN_PAGES
    if not texts:
        texts, source = man_page_corpus("zh", 2)
    normal = [normalize_chars(t) for t in texts]
    seconds, tokens = {}, {}
    for backend in ("jieba", "rjieba"):
        start = time.perf_counter()
        tokens[backend] = [tokens_auto(t, backend) for t in normal]
        seconds[backend] = time.perf_counter() - start
    same = sum(a == b for a, b in zip(tokens["jieba"], tokens["rjieba"]))
    n_tok = sum(len(t) for t in tokens["jieba"])
    differing = sum(sum((Counter(a) - Counter(b)).values()) for a, b in zip(tokens["jieba"], tokens["rjieba"]))
    fps = {b: fingerprint_batch(texts, FeatureSpec(segmenter=b))[0] for b in ("jieba", "rjieba")}
    dist = np.bitwise_count((fps["jieba"] ^ fps["rjieba"]).view(np.uint64))
    size = mb(texts)
    hist = Counter(dist.tolist())
    tables.note(f"text: {source}: {len(texts)} documents, {size:.1f} MB, {n_tok:,} tokens (jieba)")
    tables.note(f"identical token sequences: {same} of {len(texts)} documents ({same / len(texts):.1%})")
    tables.note(f"tokens that differ: {differing:,} of {n_tok:,} ({differing / max(n_tok, 1):.3%})")
    tables.note("Hamming distance between the backends' fingerprints: " + ", ".join(f"{d}: {hist[d]}" for d in sorted(hist)))
    tables.note(f"within k={k}: {(dist <= k).mean():.1%}; max {dist.max()}")
    tables.note(f"segmentation of Han runs: jieba {size / seconds['jieba']:.2f} MB/s, rjieba {size / seconds['rjieba']:.2f} MB/s")


def print_backends(tables: Tables, rows: list[dict]) -> None:
    tables.table(["backend", "text", "docs", "MB", "bare cut, Python MB/s", "fingerprint, Python MB/s",
                  "fingerprint / bare, Python", "bare cut in Spark MB/s", "fingerprint stage in Spark MB/s",
                  "stage / bare cut, in Spark", "no-op in Spark MB/s", "with signature, Python MB/s",
                  "with / without, Python", "stage with signature, Spark MB/s", "with / without, Spark"],
                 [[r["backend"], r["lang"], r["docs"], r["mb"], r["bare"], r["python"], r["python"] / r["bare"],
                   r["bare_spark"], r["udf"], r["udf"] / r["bare_spark"], r["noop"], r["python_sig"],
                   r["python_sig"] / r["python"], r["udf_sig"], r["udf_sig"] / r["udf"]] for r in rows],
                 [None, None, None, "{:.1f}", *[None] * 11])
    tables.note(f"\n(one core each: Python timings in one process, the Spark queries in local[1] over the same cached "
                f"DataFrame with the job's Arrow batch limits; best of {REPEATS} rounds in which the runs take turns; "
                "bare cut is the backend's cut() of the raw page, in Spark inside a mapInArrow like the stage's; the "
                "no-op only reads the pages into Python)")
    for lang, source in dict((r["lang"], r["source"]) for r in rows).items():
        tables.note(f"text {lang}: {source}")
    for r in rows[:2]:
        tables.note(f"pages of the {r['lang']} text on the per-page path (characters outside the batch split's table): "
                    f"{r['per_page']:,} of {r['docs']:,}")
    for r in rows:
        if "sweep" in r:
            tables.table(["max documents", "max MB", "MB/s", "first batch MB", "peak Python MB for it", "peak / batch"],
                         [[w["records"], w["cap_mb"], w["mb_s"], w["batch_mb"], w["peak_mb"],
                           w["peak_mb"] / max(w["batch_mb"], 1e-9)] for w in r["sweep"]],
                         [None, None, None, "{:.1f}", "{:.0f}", "{:.1f}"],
                         title=f"Arrow batch limits, {r['backend']}, {r['lang']}: fingerprint stage MB/s and the Python "
                               "peak memory of one batch")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=16.0, help="MB of text per language")
    ap.add_argument("--backends", default="jieba,rjieba")
    ap.add_argument("--sweep", action="store_true", help="also sweep the Arrow batch limits (rjieba only)")
    ap.add_argument("--big-page", action="store_true", help="only time one 20 MB page under several text caps")
    ap.add_argument("--agreement", action="store_true", help="only compare the two backends' tokens and fingerprints")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # internal: measure one backend, print JSON
    add_json_option(ap)
    args = ap.parse_args()
    if args.one:
        print("RESULT " + json.dumps(measure(args.one, args.mb, args.sweep and args.one == "rjieba")))
        return
    tables = Tables(args.json)
    if args.agreement:
        agreement(tables, DedupConfig().k)
    elif args.big_page:
        tables.table(["--max-text-chars", "characters fingerprinted", "MB", "seconds", "Python peak MB"],
                     [[r["cap"] or "no cap", r["chars"], r["mb"], r["seconds"], r["peak_mb"]] for r in big_page()],
                     [None, None, "{:.1f}", None, "{:.0f}"])
    else:
        rows = []
        for backend in args.backends.split(","):  # one process each: the other backend's dictionary not loaded
            proc = subprocess.run([sys.executable, __file__, "--one", backend, "--mb", str(args.mb)]
                                  + (["--sweep"] if args.sweep else []), capture_output=True, text=True, check=True)
            rows += json.loads(proc.stdout.split("RESULT ", 1)[1])
        print_backends(tables, rows)
    tables.write()


if __name__ == "__main__":
    main()
