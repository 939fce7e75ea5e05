"""Incremental runs (--history): three simulated days give, for each day's pages, what one run over all
days gives them; re-running a day is idempotent; a history of another fingerprint definition or id type is
refused."""
import os
import random
import shutil

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from simhash_udf.core.bands import SignatureBands
from simhash_udf.errors import DedupError
from simhash_udf.evaluation.sample_corpus import make_sample_corpus
from simhash_udf.job.config import load_config
from simhash_udf.job.pipeline import run

DAYS = ["2026-03-01", "2026-03-02", "2026-03-03"]
# The incremental fixture's history and outputs are named like globs (a sibling "hist1" is what hist[1] would
# match): test_glob_characters_in_output_and_history_paths
HISTORY = "hist[1]"
K = 3
# The settings this module's premise was checked for (no page of the sample reaches its cluster only through
# a later page); pinned so that a change of the job's defaults does not change what is tested here.
PINNED = ["--k", str(K), "--weighting", "tf"]


@pytest.fixture(scope="module")
def days(tmp_path_factory):
    """The sample crawl spread over three days: each story's original on the story's first day, its copies
    on that day or later ones (as crawls see them), one input file per day."""
    root = tmp_path_factory.mktemp("days")
    rows = pd.DataFrame(make_sample_corpus(45, seed=21))
    rng = random.Random(5)
    first = {g: rng.randrange(3) for g in sorted(rows["group"].unique())}
    rows["crawl_day"] = [
        DAYS[first[g] if v == "original" else rng.randrange(first[g], 3)] for g, v in zip(rows["group"], rows["variant"])
    ]
    for day in DAYS:
        rows[rows["crawl_day"] == day].to_parquet(root / f"{day}.parquet")
    rows.to_parquet(root / "all.parquet")
    return root, rows


def job(spark, *args):
    return run(load_config(PINNED + list(args)), spark)


def clusters(out):
    return pd.read_parquet(os.path.join(out, "clusters")).set_index("id").sort_index()


def band_index_reference(spark, fps, sigs, bands) -> set:
    """{(band, key, fingerprint)}: the usable bands of each signature by the pure definition
    (SignatureBands.usable), keyed by Spark's xxhash64 of (band, the band's bytes) as the job keys them."""
    assert bands.signature.bits == 8
    rows = []
    for fp, sig in zip(fps, sigs):
        if sig is None:
            continue
        a = np.frombuffer(sig, dtype=np.uint8)
        for b in np.flatnonzero(bands.usable(a[None, :])[0]):
            rows.append((int(b), int(fp), bytes(a[b * bands.bins:(b + 1) * bands.bins])))
    df = spark.createDataFrame(rows, "band int, fingerprint long, bytes binary")
    from pyspark.sql import functions as F

    return {(r[0], r[1], r[2]) for r in df.select("band", F.xxhash64("band", "bytes"), "fingerprint").collect()}


def hamming(a, b):
    x, y = np.array([a, b], dtype=np.int64).view(np.uint64)  # bitwise_count of a signed value counts |value|
    return int(np.bitwise_count(x ^ y))


# The daily runs search the history with the plan a long history gets (10 tables of 25-26-bit keys, so that
# only the history fingerprints sharing a key with the day are read: blocks.choose_plan), the single run over
# all days with the default 4 tables of 16 bits: the clusters must not depend on the plan.
WIDE_KEYS = ["--blocks", "5"]


@pytest.fixture(scope="module")
def incremental(spark, days):
    root, _ = days
    (root / "hist1").mkdir()
    reports = {}
    for day in DAYS:
        reports[day] = job(spark, "--input", str(root / f"{day}.parquet"), "--output", str(root / f"out[{day}]"),
                           "--history", str(root / HISTORY), "--run-date", day, "--keep", "earliest:crawl_day",
                           *WIDE_KEYS)
    return reports


