"""Longest-sentence keys: a third candidate source beside the SimHash tables and the signature bands (pure
Python/numpy, no Spark).

A page copied into another page (a site's frame of header, menu and footer, reader comments, an inserted ad)
is not Jaccard-similar to its original when the added part is large, and its fingerprint moves far. What
survives is the article's longest sentences: menus, footers, comments and ads are made of short lines (the
longest-sentence signature of the seed documents, n = 3). Two pages that share one of their n longest
sentences are compared and verified like any other pair (verified.py: similar, or contained within a size
bound).

Definition (version "sent{n}x{min_chars}"):
  the page in NFKC, lower case, split at the sentence ends of Chinese and English text (`。！？；` and `.!?;`,
  which NFKC turns `！？；．` into, and line ends);
  each sentence normalised to its letters alone: every character that is not a word character, a digit or
  `_` dropped (so white space, punctuation and digits, and ASCII against full-width punctuation, change no key);
  the distinct sentences of at least min_chars letters, longest first (ties in code-point order), the first n;
  each one's key: the first 64 bits of MurmurHash3 x64-128 of its UTF-8 (seed SEED), as a signed int64.

A key shared by more than max_group pages (a licence sentence, a site's slogan) makes no group: its pairs are
not compared (they would grow as the square of the group) and the skipped keys are counted in the report.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

import mmh3
import numpy as np

SEED = 0x5E47  # distinct from the features' seed 0: a one-word sentence's key is not that word's feature hash
SENTENCE_END = re.compile(r"[。.!?;\n\r\u2028\u2029\x85\x0b\x0c\x1c\x1d\x1e]")  # what str.splitlines splits at, too
LETTERS = re.compile(r"[^\W\d_]+")


@dataclass(frozen=True)
class SentenceKeySpec:
    n: int = 3  # keys per page: its n longest sentences; 0 = no sentence keys
    min_chars: int = 20  # letters a sentence needs to make a key (shorter ones are menus, buttons, bylines)
    max_group: int = 100  # a key of more pages than this makes no group (counted as skipped)

    @property
    def enabled(self) -> bool:
        return self.n > 0

    def check(self) -> None:
        if self.n < 0 or self.min_chars < 1 or self.max_group < 2:
            raise ValueError(f"sentence keys need n >= 0 (0 = off), min_chars >= 1 and max_group >= 2 (got n = "
                             f"{self.n}, min_chars = {self.min_chars}, max_group = {self.max_group})")

    def version(self) -> str:
        return f"sent{self.n}x{self.min_chars}"


def normalized_sentences(text: str) -> list[str]:
    """The page's sentences, each as its letters alone (see the module docstring), empty ones included."""
    return ["".join(LETTERS.findall(s)) for s in SENTENCE_END.split(unicodedata.normalize("NFKC", text).lower())]


def longest_sentences(text: str, spec: SentenceKeySpec) -> list[str]:
    """The n longest distinct normalised sentences of at least min_chars letters, longest first."""
    if not spec.enabled:
        return []
    distinct = {s for s in normalized_sentences(text) if len(s) >= spec.min_chars}
    return sorted(distinct, key=lambda s: (-len(s), s))[: spec.n]


def sentence_key(sentence: str) -> int:
    """A normalised sentence's key (signed int64)."""
    return mmh3.hash64(sentence, seed=SEED, x64arch=True, signed=True)[0]


def sentence_keys(texts, spec: SentenceKeySpec) -> tuple[np.ndarray, np.ndarray]:
    """(keys int64, offsets int64) of many pages: page i owns keys[offsets[i]:offsets[i+1]] (none for a null
    page or one without a long enough sentence)."""
    keys: list[int] = []
    offsets = [0]
    for text in texts:
        if text is not None:
            keys.extend(sentence_key(s) for s in longest_sentences(text, spec))
        offsets.append(len(keys))
    return np.array(keys, dtype=np.int64), np.array(offsets, dtype=np.int64)


def key_group_pairs(fingerprints: np.ndarray, keys: np.ndarray, max_group: int) -> tuple[np.ndarray, np.ndarray, int, int]:
    """(a, b, skipped_keys, groups) of (fingerprint, key) rows (repeats allowed): the distinct pairs a < b of
    fingerprints that share a key of at most max_group fingerprints, the number of keys of more (skipped) and
    of groups of two to max_group. A brute-force reference for the Spark search (spark/sentence_keys.py)."""
    rows = np.unique(np.stack([np.asarray(keys, np.int64), np.asarray(fingerprints, np.int64)], axis=1), axis=0)
    a, b, skipped, groups = [], [], 0, 0
    starts = np.r_[0, np.flatnonzero(rows[1:, 0] != rows[:-1, 0]) + 1, len(rows)]
    for s, e in zip(starts[:-1], starts[1:]):
        if e - s > max_group:
            skipped += 1
            continue
        groups += e - s >= 2
        i, j = np.triu_indices(e - s, 1)
        a.append(rows[s:e, 1][i])
        b.append(rows[s:e, 1][j])
    if not a:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), skipped, groups
    pairs = np.unique(np.stack([np.concatenate(a), np.concatenate(b)], axis=1), axis=0)
    return pairs[:, 0], pairs[:, 1], skipped, groups
