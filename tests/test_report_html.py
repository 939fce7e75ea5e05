"""report.html, the page a person reads: rendered by a real headless Chromium (Debian's, installed by
scripts/chromium_env.sh) from a tiny real job run; its numbers are report.json's, its plots are there, the
page texts are escaped, and it loads nothing from the network. Also the report's series (PNG and SVG share
them) and the new report.json keys against brute force on the run's own clusters/."""
import html
import json
import os
import re
import subprocess
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest

from simhash_udf.core.signature import SignatureSpec, similarity
from simhash_udf.core.verified import VerifySpec
from simhash_udf.evaluation.sample_corpus import make_sample_corpus
from simhash_udf.io.read import load_input
from simhash_udf.job.config import load_config
from simhash_udf.job.pipeline import run
from simhash_udf.job.report_html import (
    _dimensions,
    choose_examples,
    excerpt_pair,
    input_side,
    nice_ticks,
    render_html,
    to_kept_summary,
)
from simhash_udf.job.report_plots import accepted_pair_distances, kept_distances, removed_by_size
from simhash_udf.job.report_schema import Report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Every page starts with markup that must stay text: a script, an image from the network, an entity.
HOSTILE = '<script>alert("x")</script><img src="https://evil.example/x.png"> &amp; '
# Chromium without its own background traffic; anything it still tries goes to a dead loopback proxy.
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run", "--disable-extensions",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-default-apps",
    "--disable-domain-reliability", "--disable-breakpad", "--no-pings", "--proxy-server=127.0.0.1:9",
    "--proxy-bypass-list=<-loopback>",
]


@pytest.fixture(scope="module")
def chromium():
    proc = subprocess.run(["bash", os.path.join(ROOT, "scripts", "chromium_env.sh")], capture_output=True, text=True,
                          timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip().splitlines()[-1]


def browse(chromium, page: str, tmp_path, *args: str) -> str:
    """Chromium's output for `page` (a local file) with extra args; also the network log of the visit."""
    proc = subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'chromium-profile'}",
                           f"--log-net-log={tmp_path / 'net.json'}", *args, "file://" + page],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def page_requests(tmp_path) -> set[str]:
    """URLs the page itself asked for (requests made on behalf of a file:// document), from the net log."""
    log = json.load(open(tmp_path / "net.json"))
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return {e["params"]["url"] for e in log["events"] if e["type"] == start
            and "file://" in e["params"].get("network_isolation_key", "") and not e["params"]["url"].startswith("file:")}


