"""`--plan N`: what a run over N pages would cost, without Spark: the table plan the job would choose, the
rows the blocks stage explodes and shuffles, the expected candidate comparisons and chance pairs, and
core-hours extrapolated from rates measured by the benchmarks on the 2-core development machine.

The estimate is a model, not a promise: two terms for the pair search (per page, and per unit of the
planner's own cost: one shuffled block row or COMPARISONS_PER_ROW comparisons), fitted to two runs of
`scripts/bench/scale.py` at 10^7 fingerprints that differ only in k, times the factor verification added in
the same benchmark; the fingerprint stage at the rate the job reached on Chinese pages. docs/sizing.md shows
what it gives for 10^7 to 8 x 10^9 pages."""
from __future__ import annotations

from ..core.blocks import PACKED_ROW_BYTES, chance_pairs, choose_plan, plan_cost, plan_tables
from ..core.related import chance_neighbours, plan_related, search_for
from .config import DedupConfig

BYTES_PER_BLOCK_ROW = PACKED_ROW_BYTES  # what the search shuffles a row (spark/packed_groups.py)

# Measured (docs/performance.md), 2 cores, local mode, synthetic fingerprints, before verification:
# scripts/bench/scale.py --sizes 10000000 at k = 6 (28 tables, cost 3.63e8): 301.0 s; at k = 3 (4 tables, cost 5.19e7):
# 98.4 s. Two equations in core-seconds (2 x wall) give the two rates below.
SEARCH_SECONDS_PER_PAGE = 1.30e-5
SEARCH_SECONDS_PER_COST = 1.31e-6
# The same benchmark at 10^6 with and without verification, one after the other: 103.0 s / 75.2 s.
VERIFICATION_FACTOR = 1.37
# The fingerprint stage inside the job on Chinese pages of about 1.5 KB: 5.9 MB/s per core (120 MB, 80,696
# pages, 10.2 s on 2 cores).
FINGERPRINT_MB_PER_CORE_SECOND = 5.9
PAGE_KB = 1.5


def plan_report(n: int, cfg: DedupConfig, page_kb: float = PAGE_KB) -> dict:
    """The plan and its cost for n distinct pages (exact copies collapse before the search, so n distinct
    fingerprints is the worst case)."""
    plan = plan_tables(cfg.k, cfg.blocks) if cfg.blocks else choose_plan(n, cfg.k)
    cost = plan_cost(n, plan)
    bands = cfg.bands
    band_rows = n * bands.bands if bands else 0
    band_comparisons = bands.expected_chance_comparisons(n) if bands else 0.0
    # a band row is shuffled and sorted like a block row: the same rate per row (the pairs that share a band
    # by similarity, not by chance, depend on the corpus and are not in the model)
    search = (n * SEARCH_SECONDS_PER_PAGE + (cost["cost"] + band_rows) * SEARCH_SECONDS_PER_COST)
    if cfg.min_similarity > 0:
        search *= VERIFICATION_FACTOR
    fingerprint = n * page_kb / 1024 / FINGERPRINT_MB_PER_CORE_SECOND
    return {
        "pages": n,
        "k": cfg.k,
        "blocks": plan.m,
        "tables": len(plan.tables),
        "key_bits": sorted(set(plan.key_bits())),
        "block_rows": int(cost["rows"]),
        "bytes_shuffled_by_blocks": int(cost["rows"]) * BYTES_PER_BLOCK_ROW,
        "signature_bands": bands.describe() if bands else None,
        "band_rows": band_rows,
        "rows_total": int(cost["rows"]) + band_rows,
        "expected_comparisons": cost["expected_comparisons"] + band_comparisons,
        "chance_pairs_uniform": chance_pairs(n, cfg.k),
        "verified": cfg.min_similarity > 0,
        "core_hours": {"fingerprint": fingerprint / 3600, "pair_search": search / 3600,
                       "total": (fingerprint + search) / 3600},
        "related": related_plan(n, cfg.related_distance),
        "assumptions": f"pages of {page_kb} KB at {FINGERPRINT_MB_PER_CORE_SECOND} MB/s per core; pair search "
                       "rates fitted to scripts/bench/scale.py at 10^7 (k = 6 and k = 3) on 2 cores, x"
                       f"{VERIFICATION_FACTOR} with verification; every page distinct",
    }


