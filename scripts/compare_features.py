"""Run the job with several feature / weighting / k settings on one corpus and evaluate each (scripts/evaluate.py),
printed as one table: the evidence for the defaults in conf/default.toml.

    python scripts/make_corpus.py work/eval/corpus.parquet --n 20000
    python scripts/compare_features.py work/eval/corpus.parquet [--configs default,char5,...]

Each configuration is a set of command-line options of the job; the table has recall and precision against the
Jaccard oracle (long and short texts, zh and en) and against the generator's truth.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "scripts"))
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

CONFIGS = {
    "default": [],
    "k4": ["--k", "4"],
    "k5": ["--k", "5"],
    "binary": ["--weighting", "binary"],
    "tfidf": ["--weighting", "tfidf"],
    "word2": ["--word-ngram", "2"],
    "word3": ["--word-ngram", "3"],
    "char5": ["--tokenizer", "char", "--char-ngram", "5"],
    "char3": ["--tokenizer", "char", "--char-ngram", "3"],
    "char5-k5": ["--tokenizer", "char", "--char-ngram", "5", "--k", "5"],
    "word3-k5": ["--word-ngram", "3", "--k", "5"],
}


def main() -> None:
    import pandas as pd

    from evaluate import evaluate, read_corpus
    from simhash_udf.config import load_config
    from simhash_udf.pipeline import run
    from simhash_udf.session import get_spark

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--work", default=os.path.join(ROOT, "work", "compare"))
    args = ap.parse_args()
    spark = get_spark("compare-features")
    spark.sparkContext.setLogLevel("ERROR")
    docs = read_corpus(args.corpus)[["id", "text", "group"]]
    rows = []
    for name in args.configs.split(","):
        out = os.path.join(args.work, name)
        start = time.perf_counter()
        run(load_config(["--input", args.corpus, "--output", out, "--overwrite", *CONFIGS[name]]), spark)
        seconds = time.perf_counter() - start
        clusters = pd.read_parquet(os.path.join(out, "clusters"), columns=["id", "cluster_id"])
        table = evaluate(docs, dict(zip(clusters["id"], clusters["cluster_id"])), "group").set_index(["length", "lang"])
        row = {"config": name, "options": " ".join(CONFIGS[name]) or "(defaults)", "seconds": round(seconds)}
        for size in ("long", "short"):
            for lang in ("zh", "en"):
                if (size, lang) in table.index:
                    r = table.loc[(size, lang)]
                    row[f"{size} {lang} R/P"] = f"{r['recall']:.3f} / {r['precision']:.3f}"
                    row[f"{size} {lang} truth R/P"] = f"{r['truth_recall']:.3f} / {r['truth_precision']:.3f}"
        rows.append(row)
        print(rows[-1], flush=True)
    result = pd.DataFrame(rows)
    print()
    print(result.to_string(index=False))


if __name__ == "__main__":
    main()
