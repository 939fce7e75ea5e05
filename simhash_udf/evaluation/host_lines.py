"""Lines that recur on many pages of one host (a site's frame: header, menu, link lines, footer), counted the
CCNet way, and the pages without them: the measurement of issue 58 item 4 (scripts/bench/host_lines.py).

A line is one line of a page's text (cut at line ends), normalised as the features are
(text.normalize_texts: NFKC, lower case, digits to 0, white space folded); lines that normalise to nothing are
never counted. A line is *host-repeated* when its normalised text occurs on at least `min_pages` distinct
pages of the page's host. Spark only: the counts are one group-by over (host, line hash), nothing per page
reaches the driver.
"""
from __future__ import annotations

import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

from ..core.text import normalize_texts


@F.pandas_udf(StringType())
def _normalised(lines: pd.Series) -> pd.Series:
    return pd.Series(normalize_texts(lines.fillna("").tolist()))


def page_lines(pages: DataFrame, id_col: str, host_col: str, text_col: str) -> DataFrame:
    """(id, host, pos, line, line_hash): one row per line of each page (line_hash null for a line that
    normalises to nothing)."""
    exploded = pages.select(F.col(id_col).alias("id"), F.col(host_col).alias("host"),
                            F.posexplode(F.split(F.coalesce(F.col(text_col), F.lit("")), "\n")).alias("pos", "line"))
    norm = _normalised(F.col("line"))
    return exploded.withColumn("line_hash", F.when(norm != "", F.xxhash64(norm)))


def host_line_pages(lines: DataFrame) -> DataFrame:
    """(host, line_hash, pages): on how many distinct pages of the host each normalised line occurs."""
    return (lines.where(F.col("line_hash").isNotNull()).select("host", "line_hash", "id").distinct()
            .groupBy("host", "line_hash").agg(F.count(F.lit(1)).alias("pages")))


def without_host_repeated_lines(pages: DataFrame, min_pages: int, id_col: str = "id", host_col: str = "host",
                                text_col: str = "text", edges_only: bool = False) -> DataFrame:
    """(id, text, chars, removed_chars, lines, removed_lines): each page's text without its host-repeated
    lines (the other lines, blank ones too, in their order, joined by line ends); with edges_only only the
    runs of host-repeated and blank lines at its top and bottom (where a frame is), a repeated line between
    two of the page's own lines stays. A page made only of host-repeated lines keeps its text whole
    (removed_chars 0): it is not emptied."""
    lines = page_lines(pages, id_col, host_col, text_col)
    counted = lines.join(host_line_pages(lines), ["host", "line_hash"], "left")
    repeated = F.coalesce(F.col("pages") >= min_pages, F.lit(False))
    per_page = counted.groupBy("id").agg(
        F.array_sort(F.collect_list(F.struct("pos", "line", repeated.alias("repeated"),
                                             F.col("line_hash").isNotNull().alias("content")))).alias("ls"))
    own = F.filter("ls", lambda x: x["content"] & ~x["repeated"])
    if edges_only:
        first, last = F.element_at(own, 1)["pos"], F.element_at(own, -1)["pos"]
        kept = F.filter("ls", lambda x: (x["pos"] >= first) & (x["pos"] <= last))
    else:
        kept = F.filter("ls", lambda x: ~x["repeated"])
    whole = F.array_join(F.transform("ls", lambda x: x["line"]), "\n")
    stripped = F.array_join(F.transform(kept, lambda x: x["line"]), "\n")
    emptied = F.size(own) == 0
    chars: Column = F.length(whole)
    return per_page.select(
        "id",
        F.when(emptied, whole).otherwise(stripped).alias("text"),
        chars.alias("chars"),
        F.when(emptied, 0).otherwise(chars - F.length(stripped)).alias("removed_chars"),
        F.size("ls").alias("lines"),
        F.when(emptied, 0).otherwise(F.size("ls") - F.size(kept)).alias("removed_lines"))