def related_plan(n: int, distance: int) -> dict:
    """The related search (--related) over n kept pages at `distance`: its plan, which search carries it out
    (numpy run tables and their comparisons, or joins of probe rows and the pairs they meet, on uniform
    fingerprints), and the chance neighbours a page has there."""
    plan = plan_related(n, distance)
    return {"distance": distance, **{k: v for k, v in plan.describe().items() if k != "distance"},
            "search": search_for(n), "run_tables": plan.run_table_count, "run_comparisons": plan.run_comparisons(n),
            "probe_rows": n * plan.probes_per_page, "expected_pairs": plan.expected_pairs(n),
            "cost_per_page": plan.cost(n) / max(n, 1),
            "exact_cost_per_page": plan_related(n, distance, max_cost_per_page=float("inf")).cost(n) / max(n, 1),
            "chance_neighbours_per_page": chance_neighbours(n, distance)}


def format_related(r: dict) -> list[str]:
    rel = r["related"]
    chance = rel["chance_neighbours_per_page"]
    return [
        f"related pages (--related N) at distance {rel['distance']}: {rel['kind']} plan, {rel['tables']} table(s), "
        f"{rel['blocks']} blocks (bits {', '.join(map(str, rel['block_bits']))}) probed within {rel['probe_radius']} "
        f"bits, recall {rel['expected_recall']:.3g} for a pair {rel['distance']} bits apart",
        f"  cost per page (pair comparisons)   {rel['cost_per_page']:,.0f} (the exact plan: "
        f"{rel['exact_cost_per_page']:,.0f})",
        *([f"  run tables (numpy, in tasks)       {rel['run_tables']:,}",
           f"  pair comparisons in them           {rel['run_comparisons']:.3g} (uniform fingerprints)"]
          if rel["search"] == "runs" else
          [f"  probe rows shuffled (joins)        {rel['probe_rows']:.3g} ({rel['probes_per_page']:,} a page)",
           f"  pairs the probes meet              {rel['expected_pairs']:.3g} (uniform fingerprints)"]),
        f"  chance neighbours per page         {chance:.3g} within {rel['distance']} bits among {r['pages']:,} "
        "random pages" + ("  (above ~1: related lists fill with unrelated pages; lower --related-distance)"
                          if chance >= 1 else ""),
    ]


def format_plan(r: dict) -> str:
    """The plan as a person reads it."""
    h = r["core_hours"]
    return "\n".join([
        f"plan for {r['pages']:,} pages at k = {r['k']}: {r['blocks']} blocks, {r['tables']} tables "
        f"(key bits {', '.join(map(str, r['key_bits']))})",
        f"  block rows exploded and shuffled   {r['block_rows']:.3g} ({r['bytes_shuffled_by_blocks'] / 1e12:.3g} TB "
        f"at {BYTES_PER_BLOCK_ROW} bytes a row)",
        (f"  signature band rows                {r['band_rows']:.3g} ({r['signature_bands']['bands']} bands of "
         f"{r['signature_bands']['bins_per_band']} bins); rows in all {r['rows_total']:.3g}"
         if r["signature_bands"] else "  signature bands                    off"),
        f"  expected candidate comparisons     {r['expected_comparisons']:.3g} (uniform fingerprints and signatures)",
        f"  chance pairs (uniform fingerprints) {r['chance_pairs_uniform']:.3g}"
        + ("  (each is checked by its signatures)" if r["verified"] else "  (no verification: each can join clusters)"),
        f"  core-hours, estimated               fingerprint {h['fingerprint']:.3g}, pair search {h['pair_search']:.3g}, "
        f"total {h['total']:.3g}",
        f"  assumptions: {r['assumptions']}",
        *format_related(r),
        "what the terms mean:",
        *(f"  {term:<13} {meaning}" for term, meaning in plan_terms(r)),
    ])


def plan_terms(r: dict) -> list[tuple[str, str]]:
    """One plain line per term of format_plan, with this plan's own numbers where they help."""
    m, k = r["blocks"], r["k"]
    return [
        ("blocks", f"the 64-bit fingerprint cut into {m} pieces; two pages at most {k} bits apart differ in at most "
                   f"{k} pieces, so they agree exactly on {m - k} or more"),
        ("tables", f"one pass per choice of {m - k} of the {m} pieces ({r['tables']} choices): pages equal on a "
                   "table's pieces meet there, so no pair within k bits is missed"),
        ("key bits", "the width of a table's pieces together: pages compared in a table share this many bits, "
                     "so wider keys mean fewer comparisons"),
        ("block rows", "one row per page per table, sorted by its key: the search's main shuffle"),
        ("band rows", "one row per page per signature band (the second search: pages whose signatures agree on a "
                      "whole band)"),
        ("comparisons", "pairs of pages that meet in a table or a band and are compared, counted for unrelated "
                        "pages (real copies add their own)"),
        ("chance pairs", f"pairs of unrelated random pages that happen to be within {k} bits of each other: false "
                         "matches before any verification"),
        ("core-hours", "CPU time: hours on one core, to divide by the cores of the cluster"),
    ]
