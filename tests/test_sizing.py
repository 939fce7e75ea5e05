"""--plan N: the plan the job would choose and its cost, without Spark; the cost model reproduces the
benchmark runs it was fitted to."""
from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest

from simhash_udf.core.blocks import choose_plan, plan_cost
from simhash_udf.errors import DedupError
from simhash_udf.job import sizing
from simhash_udf.job.config import DedupConfig, load_config

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_rates_are_the_fit_of_the_two_benchmark_runs():
    """core-seconds = pages x per_page + planner cost x per_cost, solved for scripts/bench/scale.py's 10^7 runs at
    k = 6 (301.0 s) and k = 3 (98.4 s) on 2 cores."""
    n = 10**7
    c6, c3 = (plan_cost(n, choose_plan(n, k))["cost"] for k in (6, 3))
    per_cost = (2 * 301.0 - 2 * 98.4) / (c6 - c3)
    per_page = (2 * 98.4 - c3 * per_cost) / n
    assert sizing.SEARCH_SECONDS_PER_COST == pytest.approx(per_cost, rel=0.01)
    assert sizing.SEARCH_SECONDS_PER_PAGE == pytest.approx(per_page, rel=0.01)
    for k, seconds in ((6, 301.0), (3, 98.4)):
        r = sizing.plan_report(n, DedupConfig(k=k, min_similarity=0))
        assert r["core_hours"]["pair_search"] * 3600 == pytest.approx(2 * seconds, rel=0.01)


def test_plan_at_a_billion_pages():
    """k = 6 without bands (the defaults before the signature bands) against the defaults (k = 3 and 10 bands of
    5 bins): the issue's budget at 10^9 pages is <= 2e10 rows and <= 2e12 expected comparisons."""
    r = sizing.plan_report(10**9, DedupConfig(k=6, signature_bands=0))
    plan = choose_plan(10**9, 6)
    assert (r["tables"], r["blocks"]) == (len(plan.tables), plan.m) == (84, 9)
    assert r["block_rows"] == 84 * 10**9 and r["bytes_shuffled_by_blocks"] == 16 * 84 * 10**9  # 16 bytes a packed row
    assert r["expected_comparisons"] == pytest.approx(plan_cost(10**9, plan)["expected_comparisons"])
    assert r["chance_pairs_uniform"] == pytest.approx(2.26e6, rel=0.01)
    d = sizing.plan_report(10**9, DedupConfig())
    assert (d["k"], d["tables"], d["signature_bands"]) == (3, 10, {"bands": 10, "bins_per_band": 5, "key_bits": 40,
                                                                        "min_runs": 4})
    assert d["rows_total"] == 2 * 10**10 and d["expected_comparisons"] <= 2e12
    assert d["core_hours"]["pair_search"] < r["core_hours"]["pair_search"] / 3
    fixed = sizing.plan_report(10**9, DedupConfig(k=6, blocks=8))
    assert fixed["tables"] == 28  # --blocks is honoured as in the job


def test_plan_from_the_command_line_needs_no_java_and_no_input():
    """--plan 1e9 (a count as people write it) prints the plan, and a line in plain words for each of its terms."""
    env = {"PATH": os.path.dirname(sys.executable), "JAVA_HOME": "/nonexistent", "PYTHONPATH": ROOT}
    proc = subprocess.run([sys.executable, "-m", "simhash_udf.job.cli", "--plan", "1e9"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "10 tables" in proc.stdout and "rows in all 2e+10" in proc.stdout and "core-hours" in proc.stdout
    terms = proc.stdout.split("\nwhat the terms mean:\n", 1)[1].splitlines()
    assert [line.split()[0] for line in terms] == ["blocks", "tables", "key", "block", "band", "comparisons",
                                                   "chance", "core-hours"]
    assert "cut into 5 pieces" in terms[0] and "within 3 bits" in terms[6]  # this plan's own numbers
    bad = subprocess.run([sys.executable, "-m", "simhash_udf.job.cli", "--plan", "1"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "--plan needs" in bad.stderr


def test_plan_checks_the_options_it_uses():
    with pytest.raises(Exception, match="k=11"):
        load_config(["--plan", "1000", "--k", "11"])


def test_plan_with_signature_bands_adds_one_row_per_band():
    """Bands add n x bands rows and almost no chance comparisons (2^-32 a band for 4 bins of 8 bits); the
    issue's budget at 10^9 pages (k = 3 and 10 bands): <= 2e10 rows and <= 2e12 comparisons."""
    without = sizing.plan_report(10**9, DedupConfig(k=3, signature_bands=0))
    r = sizing.plan_report(10**9, DedupConfig(k=3, signature_bands=10, band_bins=4))  # 32-bit band keys
    assert r["band_rows"] == 10 * 10**9 and r["rows_total"] == r["block_rows"] + r["band_rows"] == 2 * 10**10
    extra = r["expected_comparisons"] - without["expected_comparisons"]
    assert extra == pytest.approx(10**9 * (10**9 - 1) / 2 * 10 / 2**32)
    assert r["expected_comparisons"] <= 2e12 and r["core_hours"]["pair_search"] > without["core_hours"]["pair_search"]
    off = sizing.plan_report(10**9, DedupConfig(k=3, signature_bands=10, min_similarity=0))
    assert off["band_rows"] == 0 and off["signature_bands"] is None  # bands need verification


@pytest.mark.parametrize("text, pages", [("1e8", 10**8), ("1E9", 10**9), ("100000000", 10**8),
                                         ("1_000_000", 10**6), ("2.5e3", 2500)])
def test_plan_takes_counts_as_people_write_them(text, pages):
    assert load_config(["--plan", text]).plan == pages


@pytest.mark.parametrize("text", ["1.5", "-3", "1e8.5", "ten", "1e30", "nan"])
def test_plan_refuses_what_is_not_a_whole_number_of_pages(text):
    with pytest.raises(DedupError, match=r"argument --plan: .* is not a number of pages: give a whole number"):
        load_config(["--plan", text])


@pytest.mark.parametrize("pages, distance", [(10**6, 14), (10**9, 14), (10**4, 10)])
def test_plan_shows_the_related_search_and_its_chance_neighbours(pages, distance):
    """The related search's plan at --related-distance, and the chance neighbours per page by the formula
    (N - 1) * sum_{i <= D} C(64, i) / 2^64, flagged where it reaches 1 (related lists would be noise)."""
    cfg = load_config(["--plan", str(pages), "--related-distance", str(distance)])
    report = sizing.plan_report(pages, cfg)
    rel = report["related"]
    want = (pages - 1) * sum(math.comb(64, i) for i in range(distance + 1)) / 2**64
    assert rel["chance_neighbours_per_page"] == pytest.approx(want)
    exact = rel["probe_radius"] == distance // (rel["blocks"] // rel["tables"])
    assert rel["probe_rows"] == pages * rel["probes_per_page"] and exact == (pages < 10**6)
    assert rel["search"] == ("runs" if pages <= 10**6 else "join")
    assert (rel["expected_recall"] == 1.0) == exact and rel["kind"] == ("exact" if exact else "approximate")
    text = sizing.format_plan(report)
    assert f"related pages (--related N) at distance {distance}: {rel['kind']} plan" in text
    assert rel["cost_per_page"] <= rel["exact_cost_per_page"] and (rel["expected_recall"] >= 0.95)
    assert f"the exact plan: {rel['exact_cost_per_page']:,.0f}" in text
    assert ("run tables (numpy, in tasks)" in text) == (rel["search"] == "runs") != ("probe rows shuffled" in text)
    assert ("lower --related-distance" in text) == (want >= 1)
