"""Print a short summary of a finished run: documents in, kept, duplicates, and the largest clusters
with two example members each; related pages (a run with --related N) with example pairs; with the sample's
planted groups (a `group` column in the input), how many planted copies were found.
Usage: python scripts/summarize.py OUTPUT_DIR INPUT_JSONL"""
import argparse
import json

import pandas as pd


def snippet(text: str, width: int = 60) -> str:
    one_line = " ".join(str(text).split())
    return one_line[:width] + ("…" if len(one_line) > width else "")


def print_related(related: dict, docs: pd.DataFrame) -> None:
    """The related part of a run with --related N: how many kept pages have one, and example pairs side by side."""
    found = {d: c for d, c in related["distance_histogram"].items() if c}
    print(f"related pages (--related {related['n']}, within {related['plan']['distance']} bits): "
          f"{related['pages_with_related']} of {related['pages']} kept pages have one; rows by distance {found}")
    for e in related["examples"]:
        print(f"  {e['id']:>5} {snippet(docs.loc[e['id']]['text'], 36):<37} <-{e['distance']:>2} bits-> "
              f"{e['related_id']:>5} {snippet(docs.loc[e['related_id']]['text'], 36)}")


def main(out_dir: str, input_path: str) -> None:
    report = json.load(open(f"{out_dir}/report.json", encoding="utf-8"))
    clusters = pd.read_parquet(f"{out_dir}/clusters")
    docs = pd.read_json(input_path, lines=True).set_index("id")
    print(f"documents in : {report['input_rows']}")
    print(f"kept         : {report['kept']}")
    print(f"duplicates   : {report['duplicates']} ({report['exact_duplicates']} exact, "
          f"{report['near_duplicates']} near)")
    print(f"clusters with duplicates: {report['clusters']['with_duplicates']}, largest {report['clusters']['largest']}")
    print(f"seconds per stage: {report['seconds']}")
    sizes = clusters.groupby("cluster_id").size().sort_values(ascending=False, kind="stable")
    print("largest clusters:")
    for cluster_id, size in sizes.head(5).items():
        members = clusters[clusters.cluster_id == cluster_id].sort_values("id")["id"].tolist()[:2]
        print(f"  cluster {cluster_id} ({size} pages)")
        for m in members:
            row = docs.loc[m]
            print(f"    {m:>5} {row.get('url', '')}  {snippet(row['text'])}")
    if report.get("related"):
        print_related(report["related"], docs)
    if "group" in docs.columns:  # the sample corpus carries the generator's truth
        m = clusters.set_index("id").join(docs[["group", "variant"]])
        orig = m[m.variant == "original"].set_index("group")["cluster_id"]
        copies = m[m.variant != "original"]
        found = copies["cluster_id"].to_numpy() == orig.loc[copies["group"]].to_numpy()
        mixed = int((m.groupby("cluster_id")["group"].nunique() > 1).sum())
        print(f"planted copies found: {found.sum()} of {len(copies)}; clusters joining unrelated pages: {mixed}")
        missed = copies[~found]
        if len(missed):
            print(f"  missed by variant: {missed['variant'].value_counts().to_dict()} "
                  "(their SimHash differs in more than k bits; see docs/quality.md)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split(";")[0])
    ap.add_argument("output_dir", help="a finished run's output directory (report.json, clusters/)")
    ap.add_argument("input_jsonl", help="the run's input, JSON Lines with id and text (and group)")
    args = ap.parse_args()
    main(args.output_dir, args.input_jsonl)
