"""A topic-labelled set from real text, to judge related-page lists (--related): the machine's English man pages
labelled by the Debian package that installs them (dpkg's file lists), so that two pages of one package (git's,
systemd's, openssl's commands, libc's functions) count as the same topic. A related list is as good as the share
of its rows whose two pages share a package (precision); chance is what random rows would score.

Pages are whole man pages (troff stripped, capped at 12,000 characters, at least `min_chars`), normalised-
identical texts dropped (aliases, .so stubs); sorted file lists and a seeded shuffle make the set deterministic
given the installed pages."""
from __future__ import annotations

import glob
import os
import random
from collections import Counter

import pandas as pd

from ..core.text import normalize_text
from .corpus import man_page_paragraphs

# Thousands of pages from one template (the Google Cloud SDK's) would be one topic of near-copies.
SKIPPED_PACKAGES = ("google-cloud-cli", "google-cloud-sdk")


def man_page_packages(info_glob: str = "/var/lib/dpkg/info/*.list") -> dict[str, str]:
    """path of an installed man page (.gz under /usr/share/man/man*/) -> the package that installs it."""
    owner: dict[str, str] = {}
    for listing in sorted(glob.glob(info_glob)):
        package = os.path.basename(listing)[: -len(".list")].split(":")[0]
        with open(listing, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                path = line.strip()
                if path.startswith("/usr/share/man/man") and path.endswith(".gz"):
                    owner[path] = package
    return owner


def topic_pages(owner: dict[str, str], per_topic: int = 20, min_per_topic: int = 8, min_chars: int = 500,
                seed: int = 1) -> pd.DataFrame:
    """(id, text, topic): up to per_topic pages of every package that has at least min_per_topic usable ones."""
    rng = random.Random(seed)
    by_package: dict[str, list[str]] = {}
    for path, package in sorted(owner.items()):
        if package not in SKIPPED_PACKAGES and os.path.exists(path):
            by_package.setdefault(package, []).append(path)
    rows, seen = [], set()
    for package, paths in sorted(by_package.items()):
        rng.shuffle(paths)
        texts = []
        for path in paths:
            text = "\n\n".join(man_page_paragraphs(path))[:12000]
            key = normalize_text(text)
            if len(text) >= min_chars and key not in seen:
                seen.add(key)
                texts.append(text)
            if len(texts) == per_topic:
                break
        if len(texts) >= min_per_topic:
            rows.extend((package, t) for t in texts)
    return pd.DataFrame({"id": range(len(rows)), "text": [t for _, t in rows], "topic": [p for p, _ in rows]})


def chance_precision(topics: pd.Series) -> float:
    """The precision of related lists drawn at random: the chance that another page shares a page's topic."""
    sizes = Counter(topics.tolist())
    n = len(topics)
    return sum(s * (s - 1) for s in sizes.values()) / (n * (n - 1)) if n > 1 else 0.0


def same_topic_precision(related: pd.DataFrame, topics: pd.Series, n: int | None = None) -> dict:
    """related (id, related_id, rank) against topics (indexed by id): the share of rows (ranks <= n) whose two
    pages share a topic, the pages with at least one row, the rows, and chance's precision for comparison."""
    rows = related if n is None else related[related["rank"] <= n]
    same = rows["id"].map(topics).to_numpy() == rows["related_id"].map(topics).to_numpy()
    return {"precision": float(same.mean()) if len(rows) else 0.0, "pages_with_related": int(rows["id"].nunique()),
            "rows": len(rows), "chance": chance_precision(topics)}
