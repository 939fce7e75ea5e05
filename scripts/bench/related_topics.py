"""Related pages by topic (--related N): precision of the same-topic check on a topic-labelled set of real
text (the machine's English man pages labelled by their Debian package, evaluation.related_topics), for the
dedup fingerprint (the default weighting, binary) and other weightings, side by side in one session.

    python scripts/bench/related_topics.py --n 10 --distances 10,12,14,16
"""
from __future__ import annotations

import argparse

from simhash_udf.evaluation.benchmark import Tables, add_json_option, bench_session
from simhash_udf.evaluation.related_topics import man_page_packages, same_topic_precision, topic_pages
from simhash_udf.job.api import related_pages


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=10, help="related pages per page")
    ap.add_argument("--distances", default="14", help="related distances, comma-separated")
    ap.add_argument("--per-topic", type=int, default=20, help="pages of each package at most")
    ap.add_argument("--weightings", default="binary,tfidf-corpus")
    add_json_option(ap)
    args = ap.parse_args()
    tables = Tables(args.json)
    spark = bench_session("bench-related-topics")
    pages = topic_pages(man_page_packages(), per_topic=args.per_topic)
    topics = pages.set_index("id")["topic"]
    df = spark.createDataFrame(pages[["id", "text"]])
    rows = []
    for weighting in args.weightings.split(","):
        for distance in map(int, args.distances.split(",")):
            result = related_pages(df, n=args.n, distance=distance, weighting=weighting)
            related = result.related.select("id", "related_id", "rank").toPandas()
            result.unpersist()
            for at in (1, args.n):
                got = same_topic_precision(related, topics, at)
                rows.append([weighting, distance, at, got["precision"], got["pages_with_related"], got["rows"]])
    tables.table(["weighting", "distance", "N", "same-topic precision", "pages with a related page", "rows"], rows,
                 [None, None, None, "{:.3f}", None, None],
                 title=f"{len(pages):,} man pages of {topics.nunique()} packages; chance precision "
                       f"{same_topic_precision(related.iloc[:0], topics)['chance']:.3f}")
    tables.write()


if __name__ == "__main__":
    main()
