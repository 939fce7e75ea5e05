"""The whole job on a real local SparkSession: output layout, determinism, bad input, clear errors."""
import html
import json
import logging
import os
import re
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from reference import brute_force_related

from simhash_udf.core.blocks import chance_pairs, plan_tables
from simhash_udf.core.signature import SignatureSpec, similarity
from simhash_udf.errors import DedupError
from simhash_udf.evaluation.sample_corpus import write_sample_corpus
from simhash_udf.job.config import DedupConfig, load_config
from simhash_udf.job.pipeline import input_split, run
from simhash_udf.job.report_schema import Report, check, load

RELATED_N = 5
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_job(spark, *argv):
    return run(load_config([str(a) for a in argv]), spark)


def read_clusters(out):
    return pd.read_parquet(os.path.join(out, "clusters")).sort_values("id").reset_index(drop=True)


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    path = tmp_path_factory.mktemp("sample") / "crawl.jsonl"
    write_sample_corpus(str(path))
    return str(path)


class Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


@pytest.fixture(scope="module")
def watched_sample_run(spark, sample, tmp_path_factory):
    """The sample's run, watched while it runs (one run serves the tests below; each watched run of its own
    cost ~25 s): the job's log lines; the length of the clusters' plan description as the run prints it and
    in full; the report's pictures made to take 2 s more (total_seconds must count them). Arrow batches of 20
    pages: the sample (one small file, one partition) has rows for a batch a task.
    Returns (DIR, report, log lines, {"capped": chars, "full": chars, "spark_jobs": the Spark jobs the run started})."""
    from simhash_udf.job import pipeline
    from simhash_udf.spark.session import scoped_settings

    out = str(tmp_path_factory.mktemp("runs") / "out")
    lengths = {}
    write_stage, write_plots = pipeline.write_stage, pipeline.write_plots

    def described(cfg, out, history, raw, found, *rest):
        plan = found.clusters._jdf.queryExecution()
        lengths["capped"] = len(plan.toString())
        with scoped_settings(spark, {"spark.sql.maxPlanStringLength": str(1 << 30)}):
            lengths["full"] = len(plan.toString())
        return write_stage(cfg, out, history, raw, found, *rest)

    def slow_plots(*args):
        time.sleep(2.0)
        return write_plots(*args)

    logger, handler = logging.getLogger("simhash_dedup"), Lines()
    level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    tracker = spark.sparkContext.statusTracker()
    before = set(tracker.getJobIdsForGroup(None))
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(pipeline, "write_stage", described)
            patch.setattr(pipeline, "write_plots", slow_plots)
            report = run_job(spark, "--input", sample, "--output", out, "--arrow-batch-size", 20, "--related",
                             RELATED_N)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    lengths["spark_jobs"] = len(set(tracker.getJobIdsForGroup(None)) - before)
    return out, report, handler.lines, lengths


@pytest.fixture(scope="module")
def sample_run(watched_sample_run):
    return watched_sample_run[:2]


# Spark jobs the sample's run starts (the session's status tracker; the run with --related, the report's pictures,
# Arrow batches of 20 pages). A small run's time is its Spark jobs, not its rows (docs/performance.md, "A small run").
SAMPLE_RUN_SPARK_JOBS = 88


def test_a_small_run_starts_no_more_spark_jobs_than_today(watched_sample_run):
    """A change that adds Spark actions or shuffles to every run shows here: the jobs the sample's run starts stay
    within SAMPLE_RUN_SPARK_JOBS (one run serves this and the tests of its output: a run of its own cost ~30 s)."""
    started = watched_sample_run[3]["spark_jobs"]
    assert 20 < started <= SAMPLE_RUN_SPARK_JOBS, started


def test_components_in_spark_rounds_give_the_same_output(spark, watched_sample_run, sample, tmp_path):
    """The sample's components are found on the driver (its log says so); with --driver-component-edges 0 they are
    found in large-star / small-star rounds instead, and the run writes the same clusters, kept and related rows and
    the same report counters but the rounds."""
    out, report, lines, _ = watched_sample_run
    assert any("stage components: done" in line and "on the driver" in line for line in lines)
    other = str(tmp_path / "out")
    again = run_job(spark, "--input", sample, "--output", other, "--arrow-batch-size", 20, "--related", RELATED_N,
                    "--driver-component-edges", 0)
    assert again["config"]["driver_component_edges"] == 0
    timing = {"seconds", "total_seconds", "started_at", "output", "config", "candidates", "driver_jvm"}
    assert {k: v for k, v in again.items() if k not in timing} == {k: v for k, v in report.items() if k not in timing}
    assert {**again["candidates"], "component_rounds": 0} == {**report["candidates"], "component_rounds": 0}
    for part, key in (("clusters", "id"), ("kept", "id"), ("related", ["id", "rank"])):
        first, second = (pd.read_parquet(os.path.join(d, part)).sort_values(key).reset_index(drop=True)
                         for d in (out, other))
        pd.testing.assert_frame_equal(first, second)


def test_a_one_off_run_gives_the_same_output(spark, sample_run, sample, tmp_path):
    """A one-off run (the command line's new_process: the report's pictures drawn by a process of their own, a
    small input's queries interpreted instead of compiled) writes what the sample's run wrote: the same clusters,
    kept and related rows, the same report counters and the same pictures, byte for byte; beside its read stage
    it ran the worker warm-up's two jobs (spark.warm_workers), which the sample's run did not."""
    from simhash_udf.job.pipeline import INTERPRETED_SETTINGS
    from simhash_udf.spark.warm_workers import WARM_UP_GROUP

    out, report = sample_run
    before = {key: spark.conf.get(key, None) for key in INTERPRETED_SETTINGS}
    tracker = spark.sparkContext.statusTracker()
    warm_ups = set(tracker.getJobIdsForGroup(WARM_UP_GROUP))
    other = str(tmp_path / "out")
    again = run(load_config(["--input", sample, "--output", other, "--arrow-batch-size", "20", "--related",
                             str(RELATED_N)]), spark, new_process=True)
    assert {key: spark.conf.get(key, None) for key in INTERPRETED_SETTINGS} == before  # put back
    warmed = set(tracker.getJobIdsForGroup(WARM_UP_GROUP)) - warm_ups
    assert len(warmed) == 2 and all(tracker.getJobInfo(j).status == "SUCCEEDED" for j in warmed)
    timing = {"seconds", "total_seconds", "started_at", "output", "config", "driver_jvm"}
    assert {k: v for k, v in again.items() if k not in timing} == {k: v for k, v in report.items() if k not in timing}
    assert {**again["config"], "output": None} == {**report["config"], "output": None}
    for part, key in (("clusters", "id"), ("kept", "id"), ("related", ["id", "rank"])):
        first, second = (pd.read_parquet(os.path.join(d, part)).sort_values(key).reset_index(drop=True)
                         for d in (out, other))
        pd.testing.assert_frame_equal(first, second)
    for picture in again["plots"]:
        with open(os.path.join(out, picture), "rb") as a, open(os.path.join(other, picture), "rb") as b:
            assert a.read() == b.read(), picture


