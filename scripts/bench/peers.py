"""Our job against two other near-duplicate detectors on the same generated corpus, in one process:

  a. ours: the whole simhash-dedup job (`pipeline.run`, default settings: 64-bit SimHash, binary weights,
     k = 3, signature bands, verified at 0.8, short-text mode on);
  b. the `simhash` package from PyPI (pure Python, single-threaded): `Simhash(text)` with its default
     features, `SimhashIndex(objs, k=3)`, then `get_near_dups` for every document;
  c. Spark ML MinHash LSH: character 5-gram shingles of the normalised text, HashingTF (binary, 2^20
     features), MinHashLSH, then `approxSimilarityJoin` at Jaccard distance < 0.2 (similarity >= 0.8).

Each system is timed end to end (wall clock, from reading the corpus Parquet to the set of pairs, its own
tokenisation and hashing included; the SparkSession is started and warmed up before any timing). Found
pairs are compared with ours and with the generator's ground truth (pairs of documents with the same
`group`), and a Markdown table is printed.

    python scripts/bench/peers.py                                  # ~100,000 documents (55,556 originals)
    python scripts/bench/peers.py --originals 3000 --lsh-sample 0  # ~5,400 documents, every system on all

--peer-sample M / --lsh-sample M run that peer on the M smallest ids only (ids are a random permutation,
so that is a random sample); its agreement and precision/recall are then computed on the pairs inside the
sample, and its time is scaled per document to the whole corpus (labelled "scaled").

MinHash LSH runs on 10,000 documents by default: Spark's MinHashLSH ORs single min-hashes (no AND of
several per band), so two documents become a candidate pair with probability 1 - (1 - J)^tables. The
generated English pages share ~10% of their 5-gram shingles (small vocabulary), so about a third of all
English pairs become candidates: ~8% of all pairs, quadratic in N (~1.1 million candidates and ~2.5
minutes at 5,400 documents on 2 cores; hours at 100,000). Its scaled time is therefore a lower bound.
"""
from __future__ import annotations

import argparse
import itertools
import logging
import os
import re
import shlex
import shutil
import sys
import tempfile
import time
import unicodedata
from dataclasses import dataclass, field
from importlib.metadata import version

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.ml.feature import HashingTF, MinHashLSH
from pyspark.sql import functions as F
from pyspark.sql.functions import pandas_udf

from simhash_udf.evaluation.benchmark import Tables, add_json_option, bench_session
from simhash_udf.evaluation.sample_corpus import make_sample_corpus
from simhash_udf.job.config import load_config
from simhash_udf.job.pipeline import run

ROWS_PER_ORIGINAL = 1.8  # make_sample_corpus: 40% of the originals get 1-3 variants, i.e. 0.8 on average
DEFAULT_ORIGINALS = 55_556  # ~100,000 documents
K = 3  # the simhash package's Hamming distance (ours runs at its defaults: k = 3 today)
LSH_NGRAM = 5
LSH_FEATURES = 1 << 20
LSH_DISTANCE = 0.2  # Jaccard distance threshold: similarity >= 0.8

Pair = tuple[int, int]  # (smaller id, larger id)


@dataclass
class Result:
    """What one system found: pairs among the documents with id <= max_id (None: all documents)."""

    name: str
    pairs: set[Pair]
    seconds: float
    docs: int
    max_id: int | None = None
    notes: list[str] = field(default_factory=list)


# ----------------------------------------------------------------------------------------------------
# Corpus and pairs


def corpus(workdir: str, originals: int, seed: int) -> tuple[str, pd.DataFrame]:
    """Generate the sample corpus once and write (id, text, group, variant) as one Parquet file in workdir;
    a file of the same size and seed already there is reused. Returns its path and the ground truth
    columns (id, group, variant)."""
    path = os.path.join(workdir, f"corpus_{originals}_seed{seed}.parquet")
    if not os.path.exists(path) or pq.read_schema(path).names != ["id", "text", "group", "variant"]:
        started = time.perf_counter()
        rows = make_sample_corpus(originals, seed)
        table = pa.table({
            "id": pa.array([r["id"] for r in rows], pa.int64()),
            "text": pa.array([r["text"] for r in rows], pa.string()),
            "group": pa.array([r["group"] for r in rows], pa.int64()),
            "variant": pa.array([r["variant"] for r in rows], pa.string()),
        })
        pq.write_table(table, path + ".tmp")
        os.replace(path + ".tmp", path)  # never leave a half-written corpus behind for reuse
        print(f"generated {len(rows):,} documents from {originals:,} originals in "
              f"{time.perf_counter() - started:.1f} s -> {path}", flush=True)
    else:
        print(f"reusing {path}", flush=True)
    return path, pq.read_table(path, columns=["id", "group", "variant"]).to_pandas()