def test_each_day_equals_one_run_over_all_days(spark, days, incremental):
    root, rows = days
    single_report = job(spark, "--input", str(root / "all.parquet"), "--output", str(root / "out-all"),
                        "--keep", "earliest:crawl_day")
    single = clusters(root / "out-all")
    # The premise that makes the two agree: no page reaches its cluster only through a later page (each page
    # is a candidate of its cluster's kept page: within k or sharing a signature band; and the kept page is on
    # the cluster's first day).
    fp, sig = single["fingerprint"], single["signature"]
    bands = SignatureBands()
    band_pairs = 0
    for doc, row in single.iterrows():
        if pd.notna(row["fingerprint"]) and hamming(row["fingerprint"], fp[row["cluster_id"]]) > K:
            a, b = (np.frombuffer(s, dtype=np.uint8)[None, :] for s in (row["signature"], sig[row["cluster_id"]]))
            assert bands.first_shared(a, b)[0] >= 0, doc
            band_pairs += 1
    assert band_pairs > 0  # the bands are part of what is tested here
    day_of = rows.set_index("id")["crawl_day"]
    assert (single["is_duplicate"] & (day_of[single.index] != day_of[single["cluster_id"]].to_numpy())).sum() > 10

    for day in DAYS:
        got = clusters(root / f"out[{day}]")
        expect = single.loc[got.index]
        assert got.index.tolist() == sorted(rows.loc[rows["crawl_day"] == day, "id"])
        # a duplicate of an earlier day's page has its similarity to that page, as the single run has it
        assert got["similarity"].isna().tolist() == (~got["is_duplicate"]).tolist()
        pd.testing.assert_frame_equal(got, expect, check_dtype=False)
    later = [incremental[d]["history"]["duplicates_of_earlier_runs"] for d in DAYS]
    assert later[0] == 0 and later[1] > 0 and later[2] > 0
    kept_total = sum(incremental[d]["kept"] for d in DAYS)
    assert kept_total == int((~single["is_duplicate"]).sum())
    # a copy of an earlier day's page is exact as it is in one run (history_search.with_history_copies)
    assert sum(incremental[d]["exact_duplicates"] for d in DAYS) == single_report["exact_duplicates"]


def test_copies_of_earlier_days_pages_are_exact_duplicates(spark, tmp_path):
    """Day 2 holds two byte copies of day-1 pages (new ids), a copy of one of its own pages and a new page: three
    exact duplicates, as one run over both days counts them (the two copies counted 0 when an earlier run's kept
    page had no fingerprint among the day's rows). The clusters are as before: each copy in its original's."""
    rng = random.Random(7)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randrange(3, 9))) for _ in range(3000)]
    texts = [" ".join(rng.choice(words) for _ in range(60)) for _ in range(7)]
    day1 = pd.DataFrame({"id": [1, 2, 3, 4], "text": texts[:4]})
    day2 = pd.DataFrame({"id": [11, 12, 13, 14, 15], "text": [texts[0], texts[2], texts[4], texts[4], texts[5]]})
    day1.to_parquet(tmp_path / "day1.parquet")
    day2.to_parquet(tmp_path / "day2.parquet")
    history = str(tmp_path / "history")
    first = job(spark, "--input", str(tmp_path / "day1.parquet"), "--output", str(tmp_path / "out1"),
                "--history", history, "--run-date", DAYS[0])
    assert (first["duplicates"], first["exact_duplicates"]) == (0, 0)
    second = job(spark, "--input", str(tmp_path / "day2.parquet"), "--output", str(tmp_path / "out2"),
                 "--history", history, "--run-date", DAYS[1])
    assert (second["duplicates"], second["exact_duplicates"], second["near_duplicates"]) == (3, 3, 0)
    assert second["history"]["duplicates_of_earlier_runs"] == 2
    got = clusters(tmp_path / "out2")
    assert got["cluster_id"].to_dict() == {11: 1, 12: 3, 13: 13, 14: 13, 15: 15}
    assert got["is_duplicate"].to_dict() == {11: True, 12: True, 13: False, 14: True, 15: False}


def test_glob_characters_in_output_and_history_paths(days, incremental):
    """The incremental fixture's runs write out[DAY] with the history hist[1], beside a folder hist1 that the
    glob hist[1] matches. Old code: the report stage read the staged kept/ back through Spark's reader, which
    globs the paths it is given, so an --output named out[1] failed after the whole run (PATH_NOT_FOUND
    traceback), and the history's reads of a history named like a glob matched nothing or other directories."""
    root, _ = days
    for day in DAYS:
        assert (root / f"out[{day}]" / "_SUCCESS").exists()
    first, second = incremental[DAYS[0]], incremental[DAYS[1]]
    assert second["history"]["runs_read"] == 1
    assert second["history"]["history_rows"] == first["input_rows"] - first["bad_rows"]["no_features"] > 0
    assert os.listdir(root / "hist1") == []