def test_only_a_small_local_input_without_history_is_interpreted(tmp_path):
    """one_off_settings: a one-off run interprets Spark's expressions for a local input of at most
    INTERPRETED_RUN_BYTES, and compiles them for a larger one, one elsewhere (not sized) or one with --history."""
    from simhash_udf.job import pipeline

    small, large = tmp_path / "small.parquet", tmp_path / "large.parquet"
    small.write_bytes(b"x" * 1000)
    large.write_bytes(b"x" * (pipeline.INTERPRETED_RUN_BYTES + 1))

    def settings(path, *more):
        return pipeline.one_off_settings(load_config(["--input", str(path), "--output", str(tmp_path / "out"), *more]))

    assert settings(small) == pipeline.INTERPRETED_SETTINGS
    assert settings(large) == {}
    assert settings("hdfs://namenode/crawl/day") == {}
    assert settings(small, "--history", str(tmp_path / "history")) == {}


def test_output_layout(sample_run, sample):
    out, report = sample_run
    rows = pd.read_json(sample, lines=True)
    assert sorted(os.listdir(out)) == ["_SUCCESS", "cluster_sizes.png", "clusters", "duplicates_to_kept.png", "kept",
                                       "pair_distances.png", "pair_similarity.png", "related", "report.html",
                                       "report.json"]
    assert not [p for p in os.listdir(os.path.dirname(out)) if "__staging" in p]
    schema = pq.ParquetDataset(os.path.join(out, "clusters")).schema
    assert [(f.name, str(f.type)) for f in schema] == [
        ("id", "int64"), ("fingerprint", "int64"), ("signature", "binary"), ("cluster_id", "int64"),
        ("is_duplicate", "bool"), ("similarity", "double")]
    clusters = read_clusters(out)
    assert sorted(clusters["id"]) == sorted(rows["id"])  # every input row exactly once
    kept_ids = set(clusters.loc[~clusters.is_duplicate, "id"])
    assert kept_ids == set(clusters["cluster_id"])  # a cluster's id is its kept document
    smallest = clusters.groupby("cluster_id")["id"].min()
    assert (smallest == smallest.index).all()  # keep policy id: the smallest id is kept
    kept = pd.read_parquet(os.path.join(out, "kept"))
    assert set(kept.columns) == set(rows.columns)
    assert set(kept["id"]) == kept_ids and len(kept) == len(kept_ids)
    on_disk = json.load(open(os.path.join(out, "report.json")))
    assert on_disk["input_rows"] == len(rows) == report["input_rows"]
    assert on_disk["kept"] == len(kept_ids)
    assert on_disk["duplicates"] == on_disk["exact_duplicates"] + on_disk["near_duplicates"] == len(rows) - len(kept_ids)
    assert on_disk["fingerprint_version"].startswith("sh64-2/") and on_disk["fingerprint_version"].endswith("+oph128x8")
    assert on_disk["table_plan"]["block_widths"] == plan_tables(DedupConfig().k).describe()["block_widths"]
    assert set(on_disk["seconds"]) >= {"read", "fingerprint", "exact_collapse", "blocks", "candidates",
                                       "components", "resolve", "write"}
    sizes = clusters.groupby("cluster_id").size().value_counts().to_dict()
    assert {int(k): v for k, v in on_disk["clusters"]["size_histogram"].items()} == sizes
    k = DedupConfig().k
    assert on_disk["config"]["k"] == k
    # accepted pairs by distance: as many as accepted, and (exact search) as many as all-pairs brute force
    by_distance = on_disk["candidates"]["pairs_accepted_by_distance"]
    assert list(by_distance) == [str(d) for d in range(k + 1)]
    assert sum(by_distance.values()) == on_disk["candidates"]["pairs_accepted"]
    fps = np.array(sorted(set(clusters["fingerprint"].dropna().astype(np.int64))), dtype=np.int64).view(np.uint64)
    d = np.concatenate([np.bitwise_count(fps[i] ^ fps[i + 1:]) for i in range(len(fps))])
    assert [by_distance[str(i)] for i in range(k + 1)] == [int((d == i).sum()) for i in range(k + 1)]
    assert on_disk["candidates"]["chance_pairs_uniform"] == pytest.approx(chance_pairs(len(fps), k), rel=1e-3)
    assert on_disk["plots"] == ["cluster_sizes.png", "duplicates_to_kept.png", "pair_distances.png", "pair_similarity.png"]
    # chaining: per cluster with duplicates, the largest distance of a member to the kept page
    kept_fp = clusters.set_index("id")["fingerprint"]
    member = clusters[clusters.is_duplicate & clusters.fingerprint.notna()]
    pair = np.array([member["fingerprint"].astype(np.int64), kept_fp[member["cluster_id"]].astype(np.int64)]).view(np.uint64)
    far = pd.Series(np.bitwise_count(pair[0] ^ pair[1]), index=member["cluster_id"]).groupby(level=0).max()
    expect = {str(d): int(n) for d, n in far.value_counts().sort_index().items()}
    assert on_disk["clusters"]["max_distance_to_kept_histogram"] == expect
    for name in on_disk["plots"]:
        with open(os.path.join(out, name), "rb") as fh:
            assert fh.read(8) == b"\x89PNG\r\n\x1a\n"


