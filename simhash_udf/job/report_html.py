"""report.html: one self-contained page a person reads after a run (inline CSS, inline SVG, no script, no
network), written beside report.json.

Two parts:
  - `collect_page_data` (thin Spark glue, run in the job's "report" stage): small aggregates over the
    run's clusters and input that report.json did not have: each duplicate's Hamming distance (SQL
    `bit_count`) and signature agreement (numpy over Arrow batches) with its kept page as a histogram, a
    handful of example pairs with text excerpts, and the duplicate rate per host (a `url` column) and per
    language (`lang` or `language`), top rows only. Only histograms, aggregates and at most 2 *
    EXAMPLE_PAIRS example rows reach the driver.
  - `render_html` (pure): the page from report.json's numbers and those examples."""
from __future__ import annotations

import dataclasses
import difflib
import html
import math
import os
import string
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, StructField, StructType

from ..core.signature import SignatureSpec, agreeing_bins, from_arrow
from ..spark import joins
from .config import DedupConfig
from .report_plots import COLOURS, NEUTRAL, REJECTED, VERIFIED, accepted_pair_distances, kept_distances, removed_by_size
from .report_schema import DuplicatesToKept, ExamplePair, PairSearch, RateDimension, Report

EXAMPLE_PAIRS = 5  # example pairs shown side by side, one per (distance, similarity) cell and cluster
EXAMPLES_BELOW = 2  # of which at most this many below the similarity threshold, when others are there
EXAMPLE_CHARS = 20_000  # characters of each example text brought to the driver (the excerpt is cut from them)
EXCERPT_CHARS = 480  # characters of each text shown around the first difference
EXCERPT_HEAD = 140  # and characters of its start
TOP_GROUPS = 15  # hosts and languages shown
DRIVER_GROUPS = 50_000  # up to this many (host, language) aggregates are ranked on the driver
SIMILARITY_BANDS = 20  # bands of 0.05 for the similarity of duplicates to their kept page
URL_COLUMNS = ("url",)
LANGUAGE_COLUMNS = ("lang", "language")


# --------------------------------------------------------------------------------------------------------
# Spark: the aggregates the page needs.


@dataclass
class PageData:
    """What report.html shows beyond report.json's other parts: the first three go into report.json as well;
    `examples` are the example pairs with their excerpts."""

    duplicates_to_kept: DuplicatesToKept | None = None
    duplicate_rate_by: dict[str, RateDimension] = field(default_factory=dict)
    example_pairs: list[ExamplePair] = field(default_factory=list)
    examples: list[dict] = field(default_factory=list)
    more_texts: dict = field(default_factory=dict)  # id -> text of the sentence-key search's example pages


def agreeing_bins_batches(batches, spec: SignatureSpec):
    """mapInArrow body: each batch without its `signature` and `_kept_sig` columns, plus `agreeing` (int32:
    the bins on which the two signatures agree; null unless both are whole), compared by numpy over the
    whole batch: several times cheaper than a Spark SQL higher-order function over the 128 bins."""
    for batch in batches:
        a, b = batch.column("signature"), batch.column("_kept_sig")
        whole = pc.and_(pc.equal(pc.binary_length(a), spec.nbytes), pc.equal(pc.binary_length(b), spec.nbytes))
        whole = pc.fill_null(whole, False).to_numpy(zero_copy_only=False)
        agreeing = np.zeros(len(batch), dtype=np.int32)
        rows = np.flatnonzero(whole)
        if len(rows):
            take = pa.array(rows, pa.int64())
            agreeing[rows] = agreeing_bins(from_arrow(a.take(take), spec), from_arrow(b.take(take), spec))
        out = batch.drop_columns(["signature", "_kept_sig"])
        yield out.append_column("agreeing", pa.array(agreeing, mask=~whole))


def duplicate_pairs(clusters: DataFrame, spec: SignatureSpec, duplicates: int = -1) -> DataFrame:
    """(id, cluster_id, distance, agreeing) for every duplicate whose kept page is among `clusters` (an
    earlier run's kept page, with --history, is not): the Hamming distance of the fingerprints by SQL
    `bit_count`, the agreeing signature bins by numpy (agreeing_bins_batches). duplicates: how many rows
    of clusters are duplicates, if known; when few, the kept pages are first cut to those with a duplicate
    by a broadcast, instead of every kept page's signature being shuffled to meet them."""
    kept = clusters.where(~F.col("is_duplicate")).select(
        F.col("id").alias("_kept_id"), F.col("fingerprint").alias("_kept_fp"), F.col("signature").alias("_kept_sig"))
    dups = clusters.where(F.col("is_duplicate")).select("id", "cluster_id", "fingerprint", "signature")
    if joins.is_small(duplicates):
        kept = kept.join(F.broadcast(dups.select(F.col("cluster_id").alias("_kept_id"))), "_kept_id", "left_semi")
    pairs = dups.join(kept, dups["cluster_id"] == kept["_kept_id"]).select(
        "id", "cluster_id", F.bit_count(F.col("fingerprint").bitwiseXOR(F.col("_kept_fp"))).cast("int").alias("distance"),
        "signature", "_kept_sig")
    schema = StructType([f for f in pairs.schema.fields if f.name not in ("signature", "_kept_sig")]
                        + [StructField("agreeing", IntegerType(), True)])
    return pairs.mapInArrow(lambda batches: agreeing_bins_batches(batches, spec), schema)


def similarity_of(agreeing: int, spec: SignatureSpec) -> float:
    """The estimated Jaccard index for a number of agreeing bins (signature.similarity's formula)."""
    chance = 2.0**-spec.bits
    return min(1.0, max(0.0, (agreeing / spec.bins - chance) / (1 - chance)))


def band_label(b: int, bands: int = SIMILARITY_BANDS) -> str:
    return f"{b / bands:.2f}-{(b + 1) / bands:.2f}"


