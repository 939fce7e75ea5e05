"""The job's quality under several configurations, side by side on the same corpora: every configuration runs
in one local session (after an untimed run on 1,000 pages) and is scored against the Jaccard oracle
(simhash_udf/evaluation/quality.py) and, when the corpus has it, the generator's truth.

    python scripts/bench/quality.py --corpus work/man10k                             # the job at its defaults
    python scripts/bench/quality.py --corpus work/man10k --configs "--k 3; --k 6"   # ';'-separated job options
    python scripts/bench/quality.py --corpus work/man10k --configs features          # the feature and weight study
    python scripts/bench/quality.py --corpus work/man20k --corpus work/gen100k --configs verification --crawl 1e9
        # chance pairs at crawl scale: precision with and without verification

--corpus DIR holds docs.parquet (and truth.parquet) as scripts/make_corpus.py writes them; give it again for
more corpora (one table each). A configuration is a string of job options ("--tokenizer char --char-ngram 4";
empty: the defaults). Named sets of configurations:

- features: tokens vs word n-gram shingles vs character n-grams, tf vs tfidf (jieba's idf) vs tfidf-corpus vs
  binary, stop words, and k (docs/quality.md, "Feature and weight study"). The study was made before
  verification, the signature bands and the short-text mode, so each of its configurations runs with
  FEATURE_STUDY_SETTINGS and --short-text-chars 0 unless it names them: its table does not move with the
  job's defaults.
- verification: verification off (--cluster-mode transitive --min-similarity 0, the behaviour before
  signatures; the signature bands are then off too), verified without the bands (--signature-bands 0), and
  the defaults: what verification does to the SimHash pairs alone, and what the bands add.

A configuration with the short-text mode off that differs from an earlier one only in --k reuses that one's
fingerprints (--input-format fingerprints on its clusters/): the same job without the fingerprint stage.

--crawl N: every configuration also runs with its fingerprints cut to b bits spread over the 64
(--simulate-fingerprint-bits b) before the pair search, b the largest width at which the corpus has as many
chance neighbours per page as a crawl of N pages. Among N random 64-bit fingerprints a page has about
(N - 1) * sum_{d<=k} C(64, d) / 2^64 chance neighbours within k bits: 0.0045 at N = 10^9 and k = 6, 2.3e-7
at N = 20,000.
"""
from __future__ import annotations

import argparse
import os
import shlex
import shutil
import tempfile
import time

from simhash_udf.core.blocks import chance_pairs
from simhash_udf.evaluation.benchmark import Tables, add_json_option, bench_session
from simhash_udf.evaluation.outputs import build_oracle, job_labels, load_corpus, truth_labels
from simhash_udf.job.config import DedupConfig, load_config
from simhash_udf.job.pipeline import run