def test_every_duplicate_is_verified_against_its_kept_page(sample_run, sample):
    """The default cluster policy's promise on a whole run: each duplicate's signature (in clusters/) agrees
    with its kept page's on enough bins, or one page is contained in the other within the size bound (by the
    signatures and the pages' feature counts), or both pages are short and their shingle Jaccard verifies."""
    from reference import agreeing

    from simhash_udf.core.fingerprint import FeatureSpec, fingerprint_batch
    from simhash_udf.core.shingles import jaccard, shingle_set
    from simhash_udf.core.signature import similarity
    from simhash_udf.core.verified import VerifySpec, contained

    out, report = sample_run
    rows = read_clusters(out)
    assert report["config"]["cluster_mode"] == "verified"
    texts = pd.read_json(sample, lines=True, dtype=False).set_index("id")["text"]
    counts = pd.Series(fingerprint_batch(texts.tolist(), FeatureSpec())[1], index=texts.index)
    sig = rows.set_index("id")["signature"]
    cfg = report["config"]
    spec = VerifySpec(cfg["min_similarity"], min_containment=cfg["min_containment"], max_size_ratio=cfg["max_size_ratio"])
    dups = rows[rows["is_duplicate"]]
    by_text = by_containment = 0
    for i, c in zip(dups["id"], dups["cluster_id"]):
        if sig[i] is not None and sig[c] is not None:
            if agreeing(sig[i], sig[c]) >= spec.need:
                continue
            if contained(np.array([agreeing(sig[i], sig[c])]), counts[i], counts[c], spec, len(texts[i]),
                         len(texts[c]))[0]:
                by_containment += 1
                continue
        a, b = texts[i], texts[c]
        assert len(a) < 140 and len(b) < 140 and jaccard(shingle_set(a), shingle_set(b)) >= spec.short_min_jaccard
        by_text += 1
    assert len(dups) > 50 and by_text < len(dups)
    # clusters/' similarity: null exactly for kept pages; each duplicate's estimated Jaccard index to its kept page
    # from the two signatures (1.0 for an exact copy), at least min_similarity when the signatures verified it
    assert rows["similarity"].isna().tolist() == (~rows["is_duplicate"]).tolist()
    sims = dups["similarity"].to_numpy()
    kept_sig = [sig[c] for c in dups["cluster_id"]]
    truth = [float(similarity(np.frombuffer(a, np.uint8), np.frombuffer(b, np.uint8), spec.signature.bits))
             for a, b in zip(dups["signature"], kept_sig)]
    assert sims == pytest.approx(truth) and ((0 <= sims) & (sims <= 1)).all()
    verified = np.array([agreeing(a, b) >= spec.need for a, b in zip(dups["signature"], kept_sig)])
    assert (sims[verified] >= spec.min_similarity).all() and verified.sum() == len(dups) - by_text - by_containment
    copies = np.array([a == b for a, b in zip(dups["signature"], kept_sig)])
    assert copies.any() and (sims[copies] == 1.0).all()
    cand = Report.from_dict(report).candidates
    band_pairs = cand.signature_bands.pairs_accepted if cand.signature_bands else 0  # the band search's, verified alike
    assert cand.pairs_verified + cand.pairs_rejected == cand.pairs_accepted + band_pairs
    assert sum(b.verified + b.rejected for b in cand.similarity_bands.values()) == cand.pairs_accepted + band_pairs


def test_related_pages_of_the_kept_pages_match_brute_force(sample_run):
    """related/ (the sample's run has --related RELATED_N): each kept page's nearest other kept pages within 14
    bits as the brute-force definition gives them, listed in _SUCCESS, with similarity from the signatures;
    the report's counts agree with the rows."""
    out, report = sample_run
    clusters = read_clusters(out)
    kept = clusters[~clusters.is_duplicate & clusters.fingerprint.notna()]
    related = pd.read_parquet(os.path.join(out, "related"))
    assert list(related.columns) == ["id", "related_id", "distance", "rank", "similarity"]
    got = sorted(related[["id", "related_id", "distance", "rank"]].itertuples(index=False, name=None))
    fps = kept["fingerprint"].astype(np.int64).tolist()
    assert got == brute_force_related(kept["id"].tolist(), fps, kept["id"].tolist(), RELATED_N, 14) and got
    sigs = kept.set_index("id")["signature"]
    spec = SignatureSpec()
    for row in related.head(20).itertuples():
        want = similarity(np.frombuffer(sigs[row.id], np.uint8), np.frombuffer(sigs[row.related_id], np.uint8), spec.bits)
        assert row.similarity == pytest.approx(float(want))
    part = report["related"]
    assert part["rows"] == len(related) and part["pages_with_related"] == related["id"].nunique()
    assert part["pages"] == len(clusters[~clusters.is_duplicate]) and part["plan"]["expected_recall"] == 1.0
    assert sum(part["distance_histogram"].values()) == len(related)
    firsts = related[related["rank"] == 1]
    examples = part["examples"]
    assert 1 <= len(examples) <= 5 and [e["distance"] for e in examples] == sorted({e["distance"] for e in examples})
    for e in examples:  # the rank-1 pair of the smallest id at its distance, spread to the nearest and farthest
        at = firsts[firsts["distance"] == e["distance"]].sort_values("id").iloc[0]
        assert (e["id"], e["related_id"]) == (at["id"], at["related_id"])
    assert {examples[0]["distance"], examples[-1]["distance"]} == {firsts["distance"].min(), firsts["distance"].max()}
    with open(os.path.join(out, "_SUCCESS")) as fh:
        assert any(name.startswith("related/part-") for name in json.load(fh)["simhash_dedup_files"])


def test_report_page_shows_the_related_pages(sample_run, sample):
    """report.html's related section: the count of kept pages with a related page, a bar per distance adding up
    to related/'s rows, and each example's two pages side by side with their own texts."""
    out, report = sample_run
    part = report["related"]
    page = open(os.path.join(out, "report.html"), encoding="utf-8").read()
    section = page.split('<h2 id="related">', 1)[1].split("<h2", 1)[0]
    assert re.search(r'<b id="related-pages-with">([\d,]+)</b>', section).group(1) == f"{part['pages_with_related']:,}"
    bars = re.findall(r"<title>(\d+): ([\d,]+) related rows</title>", section)
    assert sum(int(v.replace(",", "")) for _, v in bars) == part["rows"] > 0
    assert {int(d): int(v.replace(",", "")) for d, v in bars if v != "0"} == {
        int(d): c for d, c in part["distance_histogram"].items() if c}
    texts = pd.read_json(sample, lines=True).set_index("id")["text"]
    pairs = re.findall(r'<section class="pair related-pair">(.*?)</section>', section, flags=re.S)
    assert len(pairs) == len(part["examples"]) >= 1
    for e, shown in zip(part["examples"], pairs):
        assert f"page {e['id']} → related {e['related_id']} (rank 1) · distance" in shown
        excerpts = [html.unescape(re.sub(r"<[^>]+>", "", x)) for x in re.findall(
            r'<p class="excerpt">(.*?)</p>', shown, flags=re.S)]
        assert [x[:40] for x in excerpts] == [texts[e["id"]][:40], texts[e["related_id"]][:40]]