def to_kept_summary(cells: list[tuple[int | None, int | None, int]], duplicates: int, k: int,
                    spec: SignatureSpec, need: int | None, min_similarity: float) -> DuplicatesToKept:
    """report.json's `duplicates_to_kept` from the (distance, agreeing bins, duplicates) cells of the
    duplicate-to-kept pairs: the distance histogram, the similarity histogram in bands of 0.05, how many
    are beyond k, and how many are below the similarity threshold (joined by the short-text check, or
    by a chain in the transitive mode)."""
    distances: dict[int, int] = {}
    sims = [0] * SIMILARITY_BANDS
    beyond = below = with_sig = 0
    for distance, agreeing, n in cells:
        if distance is not None:
            distances[distance] = distances.get(distance, 0) + n
            beyond += n if distance > k else 0
        if agreeing is not None:
            with_sig += n
            sims[min(int(similarity_of(agreeing, spec) * SIMILARITY_BANDS), SIMILARITY_BANDS - 1)] += n
            below += n if need is not None and agreeing < need else 0
    compared = sum(n for *_, n in cells)
    return DuplicatesToKept(
        compared=compared,
        kept_in_earlier_run=duplicates - compared,
        distance_histogram={str(d): distances[d] for d in sorted(distances)},
        beyond_k=beyond,
        similarity_histogram={band_label(b): sims[b] for b in range(SIMILARITY_BANDS)} if with_sig else {},
        min_similarity=min_similarity,
        below_min_similarity=below,
        meaning="each duplicate against the page kept for it: Hamming distance of the 64-bit fingerprints "
        "(beyond k: joined through other pages) and the estimated Jaccard index of the feature sets from the "
        "signatures (below min_similarity: verified by the short-text check, or chained in the transitive mode)",
    )


def _text_column(raw: DataFrame, text_col: str) -> F.Column:
    text = F.col(text_col)
    if dict(raw.dtypes)[text_col] == "binary":
        text = text.cast("string")
    return F.make_valid_utf8(text)


def _find_column(columns: list[str], names: tuple[str, ...]) -> str | None:
    lower = {c.lower(): c for c in columns}
    return next((lower[n] for n in names if n in lower), None)


def pair_cells(pairs: DataFrame) -> list[dict]:
    """The duplicate-to-kept pairs by (distance, agreeing bins), one Spark action: each cell's count `n`
    and its first pair (`id`, `cluster_id`: the smallest id), from which the examples are chosen."""
    first = F.min(F.struct(F.col("id"), F.col("cluster_id"))).alias("first")
    return [{"distance": r["distance"], "agreeing": r["agreeing"], "n": int(r["n"]), "id": r["first"]["id"],
             "cluster_id": r["first"]["cluster_id"]}
            for r in pairs.groupBy("distance", "agreeing").agg(F.count(F.lit(1)).alias("n"), first).collect()]


def choose_examples(cells: list[dict], spec: SignatureSpec, need: int | None, n: int = EXAMPLE_PAIRS,
                    below_share: int = EXAMPLES_BELOW) -> list[dict]:
    """Example pairs from the cells (`pair_cells`): the least similar to their kept page first (then the
    larger distance), one per (distance, similarity) cell and per cluster: the borderline cases a person
    should look at, and not five of one kind. Up to `below_share` of the n are below the similarity
    threshold (`need` agreeing bins: short pages verified by their shingles, or chained pages), the others
    at or above it, each kind filling in for the other when it has too few: the least similar pairs of a
    run are often all short pages, and the signature-verified borderline deserves a look too."""
    def order(c):
        return (c["agreeing"] if c["agreeing"] is not None else spec.bins + 1, -c["distance"], c["id"])

    def below(c):
        return need is not None and c["agreeing"] is not None and c["agreeing"] < need

    def one_per_cluster(group):
        seen, out = set(), []
        for c in sorted(group, key=order):
            if c["cluster_id"] not in seen:
                seen.add(c["cluster_id"])
                out.append(c)
        return out

    low = one_per_cluster([c for c in cells if below(c)])
    high = one_per_cluster([c for c in cells if not below(c)])
    take_low = min(len(low), max(below_share, n - len(high)))
    chosen = low[:take_low]
    clusters = {c["cluster_id"] for c in chosen}
    for c in high + low[take_low:]:  # then fill up, a cluster never twice
        if len(chosen) < n and c["cluster_id"] not in clusters:
            clusters.add(c["cluster_id"])
            chosen.append(c)
    chosen.sort(key=order)
    return [{"duplicate": c["id"], "kept": c["cluster_id"], "distance": c["distance"],
             "similarity": None if c["agreeing"] is None else round(similarity_of(c["agreeing"], spec), 3),
             "below_min_similarity": below(c)} for c in chosen]


def _top_row(r, name: str) -> dict:
    return {name: r[name], "pages": int(r["pages"]), "duplicates": int(r["duplicates"]),
            "duplicate_rate": round(int(r["duplicates"]) / int(r["pages"]), 4)}


def _dimensions(df: DataFrame) -> dict[str, tuple[str, F.Column]]:
    """{name: (input column, expression)} of the breakdowns this input allows: host of a `url` column (SQL
    try_parse_url, ASCII letters in lower case; null when it is no URL), and a `lang` or `language` column.

    Host names compare case-insensitively in ASCII alone (DNS, RFC 4343; other labels are punycode), hence
    translate and not SQL lower(): lower() loads ICU's case data in a new JVM (spark.sql.icu.caseMappings), about
    1 s of CPU in the report stage of a small run."""
    dims = {}
    url_col = _find_column(df.columns, URL_COLUMNS)
    if url_col:
        host = F.expr(f"try_parse_url(cast(`{url_col}` as string), 'HOST')")
        dims["host"] = (url_col, F.translate(host, string.ascii_uppercase, string.ascii_lowercase))
    lang_col = _find_column(df.columns, LANGUAGE_COLUMNS)
    if lang_col:
        dims["language"] = (lang_col, F.col(lang_col).cast("string"))
    return dims