class Dom(HTMLParser):
    """What the tests read from the rendered DOM: headline values, element counts, figure contents, texts."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.headline, self.tags, self.figures, self.excerpts, self.tables = {}, {}, {}, [], {}
        self._stack: list[tuple[str, dict]] = []
        self._key = self._figure = self._table = None
        self._title = self._excerpt = self._cell = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags[tag] = self.tags.get(tag, 0) + 1
        if "data-key" in a:
            self._key = a["data-key"]
            self.headline[self._key] = {"value": a["data-value"], "text": ""}
        if tag == "figure":
            self._figure = a["id"]
            self.figures[self._figure] = {"rects": 0, "titles": [], "texts": []}
        if tag == "rect" and self._figure:
            self.figures[self._figure]["rects"] += 1
        if tag == "title" and self._figure:
            self._title = ""
        if tag == "p" and a.get("class") == "excerpt":
            self._excerpt = ""
        if tag == "table" and "id" in a:
            self._table = a["id"]
            self.tables[self._table] = []
        if tag == "tr" and self._table:
            self.tables[self._table].append([])
        if tag in ("td", "th") and self._table:
            self._cell = ""
        self._stack.append((tag, a))

    def handle_endtag(self, tag):
        if tag == "figure":
            self._figure = None
        if tag == "title" and self._figure and self._title is not None:
            self.figures[self._figure]["titles"].append(self._title)
            self._title = None
        if tag == "p" and self._excerpt is not None:
            self.excerpts.append(self._excerpt)
            self._excerpt = None
        if tag in ("td", "th") and self._cell is not None:
            self.tables[self._table][-1].append(self._cell.strip())
            self._cell = None
        if tag == "table":
            self._table = None
        if self._key and tag == "div":
            self._key = None

    def handle_data(self, data):
        if self._key:
            self.headline[self._key]["text"] += data
        if self._title is not None:
            self._title += data
        elif self._figure:
            self.figures[self._figure]["texts"].append(data)
        if self._excerpt is not None:
            self._excerpt += data
        if self._cell is not None:
            self._cell += data


@pytest.fixture(scope="module")
def report_run(spark, tmp_path_factory):
    """A tiny real run: the sample crawl (url and lang columns) with hostile markup in every text, a page
    without text and an empty one."""
    base = tmp_path_factory.mktemp("report-html")
    rows = make_sample_corpus(n_originals=24, seed=3)
    for r in rows:
        r["text"] = HOSTILE + r["text"]
    top = max(r["id"] for r in rows)
    rows += [{**rows[0], "id": top + 1, "text": None, "url": "not a url"}, {**rows[1], "id": top + 2, "text": ""}]
    crawl = base / "crawl.jsonl"
    pd.DataFrame(rows).to_json(crawl, orient="records", lines=True, force_ascii=False)
    out = base / "out"
    # sentence keys and containment on (opt-in): the page shows their pairs verified by each kind
    report = run(load_config(["--input", str(crawl), "--output", str(out), "--sentence-keys", "3",
                              "--min-containment", "0.9"]), spark)
    return str(out), report, pd.DataFrame(rows), str(crawl)


def test_report_page_in_a_headless_browser(report_run, chromium, tmp_path):
    out, report, rows, _ = report_run
    page = os.path.join(out, "report.html")
    on_disk = json.load(open(os.path.join(out, "report.json")))
    assert on_disk["report_html"] == "report.html" and on_disk["duplicates"] > 5
    source = open(page, encoding="utf-8").read()
    # self-contained: no external resource of any kind in the file
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", source, re.I)
    assert not re.search(r"<(script|link|iframe|object|embed|img)\b|@import|url\(", source, re.I)

    dom = Dom(browse(chromium, page, tmp_path, "--dump-dom"))
    assert page_requests(tmp_path) == set()  # the browser fetched nothing for the page
    head = dom.headline
    for key in ("input_rows", "kept", "duplicates", "exact_duplicates", "near_duplicates"):
        assert int(head[key]["value"]) == on_disk[key], key
        assert head[key]["text"] == f"{on_disk[key]:,}"
    assert head["input_rows"]["value"] == str(len(rows))
    rate = on_disk["duplicates"] / on_disk["input_rows"]
    assert float(head["duplicate_rate"]["value"]) == pytest.approx(rate, abs=1e-6)
    assert head["duplicate_rate"]["text"] == f"{rate:.1%}"
    bad = {k: v for k, v in on_disk["bad_rows"].items() if isinstance(v, int)}
    assert bad["null_text"] == 1 and bad["no_features"] == 1
    assert int(head["bad_rows"]["value"]) == sum(bad.values())
    assert [r[:2] for r in dom.tables["bad-rows"][1:]] == [[k.replace("_", " "), f"{v:,}"] for k, v in bad.items()]
    assert [r[0] for r in dom.tables["seconds"][1:]] == list(on_disk["seconds"]) and "report" in on_disk["seconds"]
    assert dict(r for r in dom.tables["config"][1:])["k"] == str(on_disk["config"]["k"])
    assert on_disk["fingerprint_version"] in source

    # plots: present, drawn, and saying what they claim
    assert set(dom.figures) == {"plot-removed-by-size", "plot-distance-to-kept", "plot-similarity-to-kept",
                                "plot-pair-distances", "plot-pair-similarity"}
    assert all(f["rects"] for f in dom.figures.values())
    removed = [int(re.match(r"[\d-]+: ([\d,]+) documents removed", t).group(1).replace(",", ""))
               for t in dom.figures["plot-removed-by-size"]["titles"]]
    assert sum(removed) == on_disk["duplicates"]  # linear: bars of documents removed add up to the duplicates
    to_kept = [t for t in dom.figures["plot-distance-to-kept"]["titles"]]
    assert sum(int(t.split(": ")[1].split()[0].replace(",", "")) for t in to_kept) == on_disk["duplicates"]
    assert not [t for t in dom.figures["plot-pair-distances"]["titles"] if t.startswith("0:")]  # no empty 0 bar
    assert f"k = {on_disk['config']['k']}" in dom.figures["plot-distance-to-kept"]["texts"]

    # example pairs: side by side, their texts escaped (text in the DOM, never elements)
    examples = on_disk["example_pairs"]
    # and the sentence-key search's pairs verified by similarity and by containment, one example of each kind
    keys = on_disk["candidates"]["sentence_keys"]
    kinds = keys["examples"]
    assert len(examples) == 5 and len(dom.excerpts) == 10 + 2 * len(kinds)
    shown = html.unescape(re.sub(r"<[^>]+>", "", source))
    assert (f"{keys['pairs_verified_by_similarity']:,} verified by similarity, "
            f"{keys['pairs_verified_by_containment']:,} only by containment") in shown
    for kind, e in kinds.items():
        assert f"verified by {kind} · similarity {e['similarity']:.2f} · containment {e['containment']:.2f}" in shown
    check = on_disk["clusters"]["containment_check"]
    assert (f"checked on the two texts: {check['checked_on_texts']:,}, of which {check['left_cluster']:,} did not hold "
            "and left the cluster") in shown
    assert (f"with the kept page of a cluster they share a sentence with: {check['alone_compared']:,}, of which "
            f"{check['joined_on_texts']:,} were inside it, or held it, and joined") in shown
    assert all('<script>alert("x")</script><img src="https://evil.example/x.png"> &amp;' in e for e in dom.excerpts)
    assert "script" not in dom.tags and "img" not in dom.tags
    assert dom.tags["section"] == 5 + len(kinds)
    texts = rows.set_index("id")["text"]
    for e in examples:
        assert f"duplicate {e['duplicate']} → kept {e['kept']} · distance {e['distance']} bits" in html.unescape(
            re.sub(r"<[^>]+>", "", source))
        assert texts[e["duplicate"]] != texts[e["kept"]] or e["distance"] == 0

    # per host and per language, as pandas counts them
    clusters = pd.read_parquet(os.path.join(out, "clusters")).merge(rows, on="id")
    clusters["host"] = clusters["url"].str.extract(r"^https?://([^/]+)", expand=False).str.lower().fillna("(none)")
    for name, col in (("host", "host"), ("language", "lang")):
        table = dom.tables[f"rate-{name}"][1:]
        truth = clusters.groupby(col)["is_duplicate"].agg(["size", "sum"])
        for value, pages, dups, shown_rate, _ in table:
            assert (int(pages), int(dups)) == tuple(truth.loc[value]), value
            assert shown_rate == f"{int(dups) / int(pages):.1%}"
        assert [int(r[2]) for r in table] == sorted((int(r[2]) for r in table), reverse=True)
    assert on_disk["duplicate_rate_by"]["host"]["values"] == clusters["host"].nunique()

    # and what a person sees: a screenshot of the whole page (looked at by eye when the page changes)
    shot = tmp_path / "report.png"
    browse(chromium, page, tmp_path, f"--screenshot={shot}", "--window-size=1360,3600")
    with open(shot, "rb") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"
    assert os.path.getsize(shot) > 50_000  # a drawn page, not a blank one


def test_the_network_check_sees_a_page_that_loads_something(chromium, tmp_path):
    """The check above can fail: a page with an image from the network shows up in the net log."""
    page = tmp_path / "leaky.html"
    page.write_text('<html><body><img src="https://evil.example/x.png"></body></html>')
    browse(chromium, str(page), tmp_path, "--dump-dom")
    assert page_requests(tmp_path) == {"https://evil.example/x.png"}


def test_duplicates_to_kept_against_brute_force(report_run):
    """report.json's new duplicates_to_kept: every duplicate's distance and signature similarity to its
    kept page, as numpy computes them from clusters/."""
    out, report, _, _ = report_run
    clusters = pd.read_parquet(os.path.join(out, "clusters"), dtype_backend="numpy_nullable")  # int64 with nulls
    kept = clusters[~clusters.is_duplicate].set_index("id")
    dups = clusters[clusters.is_duplicate]
    fp = dups["fingerprint"].astype(np.int64).to_numpy().view(np.uint64)
    kfp = kept.loc[dups["cluster_id"], "fingerprint"].astype(np.int64).to_numpy().view(np.uint64)
    distance = pd.Series(np.bitwise_count(fp ^ kfp)).value_counts().sort_index()
    got = report["duplicates_to_kept"]
    assert got["distance_histogram"] == {str(d): int(n) for d, n in distance.items()}
    assert got["compared"] == len(dups) == report["duplicates"] and got["kept_in_earlier_run"] == 0
    spec = SignatureSpec()
    a = np.stack([np.frombuffer(s, np.uint8) for s in dups["signature"]])
    b = np.stack([np.frombuffer(s, np.uint8) for s in kept.loc[dups["cluster_id"], "signature"]])
    bands = np.minimum((similarity(a, b, spec.bits) * 20).astype(int), 19)
    assert list(got["similarity_histogram"].values()) == np.bincount(bands, minlength=20).tolist()
    # clusters/' own similarity column: the same estimate for each duplicate, null for the kept pages
    assert dups["similarity"].to_numpy(dtype=float) == pytest.approx(similarity(a, b, spec.bits))
    assert kept["similarity"].isna().all() and dups["similarity"].notna().all()
    assert got["below_min_similarity"] == int(((a == b).sum(1) < VerifySpec(report["config"]["min_similarity"]).need).sum())
    assert sorted(report["plots"]) == report["plots"] and "duplicates_to_kept.png" in report["plots"]


def test_rates_ranked_by_spark_equal_the_driver_ranking(spark, report_run):
    """Many (host, language) pairs are ranked by Spark, few on the driver: the same rows either way."""
    out, report, rows, crawl = report_run
    raw = load_input(spark, crawl, "auto", lambda df: df).df
    kept = spark.read.parquet(os.path.join(out, "kept"))
    ids = [int(rows["id"].iloc[3]), int(rows["id"].iloc[-2])]  # a page with text, the one without
    on_driver = input_side(raw, kept, "id", "text", ids, top=4)
    by_spark = input_side(raw, kept, "id", "text", ids, top=4, driver_groups=0)
    assert on_driver == by_spark
    rates, texts = on_driver
    assert {name: {**dim, "top": dim["top"][:4]} for name, dim in report["duplicate_rate_by"].items()} == rates
    assert texts == {ids[0]: (rows["text"].iloc[3], rows["url"].iloc[3]), ids[1]: (None, "not a url")}


def test_an_input_with_nothing_to_show_is_not_scanned_for_the_examples(spark, tmp_path):
    """Stored fingerprints without a url column have no text to show beside an example pair: input_side starts no
    Spark job for them (a scan of every stored fingerprint in a large run) and finds no texts; an input with a text
    column (and no host or language) is scanned for its examples' texts. Both inputs are read from Parquet, so that
    a scan is a Spark job (a local relation can be answered on the driver), and the jobs are counted in a group of
    this test's own."""
    spark.createDataFrame([(1, 10), (2, 11), (3, 12)], "id long, fingerprint long").write.parquet(
        str(tmp_path / "stored"))
    spark.createDataFrame([(1, "a page"), (2, "another page")], "id long, text string").write.parquet(
        str(tmp_path / "pages"))
    stored, pages = spark.read.parquet(str(tmp_path / "stored")), spark.read.parquet(str(tmp_path / "pages"))
    sc, tracker = spark.sparkContext, spark.sparkContext.statusTracker()
    try:
        sc.setJobGroup("stored-examples", "no scan expected")
        assert input_side(stored, stored, "id", None, [1, 3]) == ({}, {})
        sc.setJobGroup("text-examples", "one scan expected")
        assert input_side(pages, pages, "id", "text", [2]) == ({}, {2: ("another page", None)})
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    assert list(tracker.getJobIdsForGroup("stored-examples")) == []
    assert list(tracker.getJobIdsForGroup("text-examples")) != []