def test_report_fits_its_schema(sample_run):
    """report.json as written is what report_schema defines, field for field and in its order, and reads back
    typed (docs/report.md is generated from the same classes)."""
    out, report = sample_run
    path = os.path.join(out, "report.json")
    with open(path, encoding="utf-8") as fh:
        on_disk = json.load(fh)
    assert check(on_disk) == [] and on_disk == report
    typed = load(path)
    assert typed.to_dict() == on_disk and list(typed.to_dict()) == list(on_disk)
    assert typed.candidates.verification.min_similarity == on_disk["config"]["min_similarity"]
    assert typed.short_text.enabled and typed.example_pairs[0].distance >= 0 and typed.history is None


def test_simulated_fingerprint_width():
    """--simulate-fingerprint-bits keeps b of the 64 bits, spread so that every block keeps its share, and two
    random cut fingerprints are within k as often as two random b-bit ones."""
    from simhash_udf.job.stages import simulation_mask

    for bits in (7, 45, 48, 64):
        mask = simulation_mask(bits) & (2**64 - 1)
        assert bin(mask).count("1") == bits
        assert all(abs(bin((mask >> (8 * b)) & 0xFF).count("1") - bits / 8) <= 1 for b in range(8))
    rng = np.random.default_rng(0)
    a, b = (rng.integers(0, 2**64, 200_000, dtype=np.uint64).view(np.int64) & simulation_mask(16) for _ in range(2))
    within = float((np.bitwise_count((a ^ b).view(np.uint64)) <= 3).mean()) - 2.0**-16  # chance_pairs leaves out d = 0
    assert within == pytest.approx(chance_pairs(2, 3, 16), rel=0.1)
    with pytest.raises(DedupError, match="--simulate-fingerprint-bits"):
        load_config(["--input", ROOT, "--output", "x", "--k", "6", "--simulate-fingerprint-bits", "5"])  # <= k


def test_plan_descriptions_are_capped_while_the_job_runs(watched_sample_run):
    """Spark describes a query's plan (for its UI) at every query and adaptive re-plan, and the description
    prints in full every cache the plan reads. The run caps it (pipeline.PLAN_STRING_CHARS): with --history the
    report's queries were described in 15 MB strings, 65 MB (a 3 GB heap filled) with a change that read the
    pages twice. The sample's clusters, described during the run, are cut to the cap; uncapped, their
    description is longer."""
    from simhash_udf.job import pipeline

    lengths = watched_sample_run[3]
    assert lengths["capped"] <= pipeline.PLAN_STRING_CHARS < lengths["full"], lengths


def test_the_report_says_what_the_driver_jvm_spent_compiling_and_collecting(spark, watched_sample_run):
    """report.json's driver_jvm: the JVM's totals at the report (spark.jvm_figures), which only grow afterwards; a
    JVM that has run a job has compiled and collected. jvm_figures_since gives what a later action added."""
    from simhash_udf.spark.jvm_figures import jvm_figures, jvm_figures_since

    spent = watched_sample_run[1]["driver_jvm"]
    assert set(spent) == {"compile_seconds", "gc_seconds", "gc_collections", "heap_max_mb", "uptime_seconds"}
    assert spent["compile_seconds"] > 0 and spent["gc_collections"] > 0 and spent["heap_max_mb"] > 0
    before = jvm_figures(spark)
    for key in ("compile_seconds", "gc_seconds", "gc_collections", "uptime_seconds"):
        assert before[key] >= spent[key], key
    spark.range(200_000).selectExpr("id % 7 AS k").groupBy("k").count().collect()
    added = jvm_figures_since(spark, before)
    assert added["uptime_seconds"] > 0 and added["heap_max_mb"] > 0  # (the limit moves as the collector resizes)
    assert all(added[key] >= 0 for key in ("compile_seconds", "gc_seconds", "gc_collections"))


def test_progress_is_logged_per_stage_with_counts(spark, watched_sample_run):
    out, report, lines, _ = watched_sample_run
    assert report["total_seconds"] >= sum(report["seconds"].values()) + 2.0  # the pictures' 2 s included
    with open(os.path.join(out, "report.json")) as fh:
        assert json.load(fh)["total_seconds"] == report["total_seconds"]
    progress = [line.split(":")[0].removeprefix("stage ") for line in lines if line.startswith("stage ")]
    assert progress == list(report["seconds"])  # one line per stage, when it is done
    for stage in report["seconds"]:
        assert any(line.startswith(f"stage {stage}: done in ") for line in lines), stage
    seconds, rows = report['seconds']['fingerprint'], report['input_rows']
    assert f"stage fingerprint: done in {seconds:.1f} s (rows {rows:,}, " in "\n".join(lines)
    accepted = report["candidates"]["pairs_accepted"]
    assert any(f"accepted {accepted:,}" in line for line in lines if line.startswith("stage candidates"))
    # the sample is one small file, read as one partition: spread over two tasks per core
    cores = spark.sparkContext.defaultParallelism
    assert any(line.startswith("stage read: done") and f"partitions {2 * cores})" in line for line in lines)