def input_side(raw: DataFrame, kept: DataFrame, id_col: str, text_col: str | None, example_ids: list,
               top: int = TOP_GROUPS, driver_groups: int = DRIVER_GROUPS) -> tuple[dict, dict]:
    """What needs the input itself, in one scan of it: report.json's `duplicate_rate_by` and the example
    pages' texts (their first EXAMPLE_CHARS characters) and URLs, {id: (text, url)}.

    duplicate_rate_by: per host and per language (`_dimensions`), the `top` values with the most
    duplicates (pages, duplicates, rate) and how many values there are. Pages per (host, language) are
    counted in the input and kept pages in `kept` (the kept/ output: the input rows of the kept pages), so
    no per-page join is needed: duplicates = pages - kept. That aggregate also carries the few example
    rows. Up to `driver_groups` (host, language) pairs are ranked on the driver (one Spark action instead
    of four); more are ranked by Spark. Per-page rows never leave the executors."""
    dims = _dimensions(raw)
    url_col = _find_column(raw.columns, URL_COLUMNS)
    example = F.struct(
        F.col(id_col).alias("id"),
        (F.substring(_text_column(raw, text_col), 1, EXAMPLE_CHARS) if text_col else F.lit(None).cast("string")).alias("text"),
        (F.col(url_col).cast("string") if url_col else F.lit(None).cast("string")).alias("url"))
    is_example = F.col(id_col).isin(example_ids) if example_ids else F.lit(False)
    if not dims:
        # stored fingerprints without a url column: the input holds nothing to show, so it is not scanned
        wanted = example_ids and (text_col or url_col)
        rows = raw.where(is_example).select(example.alias("ex")).collect() if wanted else []
        return {}, {r["ex"]["id"]: (r["ex"]["text"], r["ex"]["url"]) for r in rows}
    pages = raw.select(*[expr.alias(name) for name, (_, expr) in dims.items()], F.when(is_example, example).alias("ex"))
    pages = pages.groupBy(*dims).agg(F.count(F.lit(1)).alias("pages"),
                                     F.collect_list("ex").alias("ex"))  # nulls are skipped: example rows only
    kept_pages = kept.select(*[expr.alias(f"_k_{name}") for name, (_, expr) in dims.items()]).groupBy(
        *[f"_k_{name}" for name in dims]).agg(F.count(F.lit(1)).alias("kept"))
    same = [pages[name].eqNullSafe(kept_pages[f"_k_{name}"]) for name in dims]  # a null host is a value too
    grouped = pages.join(kept_pages, same[0] if len(same) == 1 else same[0] & same[1], "left").select(
        *dims, "pages", (F.col("pages") - F.coalesce("kept", F.lit(0))).alias("duplicates"), "ex")
    grouped = grouped.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        few = grouped.limit(driver_groups + 1).collect()
        if len(few) <= driver_groups:  # usual: few (host, language) pairs; one action, ranked here
            return rates_from_groups([r.asDict() for r in few], dims, top), {
                e["id"]: (e["text"], e["url"]) for r in few for e in r["ex"]}
        head = grouped.agg(*[(F.count_distinct(name) + F.max(F.col(name).isNull().cast("int"))).alias(name)
                             for name in dims],  # a missing host or language counts as a value
                           F.flatten(F.collect_list("ex")).alias("ex")).first()
        rates = {}
        for name, (column, _) in dims.items():
            per = grouped.groupBy(name).agg(F.sum("pages").alias("pages"), F.sum("duplicates").alias("duplicates"))
            rows = per.orderBy(F.desc("duplicates"), F.desc("pages"), F.asc_nulls_first(name)).limit(top).collect()
            rates[name] = {"column": column, "values": int(head[name]), "top": [_top_row(r, name) for r in rows]}
        return rates, {e["id"]: (e["text"], e["url"]) for e in head["ex"] or []}
    finally:
        grouped.unpersist()


def rates_from_groups(groups: list[dict], dims: dict, top: int = TOP_GROUPS) -> dict:
    """`duplicate_rate_by` from all (dims..., pages, duplicates) groups at once, ranked as the Spark path
    ranks them: most duplicates, then most pages, then the value (a missing one first)."""
    rates = {}
    for name, (column, _) in dims.items():
        per: dict = {}
        for g in groups:
            pages, dups = per.get(g[name], (0, 0))
            per[g[name]] = (pages + int(g["pages"]), dups + int(g["duplicates"]))
        ranked = sorted(per.items(), key=lambda kv: (-kv[1][1], -kv[1][0], kv[0] is not None, kv[0] or ""))
        rates[name] = {"column": column, "values": len(per), "top": [
            _top_row({name: value, "pages": pages, "duplicates": dups}, name) for value, (pages, dups) in ranked[:top]]}
    return rates


def collect_page_data(clusters: DataFrame, raw: DataFrame, kept: DataFrame, cfg, duplicates: int,
                      more_ids: list | None = None) -> PageData:
    """The Spark part of the report stage (see the module's docstring). clusters: the run's (id,
    fingerprint, signature, cluster_id, is_duplicate) rows; raw: the input as read; kept: the kept/
    output as written. Two small actions as a rule: the duplicate pairs by distance and similarity (which
    also give the examples), then one scan of the input (and of kept/'s host and language columns) for the
    rates and the example texts (also of more_ids: the pages of the pairs verified by similarity and by
    containment that report.json's sentence-key search shows)."""
    spec = cfg.signature
    verify = cfg.verify
    need = verify.need if verify else None
    cells = pair_cells(duplicate_pairs(clusters, spec, duplicates))
    examples = choose_examples(cells, spec, need)
    text_col = cfg.text_col if cfg.input_format != "fingerprints" and cfg.text_col in raw.columns else None
    ids = [e["duplicate"] for e in examples] + [e["kept"] for e in examples]
    rates, found = input_side(raw, kept, cfg.id_col, text_col, ids + list(more_ids or []))
    for e in examples:
        for side in ("duplicate", "kept"):
            e[f"{side}_text"], e[f"{side}_url"] = found.get(e[side], (None, None))
    return PageData(
        duplicates_to_kept=to_kept_summary([(c["distance"], c["agreeing"], c["n"]) for c in cells], duplicates,
                                           cfg.k, spec, need, cfg.min_similarity),
        duplicate_rate_by={name: RateDimension(**dim) for name, dim in rates.items()},
        example_pairs=[ExamplePair(**{k: e[k] for k in ("duplicate", "kept", "distance", "similarity",
                                                           "below_min_similarity")}) for e in examples],
        examples=examples, more_texts={i: found.get(i, (None, None))[0] for i in more_ids or []})