def test_hosts_are_compared_in_ascii_lower_case(spark):
    """The per-host breakdown lowers a host's ASCII letters (DNS compares them so, RFC 4343); anything that is
    no URL has no host."""
    df = spark.createDataFrame([("HTTP://WWW.Example.COM/Path?Q=A",), ("https://www.example.com",), ("no url",),
                                (None,)], "url string")
    _, host = _dimensions(df)["host"]
    assert [r[0] for r in df.select(host).collect()] == ["www.example.com", "www.example.com", None, None]


def test_examples_are_the_least_similar_of_both_kinds_one_per_cluster():
    """Up to 2 of the 5 examples below the threshold (short pages), the rest the least similar above it;
    one per cell and cluster; each kind fills in when the other has too few."""
    spec = SignatureSpec()

    def cell(i, cluster, distance, agreeing):
        return {"id": i, "cluster_id": cluster, "distance": distance, "agreeing": agreeing, "n": 1}

    low = [cell(10 + c, c, 3, 40 + c) for c in range(4)] + [cell(14, 0, 2, 39)]  # below 90 bins; cluster 0 twice
    high = [cell(20 + c, c + 10, 2, 95 + c) for c in range(4)] + [cell(30, 10, 5, 91), cell(31, 10, 1, 120)]
    got = [(e["duplicate"], e["below_min_similarity"]) for e in choose_examples(low + high, spec, need=90)]
    assert got == [(14, True), (11, True), (30, False), (21, False), (22, False)]
    assert [e["duplicate"] for e in choose_examples(low + high[3:4], spec, need=90)] == [14, 11, 12, 13, 23]
    assert [e["below_min_similarity"] for e in choose_examples(low + high, spec, need=None)] == [False] * 5
    assert choose_examples([], spec, need=90) == []