def test_pair_search_adds_up_in_report_page_and_log(watched_sample_run):
    """The pair search's numbers by source (SimHash tables, signature bands, short text, sentence keys) add up:
    compared = verified + rejected for each source and over all of them, the totals are the sums, and they agree
    with the stages' own counts; report.html's table and the log's line give the same numbers."""
    import re

    out, report, lines, _ = watched_sample_run
    cand = Report.from_dict(report).candidates
    search = cand.pair_search
    sources = search.sources()
    assert list(sources) == ["SimHash tables", "signature bands", "short text", "sentence keys"]  # all on by default
    for name, s in sources.items():
        assert s.compared == s.verified + s.rejected, name
        assert s.key_group_pairs >= s.compared or name == "short text", name
    assert search.compared == sum(s.compared for s in sources.values()) == search.verified + search.rejected
    assert search.verified == sum(s.verified for s in sources.values())
    assert search.rejected == sum(s.rejected for s in sources.values())
    # the same numbers as the stages' own parts of report.json
    tables, bands, short = search.simhash_tables, search.signature_bands, search.short_text
    assert (tables.key_group_pairs, tables.compared) == (cand.pairs_compared, cand.pairs_accepted)
    assert (bands.key_group_pairs, bands.compared, bands.verified) == (
        cand.signature_bands.pairs_compared, cand.signature_bands.pairs_accepted, cand.signature_bands.pairs_verified)
    assert (tables.verified + bands.verified, tables.rejected + bands.rejected) == (cand.pairs_verified,
                                                                                   cand.pairs_rejected)
    st = report["short_text"]
    assert (short.key_group_pairs, short.compared, short.verified) == (
        st["pairs_compared"], st["candidate_pairs"], st["verified_pairs"])
    keys, by_keys = search.sentence_keys, report["candidates"]["sentence_keys"]
    assert (keys.compared, keys.verified, keys.rejected) == (
        by_keys["pairs_compared"], by_keys["pairs_verified_by_similarity"] + by_keys["pairs_verified_by_containment"],
        by_keys["pairs_rejected"])
    # a pair found twice is a short-text or sentence-key pair that the tables or the bands found too
    assert 0 <= search.found_by_more_than_one_source <= short.compared + keys.compared
    assert bands.rejected > 0 and tables.verified > 0  # premise: the sample has pairs of both fates
    # the log: one line with these numbers
    logged = [line for line in lines if line.startswith("pair search: ")]
    assert logged == [search.summary()]
    total = re.search(r"all sources: ([\d,]+) compared = ([\d,]+) verified \+ ([\d,]+) rejected", logged[0])
    assert [int(g.replace(",", "")) for g in total.groups()] == [search.compared, search.verified, search.rejected]
    for name, s in sources.items():
        assert f"{name}: {s.compared:,} compared = {s.verified:,} verified + {s.rejected:,} rejected " in logged[0]
    # report.html: the same numbers in its pair-search table
    with open(os.path.join(out, "report.html"), encoding="utf-8") as fh:
        page = fh.read()
    table = re.search(r'<table id="pair-search">(.*?)</table>', page).group(1)
    rows = [[re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", tr)]
            for tr in re.findall(r"<tr>(.*?)</tr>", table)]
    assert rows[0] == ["source", "looked at in key groups", "compared", "verified", "rejected"]
    expect = [[name, f"{s.key_group_pairs:,}", f"{s.compared:,}", f"{s.verified:,}", f"{s.rejected:,}"]
              for name, s in sources.items()]
    assert rows[1:] == expect + [["all sources", "", f"{search.compared:,}", f"{search.verified:,}",
                                  f"{search.rejected:,}"]]
    assert f"{search.found_by_more_than_one_source:,} pairs were found by two sources" in page
    assert "see Run" not in page


def test_input_split():
    assert input_split(1, 2, rows=8000, batch=2000) == 4  # one partition, two cores: two tasks per core
    assert input_split(7, 8, rows=32000, batch=2000) == 16
    assert input_split(1, 2, rows=7999, batch=2000) == 0  # less than a batch a task: as read
    assert input_split(8, 8, rows=10**9, batch=2000) == 0  # enough partitions: as read
    assert input_split(100, 8, rows=10**9, batch=2000) == 0
    assert input_split(1, 8, requested=3) == 3  # --input-partitions wins
    assert input_split(1, 2, rows=8000, batch=2000, stored=True) == 0  # stored fingerprints: as read
    assert input_split(1, 2, rows=8000, batch=2000, requested=3, stored=True) == 3
    assert input_split(100, 8, requested=3) == 3
    # read as enough partitions, but one of them holds every row (a Parquet file of one row group): split
    assert input_split(2, 2, rows=8000, batch=2000, largest=8000) == 4
    assert input_split(8, 8, rows=10**9, batch=2000, largest=5 * 10**8) == 16
    assert input_split(2, 2, rows=8000, batch=2000, largest=4000) == 0  # spread evenly: as read


@pytest.mark.spark
def test_one_row_group_read_as_many_partitions_is_split(spark, tmp_path):
    """Spark cuts a Parquet file into byte ranges; with one row group all rows fall in one range. The read
    stage sees that from the rows per partition and spreads the input over two tasks per core."""
    from simhash_udf.job.pipeline import read_stage
    from simhash_udf.job.stages import StageTimer

    n = 8000
    path = str(tmp_path / "one_group.parquet")
    pq.write_table(pa.table({"id": pa.array(range(n), pa.int64()), "text": [f"page {i} " * 20 for i in range(n)]}),
                   path, row_group_size=n)
    cfg = load_config(["--input", path, "--output", str(tmp_path / "out")])
    before = spark.conf.get("spark.sql.files.maxPartitionBytes")
    spark.conf.set("spark.sql.files.maxPartitionBytes", str(64 * 1024))
    try:
        assert spark.read.parquet(path).rdd.getNumPartitions() >= 2
        timer = StageTimer()
        loaded = read_stage(spark, cfg, None, lambda df: df, timer)
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", before)
    cores = spark.sparkContext.defaultParallelism
    assert loaded.largest_partition == n and loaded.rows == n
    assert loaded.df.rdd.getNumPartitions() == 2 * cores
    assert loaded.df.count() == n


def test_sample_corpus_duplicates_found_and_unrelated_pages_apart(sample_run, sample):
    """The demo's own corpus, against the generator's truth."""
    out, _ = sample_run
    truth = pd.read_json(sample, lines=True)[["id", "group", "variant"]]
    m = truth.merge(read_clusters(out), on="id")
    # no cluster joins pages derived from different originals
    assert m.groupby("cluster_id")["group"].nunique().max() == 1
    original_cluster = m[m.variant == "original"].set_index("group")["cluster_id"]
    m["found"] = m["cluster_id"].to_numpy() == original_cluster.loc[m["group"]].to_numpy()
    copies = m[m.variant != "original"]
    # copies equal after normalisation (mirrors, full-width/case changes, changed digits of the same
    # length) are always found
    assert copies[copies.variant.isin(["mirror", "fullwidth"])]["found"].all()
    # edited copies: SimHash at k = 3 resolves weighted-cosine similarity of about 0.99; this corpus's
    # ads and edits sit right at that edge (docs/quality.md): measured recall, not a promise
    recall = copies["found"].mean()
    print(f"planted copies found: {copies['found'].sum()} of {len(copies)} ({recall:.0%})")
    assert recall >= 0.8


def test_shuffle_partitions_follow_the_input_size():
    from simhash_udf.job.pipeline import PAGES_PER_SHUFFLE_PARTITION as per
    from simhash_udf.job.pipeline import shuffle_partitions_for

    assert shuffle_partitions_for(0, 4) == 4  # never lowered
    assert shuffle_partitions_for(per, 4) == 4
    assert shuffle_partitions_for(40 * per, 4) == 40
    assert shuffle_partitions_for(40 * per + 1, 4) == 41
    assert shuffle_partitions_for(40 * per, 200) == 200  # a cluster's larger setting stands


def test_run_raises_shuffle_partitions_for_a_large_input_and_puts_them_back(spark, sample, sample_run, tmp_path,
                                                                              monkeypatch):
    """The sample as if it were large (a partition per 50 pages): the run uses more shuffle partitions,
    finds the same clusters, and leaves the session's setting as it was."""
    from simhash_udf.job import pipeline

    monkeypatch.setattr(pipeline, "PAGES_PER_SHUFFLE_PARTITION", 50)
    before = spark.conf.get("spark.sql.shuffle.partitions")
    out = tmp_path / "out"
    report = run_job(spark, "--input", sample, "--output", out)
    assert report["shuffle_partitions"] == -(-report["input_rows"] // 50) > int(before)
    assert sample_run[1]["shuffle_partitions"] == int(before)
    assert spark.conf.get("spark.sql.shuffle.partitions") == before
    pd.testing.assert_frame_equal(read_clusters(out), read_clusters(sample_run[0]))


def test_kept_pages_and_report_pairs_the_same_without_broadcast(spark, sample, sample_run, tmp_path, monkeypatch):
    """kept/, the report's duplicate pairs and the verified clusters join against sides known to be small
    (the duplicates, the graph's nodes), broadcast when few (the sample's are): with nothing broadcast, by
    us or by Spark, the same clusters, rows and report."""
    from simhash_udf.spark import joins
    from simhash_udf.spark.session import scoped_settings

    limit = joins.BROADCAST_MAX_ROWS
    monkeypatch.setattr(joins, "BROADCAST_MAX_ROWS", -1)
    out = tmp_path / "out"
    with scoped_settings(spark, {"spark.sql.autoBroadcastJoinThreshold": "-1"}):
        report = run_job(spark, "--input", sample, "--output", out)
    pd.testing.assert_frame_equal(read_clusters(out), read_clusters(sample_run[0]))
    base_out, base = sample_run
    assert 0 < base["duplicates"] <= limit

    def kept(path):
        return pd.read_parquet(os.path.join(path, "kept")).sort_values("id").reset_index(drop=True)

    pd.testing.assert_frame_equal(kept(out), kept(base_out))
    assert len(kept(out)) == report["kept"] == base["kept"]
    for key in ("duplicates_to_kept", "example_pairs", "duplicate_rate_by"):
        assert report[key] == base[key], key


def test_small_id_side_is_broadcast_so_the_rows_are_not_shuffled(spark):
    """without_ids broadcasts a side known to be small even where Spark would not (its own threshold off),
    and leaves a large one to a sort-merge join."""
    from simhash_udf.spark.joins import BROADCAST_MAX_ROWS, without_ids
    from simhash_udf.spark.session import scoped_settings

    rows = spark.range(100).withColumnRenamed("id", "doc_id")
    ids = spark.range(0, 100, 3).withColumnRenamed("id", "_dup")
    with scoped_settings(spark, {"spark.sql.autoBroadcastJoinThreshold": "-1"}):
        small = without_ids(rows, "doc_id", ids, 34)
        large = without_ids(rows, "doc_id", ids, BROADCAST_MAX_ROWS + 1)
        small_plan = small._jdf.queryExecution().executedPlan().toString()
        large_plan = large._jdf.queryExecution().executedPlan().toString()
        got = sorted(r[0] for r in small.collect())
        assert got == sorted(r[0] for r in large.collect()) == [i for i in range(100) if i % 3]
    assert "BroadcastHashJoin" in small_plan and "SortMergeJoin" not in small_plan
    assert "SortMergeJoin" in large_plan


# With the sample's run (2 shuffle partitions, the input read as 4) and test_run_raises_shuffle_partitions_...
# (4 shuffle partitions) the clusters are compared over 1, 2, 4 and 5 partitions (3 and 8 as well cost ~15 s
# each).
@pytest.mark.parametrize("partitions", [1, 5])
def test_same_clusters_whatever_the_partitioning(spark, sample, sample_run, tmp_path, partitions):
    out = tmp_path / "out"
    run_job(spark, "--input", sample, "--output", out, "--input-partitions", partitions,
            "--shuffle-partitions", partitions)
    pd.testing.assert_frame_equal(read_clusters(out), read_clusters(sample_run[0]))


def test_bad_rows_are_kept_and_counted(spark, tmp_path):
    long_text = "长文本" * 400
    texts = [b"normal page about spark", None, b"", b"  \n\t ", b"\xef\xbc\x8c\xe3\x80\x82!?", b"bad \xff\xfe utf8 here",
             long_text.encode(), b"normal page about spark"]
    table = pa.table({"id": pa.array(range(10, 10 + len(texts)), pa.int64()), "text": pa.array(texts, pa.binary())})
    pq.write_table(table, tmp_path / "in.parquet")
    out = tmp_path / "out"
    report = run_job(spark, "--input", tmp_path / "in.parquet", "--output", out, "--max-text-chars", 1000)
    bad = report["bad_rows"]
    assert (bad["null_text"], bad["no_features"], bad["invalid_utf8_replaced"], bad["truncated"]) == (1, 3, 1, 1)
    clusters = read_clusters(out)
    assert clusters["id"].tolist() == list(range(10, 18))
    no_fp = clusters[clusters.fingerprint.isna()]
    assert no_fp["id"].tolist() == [11, 12, 13, 14]
    assert (no_fp["cluster_id"] == no_fp["id"]).all() and not no_fp["is_duplicate"].any()
    assert clusters.set_index("id").loc[17, "cluster_id"] == 10  # the repeated page
    assert report["exact_duplicates"] == 1 and report["kept"] == 7


def test_text_files_and_invalid_utf8(spark, tmp_path):
    d = tmp_path / "pages"
    d.mkdir()
    (d / "a.txt").write_bytes("同一篇文章的内容，转载自别处。".encode() + b"\xff")
    (d / "b.txt").write_bytes("同一篇文章的内容，转载自别处。".encode())
    (d / "c.txt").write_bytes(b"an unrelated english page entirely")
    out = tmp_path / "out"
    report = run_job(spark, "--input", d, "--output", out)
    assert report["input_rows"] == 3 and report["bad_rows"]["invalid_utf8_replaced"] == 1
    assert report["duplicates"] == 1


def test_keep_policies(spark, tmp_path):
    """Each --keep policy is a rank (clusters.keep_rank) whose minimum over a cluster is the page kept: all three
    ranked on the rows, and the job run with the one that reads a column with a null (a run per policy cost
    ~13 s each)."""
    from pyspark.sql import functions as F

    from simhash_udf.spark.clusters import keep_rank

    rows = pd.DataFrame({"id": [3, 1, 2], "day": ["2026-01-02", "2026-01-03", None],
                         "text": ["same words here", "same words here!", "same words here. "]})
    rows.to_parquet(tmp_path / "in.parquet")
    df = spark.createDataFrame(rows)
    policies = {"id": 1, "earliest:day": 3, "longest": 2}
    for keep, kept in policies.items():
        best = df.select(F.min(F.struct(keep_rank(keep, "id", "text").alias("r"), "id")).getField("id")).first()[0]
        assert best == kept, keep
    out = tmp_path / "earliest"
    run_job(spark, "--input", tmp_path / "in.parquet", "--output", out, "--keep", "earliest:day")
    assert set(read_clusters(out)["cluster_id"]) == {policies["earliest:day"]}


@pytest.mark.parametrize("ids,message", [
    ([1, 2, 2, 3], r"1 id values occur more than once.*2 \(2 rows\)"),
    ([1, None, 3, 4], "has null values"),
    ([2, None, 2, 1], "has null values"),  # both: the null ids are named first
])
def test_null_or_repeated_ids_are_an_error(spark, tmp_path, ids, message):
    pd.DataFrame({"id": pd.array(ids, "Int64"), "text": ["a", "b", "c", "d"]}).to_parquet(tmp_path / "in.parquet")
    with pytest.raises(DedupError, match=message):
        run_job(spark, "--input", tmp_path / "in.parquet", "--output", tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--id-col", "url"], r"column 'url' is not in the input .*pass --id-col"),
        (["--text-col", "body"], r"column 'body' is not in the input .*pass --text-col"),
        (["--keep", "earliest:when"], r"column 'when' is not in the input"),
        (["--text-col", "n"], r"column 'n' has type bigint, not string or binary: pass --text-col"),
        (["--input-format", "fingerprints"], r"column 'fingerprint' is not in the input"),
    ],
)
def test_missing_columns_are_clear_errors(spark, tmp_path, argv, message):
    pd.DataFrame({"id": [1, 2], "text": ["a", "b"], "n": [1, 2]}).to_parquet(tmp_path / "in.parquet")
    with pytest.raises(DedupError, match=message):
        run_job(spark, "--input", tmp_path / "in.parquet", "--output", tmp_path / "out", *argv)
    assert not (tmp_path / "out").exists()
    assert not [p for p in os.listdir(tmp_path) if "__staging" in p]


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--input", "/no/such/crawl", "--output", "x"], r"input /no/such/crawl does not exist: fix --input"),
        (["--input", ".", "--output", "x", "--k", "11"], r"k=11 is outside 0\.\.10"),
        (["--input", ".", "--output", "x", "--k", "-1"], r"k=-1 is outside"),
        (["--input", ".", "--output", "x", "--k", "3", "--blocks", "3"], r"--blocks 3 cannot guarantee distance k=3"),
        (["--input", ".", "--output", "x", "--bogus"], r"unrecognized arguments: --bogus"),
        (["--input", ".", "--output", "x", "--tokenizer", "nltk"], r"invalid choice: 'nltk'"),
        (["--input", ".", "--output", "x", "--keep", "newest"], r"--keep 'newest' is unknown"),
        (["--output", "x"], r"no input: pass --input PATH"),
    ],
)
def test_configuration_errors(argv, message):
    with pytest.raises(DedupError, match=message):
        load_config(argv)


