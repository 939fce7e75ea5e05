"""Stage 6, components: connected components of the edges, on the driver (numpy) when they are few, else in
large-star / small-star rounds (spark.components)."""
from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame

from ...spark.components import components_on_driver, connected_components
from .context import StageContext
from .verify import Verified


@dataclass
class Components:
    roots: DataFrame  # (node, root) of every fingerprint that is not its component's smallest
    rounds: int  # rounds it took: the driver's hooking rounds, or large-star / small-star rounds
    n_roots: int  # rows of roots


def components_stage(verified: Verified, ctx: StageContext) -> Components:
    """Stage 6: the components of the verified edges; on the driver when there are at most
    ctx.specs.driver_edges of them (the verify stage's count, with the short-text and sentence-key edges counted
    here when it has not counted them), else in Spark rounds, each checkpointed (ctx.checkpoint)."""
    with ctx.timer("components") as counts:
        limit = ctx.specs.driver_edges
        n_edges = verified.edge_count
        if limit and n_edges is None and verified.forest_edges <= limit:
            n_edges = verified.edges.count()
        on_driver = bool(limit) and n_edges is not None and n_edges <= limit
        if on_driver:
            roots, rounds, n_roots = components_on_driver(verified.edges, ctx.checkpoint)
        else:
            roots, rounds, n_roots = connected_components(verified.edges, ctx.checkpoint, ctx.specs.max_rounds)
        counts.update(rounds=rounds, on="the driver" if on_driver else "Spark")
    return Components(roots, rounds, n_roots)