def pair_set(keys: pd.Series, ids: pd.Series) -> set[Pair]:
    """All pairs (a < b) of ids that share a key. Groups are small, so pairs are enumerated per group."""
    frame = pd.DataFrame({"key": keys.to_numpy(), "id": ids.to_numpy()})
    frame = frame[frame.duplicated("key", keep=False)].sort_values(["key", "id"])
    pairs: set[Pair] = set()
    for members in frame.groupby("key", sort=False)["id"]:
        pairs.update(itertools.combinations(members[1].tolist(), 2))
    return pairs


def pair_kinds(truth: set[Pair], truth_cols: pd.DataFrame) -> dict[Pair, str]:
    """Each true pair's kind: the variant of the copy when one document is the original ("mirror", "ad",
    ...), "variant~variant" for two copies of the same original."""
    variant = dict(zip(truth_cols["id"].tolist(), truth_cols["variant"].tolist()))
    kinds = {}
    for a, b in truth:
        va, vb = variant[a], variant[b]
        kinds[(a, b)] = vb if va == "original" else va if vb == "original" else "variant~variant"
    return kinds


def sample_max_id(ids: pd.Series, sample: int) -> int | None:
    """The largest id among the `sample` smallest ids (None: no sampling)."""
    if not sample or sample >= len(ids):
        return None
    return int(ids.nsmallest(sample).iloc[-1])


def within(pairs: set[Pair], max_id: int | None) -> set[Pair]:
    """The pairs whose two documents both have id <= max_id."""
    return pairs if max_id is None else {p for p in pairs if p[1] <= max_id}


# ----------------------------------------------------------------------------------------------------
# The three systems


def warm_up(spark) -> None:
    """Start the JVM's code paths and the Python workers before any timing, so that the first system timed
    does not pay for them alone (Spark reuses Python workers between jobs)."""
    @pandas_udf("long")
    def same(values: pd.Series) -> pd.Series:
        return values

    spark.range(100_000, numPartitions=spark.sparkContext.defaultParallelism) \
        .select(same("id").alias("id")).selectExpr("sum(id)").collect()


def run_ours(spark, path: str, workdir: str, n_docs: int) -> Result:
    """The whole job with default settings; found pairs = all pairs inside each output cluster."""
    out = os.path.join(workdir, "ours")
    started = time.perf_counter()
    report = run(load_config(["--input", path, "--output", out, "--overwrite"]), spark)
    seconds = time.perf_counter() - started
    clusters = pd.read_parquet(os.path.join(out, "clusters"), columns=["id", "cluster_id"])
    pairs = pair_set(clusters["cluster_id"], clusters["id"])  # not timed: analysis, not part of the job
    stages = ", ".join(f"{name} {s:.1f}" for name, s in report["seconds"].items())
    return Result("ours (simhash-dedup, Spark)", pairs, seconds, n_docs,
                  notes=[f"stages (s): {stages}; report total_seconds {report['total_seconds']:.1f}"])


def run_simhash_pkg(path: str, max_id: int | None) -> Result:
    """The PyPI `simhash` package in this Python process (single-threaded): Simhash(text) with its default
    features (lower case, word characters only, character 4-grams, MD5), SimhashIndex(k=3), and
    get_near_dups for every document."""
    try:
        from simhash import Simhash, SimhashIndex
    except ImportError:
        raise SystemExit("the simhash package is missing: .venv/bin/python -m pip install simhash "
                         "(or pass --skip simhash)") from None

    logging.getLogger("simhash").setLevel(logging.ERROR)  # it warns on every bucket over 200 entries
    started = time.perf_counter()
    table = pq.read_table(path, columns=["id", "text"])
    if max_id is not None:
        table = table.filter(pc.less_equal(table["id"], max_id))
    ids, texts = table["id"].to_pylist(), table["text"].to_pylist()
    objs = [(str(i), Simhash(t)) for i, t in zip(ids, texts)]
    index = SimhashIndex(objs, k=K)
    pairs: set[Pair] = set()
    for key, fingerprint in objs:
        a = int(key)
        for other in index.get_near_dups(fingerprint):
            b = int(other)
            if a != b:
                pairs.add((min(a, b), max(a, b)))
    seconds = time.perf_counter() - started
    return Result(f"simhash {version('simhash')} (PyPI, 1 Python thread)", pairs, seconds, len(ids), max_id,
                  notes=[f"{index.bucket_size():,} index buckets"])


def normalised_shingles(text: str | None, n: int = LSH_NGRAM) -> list[str]:
    """Distinct character n-grams of NFKC + lower case text with white-space runs folded to one space
    (a text shorter than n is one shingle)."""
    if not text:
        return []
    text = re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text).lower()).strip()
    if len(text) <= n:
        return [text] if text else []
    return list({text[i : i + n] for i in range(len(text) - n + 1)})


