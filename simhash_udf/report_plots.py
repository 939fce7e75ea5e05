"""The report's two pictures, drawn on the driver from report.json's numbers (never from per-document data):
the cluster-size histogram and the Hamming distances of the accepted fingerprint pairs."""
from __future__ import annotations

import io
import logging

log = logging.getLogger("simhash_dedup")
PLOTS = {"cluster_sizes.png": "cluster sizes", "pair_distances.png": "Hamming distances of accepted pairs",
         "pair_similarity.png": "candidate pairs by estimated similarity, verified and rejected"}


def _bars(title: str, xlabel: str, ylabel: str, labels: list[str], values: list[int], log_y: bool) -> bytes:
    import matplotlib

    matplotlib.use("Agg")  # no display on a cluster's driver
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 3.6), dpi=100)
    ax = fig.subplots()
    ax.bar(range(len(values)), values, color="#4472c4")
    ax.set_xticks(range(len(values)), labels, rotation=45 if len(labels) > 12 else 0, ha="right" if len(labels) > 12 else "center")
    if log_y and any(values):
        from matplotlib.ticker import ScalarFormatter

        ax.set_yscale("log")
        ax.set_ylim(bottom=0.8, top=max(values) * 2)  # bars start below 1: a single cluster stays visible
        ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    for x, v in enumerate(values):
        ax.annotate(f"{v:,}", (x, v), ha="center", va="bottom", fontsize=7)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


def _stacked(title: str, xlabel: str, labels: list[str], series: dict[str, list[int]], colours: list[str]) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 3.6), dpi=100)
    ax = fig.subplots()
    bottom = [0] * len(labels)
    for (name, values), colour in zip(series.items(), colours):
        ax.bar(range(len(labels)), values, bottom=bottom, color=colour, label=name)
        bottom = [b + v for b, v in zip(bottom, values)]
    for x, v in enumerate(bottom):
        ax.annotate(f"{v:,}", (x, v), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("pairs")
    ax.legend(fontsize=8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


def size_buckets(histogram: dict[str, int]) -> tuple[list[str], list[int]]:
    """Clusters per size: 1..10 one bar each, then powers-of-two buckets, so a few huge clusters stay visible."""
    bounds = list(range(1, 11)) + [2**p for p in range(4, 40)]
    counts: dict[str, int] = {}
    for size, n in sorted((int(s), n) for s, n in histogram.items()):
        if size <= 10:
            label = str(size)
        else:
            lo = max(b for b in bounds if b <= size)
            hi = min(b for b in bounds if b > size) - 1
            label = f"{lo if lo > 10 else 11}-{hi}"
        counts[label] = counts.get(label, 0) + n
    return list(counts), list(counts.values())


def write_plots(report: dict, out) -> list[str]:
    """Write the PNGs beside report.json (out: write.OutputDir); returns the file names written."""
    try:
        sizes = size_buckets(report["clusters"]["size_histogram"])
        distances = report["candidates"]["pairs_accepted_by_distance"]
        pictures = {
            "cluster_sizes.png": _bars("Cluster sizes", "documents in the cluster", "clusters (log scale)", *sizes, True),
            "pair_distances.png": _bars(
                "Accepted pairs of distinct fingerprints (exact copies are merged before)", "Hamming distance", "pairs", list(distances), list(distances.values()), False
            ),
        }
        bands = report["candidates"].get("similarity_bands")
        if bands:
            threshold = report["candidates"]["verification"]["min_similarity"]
            pictures["pair_similarity.png"] = _stacked(
                f"Candidate pairs (within k) by estimated similarity; edges need >= {threshold}",
                "estimated Jaccard index of the feature sets", list(bands),
                {"verified (edge)": [b["verified"] for b in bands.values()],
                 "rejected": [b["rejected"] for b in bands.values()]}, ["#4472c4", "#c0504d"])
    except ImportError:
        log.warning("matplotlib is not installed: report.json is written without its pictures")
        return []
    for name, data in pictures.items():
        out.write_bytes(out.staged(name), data)
    return sorted(pictures)
