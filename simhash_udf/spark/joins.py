"""Joins against a side whose row count the run already knows, or bounds (the duplicates: the input's rows
minus the kept ones, counted before the write; the component graph's nodes). Such a side, when small, is
broadcast, so the large side (every input row with its text, every kept page or unit with its signature) is
neither shuffled nor sorted just to meet it."""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

# Up to two million rows (32 MB as pairs of longs, ~200 MB as 64-character string ids) go to every executor;
# past that the join is left to Spark (a shuffle of both sides). Without the broadcast, writing kept/ shuffles
# every input row and the report's duplicate pairs every kept page (1.5 and 1.4 GB at 10^7 fingerprints with
# 714,367 duplicates); at that size the component graph's 1.19 million nodes (bounded by twice the roots) are
# the largest side broadcast, so the limit covers it.
BROADCAST_MAX_ROWS = 2_000_000


def is_small(rows: int) -> bool:
    """Whether a side of this many rows (negative: not known) is broadcast."""
    return 0 <= rows <= BROADCAST_MAX_ROWS


def broadcast_if_small(df: DataFrame, rows: int) -> DataFrame:
    """df with a broadcast hint when it is known to hold at most BROADCAST_MAX_ROWS rows, else df as is."""
    return F.broadcast(df) if is_small(rows) else df


def without_ids(rows: DataFrame, id_col: str, ids: DataFrame, n_ids: int) -> DataFrame:
    """The rows whose id_col is not among the `ids` DataFrame's one column (n_ids rows): a left anti join,
    broadcast when ids is small. Ids are unique and not null here (checked when read), so this is the
    same as keeping the rows whose id is among the others."""
    (other,) = ids.columns
    ids = broadcast_if_small(ids, n_ids)
    return rows.join(ids, rows[id_col] == ids[other], "left_anti")