def test_series_say_what_the_plots_claim():
    """Documents removed per size class add up to the duplicates (clusters of one page remove nothing); the
    pair-distance bars have no always-empty 0; distances to the kept page reach past k."""
    labels, removed, clusters = removed_by_size({"1": 900, "2": 30, "3": 5, "12": 2, "40": 1})
    assert labels == ["2", "3", "11-15", "32-63"] and removed == [30, 10, 22, 39] and clusters == [30, 5, 2, 1]
    assert accepted_pair_distances({"0": 0, "1": 4, "2": 0}) == (["1", "2"], [4, 0])
    assert accepted_pair_distances({"0": 3, "1": 4}) == (["0", "1"], [3, 4])  # kept when not empty
    labels, values, beyond = kept_distances({"0": 5, "2": 1, "9": 2}, k=6)
    assert labels == [str(d) for d in range(10)] and values[9] == 2 and beyond == [d > 6 for d in range(10)]
    assert kept_distances({"0": 5}, k=3)[0] == ["0", "1", "2", "3", "4"]  # room beyond k to see none there
    summary = to_kept_summary([(0, 128, 7), (8, 100, 2), (3, None, 1)], duplicates=12, k=6, spec=SignatureSpec(),
                              need=90, min_similarity=0.7)
    assert summary.beyond_k == 2 and summary.kept_in_earlier_run == 2 and summary.below_min_similarity == 0
    assert summary.similarity_histogram["0.95-1.00"] == 7 and summary.similarity_histogram["0.75-0.80"] == 2
    assert nice_ticks(47) == [0, 10, 20, 30, 40, 50] and nice_ticks(3) == [0, 1, 2, 3]