def run_minhash_lsh(spark, path: str, max_id: int | None, tables: int) -> Result:
    """Spark ML MinHash LSH: shingles (pandas UDF) -> HashingTF(binary) -> MinHashLSH -> self
    approxSimilarityJoin at Jaccard distance < 0.2, self pairs dropped, i < j kept."""
    @pandas_udf("array<string>")
    def shingles(texts: pd.Series) -> pd.Series:
        return texts.map(normalised_shingles)

    started = time.perf_counter()
    docs = spark.read.parquet(path).select("id", "text")
    if max_id is not None:
        docs = docs.where(F.col("id") <= max_id)
    # MinHash needs at least one non-zero feature; documents without shingles cannot match anything.
    docs = docs.select("id", shingles("text").alias("shingles")).where(F.size("shingles") > 0)
    vectors = HashingTF(inputCol="shingles", outputCol="features", numFeatures=LSH_FEATURES,
                        binary=True).transform(docs).select("id", "features")
    model = MinHashLSH(inputCol="features", outputCol="hashes", numHashTables=tables, seed=7).fit(vectors)
    hashed = model.transform(vectors).persist()  # shingle and hash each document once, not per join side
    try:
        n_docs = hashed.count()
        joined = model.approxSimilarityJoin(hashed, hashed, LSH_DISTANCE, distCol="jaccard_distance")
        found = joined.select(F.col("datasetA.id").alias("a"), F.col("datasetB.id").alias("b")).where("a < b")
        pairs = {(int(r["a"]), int(r["b"])) for r in found.collect()}
    finally:
        hashed.unpersist()
    seconds = time.perf_counter() - started
    return Result(f"Spark ML MinHashLSH ({tables} tables)", pairs, seconds, n_docs, max_id,
                  notes=[f"char {LSH_NGRAM}-grams, HashingTF 2^20 binary, Jaccard distance < {LSH_DISTANCE}"])


# ----------------------------------------------------------------------------------------------------
# Comparison and report


def recall_by_kind(result: Result, kinds: dict[Pair, str]) -> dict[str, float]:
    """Recall per kind of true pair, on the documents the system saw."""
    seen: dict[str, list[int]] = {}
    for pair in within(set(kinds), result.max_id):
        counts = seen.setdefault(kinds[pair], [0, 0])
        counts[0] += pair in result.pairs
        counts[1] += 1
    return {kind: found / total for kind, (found, total) in seen.items()}


def compare(result: Result, ours: Result, truth: set[Pair], total_docs: int) -> dict:
    """Counts, time (scaled per document to the whole corpus if the system ran on a sample), agreement
    with ours and precision/recall against the ground truth, all on the documents the system saw."""
    ours_here, truth_here = within(ours.pairs, result.max_id), within(truth, result.max_id)
    hits = len(result.pairs & truth_here)
    scaled = result.seconds * total_docs / result.docs if result.docs else float("nan")
    return {
        "system": result.name,
        "docs": result.docs,
        "sampled": result.max_id is not None,
        "pairs": len(result.pairs),
        "seconds": result.seconds,
        "seconds_full": scaled,
        "speedup": scaled / ours.seconds,
        "seconds_quadratic": result.seconds * (total_docs / result.docs) ** 2 if result.docs else float("nan"),
        "is_ours": result is ours,
        "both": len(result.pairs & ours_here),
        "only_ours": len(ours_here - result.pairs),
        "only_theirs": len(result.pairs - ours_here),
        "truth": len(truth_here),
        "precision": hits / len(result.pairs) if result.pairs else float("nan"),
        "recall": hits / len(truth_here) if truth_here else float("nan"),
    }


def speed_sentence(row: dict) -> str:
    label = ""
    if row["sampled"]:
        label = f" (their time scaled per document from {row['docs']:,} documents"
        label += "; a lower bound: its candidate pairs grow quadratically)" if "LSH" in row["system"] else ")"
    if row["speedup"] >= 1:
        return f"ours is {row['speedup']:.1f} times faster than {row['system']}{label}"
    return f"ours is {1 / row['speedup']:.1f} times slower than {row['system']}{label}"


def print_systems(tables: Tables, rows: list[dict]) -> None:
    tables.table(["system", "docs", "pairs found", "wall s", "s for all docs", "ours faster by", "pairs also in ours",
                  "only ours", "only theirs", "true pairs (these docs)", "precision", "recall"],
                 [[r["system"], r["docs"], r["pairs"], r["seconds"],
                   f"{r['seconds_full']:.1f} (scaled)" if r["sampled"] else f"{r['seconds_full']:.1f}",
                   "-" if r["is_ours"] else f"{r['speedup']:.1f}x", r["both"], r["only_ours"], r["only_theirs"],
                   r["truth"], r["precision"], r["recall"]] for r in rows],
                 [None, None, None, "{:.1f}", None, None, None, None, None, None, "{:.4f}", "{:.4f}"])