# the job as the feature study ran it (fingerprint distance alone, transitive clusters; no signature bands
# without verification), added to a configuration of the study that does not name the option
FEATURE_STUDY_SETTINGS = {"--min-similarity": "0", "--cluster-mode": "transitive"}
FEATURE_STUDY = [  # the feature options explicit, so the table does not move when conf/default.toml does
    "--tokenizer auto --weighting tf --k 3",  # the default before the study
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
VERIFICATION = ["--cluster-mode transitive --min-similarity 0", "--signature-bands 0", ""]
BUCKETS = ("zh long", "en long", "zh short", "en short", "long", "short", "all")


def configurations(name: str) -> list[list[str]]:
    """The job options of each configuration of a named set or of a ';'-separated list."""
    if name == "features":
        return [feature_study_argv(shlex.split(c)) for c in FEATURE_STUDY]
    if name == "verification":
        return [shlex.split(c) for c in VERIFICATION]
    return [shlex.split(c) for c in name.split(";")]


def feature_study_argv(argv: list[str]) -> list[str]:
    settings = {**FEATURE_STUDY_SETTINGS, "--short-text-chars": "0"}
    return argv + [word for flag, value in settings.items() if flag not in argv for word in (flag, value)]


def without_k(argv: list[str]) -> tuple[list[str], str | None]:
    if "--k" not in argv:
        return argv, None
    i = argv.index("--k")
    return argv[:i] + argv[i + 2:], argv[i + 1]


def simulated_bits(n: int, at: int, k: int) -> int:
    """The largest fingerprint width at which n pages have the chance neighbours per page of `at` pages."""
    target = chance_pairs(at, k) / at
    for bits in range(64, k, -1):
        if chance_pairs(n, k, bits) / n >= target:
            return bits
    return k + 1


class Runner:
    """The configurations on one corpus in one session, each scored; the fingerprints of a configuration kept
    for the later ones that differ from it only in --k."""

    def __init__(self, spark, corpus: str, work: str):
        self.spark, self.work = spark, work
        self.docs_path = os.path.join(corpus, "docs.parquet")
        self.docs = load_corpus(self.docs_path)
        truth_path = os.path.join(corpus, "truth.parquet")
        self.truth = truth_labels(self.docs, truth_path) if os.path.exists(truth_path) else None
        start = time.perf_counter()
        self.oracle = build_oracle(self.docs)
        print(f"{corpus}: {len(self.docs):,} documents, {len(self.oracle.pos_a):,} oracle pairs (J >= 0.9), "
              f"oracle {time.perf_counter() - start:.1f} s", flush=True)
        self.fingerprinted: dict[tuple, str] = {}  # options but --k -> an output with those fingerprints
        self.n_out = 0

    def run(self, argv: list[str], cut: int) -> list:
        """One configuration (cut: --simulate-fingerprint-bits, 0 for none): its table row."""
        features, k = without_k(argv)
        reused = k is not None and "--short-text-chars" in argv and tuple(features) in self.fingerprinted
        if reused:  # same features: only the near-duplicate stages
            run_argv = ["--input", os.path.join(self.fingerprinted[tuple(features)], "clusters"),
                        "--input-format", "fingerprints", *features, "--k", k]
        else:
            run_argv = ["--input", self.docs_path, *argv]
        out = os.path.join(self.work, f"run{self.n_out}")
        self.n_out += 1
        cfg = load_config([*run_argv, *(["--simulate-fingerprint-bits", str(cut)] if cut else []), "--output", out])
        start = time.perf_counter()
        report = run(cfg, self.spark)
        seconds = time.perf_counter() - start
        if not reused:
            self.fingerprinted.setdefault(tuple(features), out)
        rows = {r["bucket"]: r for r in self.oracle.evaluate(job_labels(self.docs, out), self.truth).rows}
        c = report["candidates"]
        fingerprints = (f"cut to {cut} bits" if cut else "64 bits") + (", stored" if reused else "")
        return [shlex.join(argv) or "(defaults)", fingerprints, seconds,
                *(f"{rows[b]['precision']:.3f} / {rows[b]['recall']:.3f}" if b in rows else "-" for b in BUCKETS),
                rows["all"]["f1"], *(rows[b].get("truth_recall", float("nan")) for b in ("long", "short")),
                c["pairs_accepted"], c["pairs_verified"]]


def corpus_table(spark, tables: Tables, corpus: str, configs: list[list[str]], args: argparse.Namespace,
                 work: str) -> None:
    """The configurations on one corpus (and with cut fingerprints under --crawl): one table."""
    os.makedirs(work, exist_ok=True)
    runner = Runner(spark, corpus, work)
    cuts = [0]
    if args.crawl:
        k = DedupConfig().k
        bits = simulated_bits(len(runner.docs), int(args.crawl), k)
        cuts.append(bits)
        tables.note(f"{corpus}: {len(runner.docs):,} pages; fingerprints cut to {bits} bits give "
                    f"{chance_pairs(len(runner.docs), k, bits):,.1f} expected chance pairs within k = {k} (as many "
                    f"per page as {args.crawl:,.0f} full fingerprints; {chance_pairs(len(runner.docs), k):.2g} uncut)")
    rows = []
    for cut in cuts:
        for argv in configs:
            rows.append(runner.run(argv, cut))
            print(f"{rows[-1][0]} ({rows[-1][1]}): {rows[-1][2]:.0f} s, all P / R {rows[-1][9]}", flush=True)
    tables.table(["configuration", "fingerprints", "job s", *(f"{b} P / R" for b in BUCKETS), "all F1", "truth R long",
                  "truth R short", "pairs accepted", "pairs verified"], rows,
                 [None, None, "{:.0f}", *[None] * len(BUCKETS), "{:.3f}", "{:.3f}", "{:.3f}", None, None],
                 title=f"{corpus} ({len(runner.docs):,} documents; P / R against the oracle, truth R: share of the "
                       "generator's copies found):")
    shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", action="append", required=True, help="a directory with docs.parquet (and "
                    "truth.parquet), as scripts/make_corpus.py writes them")
    ap.add_argument("--configs", default="", help="';'-separated job option strings, or a named set: features, "
                    "verification (default: the job's defaults alone)")
    ap.add_argument("--crawl", type=float, default=0, help="also run every configuration with fingerprints cut to "
                    "the chance neighbours of a crawl of this many pages (e.g. 1e9)")
    ap.add_argument("--work", help="scratch directory for the job outputs (default: a temporary one)")
    add_json_option(ap)
    args = ap.parse_args()
    configs = configurations(args.configs)
    work = args.work or tempfile.mkdtemp(prefix="bench_quality_")
    os.makedirs(work, exist_ok=True)
    spark = bench_session("bench-quality")
    tables = Tables(args.json)
    try:
        warm = os.path.join(work, "warm-up.parquet")  # untimed: a new JVM's first run is ~1.5x slower
        load_corpus(os.path.join(args.corpus[0], "docs.parquet")).head(1000).to_parquet(warm)
        run(load_config(["--input", warm, *configs[0], "--output", os.path.join(work, "warm-up")]), spark)
        for corpus in args.corpus:
            corpus_table(spark, tables, corpus, configs, args, os.path.join(work, "runs"))
    finally:
        spark.stop()
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    tables.write()


if __name__ == "__main__":
    main()
