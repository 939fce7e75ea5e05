"""Fingerprint throughput per core: bare jieba segmentation vs our fingerprint (pure Python, and the
pandas UDF inside a one-core local Spark), on the same Chinese and English text, in one run.

    python scripts/bench_fingerprint.py [--mb 8]

Chinese text: Debian's Chinese man pages (package manpages-zh, installed if missing and we are root),
English text: the English man pages of the same machine; both with troff markup stripped. Without them
the generated sample corpus is used (and the output says so).
"""
from __future__ import annotations

import argparse
import glob
import gzip
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

_TROFF_ESCAPE = re.compile(r"\\f[BIRP]|\\\(..|\\[-&e]|\\s[-+]?\d")


def man_page_texts(pattern: str) -> list[str]:
    texts = []
    for path in sorted(glob.glob(pattern)):
        try:
            raw = gzip.open(path, "rt", encoding="utf-8", errors="replace").read()
        except (OSError, EOFError):
            continue
        lines = [_TROFF_ESCAPE.sub("", ln) for ln in raw.splitlines() if not ln.startswith((".", "'"))]
        text = "\n".join(lines).strip()
        if len(text) > 200:
            texts.append(text)
    return texts


def corpus(lang: str, megabytes: float) -> tuple[list[str], str]:
    """Documents of about `megabytes` MB of UTF-8 (real man pages repeated as needed)."""
    if lang == "zh":
        if not glob.glob("/usr/share/man/zh_CN/man*/*.gz") and os.geteuid() == 0:
            subprocess.run(["apt-get", "install", "-y", "-qq", "manpages-zh"], capture_output=True)
        texts, source = man_page_texts("/usr/share/man/zh_CN/man*/*.gz"), "Chinese man pages (manpages-zh)"
    else:
        texts, source = man_page_texts("/usr/share/man/man[1-8]/*.gz"), "English man pages"
    if not texts:
        from simhash_udf.sample_corpus import make_sample_corpus

        texts = [r["text"] for r in make_sample_corpus(400) if r["lang"] == lang]
        source = f"generated sample corpus ({lang}); real man pages not found"
    out, size, i = [], 0, 0
    while size < megabytes * 1e6:
        out.append(texts[i % len(texts)])
        size += len(out[-1].encode("utf-8"))
        i += 1
    return out, source


def mb(texts: list[str]) -> float:
    return sum(len(t.encode("utf-8")) for t in texts) / 1e6


def time_it(fn, texts) -> float:
    start = time.perf_counter()
    fn(texts)
    return time.perf_counter() - start


def bare_jieba(texts):
    import jieba

    for t in texts:
        jieba.lcut(t)


def python_fingerprints(texts):
    from simhash_udf.fingerprint import fingerprint_batch

    for i in range(0, len(texts), 2000):
        fingerprint_batch(texts[i : i + 2000])


def spark_udf_seconds(spark, texts) -> float:
    from pyspark.sql import functions as F

    from simhash_udf.fingerprint import FeatureSpec
    from simhash_udf.fingerprint_udf import with_fingerprints

    df = spark.createDataFrame([(i, t) for i, t in enumerate(texts)], "id long, text string").cache()
    df.count()
    fps = with_fingerprints(df, "text", FeatureSpec())
    fps.agg(F.sum("n_features")).first()  # warm the Python worker (jieba's dictionary load)
    start = time.perf_counter()
    fps.agg(F.sum("n_features"), F.count("fingerprint")).first()
    seconds = time.perf_counter() - start
    df.unpersist()
    return seconds


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=8.0, help="MB of text per language")
    args = ap.parse_args()
    from simhash_udf.session import get_spark

    spark = get_spark("bench-fingerprint", master="local[1]")  # one core: throughput per core
    spark.sparkContext.setLogLevel("ERROR")
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "2000")
    import jieba

    jieba.initialize()
    rows = []
    for lang in ("zh", "en"):
        texts, source = corpus(lang, args.mb)
        size = mb(texts)
        t_jieba = time_it(bare_jieba, texts)
        t_py = time_it(python_fingerprints, texts)
        t_udf = spark_udf_seconds(spark, texts)
        rows.append((lang, source, len(texts), size, size / t_jieba, size / t_py, size / t_udf))
    spark.stop()
    print("\n| text | source | docs | MB | bare jieba.lcut MB/s | fingerprint (Python) MB/s | UDF in Spark, 1 core MB/s | UDF / bare jieba |")
    print("|---|---|---|---|---|---|---|---|")
    for lang, source, n, size, j, p, u in rows:
        print(f"| {lang} | {source} | {n:,} | {size:.1f} | {j:.2f} | {p:.2f} | {u:.2f} | {u / j:.2f} |")
    print("\n(one core each; docs/s = MB/s x docs / MB)")


if __name__ == "__main__":
    main()