def test_history_search_without_broadcast_gives_the_same_clusters(spark, days, incremental, tmp_path, monkeypatch):
    """A day with many search keys joins them to the history's rows by a shuffle instead of a broadcast
    (history_search.BROADCAST_KEYS), here with the default plan of 4 tables of 16-bit keys (every history
    fingerprint shares a key with the day) and from a history without band indexes (as written before them:
    the band rows are computed from the signatures): the same clusters. The last day, over the first two
    days' partitions of the incremental fixture with their band indexes removed (a run of the middle day as
    well cost ~30 s and meets the same code)."""
    import simhash_udf.io.history as history_module
    import simhash_udf.spark.history_search as history_search

    monkeypatch.setattr(history_search, "BROADCAST_KEYS", -1)
    root, _ = days
    hist = tmp_path / "history"
    index_name = history_module.band_index_name(load_config(PINNED + ["--plan", "1000"]).bands)
    shutil.copytree(root / HISTORY, hist, ignore=shutil.ignore_patterns(f"run_date={DAYS[-1]}"))
    for day in DAYS[:-1]:
        shutil.rmtree(hist / f"run_date={day}" / index_name)
    assert sorted(p for p in os.listdir(hist) if p.startswith("run_date=")) == [f"run_date={d}" for d in DAYS[:-1]]
    day = DAYS[-1]
    job(spark, "--input", str(root / f"{day}.parquet"), "--output", str(tmp_path / f"out-{day}"),
        "--history", str(hist), "--run-date", day, "--keep", "earliest:crawl_day")
    pd.testing.assert_frame_equal(clusters(tmp_path / f"out-{day}"), clusters(root / f"out[{day}]"))
    assert (hist / f"run_date={day}" / index_name).is_dir()
    assert not any((hist / f"run_date={d}" / index_name).exists() for d in DAYS[:-1])


def test_history_layout_and_rerun_is_idempotent(spark, days, incremental):
    root, _ = days
    hist = root / HISTORY
    assert sorted(p for p in os.listdir(hist) if not p.startswith(".")) == [
        "_fingerprint_version", "_id_type", "_manifests", *[f"run_date={d}" for d in DAYS]
    ]
    assert sorted(os.listdir(hist / "_manifests")) == [f"run_date={d}.json" for d in DAYS]
    stored = pd.read_parquet(hist)
    assert len(stored) == sum(incremental[d]["input_rows"] for d in DAYS)
    # each run's band index: the band rows of its signatures, what a later run would compute from them
    from simhash_udf.io.history import band_index_name

    bands = load_config(PINNED + ["--plan", "1000"]).bands
    # read by pyarrow as Python ints: pandas would make arrays with nulls float and round the keys
    index = pq.read_table(hist / f"run_date={DAYS[0]}" / band_index_name(bands)).to_pylist()
    day_rows = stored[stored["run_date"].astype(str) == DAYS[0]]
    expect = band_index_reference(spark, day_rows["fingerprint"], day_rows["signature"], bands)
    # one row per distinct (fingerprint, signature), its band keys as one array (null: band not usable)
    assert all(len(r["keys"]) == bands.bands for r in index)
    got = [(b, k, r["fingerprint"]) for r in index for b, k in enumerate(r["keys"]) if k is not None]
    assert set(got) == expect and len(expect) > 0
    assert {"id", "fingerprint", "cluster_id", "is_duplicate", "kept_run_date"} <= set(stored.columns)
    # Day 2 again (as after a run killed once its history partition was written): it reads only day 1, so
    # the output is the same and the day-2 partition is replaced, not appended to.
    job(spark, "--input", str(root / f"{DAYS[1]}.parquet"), "--output", str(root / "out-rerun"),
        "--history", str(hist), "--run-date", DAYS[1], "--keep", "earliest:crawl_day")
    pd.testing.assert_frame_equal(clusters(root / "out-rerun"), clusters(root / f"out[{DAYS[1]}]"))
    assert len(pd.read_parquet(hist)) == len(stored)
    assert not [p for p in os.listdir(hist) if p.startswith("_staging")]


def test_history_of_another_definition_is_refused(spark, days, incremental):
    root, _ = days
    with pytest.raises(DedupError, match="holds fingerprints of version"):
        job(spark, "--input", str(root / f"{DAYS[2]}.parquet"), "--output", str(root / "out-binary"),
            "--history", str(root / HISTORY), "--run-date", "2026-03-04", "--weighting", "binary")
    assert not os.path.exists(root / "out-binary")
    assert not os.path.exists(root / HISTORY / "run_date=2026-03-04")