def print_recall(tables: Tables, results: list[Result], kinds: dict[Pair, str]) -> None:
    """Recall of each system per kind of true pair (with the number of such pairs in the whole corpus)."""
    order = ["mirror", "fullwidth", "edits", "ad", "numbers", "variant~variant"]
    totals = {k: sum(1 for v in kinds.values() if v == k) for k in order}
    order = [k for k in order if totals[k]]
    rows = []
    for r in results:
        recall = recall_by_kind(r, kinds)
        rows.append([r.name, *(f"{recall[k]:.3f}" if k in recall else "-" for k in order)])
    tables.table(["system", *(f"{k} ({totals[k]:,})" for k in order)], rows,
                 title="Recall by kind of true pair (the copy's variant against its original; number of such pairs "
                       "in the corpus):")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--originals", type=int, default=DEFAULT_ORIGINALS,
                    help=f"originals to generate (~{ROWS_PER_ORIGINAL} documents each; default {DEFAULT_ORIGINALS:,})")
    ap.add_argument("--seed", type=int, default=7, help="corpus seed (default 7)")
    ap.add_argument("--workdir", help="corpus and outputs go here and are kept (default: a temporary directory)")
    ap.add_argument("--peer-sample", type=int, default=0, metavar="M",
                    help="run the simhash package on the M smallest ids only (default 0 = all)")
    ap.add_argument("--lsh-sample", type=int, default=10_000, metavar="M",
                    help="run MinHash LSH on the M smallest ids only (default 10,000; 0 = all: its candidate "
                    "pairs grow quadratically)")
    ap.add_argument("--lsh-tables", type=int, default=5, help="MinHashLSH numHashTables (default 5)")
    ap.add_argument("--skip", default="", help="comma-separated peers to leave out: simhash, lsh")
    add_json_option(ap)
    args = ap.parse_args(argv)
    if args.originals < 1:
        ap.error("--originals must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    workdir = args.workdir or tempfile.mkdtemp(prefix="bench_peers_")
    os.makedirs(workdir, exist_ok=True)
    try:
        path, truth_cols = corpus(workdir, args.originals, args.seed)
        n_docs = len(truth_cols)
        truth = pair_set(truth_cols["group"], truth_cols["id"])
        kinds = pair_kinds(truth, truth_cols)

        spark = bench_session("bench-peers")
        warm_up(spark)
        cores = spark.sparkContext.defaultParallelism

        results = []
        print("running ours ...", flush=True)
        ours = run_ours(spark, path, workdir, n_docs)
        print(f"  {ours.seconds:.1f} s, {len(ours.pairs):,} pairs", flush=True)
        if "simhash" not in skip:
            print("running the simhash package ...", flush=True)
            results.append(run_simhash_pkg(path, sample_max_id(truth_cols["id"], args.peer_sample)))
            print(f"  {results[-1].seconds:.1f} s, {len(results[-1].pairs):,} pairs", flush=True)
        if "lsh" not in skip:
            print("running Spark ML MinHash LSH ...", flush=True)
            results.append(run_minhash_lsh(spark, path, sample_max_id(truth_cols["id"], args.lsh_sample),
                                           args.lsh_tables))
            print(f"  {results[-1].seconds:.1f} s, {len(results[-1].pairs):,} pairs", flush=True)
        spark.stop()

        rows = [compare(r, ours, truth, n_docs) for r in [ours, *results]]
        tables = Tables(args.json)
        tables.note(f"\ncommand: {shlex.join(['python', *sys.argv])}")
        tables.note(f"corpus: {n_docs:,} documents from {args.originals:,} originals (seed {args.seed}), "
                    f"{len(truth):,} true near-duplicate pairs (same `group`)")
        tables.note(f"machine: {os.cpu_count()} cores, Spark local with {cores} task slots, "
                    f"pyspark {version('pyspark')}; the simhash package runs in one Python thread\n")
        print_systems(tables, rows)
        print()
        for row in rows[1:]:
            tables.note(speed_sentence(row))
            if row["sampled"] and "LSH" in row["system"]:
                tables.note(f"  (scaled quadratically instead, {row['system']} would take ~{row['seconds_quadratic']:,.0f} s "
                            f"for all {n_docs:,} documents: ours is ~{row['seconds_quadratic'] / ours.seconds:,.0f} times "
                            f"faster; the truth is between the two)")
        print_recall(tables, [ours, *results], kinds)
        print()
        for r in [ours, *results]:
            for note in r.notes:
                tables.note(f"{r.name}: {note}")
        tables.note("'pairs also in ours', 'only ours', precision and recall count only pairs of documents the "
                    "system saw (its sample, if any); ours = all pairs of documents in one output cluster.")
        tables.write()
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