def test_config_file_then_command_line(tmp_path):
    conf = tmp_path / "c.toml"
    conf.write_text('k = 5\ntokenizer = "char"\n')
    cfg = load_config(["--input", ".", "--output", "x", "--config", str(conf), "--k", "4"])
    assert (cfg.k, cfg.tokenizer, cfg.weighting) == (4, "char", DedupConfig().weighting)
    conf.write_text("kk = 5\n")
    with pytest.raises(DedupError, match="unknown setting 'kk'"):
        load_config(["--input", ".", "--output", "x", "--config", str(conf)])


def test_paths_of_other_file_systems_are_left_to_the_read_stage(tmp_path, monkeypatch):
    """Old code: `hdfs:/crawl/D` (a scheme without an authority) and, on a cluster whose default file system is
    HDFS, a plain `/crawl/D` were looked for on the driver's local disk and refused as missing."""
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    monkeypatch.delenv("YARN_CONF_DIR", raising=False)
    for path in ("hdfs:/crawl/D", "HDFS://nn/crawl/D", "s3a://bucket/crawl"):
        assert load_config(["--input", path, "--output", "x"]).input == path
    for path in ("/no/such/crawl", "file:/no/such/crawl", "FILE:///no/such/crawl"):
        with pytest.raises(DedupError, match="does not exist: fix --input"):
            load_config(["--input", path, "--output", "x"])
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "1")  # under spark-submit: the JVM's default file system decides
    assert load_config(["--input", "/no/such/crawl", "--output", "x"]).input == "/no/such/crawl"
    with pytest.raises(DedupError, match="does not exist: fix --input"):
        load_config(["--input", "file:/no/such/crawl", "--output", "x"])
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT")
    site = tmp_path / "core-site.xml"
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    for default_fs, checked_here in (("hdfs://nn:8020", False), ("file:///", True)):
        site.write_text(f"<configuration><property><name>fs.defaultFS</name><value>{default_fs}</value></property>"
                        "</configuration>")
        if checked_here:
            with pytest.raises(DedupError, match="does not exist: fix --input"):
                load_config(["--input", "/no/such/crawl", "--output", "x"])
        else:
            assert load_config(["--input", "/no/such/crawl", "--output", "x"]).input == "/no/such/crawl"