def test_an_insertion_does_not_mark_the_text_it_pushes_out_of_view():
    body = " ".join(f"word{i}" for i in range(400))
    ha, hb = excerpt_pair(body, body[:300] + " SPONSORED AD " + body[300:])
    assert re.findall(r"<mark>(.*?)</mark>", hb) == [" SPONSORED AD "] and "<mark>" not in ha


def test_excerpts_are_escaped_and_show_the_difference():
    a = "same start " * 60 + "<b>one</b> end"
    b = "same start " * 60 + "<b>two</b> end"
    ha, hb = excerpt_pair(a, b)
    assert "<b>" not in ha and "&lt;b&gt;" in ha
    assert ha.startswith(a[:140] + '<span class="cut"> … </span>')  # its start, then from before the change
    assert len(html.unescape(re.sub(r"<[^>]+>", "", ha))) < 140 + 480 + 10 < len(a)
    assert "<mark>" in ha and "<mark>" in hb
    assert html.unescape(re.sub(r"</?mark>", "", hb)).endswith("<b>two</b> end")


def test_everything_from_the_input_is_escaped_on_the_page():
    """Paths, configuration values, hosts and example texts go through html.escape."""
    bad = '"><script>x</script>'
    report = {
        "input": bad, "output": bad, "started_at": "t", "total_seconds": 1.0, "simhash_dedup_version": "0",
        "spark_version": "4", "fingerprint_version": bad, "input_rows": 3, "kept": 2, "duplicates": 1,
        "exact_duplicates": 1, "near_duplicates": 0, "bad_rows": {"null_text": 0, "treatment": bad},
        "clusters": {"size_histogram": {"1": 1, "2": 1}, "with_duplicates": 1, "largest": 2},
        "candidates": {"pairs_accepted_by_distance": {"0": 0, "1": 0}, "pairs_accepted": 0, "pairs_compared": 0,
                       "similarity_bands": None},
        "duplicates_to_kept": {"distance_histogram": {"0": 1}, "similarity_histogram": {}, "beyond_k": 0},
        "duplicate_rate_by": {"host": {"column": bad, "values": 1, "top": [
            {"host": bad, "pages": 3, "duplicates": 1, "duplicate_rate": 0.3333}]}},
        "seconds": {bad: 1.0}, "config": {"k": 1, "text_col": bad},
    }
    page = render_html(Report.from_dict(report), [{"duplicate": bad, "kept": 1, "distance": 0, "similarity": 1.0,
                                 "duplicate_text": bad, "kept_text": bad, "duplicate_url": bad, "kept_url": None}])
    assert "<script" not in page and page.count("&lt;script&gt;") >= 8


