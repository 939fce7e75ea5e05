"""Spark stage 6: connected components with large-star / small-star (Kiveris et al., SoCC 2014).

Nodes are fingerprints (int64) and every step is a DataFrame join or aggregation, so nothing is collected
to the driver. Edges are kept oriented (u, v) with u > v. The loop stops when the edges form a forest of
stars, each pointing at its component's smallest node: every child has exactly one parent and no parent
is itself a child. Each round is checkpointed so the lineage (and the plan Spark must analyse) stays short.

A graph of at most DRIVER_EDGES edges is collected instead and its components found in numpy
(core.components; components_on_driver): the same rows, without a round's Spark jobs and checkpoint files.
"""
from __future__ import annotations

from typing import Callable

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..core.components import component_roots
from ..errors import DedupError
from .driver_tables import driver_frame
from .session import unique_key_aggregation

# Edges up to which the components are found on the driver: 32 MB of (src, dst) pairs from the executors, a few
# hundred MB of numpy arrays at most while they are searched, a few seconds of the driver's CPU.
DRIVER_EDGES = 2_000_000
ROOTS_PER_PARTITION = 500_000  # rows of the driver's (node, root) table per partition of its DataFrame


def components_on_driver(edges: DataFrame, checkpoint: Callable[[DataFrame], DataFrame], src: str = "src",
                         dst: str = "dst") -> tuple[DataFrame, int, int]:
    """connected_components' answer (node, root rows, rounds, rows) from the edges collected to the driver
    (core.components.component_roots; rounds: its hooking rounds). An edge with a null end is dropped, as the
    Spark rounds drop it. checkpoint: for a large answer (driver_tables.driver_frame)."""
    table = edges.where(F.col(src).isNotNull() & F.col(dst).isNotNull()).select(
        F.col(src).cast("long").alias("src"), F.col(dst).cast("long").alias("dst")).toArrow()
    node, root, rounds = component_roots(table.column("src").to_numpy(), table.column("dst").to_numpy())
    spark = edges.sparkSession
    roots = driver_frame(spark, pa.table({"node": node, "root": root}), "node long, root long",
                         max(1, -(-len(node) // ROOTS_PER_PARTITION)), checkpoint)
    return roots, rounds, len(node)


def oriented(edges: DataFrame, a: str = "src", b: str = "dst") -> DataFrame:
    """(u, v) with u > v, self-loops dropped, each edge once."""
    return (
        edges.select(F.greatest(a, b).alias("u"), F.least(a, b).alias("v"))
        .where(F.col("u") != F.col("v"))
        .distinct()
    )


def large_star(edges: DataFrame) -> DataFrame:
    """Each node hands its larger neighbours to its smallest neighbour (itself included)."""
    smallest = edges.groupBy("u").agg(F.min("v").alias("m")).withColumnRenamed("u", "x")
    joined = edges.join(smallest, edges["v"] == smallest["x"], "left")
    return joined.select("u", F.coalesce("m", "v").alias("v")).distinct()


def small_star(edges: DataFrame) -> DataFrame:
    """Each node connects its smaller neighbours and itself to the smallest of them."""
    smallest = edges.groupBy("u").agg(F.min("v").alias("m"))
    moved = edges.join(smallest, "u").select(F.col("v").alias("a"), F.col("m").alias("b"))
    own = smallest.select(F.col("u").alias("a"), F.col("m").alias("b"))
    return oriented(moved.unionByName(own), "a", "b")


def unfinished_nodes(edges: DataFrame) -> tuple[int, int]:
    """Nodes that still break the star-forest shape (a child with two parents, or a parent with one), and
    the edges (each child's parents summed), in one Spark action: when no node is unfinished, the edges are
    the (node, root) rows, and their count spares resolve an action of its own."""
    as_child = edges.select(F.col("u").alias("n"), F.lit(1).alias("child"), F.lit(0).alias("parent"))
    as_parent = edges.select(F.col("v").alias("n"), F.lit(0).alias("child"), F.lit(1).alias("parent"))
    per_node = as_child.unionByName(as_parent).groupBy("n").agg(
        F.sum("child").alias("parents"), F.max("parent").alias("is_parent")
    )
    unfinished = (F.col("parents") > 1) | ((F.col("parents") >= 1) & (F.col("is_parent") == 1))
    row = per_node.agg(F.count(F.when(unfinished, True)).alias("unfinished"), F.sum("parents").alias("edges")).first()
    return int(row["unfinished"]), int(row["edges"] or 0)


def connected_components(
    edges: DataFrame,
    checkpoint: Callable[[DataFrame], DataFrame],
    max_rounds: int = 200,
    src: str = "src",
    dst: str = "dst",
) -> tuple[DataFrame, int, int]:
    """(node, root) for every node that is not the smallest of its component (root is that smallest
    node; roots and isolated nodes are their own root and are not listed), the rounds it took, and how many
    (node, root) rows there are (counted by the last round's check)."""

    def checkpointed(df: DataFrame) -> DataFrame:
        """The rounds' aggregations group by a node (most have one or two edges): planned in one phase, as the
        checkpoint runs them; unfinished_nodes' count is planned outside."""
        with unique_key_aggregation(df.sparkSession):
            return checkpoint(df)

    e = checkpointed(oriented(edges, src, dst))
    for rounds in range(1, max_rounds + 1):
        e = checkpointed(small_star(large_star(e)))
        unfinished, n_edges = unfinished_nodes(e)
        if unfinished == 0:
            return e.select(F.col("u").alias("node"), F.col("v").alias("root")), rounds, n_edges
    raise DedupError(
        f"connected components did not converge in {max_rounds} rounds: raise --max-component-rounds"
    )
