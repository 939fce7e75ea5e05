"""The report's pictures, drawn on the driver from report.json's numbers (the typed Report of report_schema;
never from per-document data).

The series (what each picture shows) are small pure functions shared by the PNG files written here with
matplotlib and by the inline SVG of report.html (report_html.py), so both say the same thing:
  - documents removed by cluster size (linear axis: what a size class costs the crawl, not how many
    clusters of that size there are, which a log axis of cluster counts hid);
  - the SimHash tables' candidate pairs by Hamming distance 1..k (distance 0 cannot occur: identical fingerprints are merged
    before the pair search, so that bar is left out and the exact copies are counted apart);
  - every duplicate's distance and estimated similarity to its kept page, beyond k too (chaining shows
    there: in the verified mode a duplicate is similar to its kept page but can be far from it in bits);
  - candidate pairs by estimated similarity, verified and rejected.
One colour means one thing everywhere (COLOURS): blue the verified pairs and the duplicates they make, red the
rejected pairs, grey counts of neither kind (candidate pairs before verification)."""
from __future__ import annotations

import io
import logging
import math

from .report_schema import Report

log = logging.getLogger("simhash_dedup")
PLOTS = {"cluster_sizes.png": "documents removed by cluster size",
         "pair_distances.png": "Hamming distances of the SimHash tables' candidate pairs (1..k)",
         "pair_similarity.png": "candidate pairs by estimated similarity, verified and rejected",
         "duplicates_to_kept.png": "each duplicate's distance and similarity to its kept page"}
# One meaning per colour in every picture and on report.html's page.
VERIFIED, REJECTED, NEUTRAL = "#4472c4", "#c0504d", "#7f7f7f"
COLOURS = {VERIFIED: "blue: verified pairs, and the duplicates they make",
           REJECTED: "red: rejected pairs (compared, not similar enough)",
           NEUTRAL: "grey: candidate pairs before verification, and other counts"}


def size_buckets(histogram: dict[str, int]) -> tuple[list[str], list[int]]:
    """Clusters per size: 1..10 one bar each, then powers-of-two buckets, so a few huge clusters stay visible."""
    labels, clusters, _ = _size_classes(histogram)
    return labels, clusters


def _size_classes(histogram: dict[str, int]) -> tuple[list[str], list[int], list[int]]:
    """(labels, clusters, documents removed) per size class (1..10, then power-of-two buckets)."""
    bounds = list(range(1, 11)) + [2**p for p in range(4, 40)]
    clusters: dict[str, int] = {}
    removed: dict[str, int] = {}
    for size, n in sorted((int(s), n) for s, n in histogram.items()):
        if size <= 10:
            label = str(size)
        else:
            lo = max(b for b in bounds if b <= size)
            hi = min(b for b in bounds if b > size) - 1
            label = f"{lo if lo > 10 else 11}-{hi}"
        clusters[label] = clusters.get(label, 0) + n
        removed[label] = removed.get(label, 0) + (size - 1) * n
    return list(clusters), list(clusters.values()), list(removed.values())


def removed_by_size(histogram: dict[str, int]) -> tuple[list[str], list[int], list[int]]:
    """(size classes, documents removed, clusters) for clusters of 2 or more pages: a cluster of s pages
    removes s - 1, so the bars add up to the run's duplicates. Clusters of one page remove nothing and are
    left out (they are most clusters, and on a count axis they flattened every other bar)."""
    labels, clusters, removed = _size_classes({s: n for s, n in histogram.items() if int(s) > 1})
    return labels, removed, clusters


def accepted_pair_distances(by_distance: dict[str, int]) -> tuple[list[str], list[int]]:
    """Accepted pairs by Hamming distance, without the distance-0 bar when it is empty (always, unless the
    history brings a fingerprint equal to one of this run's: identical fingerprints are merged first)."""
    items = [(d, n) for d, n in by_distance.items() if d != "0" or n]
    return [d for d, _ in items], [n for _, n in items]


def kept_distances(histogram: dict[str, int], k: int) -> tuple[list[str], list[int], list[bool]]:
    """(distances 0..max, duplicates, beyond k) for each duplicate's Hamming distance to its kept page;
    every distance up to the largest gets a bar, so a gap shows as a gap."""
    top = max([k + 1] + [int(d) for d in histogram])  # at least one place beyond k, where chains show
    return ([str(d) for d in range(top + 1)], [int(histogram.get(str(d), 0)) for d in range(top + 1)],
            [d > k for d in range(top + 1)])


def _canvas(panels: int = 1, height: float = 3.6):
    import matplotlib  # here, not at the top: slow to load, and only the report's plots need it

    matplotlib.use("Agg")  # no display on a cluster's driver
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, height * panels), dpi=100)
    return fig, fig.subplots(panels, 1) if panels > 1 else [fig.subplots()]


def _room_below(ax) -> float:
    """Inches under an axes for its tick labels (turned or not) and the axis label, from the labels' lengths:
    10-point characters are about 0.085 inches wide."""
    ticks = ax.get_xticklabels()
    turn = max((abs(t.get_rotation()) for t in ticks), default=0.0)
    longest = max((len(t.get_text()) for t in ticks), default=1)
    return 0.6 + (0.085 * longest * math.sin(math.radians(turn)) if turn else 0.1)


def _png(fig) -> bytes:
    # margins set from the labels' lengths, not measured by tight_layout, which laid out every text once more
    # and was a third of the pictures' time (~0.4 s of a run's ~1.1 s, warm)
    width, tall = fig.get_size_inches()
    below = max(_room_below(ax) for ax in fig.axes)
    above = 0.2 + 0.17 * max(ax.get_title().count("\n") + 1 for ax in fig.axes)  # the title's lines
    panel = tall / len(fig.axes)
    fig.subplots_adjust(left=0.85 / width, right=1 - 0.15 / width, bottom=below / tall, top=1 - above / tall,
                        hspace=(below + above) / (panel - below - above))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