def test_a_run_without_duplicates_still_gets_its_page_and_pictures():
    from simhash_udf.job.report_plots import cluster_sizes_png, pair_distances_png

    report = {
        "input": "in", "output": "out", "started_at": "t", "total_seconds": 1.0, "simhash_dedup_version": "0",
        "spark_version": "4", "fingerprint_version": "v", "input_rows": 2, "kept": 2, "duplicates": 0,
        "exact_duplicates": 0, "near_duplicates": 0, "bad_rows": {"null_text": 0},
        "clusters": {"size_histogram": {"1": 2}, "with_duplicates": 0, "largest": 1},
        "candidates": {"pairs_accepted_by_distance": {"0": 0, "1": 0}, "pairs_accepted": 0, "pairs_compared": 0},
        "duplicates_to_kept": {"distance_histogram": {}, "similarity_histogram": {}, "beyond_k": 0},
        "duplicate_rate_by": {}, "seconds": {"read": 1.0}, "config": {"k": 1},
    }
    page = render_html(Report.from_dict(report), [])
    assert "No duplicates in this run" in page and 'id="plot-removed-by-size"' in page
    assert "plot-distance-to-kept" not in page
    for png in (cluster_sizes_png(Report.from_dict(report)), pair_distances_png(Report.from_dict(report))):
        assert png[:8] == b"\x89PNG\r\n\x1a\n"