def test_exact_and_near_duplicates_add_up_when_one_fingerprint_is_kept_twice(spark, tmp_path):
    """Old code: exact duplicates were the pages with a fingerprint less the distinct fingerprints, which assumed
    every repeat of a fingerprint is removed. "Hello World" and "World Hello" have one fingerprint and one
    signature (the same words) but short texts that are not similar, so verified mode keeps both: the report
    said 0 duplicates, 1 exact and -1 near."""
    rows = [{"id": 1, "text": "Hello World"}, {"id": 2, "text": "World Hello"},
            {"id": 3, "text": "Hello World"}, {"id": 4, "text": "Hello World!"}]
    with open(tmp_path / "in.jsonl", "w") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in rows)
    report = run_job(spark, "--input", tmp_path / "in.jsonl", "--output", tmp_path / "out")
    got = read_clusters(tmp_path / "out")
    assert got["fingerprint"].nunique() == 1 and not got.loc[got["id"] == 2, "is_duplicate"].any()
    assert report["duplicates"] == got["is_duplicate"].sum() == 2  # 3 and 4, copies of 1
    assert (report["exact_duplicates"], report["near_duplicates"]) == (2, 0)


def test_unreadable_config_files_are_clear_errors(tmp_path):
    """Old code: a config file in another encoding (a GBK comment) or a directory given as --config ended in a
    UnicodeDecodeError or IsADirectoryError traceback (exit 1)."""
    conf = tmp_path / "gbk.toml"
    conf.write_bytes("k = 3\n# 中文注释\n".encode("gbk"))
    with pytest.raises(DedupError, match=r"gbk.toml is not UTF-8 text \(byte \d+\): save it as UTF-8"):
        load_config(["--input", ".", "--output", "x", "--config", str(conf)])
    with pytest.raises(DedupError, match=r"config file .* cannot be read \(Is a directory\): fix the --config path"):
        load_config(["--input", ".", "--output", "x", "--config", str(tmp_path)])


