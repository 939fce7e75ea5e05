"""Stage 6, components: connected components of the edges (large-star / small-star, spark.components)."""
from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame

from ...spark.components import connected_components
from .context import StageContext
from .verify import Verified


@dataclass
class Components:
    roots: DataFrame  # (node, root) of every fingerprint that is not its component's smallest
    rounds: int  # large-star / small-star rounds it took
    n_roots: int  # rows of roots


def components_stage(verified: Verified, ctx: StageContext) -> Components:
    """Stage 6: the components of the verified edges, each round checkpointed (ctx.checkpoint)."""
    with ctx.timer("components") as counts:
        roots, rounds, n_roots = connected_components(verified.edges, ctx.checkpoint, ctx.specs.max_rounds)
        counts["rounds"] = rounds
    return Components(roots, rounds, n_roots)
