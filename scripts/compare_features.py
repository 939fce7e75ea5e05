"""Feature and weight study: the whole job, in one process and one local SparkSession, over one corpus for
several configurations, each evaluated against the Jaccard oracle (and the generator's truth if given).

    python scripts/compare_features.py --corpus work/gen10k [--configs "A;B;..."] [--work DIR]

--corpus DIR holds docs.parquet (and truth.parquet) as scripts/make_corpus.py writes them. A configuration
is a string of job options ("--tokenizer char --char-ngram 4"); the default list covers tokens vs word
n-gram shingles vs character n-grams, tf vs tfidf (jieba's idf) vs tfidf-corpus vs binary, stop words, and
k. Configurations that differ from another only in --k reuse its fingerprints (--input-format fingerprints
on its clusters/), which is the same job without the fingerprint stage. The short-text mode is off in every
configuration that does not name a --short-* option (the feature study compares the main fingerprint alone;
stored fingerprints have no text for it anyway). The study was made before verification and the signature
bands: every configuration runs with STUDY_SETTINGS unless it names them, so that the table does not move
with the job's defaults. The first timed run follows an untimed one on 1,000 documents (a new JVM's first
run is ~1.5x slower: it compiles the code the later ones reuse).
"""
from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from evaluate import build_oracle, job_labels, load_corpus, truth_labels  # noqa: E402

# the job as the study ran it (fingerprint distance alone, transitive clusters; no signature bands without
# verification), added to a configuration that does not name the option
STUDY_SETTINGS = {"--min-similarity": "0", "--cluster-mode": "transitive"}
DEFAULT_CONFIGS = [  # the feature options explicit, so the table does not move when conf/default.toml does
    "--tokenizer auto --weighting tf --k 3",  # the default before this study
    "--tokenizer auto --weighting tfidf --k 3",
    "--tokenizer auto --weighting tfidf-corpus --k 3",
    "--tokenizer auto --weighting binary --k 3",
    "--tokenizer auto --weighting tf --stop-words --k 3",
    "--tokenizer auto --weighting tf --word-ngram 2 --k 3",
    "--tokenizer word --weighting tf --k 3",
    "--tokenizer char --char-ngram 3 --weighting tf --k 3",
    "--tokenizer char --char-ngram 4 --weighting tf --k 3",
    "--tokenizer char --char-ngram 5 --weighting tf --k 3",
    "--tokenizer auto --weighting tf --k 5",
    "--tokenizer auto --weighting tfidf-corpus --k 6",
    "--tokenizer auto --weighting binary --k 5",
    "--tokenizer auto --weighting binary --k 6",  # the default chosen from this table
    "--tokenizer auto --weighting binary --k 7",
    "--tokenizer auto --weighting binary --stop-words --k 6",
    "--tokenizer auto --weighting binary --word-ngram 2 --k 6",
    "--tokenizer char --char-ngram 4 --weighting binary --k 3",
    "--tokenizer char --char-ngram 4 --weighting binary --k 6",
    "--tokenizer char --char-ngram 5 --weighting binary --k 6",
]
SHOWN = ("zh long", "en long", "zh short", "en short")


def strip_k(options: str) -> tuple[str, int | None]:
    words = shlex.split(options)
    if "--k" in words:
        i = words.index("--k")
        return " ".join(words[:i] + words[i + 2 :]), int(words[i + 1])
    return options, None


def with_study_settings(argv: list[str]) -> list[str]:
    return argv + [word for flag, value in STUDY_SETTINGS.items() if flag not in argv for word in (flag, value)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", required=True, help="directory with docs.parquet (and truth.parquet)")
    p.add_argument("--configs", help="';'-separated job option strings (default: the study's list)")
    p.add_argument("--work", help="scratch directory for the job outputs (default: a temporary one)")
    args = p.parse_args(argv)
    configs = [c.strip() for c in args.configs.split(";")] if args.configs else DEFAULT_CONFIGS

    from simhash_udf.job.config import load_config
    from simhash_udf.job.pipeline import run
    from simhash_udf.spark.session import get_spark

    docs_path = os.path.join(args.corpus, "docs.parquet")
    truth_path = os.path.join(args.corpus, "truth.parquet")
    docs = load_corpus(docs_path)
    start = time.perf_counter()
    oracle = build_oracle(docs)
    truth = truth_labels(docs, truth_path) if os.path.exists(truth_path) else None
    print(f"{len(docs):,} documents, {len(oracle.pos_a):,} oracle pairs (J >= 0.9), oracle {time.perf_counter() - start:.1f} s",
          flush=True)
    work = args.work or tempfile.mkdtemp(prefix="compare_features-")
    spark = get_spark("compare-features", master="local[2]")
    spark.sparkContext.setLogLevel("ERROR")
    fingerprinted: dict[str, str] = {}  # feature options -> output dir with clusters/
    warm = os.path.join(work, "warm-up")  # untimed: the JVM's first run, on 1,000 documents
    docs.head(1000).to_parquet(os.path.join(work, "warm-up.parquet"))
    run(load_config(with_study_settings(["--input", os.path.join(work, "warm-up.parquet"), "--output", warm]
                                        + shlex.split(configs[0]))), spark)
    shutil.rmtree(warm, ignore_errors=True)
    header = ["configuration", "job s"] + [f"{b} P / R" for b in SHOWN] + ["all F1", "truth R long", "truth R short"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    try:
        for i, options in enumerate(configs):
            features, k = strip_k(options)
            out = os.path.join(work, f"run{i}")
            shutil.rmtree(out, ignore_errors=True)
            if k is not None and features in fingerprinted:  # same features: only the near-duplicate stages
                argv_ = ["--input", os.path.join(fingerprinted[features], "clusters"), "--input-format", "fingerprints",
                         "--k", str(k)]
            else:
                argv_ = ["--input", docs_path] + shlex.split(options)
                if "--short-" not in options:
                    argv_ += ["--short-text-chars", "0"]
            cfg = load_config(with_study_settings(argv_) + ["--output", out])
            t0 = time.perf_counter()
            report = run(cfg, spark)
            seconds = time.perf_counter() - t0
            if "fingerprints" not in argv_:
                fingerprinted.setdefault(features, out)
            result = oracle.evaluate(job_labels(docs, out), truth)
            rows = {r["bucket"]: r for r in result.rows}
            cells = [options + (" (stored fingerprints)" if "fingerprints" in argv_ else ""), f"{seconds:.0f}"]
            cells += [f"{rows[b]['precision']:.3f} / {rows[b]['recall']:.3f}" for b in SHOWN]
            cells.append(f"{rows['all']['f1']:.3f}")
            cells += [f"{rows[b].get('truth_recall', float('nan')):.3f}" for b in ("long", "short")]
            lines.append("| " + " | ".join(cells) + " |")
            print(lines[-1], f"[{report['fingerprint_version']}]", flush=True)
            if args.work and "fingerprints" in argv_:
                shutil.rmtree(out, ignore_errors=True)
    finally:
        spark.stop()
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