def test_finished_output_is_refused_unless_overwrite(spark, sample, sample_run, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(DedupError, match="exists and is not a finished run"):
        run_job(spark, "--input", sample, "--output", out)
    assert (out / "notes.txt").exists()
    with pytest.raises(DedupError, match="already holds a finished run"):
        run_job(spark, "--input", sample, "--output", sample_run[0])
    run_job(spark, "--input", sample, "--output", sample_run[0], "--overwrite")
    assert os.path.exists(os.path.join(sample_run[0], "_SUCCESS"))


def test_cli_exit_codes_and_messages(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT)
    bad = subprocess.run([sys.executable, "-m", "simhash_udf.job.cli", "--input", str(tmp_path / "none"),
                          "--output", str(tmp_path / "out")], capture_output=True, text=True, env=env)
    assert bad.returncode == 2
    assert "does not exist: fix --input" in bad.stderr
    assert not (tmp_path / "out").exists()


def test_stored_fingerprints_dedup_again(spark, sample_run, tmp_path):
    """--input-format fingerprints: the clusters output itself (id, fingerprint, signature) as input gives the
    same clusters without any text; without signatures verification is refused unless --min-similarity 0."""
    out, _ = sample_run
    stored = tmp_path / "fps.parquet"
    read_clusters(out)[["id", "fingerprint", "signature"]].to_parquet(stored)
    report = run_job(spark, "--input", stored, "--input-format", "fingerprints", "--output", tmp_path / "again")
    pd.testing.assert_frame_equal(read_clusters(tmp_path / "again"), read_clusters(out))
    assert report["fingerprint_version"] == "as stored in the input"
    bare = tmp_path / "bare.parquet"
    read_clusters(out)[["id", "fingerprint"]].to_parquet(bare)
    with pytest.raises(DedupError, match="no signature column.*--min-similarity 0"):
        run_job(spark, "--input", bare, "--input-format", "fingerprints", "--output", tmp_path / "bare-out")
    report = run_job(spark, "--input", bare, "--input-format", "fingerprints", "--output", tmp_path / "bare-out",
                     "--min-similarity", "0")
    assert report["candidates"]["verification"] is None and report["input_rows"] == len(read_clusters(out))
    # a stored fingerprint without its signature: refused when pairs are verified (the centres of its Arrow
    # batch of components would be chosen without verification); --min-similarity 0 takes it
    unsigned = read_clusters(out)[["id", "fingerprint", "signature"]]
    unsigned.loc[unsigned.index[:1], "signature"] = None
    unsigned.to_parquet(tmp_path / "unsigned.parquet")
    with pytest.raises(DedupError, match=r"1 rows of input .*unsigned.parquet have a fingerprint but no signature.*"
                                         r"--min-similarity 0"):
        run_job(spark, "--input", tmp_path / "unsigned.parquet", "--input-format", "fingerprints",
                "--output", tmp_path / "unsigned-out")
    assert not (tmp_path / "unsigned-out").exists()
    # stored rows without a fingerprint: counted, each a cluster of its own, none lost (the stored rows are
    # read, not cached, by the stages: each pass must see them alike)
    holes = read_clusters(out)[["id", "fingerprint", "signature"]]
    dup_ids = set(holes.loc[read_clusters(out)["is_duplicate"], "id"])
    holes["fingerprint"] = holes["fingerprint"].astype("Int64")
    holes.loc[holes["id"].isin(sorted(dup_ids)[:2]), "fingerprint"] = pd.NA
    holes.to_parquet(tmp_path / "holes.parquet")
    report = run_job(spark, "--input", tmp_path / "holes.parquet", "--input-format", "fingerprints",
                     "--output", tmp_path / "holes-out")
    got = read_clusters(tmp_path / "holes-out")
    assert report["input_rows"] == len(got) == len(holes) and report["bad_rows"]["no_features"] == 2
    lone = got[got["fingerprint"].isna()]
    assert sorted(lone["id"]) == sorted(dup_ids)[:2]
    assert (lone["cluster_id"] == lone["id"]).all() and not lone["is_duplicate"].any()
    assert report["duplicates"] == got["is_duplicate"].sum()


def test_cluster_size_buckets_keep_every_cluster():
    from simhash_udf.job.report_plots import size_buckets

    histogram = {"1": 81, "2": 17, "10": 3, "11": 2, "15": 1, "16": 4, "57": 1, "3000": 2}
    labels, counts = size_buckets(histogram)
    assert labels == ["1", "2", "10", "11-15", "16-31", "32-63", "2048-4095"]
    assert counts == [81, 17, 3, 3, 4, 1, 2] and sum(counts) == sum(histogram.values())
