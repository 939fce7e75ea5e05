"""Short-text mode, the pure part: a second fingerprint for short pages and the Jaccard check of a pair.

SimHash over word tokens is weak on short texts: a tweet-sized page has a dozen features, so one edited word
moves many bits (copies are missed at k = 6) while two unrelated short pages agree on many bits by chance.
Pages shorter than `max_chars` characters therefore also get a fingerprint over their character n-grams
(binary weights: many more features, each edit touches only n of them), candidate pairs are searched with a
wider `k` on that fingerprint, and a candidate becomes a pair only if the exact Jaccard index of the two
pages' character n-gram shingle sets (shingles.py) reaches `min_jaccard`. The wide k buys recall, the exact
check gives back the precision. Nothing here knows about Spark (short_pairs.py is the Spark glue).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .blocks import check_k
from .fingerprint import FeatureSpec, fingerprint_batch


@dataclass(frozen=True)
class ShortTextSpec:
    max_chars: int = 140  # a page with fewer characters (as read, after max_text_chars) is short; 0 = mode off
    k: int = 8  # max Hamming distance of candidate pairs on the short fingerprint
    char_ngram: int = 5  # n of the character n-grams: the short fingerprint's features and the verified shingles
    min_jaccard: float = 0.7  # a candidate pair is a pair iff the shingle Jaccard index is at least this

    @property
    def enabled(self) -> bool:
        return self.max_chars > 0

    @property
    def features(self) -> FeatureSpec:
        return FeatureSpec(tokenizer="char", weighting="binary", char_ngram=self.char_ngram)

    def check(self) -> None:
        """ValueError with the option to change when a setting cannot work."""
        if self.max_chars < 0:
            raise ValueError(f"--short-text-chars must be 0 (off) or more (got {self.max_chars})")
        try:
            check_k(self.k)
        except ValueError as exc:
            raise ValueError(f"--short-k: {exc}".replace("--k ", "--short-k ")) from None
        if self.char_ngram < 1:
            raise ValueError(f"--short-char-ngram must be at least 1 (got {self.char_ngram})")
        if not 0.0 < self.min_jaccard <= 1.0:
            raise ValueError(f"--short-min-jaccard must be in (0, 1] (got {self.min_jaccard})")

    def describe(self) -> dict:
        return {"max_chars": self.max_chars, "k": self.k, "char_ngram": self.char_ngram,
                "min_jaccard": self.min_jaccard, "fingerprint_version": self.features.version()}


def is_short(text: str | None, spec: ShortTextSpec) -> bool:
    return text is not None and len(text) < spec.max_chars


def short_fingerprints(texts: Sequence[str | None], spec: ShortTextSpec) -> tuple[np.ndarray, np.ndarray]:
    """(fingerprints int64, valid mask) of a batch: valid for short texts that have character n-grams."""
    idx = [i for i, t in enumerate(texts) if is_short(t, spec)]
    fps = np.zeros(len(texts), dtype=np.int64)
    valid = np.zeros(len(texts), dtype=bool)
    if idx:
        short_fps, counts = fingerprint_batch([texts[i] for i in idx], spec.features)
        fps[idx] = short_fps
        valid[idx] = counts > 0
    return fps, valid