def _bar_axes(ax, title: str, xlabel: str, ylabel: str, labels: list[str], values: list[int], colours=VERIFIED,
              notes: list[str] | None = None, marker: tuple[float, str] | None = None) -> None:
    """One linear bar chart with each bar's value (and an optional note under it) above the bar."""
    ax.bar(range(len(values)), values, color=colours)
    many = len(labels) > 12 or len(labels) * max(map(len, labels), default=0) > 60  # turned where they would overlap
    ax.set_xticks(range(len(values)), labels, rotation=45 if many else 0, ha="right" if many else "center")
    for x, v in enumerate(values):
        text = f"{v:,}" + (f"\n{notes[x]}" if notes else "")
        ax.annotate(text, (x, v), ha="center", va="bottom", fontsize=7)
    if marker is not None:
        ax.axvline(marker[0], color=NEUTRAL, linestyle="--", linewidth=1)
        ax.annotate(marker[1], (marker[0], 1), xycoords=("data", "axes fraction"), ha="left", va="top",
                    fontsize=8, color=NEUTRAL, xytext=(3, -3), textcoords="offset points")
    ax.set_ylim(0, max(values + [1]) * 1.25)  # room for the labels above the bars
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)


def cluster_sizes_png(report: Report) -> bytes:
    labels, removed, clusters = removed_by_size(report.clusters.size_histogram)
    fig, (ax,) = _canvas()
    _bar_axes(ax, f"Documents removed by cluster size ({report.duplicates:,} in all)", "pages in the cluster",
              "documents removed", labels, removed, notes=[f"{c:,} cl." for c in clusters])
    return _png(fig)


def pair_distances_png(report: Report) -> bytes:
    labels, values = accepted_pair_distances(report.candidates.pairs_accepted_by_distance)
    fig, (ax,) = _canvas()
    _bar_axes(ax, f"Candidate pairs of the SimHash tables, before verification\n({report.exact_duplicates:,} exact "
              "copies were merged before: no distance-0 bar)", "Hamming distance", "pairs", labels, values,
              colours=NEUTRAL)
    return _png(fig)


def pair_similarity_png(report: Report) -> bytes:
    bands = report.candidates.similarity_bands
    threshold = report.candidates.verification.min_similarity
    fig, (ax,) = _canvas()
    bottom = [0] * len(bands)
    for name, key, colour in (("verified (edge)", "verified", VERIFIED), ("rejected", "rejected", REJECTED)):
        values = [getattr(b, key) for b in bands.values()]
        ax.bar(range(len(bands)), values, bottom=bottom, color=colour, label=name)
        bottom = [b + v for b, v in zip(bottom, values)]
    for x, v in enumerate(bottom):
        ax.annotate(f"{v:,}", (x, v), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(bands)), list(bands), rotation=30, ha="right")
    ax.set_ylim(0, max(bottom + [1]) * 1.2)
    ax.set_title(f"Candidate pairs of the tables and bands by estimated similarity; edges need >= {threshold}",
                 fontsize=10)
    ax.set_xlabel("estimated Jaccard index of the feature sets")
    ax.set_ylabel("pairs")
    ax.legend(fontsize=8)
    return _png(fig)


def duplicates_to_kept_png(report: Report) -> bytes:
    to_kept = report.duplicates_to_kept
    k = report.config["k"]
    sims = to_kept.similarity_histogram
    fig, axes = _canvas(2 if sims else 1)
    labels, values, _ = kept_distances(to_kept.distance_histogram, k)
    _bar_axes(axes[0], f"Each duplicate's distance to its kept page ({to_kept.beyond_k:,} beyond k = {k})",
              "Hamming distance of the fingerprints (beyond k: joined through other pages)", "duplicates", labels, values,
              marker=(k + 0.5, f"k = {k}"))
    if sims:
        threshold = to_kept.min_similarity
        _bar_axes(axes[1], "Each duplicate's estimated similarity to its kept page", "estimated Jaccard index",
                  "duplicates", [b.split("-")[0] for b in sims], list(sims.values()),
                  marker=(threshold * len(sims) - 0.5, f"min similarity {threshold}") if threshold else None)
    return _png(fig)


def draw_plots(report: Report) -> dict[str, bytes]:
    """The pictures of a report, {file name: PNG}; raises ImportError without matplotlib."""
    pictures = {"cluster_sizes.png": cluster_sizes_png(report), "pair_distances.png": pair_distances_png(report)}
    if report.candidates.similarity_bands:
        pictures["pair_similarity.png"] = pair_similarity_png(report)
    if report.duplicates_to_kept and report.duplicates_to_kept.distance_histogram:
        pictures["duplicates_to_kept.png"] = duplicates_to_kept_png(report)
    return pictures


def write_plots(report: Report, out, drawer=None) -> list[str]:
    """Write the PNGs beside report.json (out: write.OutputDir); returns the file names written. drawer: a
    plot_process.PlotProcess that draws them in a process of its own (the same functions, the same bytes);
    where it cannot, they are drawn here."""
    try:
        pictures = drawer.draw(report) if drawer is not None else None
        if pictures is None:
            pictures = draw_plots(report)
    except ImportError:
        log.warning("matplotlib is not installed: report.json is written without its pictures")
        return []
    for name, data in pictures.items():
        out.write_bytes(out.staged(name), data)
    return sorted(pictures)