def test_history_of_an_older_version_is_refused(spark, days, tmp_path):
    """A history written before verification signatures (its version names no signature) is refused before
    anything is written, with both versions and what to do."""
    root, _ = days
    old = tmp_path / "old-history"
    os.makedirs(old / "run_date=2026-03-01")
    from simhash_udf.job.config import load_config

    cfg = load_config(["--input", str(root / f"{DAYS[2]}.parquet"), "--output", "x", "--k", "3", "--weighting", "tf",
                       "--history", str(old), "--run-date", "2026-03-04"])
    (old / "_fingerprint_version").write_text(cfg.features.version() + "\n")  # what the older job wrote
    with pytest.raises(DedupError) as err:
        job(spark, "--input", str(root / f"{DAYS[2]}.parquet"), "--output", str(tmp_path / "out"), "--k", "3",
            "--weighting", "tf", "--history", str(old), "--run-date", "2026-03-04")
    message = str(err.value)
    assert repr(cfg.features.version()) in message and repr(cfg.fingerprint_version()) in message
    assert "start a new --history" in message and "+oph128x8" in cfg.fingerprint_version()
    assert not os.path.exists(tmp_path / "out") and not os.path.exists(old / "run_date=2026-03-04")


def test_char_history_from_before_the_punctuation_fold_is_refused(spark, tmp_path):
    """Character n-grams fold Chinese punctuation to ASCII now; a history of --tokenizer char fingerprints
    written before (its version as that job wrote it) holds other fingerprints for the same text: refused, not
    misread. (Word fingerprints, the default, did not change, nor did their version: test_fingerprint.)"""
    pd.DataFrame({"id": [1, 2], "text": ["我们今天在北京开会。", "讨论了人工智能的发展。"]}).to_parquet(tmp_path / "day.parquet")
    old = tmp_path / "old-history"
    os.makedirs(old / "run_date=2026-03-01")
    argv = ["--input", str(tmp_path / "day.parquet"), "--output", str(tmp_path / "out"), "--tokenizer", "char",
            "--history", str(old), "--run-date", "2026-03-04"]
    signature = load_config(argv).signature.version()
    before = f"sh64-2/nfkc-lower-digit0-hanjoin-ws/char5/binary/mmh3x64+{signature}"
    (old / "_fingerprint_version").write_text(before + "\n")
    with pytest.raises(DedupError, match="holds fingerprints of version") as err:
        job(spark, *argv)
    assert repr(before) in str(err.value) and "-punct-" in load_config(argv).fingerprint_version()
    assert not os.path.exists(tmp_path / "out") and not os.path.exists(old / "run_date=2026-03-04")


@pytest.mark.parametrize("args,message", [
    (["--run-date", "2026-03-01"], "only means something with --history"),
    (["--history", "H", "--run-date", "03/01/2026"], "is not a date"),
    (["--history", "H", "--input-format", "fingerprints"], "cannot be used with --input-format fingerprints"),
    (["--history", "H", "--weighting", "tfidf-corpus"], "would not be comparable"),
    (["--history", "H", "--cluster-mode", "star"], "cannot be combined with --history"),
])
def test_history_option_errors(days, args, message):
    root, _ = days
    argv = ["--input", str(root / "all.parquet"), "--output", str(root / "o"), *args]
    with pytest.raises(DedupError, match=message):
        load_config([a.replace("H", str(root / "h")) if a == "H" else a for a in argv])


def test_id_type_is_pinned_and_a_change_refused_before_anything_is_written(spark, days, incremental, tmp_path):
    """Day 1 pinned the ids' type (bigint); a day with string ids is refused with both types and what to do
    (accepted, every later day would fail with a message about merging Parquet schemas). A history
    written before the pin is checked against the type of its first run's rows."""
    root, rows = days
    hist = root / HISTORY
    assert (hist / "_id_type").read_text().strip() == "bigint"
    day4 = rows[rows["crawl_day"] == DAYS[2]].assign(id=lambda d: "page-" + d["id"].astype(str))
    day4.to_parquet(tmp_path / "day4.parquet")
    unpinned = tmp_path / "old-history"
    shutil.copytree(hist, unpinned, ignore=shutil.ignore_patterns("_id_type", "._id_type.crc"))
    for history in (hist, unpinned):
        with pytest.raises(DedupError, match=r"holds ids of type bigint, but this run's id column 'id' has type "
                                             r"string.*make the id column bigint.*or start a new --history"):
            job(spark, "--input", str(tmp_path / "day4.parquet"), "--output", str(tmp_path / "out"),
                "--history", str(history), "--run-date", "2026-03-04")
        assert not os.path.exists(tmp_path / "out")
        assert not [p for p in os.listdir(history) if p.startswith("_staging") or p.endswith("2026-03-04")]