# --------------------------------------------------------------------------------------------------------
# The page (pure).


def esc(value) -> str:
    return html.escape(str(value), quote=True)


def nice_ticks(top: float, count: int = 5) -> list[float]:
    """0 and round steps (1, 2 or 5 times a power of ten) up to at least `top`, about `count` of them."""
    if top <= 0:
        return [0, 1]
    raw = top / count
    power = 10.0 ** math.floor(math.log10(raw))
    step = max(1.0, next(m * power for m in (1, 2, 5, 10) if m * power >= raw))  # counts: whole steps
    ticks = [0.0]
    while ticks[-1] < top:
        ticks.append(round(ticks[-1] + step, 10))
    return ticks


def _num(v: float) -> str:
    return f"{v:,.0f}" if float(v).is_integer() else f"{v:,.2f}"


def svg_bars(labels: list[str], series: list[tuple[str, list[int], str | list[str]]], xlabel: str, ylabel: str,
             marker: tuple[float, str] | None = None, notes: list[str] | None = None, width: int = 640,
             height: int = 280) -> str:
    """A bar chart as inline SVG (stacked when there are several series): a linear y axis from 0 with
    round ticks, each bar's total above it, a hover title per bar, an optional dashed marker at a bar
    position (x in bar units, 0 = the first bar's centre) and a legend for several series."""
    left, right, top, bottom = 64, 12, 16, 52
    pw, ph = width - left - right, height - top - bottom
    n = max(len(labels), 1)
    totals = [sum(s[1][i] for s in series) for i in range(len(labels))]
    ticks = nice_ticks(max(totals + [0]) * (1.12 if len(labels) <= 30 else 1))
    ymax = ticks[-1]

    def y(v: float) -> float:
        return top + ph - ph * v / ymax

    band = pw / n
    bar = band * 0.72
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
           f'role="img" aria-label="{esc(ylabel)} by {esc(xlabel)}" class="chart">']
    for t in ticks:
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{y(t):.1f}" y2="{y(t):.1f}" class="grid"/>'
                   f'<text x="{left - 6}" y="{y(t) + 4:.1f}" text-anchor="end" class="tick">{_num(t)}</text>')
    longest = max([len(lb) for lb in labels] + [1])
    show_every = max(1, math.ceil((longest * 6.5 + 6) / band))  # labels that fit side by side
    for i, label in enumerate(labels):
        x = left + band * i + (band - bar) / 2
        base = 0
        for name, values, colour in series:
            v = values[i]
            c = colour[i] if isinstance(colour, list) else colour
            if v:
                out.append(f'<rect x="{x:.1f}" y="{y(base + v):.1f}" width="{bar:.1f}" height="{y(base) - y(base + v):.1f}" '
                           f'fill="{c}"><title>{esc(label)}: {v:,} {esc(name)}</title></rect>')
            base += v
        if len(labels) <= 30 and totals[i]:
            note = f" · {notes[i]}" if notes else ""
            out.append(f'<text x="{x + bar / 2:.1f}" y="{y(base) - 4:.1f}" text-anchor="middle" class="val">'
                       f'{totals[i]:,}{esc(note)}</text>')
        if i % show_every == 0:
            out.append(f'<text x="{x + bar / 2:.1f}" y="{top + ph + 16}" text-anchor="middle" class="tick">{esc(label)}</text>')
    out.append(f'<line x1="{left}" x2="{left + pw}" y1="{top + ph}" y2="{top + ph}" class="axis"/>')
    if marker is not None:
        mx = left + band * (marker[0] + 0.5)
        out.append(f'<line x1="{mx:.1f}" x2="{mx:.1f}" y1="{top}" y2="{top + ph}" class="marker"/>'
                   f'<text x="{mx + 4:.1f}" y="{top + 10}" class="mark">{esc(marker[1])}</text>')
    out.append(f'<text x="{left + pw / 2}" y="{height - 10}" text-anchor="middle" class="axlabel">{esc(xlabel)}</text>'
               f'<text transform="translate(14 {top + ph / 2}) rotate(-90)" text-anchor="middle" '
               f'class="axlabel">{esc(ylabel)}</text>')
    if len(series) > 1:
        lx = left + pw - 150
        for j, (name, _, colour) in enumerate(series):
            c = colour if isinstance(colour, str) else colour[0]
            out.append(f'<rect x="{lx}" y="{top + 4 + 16 * j}" width="10" height="10" fill="{c}"/>'
                       f'<text x="{lx + 14}" y="{top + 13 + 16 * j}" class="tick">{esc(name)}</text>')
    out.append("</svg>")
    return "".join(out)


def figure(fig_id: str, title: str, svg: str, caption: str) -> str:
    return (f'<figure id="{fig_id}"><h3>{esc(title)}</h3>{svg}<figcaption>{caption}</figcaption></figure>')


def _marked(text: str, spans: list[tuple[int, int, bool]], chars: int) -> str:
    """text[:chars] escaped, with the spans flagged True wrapped in <mark>."""
    out = []
    for lo, hi, differs in spans:
        if lo >= chars:
            break
        piece = esc(text[lo:min(hi, chars)])
        out.append(f"<mark>{piece}</mark>" if differs and piece else piece)
    return "".join(out)