def a_full_report(**config) -> dict:
    """A report with every plot: band counts, duplicates beyond k and below the similarity threshold."""
    from simhash_udf.job.config import DedupConfig

    return {
        "input": "in", "output": "out", "started_at": "t", "total_seconds": 1.0, "simhash_dedup_version": "0",
        "spark_version": "4", "fingerprint_version": "v", "input_rows": 40, "kept": 30, "duplicates": 10,
        "exact_duplicates": 2, "near_duplicates": 8, "bad_rows": {"null_text": 1, "no_features": 2},
        "clusters": {"size_histogram": {"1": 25, "2": 3, "5": 1}, "with_duplicates": 4, "largest": 5},
        "candidates": {"pairs_accepted_by_distance": {"0": 0, "1": 3, "2": 4}, "pairs_accepted": 7,
                       "pairs_compared": 20, "pairs_verified": 9, "pairs_rejected": 6,
                       "similarity_bands": {f"{b / 10:.1f}-{(b + 1) / 10:.1f}": {"verified": b // 3, "rejected": 1}
                                            for b in range(10)},
                       "verification": {"min_similarity": 0.8}},
        "duplicates_to_kept": {"distance_histogram": {"0": 2, "2": 5, "9": 3}, "beyond_k": 3, "min_similarity": 0.8,
                               "below_min_similarity": 1, "kept_in_earlier_run": 0,
                               "similarity_histogram": {f"{b / 20:.2f}-{(b + 1) / 20:.2f}": int(b >= 15) for b in range(20)}},
        "duplicate_rate_by": {}, "seconds": {"read": 1.0}, "config": {**DedupConfig().to_dict(), "k": 3, **config},
    }


def test_one_colour_one_meaning_on_the_page_and_in_the_pictures(monkeypatch):
    """Blue is verified pairs and the duplicates they make, red rejected pairs, grey candidate pairs before
    verification: in every SVG bar of the page and every bar of the PNGs, and the page says so. (Red once marked
    duplicates beyond k, which were verified, and grey the duplicates below the threshold.)"""
    from simhash_udf.job import report_plots
    from simhash_udf.job.report_plots import COLOURS, NEUTRAL, REJECTED, VERIFIED

    report = Report.from_dict(a_full_report())
    page = render_html(report, [])
    bars = re.findall(r'<rect [^>]*fill="(#[0-9a-f]{6})"><title>[^<]*?: [\d,]+ ([^<]+)</title>', page)
    assert {name for _, name in bars} == {"documents removed", "duplicates", "candidate pairs", "verified (edge)",
                                          "rejected"}
    meaning = {"documents removed": VERIFIED, "duplicates": VERIFIED, "verified (edge)": VERIFIED,
               "rejected": REJECTED, "candidate pairs": NEUTRAL}
    assert [(colour, name) for colour, name in bars if meaning[name] != colour] == []
    key = re.search(r'<p class="note" id="colours">(.*?)</p>', page).group(1)
    assert all(html.escape(text) in key and colour in key for colour, text in COLOURS.items())

    figures, draw = [], report_plots._png
    monkeypatch.setattr(report_plots, "_png", lambda fig: (figures.append(fig), draw(fig))[1])

    class Out:
        def staged(self, name):
            return name

        def write_bytes(self, path, data):
            pass

    report_plots.write_plots(report, Out())
    seen = set()
    for fig in figures:
        title = " ".join(ax.get_title() for ax in fig.axes)
        for ax in fig.axes:
            for bars_of in ax.containers:
                label = bars_of.get_label()
                for patch in bars_of.patches:
                    colour = "#%02x%02x%02x" % tuple(round(255 * c) for c in patch.get_facecolor()[:3])
                    seen.add(colour)
                    want = REJECTED if label == "rejected" else NEUTRAL if "before verification" in title and (
                        "Candidate pairs of the SimHash tables" in ax.get_title()) else VERIFIED
                    assert colour == want, (ax.get_title(), label)
    assert seen == {VERIFIED, REJECTED, NEUTRAL}


def test_configuration_table_shows_user_settings_and_cards_say_what_they_count():
    """The configuration table holds the settings that decide the results (no Spark tuning such as
    arrow_batch_mb, no benchmark-only simulate_fingerprint_bits unless it was set); report.json keeps all of them.
    The bad-rows card names what it counts."""
    from simhash_udf.job.config import DedupConfig

    class Table(HTMLParser):
        def __init__(self, text):
            super().__init__()
            self.rows, self.cell, self.on = [], None, False
            self.feed(text)

        def handle_starttag(self, tag, attrs):
            self.on = self.on or (tag == "table" and dict(attrs).get("id") == "config")
            if self.on and tag == "tr":
                self.rows.append([])
            if self.on and tag in ("td", "th"):
                self.cell = ""

        def handle_endtag(self, tag):
            if self.on and tag in ("td", "th"):
                self.rows[-1].append(self.cell)
            self.on = self.on and tag != "table"

        def handle_data(self, data):
            if self.on and self.cell is not None:
                self.cell += data

    page = render_html(Report.from_dict(a_full_report()), [])
    shown = [row[0] for row in Table(page).rows[1:]]
    assert "arrow_batch_mb" not in shown and "arrow_batch_size" not in shown and "shuffle_partitions" not in shown
    assert "simulate_fingerprint_bits" not in shown and "plan" not in shown and "input_partitions" not in shown
    assert {"k", "min_similarity", "signature_bands", "text_col", "input_format", "keep", "history"} <= set(shown)
    assert set(shown) < set(DedupConfig().to_dict())
    benchmark = render_html(Report.from_dict(a_full_report(simulate_fingerprint_bits=48)), [])
    assert "simulate_fingerprint_bits" in [row[0] for row in Table(benchmark).rows[1:]]  # it changes the results
    card = re.search(r'data-key="bad_rows"[^>]*>[^<]*</div><div class="l">([^<]*)</div>', page).group(1)
    assert "see Run" not in card and "null" in card and "invalid UTF-8" in card


@pytest.mark.parametrize("sizes", [{"1": 9, "2": 4}, {"1": 9_000_000, "2": 400_000, "3": 120_000, "9": 800, "17": 300,
                                                     "300": 7, "5000": 2, "70000": 1}])
def test_pictures_keep_every_text_inside_and_tick_labels_apart(monkeypatch, sizes):
    """The PNGs' margins come from the labels' lengths (not from tight_layout): every title, axis label,
    tick label and bar note lies inside the picture, and no two tick labels of an axis overlap, with short
    labels and with long turned ones (power-of-two size classes, 30 distances)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    from simhash_udf.job import report_plots

    figures, draw = [], report_plots._png
    monkeypatch.setattr(report_plots, "_png", lambda fig: (figures.append(fig), draw(fig))[1])
    bands = {f"{b / 10:.1f}-{(b + 1) / 10:.1f}": {"verified": 10 * b, "rejected": 1000 - b} for b in range(10)}
    report = {
        "duplicates": sum((int(s) - 1) * n for s, n in sizes.items()), "exact_duplicates": 12_345,
        "clusters": {"size_histogram": sizes},
        "candidates": {"pairs_accepted_by_distance": {str(d): 10 ** d for d in range(7)}, "similarity_bands": bands,
                       "verification": {"min_similarity": 0.8}},
        "duplicates_to_kept": {"distance_histogram": {str(d): 1000 * d for d in range(30)}, "beyond_k": 5,
                               "min_similarity": 0.8,
                               "similarity_histogram": {f"{b / 20:.2f}-{(b + 1) / 20:.2f}": b for b in range(20)}},
        "config": {"k": 6},
    }

    class Out:
        written = {}

        def staged(self, name):
            return name

        def write_bytes(self, path, data):
            self.written[path] = data

    assert sorted(report_plots.write_plots(Report.from_dict(report), Out())) == sorted(report_plots.PLOTS)
    assert len(figures) == 4
    for fig in figures:
        canvas = FigureCanvasAgg(fig)
        canvas.draw()
        renderer = canvas.get_renderer()
        width, height = canvas.get_width_height()
        for text in fig.findobj(Text):
            if not text.get_visible() or not text.get_text():
                continue
            box = text.get_window_extent(renderer)
            assert box.x0 >= 0 and box.y0 >= 0 and box.x1 <= width and box.y1 <= height, text.get_text()
        for ax in fig.axes:
            boxes = sorted((t.get_window_extent(renderer) for t in ax.get_xticklabels() if t.get_text()),
                           key=lambda b: b.x0)
            assert all(a.x1 <= b.x0 + 1 for a, b in zip(boxes, boxes[1:])) or all(
                t.get_rotation() for t in ax.get_xticklabels()), [t.get_text() for t in ax.get_xticklabels()]


def a_related_part(examples: list[dict]) -> dict:
    return {"n": 3, "pages": 30, "pages_with_related": 12, "rows": 17,
            "distance_histogram": {str(d): v for d, v in enumerate([0, 0, 1, 0, 2, 0, 0, 3, 0, 0, 4, 0, 2, 0, 5])},
            "chance_neighbours_per_page": 1.5e-12,
            "plan": {"kind": "approximate", "distance": 14, "tables": 3, "blocks": 15, "block_bits": [13] * 15,
                     "probe_radius": 1, "probes_per_page": 207, "expected_recall": 0.9604, "expected_pairs": 1.0},
            "examples": examples}


def test_related_pages_section_shows_the_count_the_distances_and_the_examples_side_by_side():
    """With --related: the pages with a related page, a bar per distance with the report's count (none at 0), and each
    example pair's two texts side by side (escaped); without it, no section."""
    examples = [{"id": 4, "related_id": 9, "distance": 2, "similarity": 0.61},
                {"id": 5, "related_id": '<b>"x"', "distance": 14, "similarity": None}]
    report = Report.from_dict({**a_full_report(), "related": a_related_part(examples)})
    texts = {4: "alpha beta gamma delta", 9: "alpha beta gamma epsilon", 5: "one page", '<b>"x"': "<i>other</i> page"}
    page = render_html(report, [], texts)
    section = page[page.index('<h2 id="related">'):]
    assert re.search(r'<b id="related-pages-with">12</b> of 30 kept pages \(40\.0%\)', section)
    assert "approximate, recall 0.960 at 14 bits" in section
    svg = re.search(r'<figure id="plot-related-distance".*?</figure>', section, re.S).group(0)
    bars = dict(re.findall(r"<title>(\d+): ([\d,]+) related rows</title>", svg))
    assert {d: int(v) for d, v in bars.items()} == {d: v for d, v in report.related.distance_histogram.items() if v}
    pairs = re.findall(r'<section class="pair related-pair">(.*?)</section>', section, re.S)
    assert len(pairs) == 2
    assert "distance <span class=\"distance\">2</span>" in pairs[0] and "0.61" in pairs[0]
    assert pairs[0].count("alpha beta gamma ") == 2 and "<mark>" in pairs[0]  # both texts, what differs marked
    assert "&lt;i&gt;" in pairs[1] and "<i>" not in pairs[1] and "&lt;b&gt;&quot;x&quot;" in pairs[1]  # escaped
    assert "n/a (no signature)" in pairs[1] and pairs[1].count(" page</p>") == 2
    assert 'id="related"' not in render_html(Report.from_dict(a_full_report()), [])


class WrittenPictures:
    """An OutputDir's staging as write_plots uses it: the bytes by name."""

    def __init__(self):
        self.written = {}

    def staged(self, name):
        return name

    def write_bytes(self, path, data):
        self.written[path] = data


def test_pictures_drawn_by_a_process_of_their_own_are_the_drivers_bytes():
    """A one-off run's pictures come from a child process (plot_process) started as the run starts: the same
    files with the same bytes as drawn in the driver, from the report's numbers sent to it; a child that died
    before drawing leaves the driver to draw them, and the run gets the same pictures."""
    from simhash_udf.job.plot_process import PlotProcess
    from simhash_udf.job.report_plots import PLOTS, draw_plots, write_plots

    report = Report.from_dict(a_full_report())
    here = draw_plots(report)
    assert sorted(here) == sorted(PLOTS) and all(png.startswith(b"\x89PNG") for png in here.values())
    child = PlotProcess.start()
    try:
        out = WrittenPictures()
        assert write_plots(report, out, child) == sorted(here)
        assert out.written == here
        assert child.proc.returncode == 0
    finally:
        child.close()

    dead = PlotProcess.start()
    dead.proc.kill()
    dead.proc.wait()
    out = WrittenPictures()
    assert write_plots(report, out, dead) == sorted(here)
    assert out.written == here
    dead.close()