def excerpt_pair(a: str | None, b: str | None, chars: int = EXCERPT_CHARS, head: int = EXCERPT_HEAD) -> tuple[str, str]:
    """HTML of two excerpts side by side: each page's first `head` characters (where it starts), then,
    from just before the first character where the texts differ (so the edit is in view), `chars` more,
    with the spans that differ marked. The texts are compared over twice that length, so text that one
    side's edit pushed out of view is not marked as different. Both are escaped: page text is never markup."""
    if a is None or b is None:
        return ("<em>(text not available)</em>" if a is None else esc(a[:chars]),
                "<em>(text not available)</em>" if b is None else esc(b[:chars]))
    start = max(0, len(os.path.commonprefix([a, b])) - chars // 4)
    if start <= head:
        start = 0
    wa, wb = a[start:start + 2 * chars], b[start:start + 2 * chars]
    ops = difflib.SequenceMatcher(None, wa, wb, autojunk=False).get_opcodes()
    cut = len(a) > start + 2 * chars or len(b) > start + 2 * chars
    spans_a, spans_b = [], []
    for n, (op, i1, i2, j1, j2) in enumerate(ops):
        # a last difference running to the end of both windows is where the comparison stopped, not an edit
        differs = op != "equal" and not (cut and n == len(ops) - 1 and i2 == len(wa) and j2 == len(wb))
        spans_a.append((i1, i2, differs))
        spans_b.append((j1, j2, differs))
    pre_a = f'{esc(a[:head])}<span class="cut"> … </span>' if start else ""
    pre_b = f'{esc(b[:head])}<span class="cut"> … </span>' if start else ""
    return (pre_a + _marked(wa, spans_a, chars) + (" …" if len(a) > start + chars else ""),
            pre_b + _marked(wb, spans_b, chars) + (" …" if len(b) > start + chars else ""))


CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","WenQuanYi Zen Hei",sans-serif;
 color:#1f2328;margin:0;background:#f6f8fa}
main{max-width:1320px;margin:0 auto;padding:20px 28px 40px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 10px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
h3{font-size:14px;margin:0 0 6px}
.meta{color:#57606a;font-size:12.5px;word-break:break-all}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(118px,1fr));gap:10px;margin-top:14px}
.card{background:#fff;border:1px solid #d0d7de;border-radius:6px;padding:10px 12px}
.card .v{font-size:22px;font-weight:600}.card .l{color:#57606a;font-size:12px}
.card.hi .v{color:#4472c4}.card.wide{grid-column:span 2}
.grid2{display:grid;grid-template-columns:repeat(auto-fit,minmax(640px,1fr));gap:14px}
figure{background:#fff;border:1px solid #d0d7de;border-radius:6px;margin:0;padding:12px}
figcaption{color:#57606a;font-size:12.5px;margin-top:6px}
svg.chart{max-width:100%;height:auto;font-size:11px}
svg .grid{stroke:#eaeef2}svg .axis{stroke:#8c959f}svg .tick{fill:#57606a}svg .val{fill:#1f2328;font-size:10px}
svg .axlabel{fill:#1f2328;font-size:12px}svg .marker{stroke:#7f7f7f;stroke-dasharray:4 3}svg .mark{fill:#57606a}
table{border-collapse:collapse;background:#fff;border:1px solid #d0d7de;font-size:13px}
th,td{padding:4px 10px;border-bottom:1px solid #eaeef2;text-align:left;vertical-align:top}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.bar{display:inline-block;min-width:1px;height:9px;background:#4472c4;border-radius:2px;vertical-align:middle}
.bar.neutral{background:#7f7f7f}
.key{display:inline-block;width:10px;height:10px;border-radius:2px;margin:0 4px 0 10px;vertical-align:middle}
.tables{display:flex;flex-wrap:wrap;gap:18px;align-items:flex-start}
.pair{background:#fff;border:1px solid #d0d7de;border-radius:6px;margin:0 0 12px;padding:10px 12px}
.pair .head{font-weight:600;margin-bottom:6px}.pair .why{font-weight:400;color:#57606a}
.sides{display:grid;grid-template-columns:1fr 1fr;gap:12px}
.side .who{color:#57606a;font-size:12px;margin-bottom:4px;word-break:break-all}
.excerpt{white-space:pre-wrap;overflow-wrap:anywhere;font-size:12.5px;background:#f6f8fa;border-radius:4px;
 padding:8px;margin:0;max-height:260px;overflow:auto}
mark{background:#ffd8a8}.cut{color:#8c959f;font-weight:600}
details{margin-top:8px}code{font-size:12px}
.note{color:#57606a;font-size:12.5px;max-width:1000px}
"""


def _card(key: str, value, label: str, shown: str | None = None, hi: bool = False, wide: bool = False) -> str:
    kind = "card" + (" hi" if hi else "") + (" wide" if wide else "")
    return (f'<div class="{kind}"><div class="v" data-key="{esc(key)}" data-value="{esc(value)}">'
            f'{esc(shown if shown is not None else f"{value:,}")}</div><div class="l">{esc(label)}</div></div>')


def _table(headers: list[str], rows: list[list], numeric: set[int], table_id: str = "") -> str:
    th = "".join(f'<th class="{"n" if i in numeric else ""}">{esc(h)}</th>' for i, h in enumerate(headers))
    body = "".join("<tr>" + "".join(f'<td class="{"n" if i in numeric else ""}">{c}</td>' for i, c in enumerate(r)) + "</tr>"
                   for r in rows)
    return f'<table{f" id={chr(34)}{table_id}{chr(34)}" if table_id else ""}><tr>{th}</tr>{body}</table>'


def _rate_table(name: str, dim: RateDimension) -> str:
    rows = []
    for r in dim.top:
        value = r[name]
        rows.append([esc(value) if value is not None else "<em>(none)</em>", f"{r['pages']:,}", f"{r['duplicates']:,}",
                     f'{r["duplicate_rate"]:.1%}',
                     f'<span class="bar" style="width:{round(80 * r["duplicate_rate"])}px"></span>'])
    shown = f"top {len(dim.top)} of {dim.values:,}" if dim.values > len(dim.top) else f"all {dim.values:,}"
    return (f'<div><h3>Duplicate rate per {esc(name)} (column <code>{esc(dim.column)}</code>; {shown}, most '
            f'duplicates first)</h3>{_table([name, "pages", "duplicates", "rate", ""], rows, {1, 2, 3}, f"rate-{name}")}</div>')


def render_html(report: Report, examples: list[dict], more_texts: dict | None = None) -> str:
    """The whole page; every value from the input (ids, texts, URLs, paths, configuration) is escaped."""
    parts = [f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" '
             f'content="width=device-width,initial-scale=1"><title>simhash-dedup report: {esc(report.output)}</title>'
             f"<style>{CSS}</style></head><body><main>"]
    parts.append(f'<h1>Near-duplicate report</h1><div class="meta">input <code>{esc(report.input)}</code> → output '
                 f'<code>{esc(report.output)}</code> · started {esc(report.started_at)} · '
                 f'{esc(report.total_seconds)} s · simhash-dedup {esc(report.simhash_dedup_version)} · Spark '
                 f'{esc(report.spark_version)} · fingerprint version <code id="fingerprint-version">'
                 f'{esc(report.fingerprint_version)}</code></div>')
    parts.append(_headline(report))
    parts.append('<h2>Plots</h2>' + _colour_key() + '<div class="grid2">' + "".join(_figures(report)) + "</div>")
    parts.append(_examples(report, examples))
    parts.append(_verified_kinds(report, more_texts or {}))
    parts.append(_related(report, more_texts or {}))
    rates = report.duplicate_rate_by or {}
    if rates:
        parts.append('<h2>Where the duplicates are</h2><div class="tables">'
                     + "".join(_rate_table(name, dim) for name, dim in rates.items()) + "</div>")
    parts.append(_run_tables(report))
    config_rows = [[f"<code>{esc(key)}</code>", esc(v)] for key, v in user_settings(report.config).items()]
    parts.append("<details open><summary><b>Configuration</b></summary>"
                 + _table(["option", "value"], config_rows, set(), "config")
                 + '<p class="note">The settings that decide what the run finds and writes. Tuning (input '
                 "partitions, Arrow batches, shuffle partitions, checkpoints) and benchmark-only settings are in "
                 "<code>report.json</code>'s <code>config</code> with the rest.</p></details>")
    parts.append('<p class="note">Every number here is in <code>report.json</code> beside this page.</p>')
    parts.append("</main></body></html>\n")
    return "".join(parts)


def _headline(report: Report) -> str:
    """The cards of the headline numbers."""
    n_in, dups, clusters = report.input_rows, report.duplicates, report.clusters
    rate = dups / n_in if n_in else 0.0
    return '<div class="cards" id="headline">' + "".join([
        _card("input_rows", n_in, "input rows"),
        _card("kept", report.kept, "kept"),
        _card("duplicates", dups, "duplicates removed", hi=True),
        _card("exact_duplicates", report.exact_duplicates, "exact duplicates (same fingerprint)"),
        _card("near_duplicates", report.near_duplicates, "near duplicates"),
        _card("duplicate_rate", round(rate, 6), "duplicate rate (duplicates / input rows)", f"{rate:.1%}", hi=True),
        _card("clusters.with_duplicates", clusters.with_duplicates, "clusters with duplicates"),
        _card("clusters.largest", clusters.largest, "pages in the largest cluster"),
        _card("bad_rows", sum(v for v in report.bad_rows.to_dict().values() if isinstance(v, int)),
              "bad rows: null or featureless text, invalid UTF-8, cut at max_text_chars, cut WET records "
              "(a row of two kinds counts twice)", wide=True),
        _card("total_seconds", report.total_seconds, "seconds in all", f"{report.total_seconds:,.1f}"),
    ]) + "</div>"


def _figures(report: Report) -> list[str]:
    """The plots: removed documents by cluster size, the duplicates' distance and similarity to their kept
    page, and the candidate pairs by distance and by similarity."""
    k, dups, cand = report.config["k"], report.duplicates, report.candidates
    to_kept = report.duplicates_to_kept
    labels, removed, n_clusters = removed_by_size(report.clusters.size_histogram)
    figs = [figure("plot-removed-by-size", "Documents removed by cluster size", svg_bars(
        labels, [("documents removed", removed, VERIFIED)], "pages in the cluster", "documents removed",
        notes=[f"{c:,} cl." for c in n_clusters]),
        f"A cluster of s pages keeps one and removes s − 1; the bars add up to the {dups:,} duplicates. Above each "
        "bar: documents removed · clusters of that size. Sizes above 10 are grouped by powers of two.")]
    if to_kept and to_kept.distance_histogram:
        figs.append(_distance_to_kept_figure(to_kept, k))
    if to_kept and to_kept.similarity_histogram:
        figs.append(_similarity_to_kept_figure(to_kept))
    labels, values = accepted_pair_distances(cand.pairs_accepted_by_distance)
    figs.append(figure("plot-pair-distances", "The SimHash tables' candidate pairs by Hamming distance", svg_bars(
        labels, [("candidate pairs", values, NEUTRAL)], "Hamming distance of two distinct fingerprints", "pairs"),
        f"{cand.pairs_accepted:,} candidate pairs: the pairs of distinct fingerprints within k = {k} (found among "
        f"{cand.pairs_compared:,} pairs looked at in the tables' key groups), before verification. No bar at 0: "
        f"the {report.exact_duplicates:,} exact copies are merged before the pair search. The signature bands' "
        "candidates lie beyond k; the duplicates' own distances are in the plot of duplicates to kept pages."))
    bands = cand.similarity_bands
    if bands:
        figs.append(figure("plot-pair-similarity", "Candidate pairs by estimated similarity", svg_bars(
            list(bands), [("verified (edge)", [b.verified for b in bands.values()], VERIFIED),
                          ("rejected", [b.rejected for b in bands.values()], REJECTED)],
            "estimated Jaccard index of the feature sets", "pairs"),
            f"The candidate pairs of the SimHash tables and the signature bands: {cand.pairs_verified:,} verified, "
            f"{cand.pairs_rejected:,} rejected. A candidate pair becomes an edge only with an estimated similarity "
            f"of at least {cand.verification.min_similarity}. The short-text stage's pairs are verified by their "
            "shingles instead (the pair search's table)."))
    return figs


def _distance_to_kept_figure(to_kept: DuplicatesToKept, k: int) -> str:
    labels, values, _ = kept_distances(to_kept.distance_histogram, k)
    return figure("plot-distance-to-kept", "Each duplicate's distance to its kept page", svg_bars(
        labels, [("duplicates", values, VERIFIED)], "Hamming distance (bits of 64)",
        "duplicates", marker=(k + 0.5, f"k = {k}")),
        f"0: an exact copy (same fingerprint). Right of the k = {k} line: {to_kept.beyond_k:,} duplicates joined to "
        "their kept page through other pages (a chain of near pairs, or a band candidate); in the verified mode "
        "each of them was still checked against its kept page's signature." + (
            f" {to_kept.kept_in_earlier_run:,} duplicates of pages kept by earlier runs are not shown."
            if to_kept.kept_in_earlier_run else ""))


def _similarity_to_kept_figure(to_kept: DuplicatesToKept) -> str:
    sims = to_kept.similarity_histogram
    threshold = to_kept.min_similarity
    return figure("plot-similarity-to-kept", "Each duplicate's estimated similarity to its kept page", svg_bars(
        [b.split("-")[0] for b in sims], [("duplicates", list(sims.values()), VERIFIED)],
        "estimated Jaccard index of the feature sets (band start)", "duplicates",
        marker=(threshold * len(sims) - 0.5, f"min similarity {threshold}") if threshold else None),
        f"From the 128-bin signatures. {to_kept.below_min_similarity:,} duplicates are left of the min similarity "
        "line: short pages verified by their exact shingle Jaccard, or pages chained together in the transitive "
        "mode.")


def _examples(report: Report, examples: list[dict]) -> str:
    """The example pairs, side by side, what differs marked."""
    parts = ["<h2>Example pairs</h2>"]
    if examples:
        parts.append(f'<p class="note">{len(examples)} duplicates least similar to their kept page, one per cluster '
                     f"and per (distance, similarity): the borderline cases "
                     f"(at most {EXAMPLES_BELOW} of them below the similarity threshold when "
                     "others are there). Each excerpt shows the page's start, then (after …) the text from just before "
                     "the two pages first differ; what differs is marked.</p>")
    else:
        parts.append('<p class="note">No duplicates in this run.</p>')
    parts += [_example_pair(report, e) for e in examples]
    return "".join(parts)


def _example_pair(report: Report, e: dict) -> str:
    da, db = excerpt_pair(e.get("duplicate_text"), e.get("kept_text"))
    sim = "n/a (no signature)" if e["similarity"] is None else f"{e['similarity']:.2f}"
    why = ""
    if e.get("below_min_similarity"):
        how = {"transitive": "chained through other pages",
               "star": "within k bits of its kept page (the star mode does not verify)"}.get(
            report.config.get("cluster_mode"), "short pages, verified by their exact shingle Jaccard")
        why = f' <span class="why">(below {esc(report.config["min_similarity"])}: {how})</span>'
    sides = []
    for side, text_html in (("duplicate", da), ("kept", db)):
        url = e.get(f"{side}_url")
        sides.append(f'<div class="side"><div class="who">{side} <b>{esc(e[side])}</b>'
                     f'{" · " + esc(url) if url else ""}</div><p class="excerpt">{text_html}</p></div>')
    return (f'<section class="pair"><div class="head">duplicate {esc(e["duplicate"])} → kept {esc(e["kept"])} · '
            f'distance <span class="distance">{e["distance"]}</span> bits · similarity '
            f'<span class="similarity">{sim}</span>{why}</div><div class="sides">{"".join(sides)}</div></section>')


def _verified_kinds(report: Report, texts: dict) -> str:
    """The sentence-key search's pairs verified by similarity and by containment, counted, with one example of
    each side by side; nothing when the search is off."""
    keys = report.candidates.sentence_keys if report.candidates else None
    if keys is None:
        return ""
    parts = ['<h2 id="verified-kinds">Pairs verified by similarity and by containment</h2><p class="note">'
             f'Pages sharing one of their {keys.keys_per_page} longest sentences: {keys.pairs_compared:,} pairs compared, '
             f'<b class="by-similarity">{keys.pairs_verified_by_similarity:,}</b> verified by similarity, '
             f'<b class="by-containment">{keys.pairs_verified_by_containment:,}</b> only by containment (the smaller '
             f"page at least {esc(report.config.get('min_containment'))} inside a page at most "
             f"{esc(report.config.get('max_size_ratio'))} times its size), {keys.pairs_rejected:,} rejected; "
             f"{keys.skipped_keys:,} sentences shared by more than {keys.max_group} pages were not compared.</p>"]
    check = report.clusters.containment_check if report.clusters else None
    if check is not None:
        parts.append(f'<p class="note" id="text-check">Duplicates joined to their kept page only by containment, '
                     f'checked on the two texts: <b>{check.checked_on_texts:,}</b>, of which <b>{check.left_cluster:,}'
                     f'</b> did not hold and left the cluster. Pages alone in their cluster compared on the texts '
                     f'with the kept page of a cluster they share a sentence with: <b>{check.alone_compared:,}</b>, '
                     f'of which <b>{check.joined_on_texts:,}</b> were inside it, or held it, and joined.</p>')
    for kind, e in sorted(keys.examples.items()):
        a, b = excerpt_pair(texts.get(e.ids[0]), texts.get(e.ids[1]))
        sides = "".join(f'<div class="side"><div class="who">page <b>{esc(i)}</b> · {n:,} features</div>'
                        f'<p class="excerpt">{t}</p></div>' for i, n, t in zip(e.ids, e.features, (a, b)))
        parts.append(f'<section class="pair" id="example-{esc(kind)}"><div class="head">verified by {esc(kind)} · '
                     f"similarity {e.similarity:.2f} · containment {e.containment:.2f}</div>"
                     f'<div class="sides">{sides}</div></section>')
    return "".join(parts)


def _related(report: Report, texts: dict) -> str:
    """With --related N: the pages with at least one related page, the related rows by distance and the report's
    example pairs side by side; nothing without it."""
    rel = report.related
    if rel is None:
        return ""
    plan = rel.plan
    share = rel.pages_with_related / rel.pages if rel.pages else 0.0
    recall = "exact" if plan.kind == "exact" else f"approximate, recall {plan.expected_recall:.3f} at {plan.distance} bits"
    parts = ['<h2 id="related">Related pages</h2><p class="note">'
             f'<b id="related-pages-with">{rel.pages_with_related:,}</b> of {rel.pages:,} kept pages ({share:.1%}) have '
             f"at least one related page within {plan.distance} bits (up to {rel.n} each, {rel.rows:,} rows in "
             f"<code>related/</code>; search {esc(recall)}); a page has {rel.chance_neighbours_per_page:.3g} "
             "chance neighbours that near among as many random fingerprints.</p>"]
    labels = sorted(rel.distance_histogram, key=int)
    parts.append(figure("plot-related-distance", "Related rows by distance", svg_bars(
        labels, [("related rows", [rel.distance_histogram[d] for d in labels], NEUTRAL)], "Hamming distance (bits)",
        "rows of related/"), "Rows of related/ by the distance of the two pages' fingerprints."))
    for e in rel.examples:
        a, b = excerpt_pair(texts.get(e.id), texts.get(e.related_id))
        sim = "n/a (no signature)" if e.similarity is None else f"{e.similarity:.2f}"
        sides = "".join(f'<div class="side"><div class="who">{who} <b>{esc(i)}</b></div><p class="excerpt">{t}</p></div>'
                        for who, i, t in (("page", e.id, a), ("related", e.related_id, b)))
        parts.append(f'<section class="pair related-pair"><div class="head">page {esc(e.id)} → related '
                     f'{esc(e.related_id)} (rank 1) · distance <span class="distance">{e.distance}</span> bits · '
                     f'similarity <span class="similarity">{sim}</span></div><div class="sides">{sides}</div></section>')
    return "".join(parts)


def _colour_key() -> str:
    """What each colour of the plots means (one meaning per colour, report_plots.COLOURS)."""
    return '<p class="note" id="colours">' + "".join(
        f'<span class="key" style="background:{colour}"></span>{esc(meaning)}' for colour, meaning in COLOURS.items()
    ) + "</p>"


# DedupConfig's sections whose settings decide what a run finds and writes; the "spark" section tunes how fast
# (Arrow batches, shuffle partitions, checkpoints). The configuration table shows the former.
RESULT_SECTIONS = ("input", "features", "search", "short_text", "output", "history")
TUNING = ("input_partitions",)  # how the input is split: the same results whatever it is
SHOWN_WHEN_SET = ("plan", "simulate_fingerprint_bits")  # a --plan run writes no report; benchmarks only


def user_settings(config: dict) -> dict:
    """The configuration table's rows: the settings a user gives that decide the results (RESULT_SECTIONS),
    without tuning (TUNING) and the benchmark-only ones unless set (they change the results then); report.json
    keeps them all."""
    sections = {f.name: f.metadata.get("section") for f in dataclasses.fields(DedupConfig)}
    return {key: value for key, value in config.items()
            if sections.get(key) in RESULT_SECTIONS and key not in TUNING and (key not in SHOWN_WHEN_SET or value)}


def pair_search_table(search: PairSearch) -> str:
    """The pair search by source (report.json's candidates.pair_search, the log's "pair search" line): each
    source's candidate pairs compared, verified and rejected, and the sums over the sources."""
    rows = [[esc(name), f"{s.key_group_pairs:,}", f"{s.compared:,}", f"{s.verified:,}", f"{s.rejected:,}"]
            for name, s in search.sources().items()]
    rows.append(["<b>all sources</b>", "", f"<b>{search.compared:,}</b>", f"<b>{search.verified:,}</b>",
                 f"<b>{search.rejected:,}</b>"])
    both = search.found_by_more_than_one_source
    return ("<div><h3>Pair search: candidate pairs by source</h3>"
            + _table(["source", "looked at in key groups", "compared", "verified", "rejected"], rows, {1, 2, 3, 4},
                     "pair-search")
            + f'<p class="note" style="max-width:520px" id="pair-search-note">Compared = verified + rejected, for '
            f"each source and in all. {both:,} pairs were found by two sources (a short-text pair the tables "
            f"or the bands found too, a sentence-key pair any other source found) and are compared by each: "
            f"{search.compared - both:,} distinct pairs. Looked at in key groups: fingerprint pairs that share a key, "
            "a bit comparison each; the "
            "candidates among them are compared on their signatures (SimHash tables: within k bits; signature "
            "bands: equal on a whole band, more than k bits apart; sentence keys: sharing one of their longest "
            "sentences) or their shingles (short text).</p></div>")


def _run_tables(report: Report) -> str:
    """The run's numbers: seconds per stage, bad rows, the pair search, the history."""
    bad, cand = report.bad_rows, report.candidates
    parts = ["<h2>Run</h2><div class=\"tables\">"]
    total = sum(report.seconds.values()) or 1
    parts.append("<div><h3>Seconds per stage</h3>" + _table(["stage", "seconds", ""], [
        [esc(s), f"{v:,.1f}", f'<span class="bar neutral" style="width:{round(160 * v / total)}px"></span>']
        for s, v in report.seconds.items()], {1}, "seconds") + "</div>")
    bad_rows = [[esc(name.replace("_", " ")), f"{v:,}"] for name, v in bad.to_dict().items() if isinstance(v, int)]
    parts.append(f'<div><h3>Bad rows (counted, never dropped)</h3>{_table(["kind", "rows"], bad_rows, {1}, "bad-rows")}'
                 f'<p class="note" style="max-width:420px">{esc(bad.treatment or "")}</p></div>')
    if cand.pair_search is not None:
        parts.append(pair_search_table(cand.pair_search))
    pair_rows = [[label, f"{getattr(cand, name):,}"] for name, label in (
        ("forest_edges", "edges kept for the components (a spanning forest of the verified pairs)"),
        ("component_rounds", "rounds of the connected-components search")) if isinstance(getattr(cand, name), int)]
    pair_rows.append(["pairs within k expected by chance among random fingerprints",
                      f"{cand.chance_pairs_uniform or 0:,.2f}"])
    parts.append(f'<div><h3>Components</h3>{_table(["", "count"], pair_rows, {1}, "pairs")}</div>')
    if report.history:
        h = report.history.to_dict()
        parts.append("<div><h3>History</h3>" + _table(["", ""], [[esc(key.replace("_", " ")), esc(v)] for key, v in h.items()],
                                                       set(), "history") + "</div>")
    parts.append("</div>")
    return "".join(parts)
