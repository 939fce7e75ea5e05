"""SimHash fingerprints: weight features, hash each to 64 bits, add +w / -w per bit, take the sign.

Everything here is plain numpy over a whole batch of documents; nothing knows about Spark. The per-bit
arithmetic is integer arithmetic, so a fingerprint is the same on every machine and numpy build (no
floating-point summation order can flip a bit that sits on zero).

Definition (fingerprint version "sh64-2"): normalise (NFKC, lower case, digits to 0, white space between two
Han characters removed (sh64-1 kept it: a re-wrapped Chinese page had other words), other white space folded;
for character n-grams also Chinese punctuation as ASCII, FeatureSpec.normalisation),
tokenise (text.py), then for a document with features t_1..t_n (token occurrences),
weights w(t) (integers) and 64-bit hashes h(t) = first 64 bits of MurmurHash3 x64-128 (seed 0) of the
UTF-8 feature, bit i of the fingerprint is 1 iff  sum_t w(t) * (+1 if bit i of h(t) else -1)  > 0.
A sum of exactly 0 gives bit 0. The unsigned 64-bit result is stored as int64 (two's complement).
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable

import mmh3
import numpy as np
import pyarrow as pa

from .mmh3_batch import LOW_BYTES, PAD, hash_joined, mmh3_64_batch, padded_buffer, words_at
from .signature import SignatureSpec, oph_signatures
from .text import (
    RUN_SEPARATOR,
    auto_set,
    features,
    features_without_stop_words,
    normalize_texts,
    segmenter,
    segmenter_version,
)
from .text_batch import SPACE, BatchChars, split_pages_bytes

DEFINITION_VERSION = "sh64-2"  # bump whenever any step below changes what a fingerprint is
WEIGHTINGS = ("tf", "tfidf", "binary", "tfidf-corpus")
IDF_SCALE = 1000  # tf-idf weights are idf * IDF_SCALE rounded to integers: exact, portable sums


def mmh3_64(feature: str) -> int:
    """The feature hash: unsigned first half of MurmurHash3 x64-128, seed 0, of the UTF-8 bytes."""
    return mmh3.hash64(feature, seed=0, x64arch=True, signed=False)[0]


class _HashCache(dict):
    """token -> hash, filled on first use. Token frequencies follow Zipf's law, so most look-ups hit."""

    max_size = 2_000_000

    def __missing__(self, token: str) -> int:
        if len(self) >= self.max_size:
            self.clear()
        value = self[token] = mmh3_64(token)
        return value


_HASHES = _HashCache()


# _NIBBLE_BITS[v, j] = bit j of the 4-bit value v: turns per-nibble-value histograms into per-bit sums.
_NIBBLE_BITS = ((np.arange(16)[:, None] >> np.arange(4)[None, :]) & 1).astype(np.float64)


def weighted_bit_sums(
    hashes: np.ndarray,
    offsets: np.ndarray,
    weights: np.ndarray | None = None,
    f: int = 64,
) -> np.ndarray:
    """Per document and bit i, the sum of +w over features whose hash has bit i set and -w over the rest.

    hashes: uint64, the features of all documents one after another; offsets: int64 of length n_docs + 1,
    document d owns hashes[offsets[d]:offsets[d+1]]; weights: int64 per feature occurrence (None means 1
    each, i.e. term frequency); f: fingerprint width (<= 64; the low f bits of each hash are used).
    Returns an int64 array of shape (n_docs, f).

    How: for each of the 16 nibbles of the hashes, one bincount gives each document's (weighted) histogram
    of nibble values, and a (16 x 4) 0/1 matrix turns histograms into the weight of 1-bits per bit. That is
    16 linear passes over the features and 16 bins a document and nibble (bytes would take half the passes
    but 256 bins each, most of them empty on short pages: twice the time). Weights are integers and every
    sum stays far below 2^53, so the float64 products are exact.
    """
    hashes = np.ascontiguousarray(hashes, dtype="<u8")
    offsets = np.asarray(offsets, dtype=np.int64)
    n_docs = len(offsets) - 1
    if not 1 <= f <= 64:
        raise ValueError("f must be in 1..64")
    lengths = np.diff(offsets)
    doc_base = np.repeat(np.arange(n_docs, dtype=np.int64) * 16, lengths)
    w = None if weights is None else np.asarray(weights, dtype=np.float64)
    total = lengths.astype(np.float64) if w is None else np.add.reduceat(np.r_[w, 0.0], offsets[:-1]) * (lengths > 0)
    ones = np.empty((n_docs, 64), dtype=np.float64)
    for p in range((f + 3) // 4):
        bin_of = hashes >> np.uint64(4 * p)  # each feature's bin: its document's 16, its nibble's value (in place)
        bin_of &= np.uint64(15)
        bin_of = bin_of.view(np.int64)
        bin_of += doc_base
        hist = np.bincount(bin_of, weights=w, minlength=n_docs * 16)
        ones[:, 4 * p : 4 * p + 4] = hist.reshape(n_docs, 16) @ _NIBBLE_BITS
    return (2 * ones[:, :f] - total[:, None]).astype(np.int64)


def simhash_from_hashes(
    hashes: np.ndarray,
    offsets: np.ndarray,
    weights: np.ndarray | None = None,
    f: int = 64,
) -> np.ndarray:
    """uint64 fingerprints: bit i is set iff the weighted sum of bit i is > 0 (a document without
    features gets 0). Arguments as for weighted_bit_sums."""
    sums = weighted_bit_sums(hashes, offsets, weights, f)
    set_bits = np.zeros((len(sums), 64), dtype=bool)
    set_bits[:, :f] = sums > 0
    return np.packbits(set_bits, axis=1, bitorder="little").view("<u8").reshape(len(sums))


def to_signed(fingerprints: np.ndarray) -> np.ndarray:
    """uint64 -> int64 with the same bits (the storage form)."""
    return np.asarray(fingerprints, dtype=np.uint64).view(np.int64)


@lru_cache(maxsize=1)
def jieba_idf() -> tuple[dict[str, int], int]:
    """jieba's own idf table (jieba/analyse/idf.txt) as integer weights, and the median for unknown words."""
    import jieba  # here, not at the top: its dictionary loads slowly, and only tf-idf with jieba's table needs it

    path = os.path.join(os.path.dirname(jieba.__file__), "analyse", "idf.txt")
    table: dict[str, int] = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            word, _, value = line.rstrip("\n").rpartition(" ")
            if word:
                table[word] = int(round(float(value) * IDF_SCALE))
    median = int(np.median(np.fromiter(table.values(), dtype=np.int64)))
    return table, median


class CorpusIdf:
    """Integer idf weights of the features of one corpus (weighting "tfidf-corpus"), smoothed as
    idf = ln((1 + N) / (1 + df)) + 1 and scaled by IDF_SCALE. Only features in at least two documents are
    stored; any other feature weighs as a feature of one document. Equal and hashed by a digest of its
    content, which also goes into the fingerprint version: these fingerprints depend on the corpus."""

    def __init__(self, doc_freq: dict[str, int], n_docs: int):
        self.n_docs = n_docs
        weight = lambda df: int(round((np.log((1 + n_docs) / (1 + df)) + 1) * IDF_SCALE))  # noqa: E731
        self.table = {t: weight(df) for t, df in doc_freq.items() if df >= 2}
        self.unknown = weight(1)
        h = hashlib.sha1(str(n_docs).encode())
        for t in sorted(self.table):
            h.update(f"{t}\x1e{self.table[t]}\x1f".encode())
        self.digest = h.hexdigest()[:12]

    def __eq__(self, other) -> bool:
        return isinstance(other, CorpusIdf) and other.digest == self.digest

    def __hash__(self) -> int:
        return hash(self.digest)


@dataclass(frozen=True)
class FeatureSpec:
    """What a feature is and how it is weighted: everything the fingerprint version depends on."""

    tokenizer: str = "auto"
    weighting: str = "binary"  # a set of distinct features, what Jaccard measures: precise on real text (docs/quality.md)
    char_ngram: int = 5
    word_ngram: int = 1
    segmenter: str = "rjieba"
    stop_words: bool = False
    idf: CorpusIdf | None = field(default=None, repr=False)  # for weighting "tfidf-corpus", set by the job

    def version(self) -> str:
        if self.tokenizer == "char":
            feats = f"char{self.char_ngram}"
        else:
            feats = self.tokenizer + (f"-w{self.word_ngram}" if self.word_ngram > 1 else "")
            if self.tokenizer in ("auto", "jieba"):
                feats += f"({segmenter_version(self.segmenter)})"
            feats += "-stop" if self.stop_words else ""
        weighting = self.weighting + (f"({self.idf.digest})" if self.weighting == "tfidf-corpus" and self.idf else "")
        return f"{DEFINITION_VERSION}/{self.normalisation()}/{feats}/{weighting}/mmh3x64"

    def normalisation(self) -> str:
        """The normalisation's name. Character n-grams also fold Chinese punctuation to ASCII
        (text.normalize_text), named "-punct" so that a history of char fingerprints made without the fold is
        refused, not misread; word features never hold punctuation and are the same with or without it."""
        return "nfkc-lower-digit0-hanjoin-punct-ws" if self.tokenizer == "char" else "nfkc-lower-digit0-hanjoin-ws"


def features_of(text: str, spec: FeatureSpec) -> list[str]:
    if spec.stop_words and spec.tokenizer != "char":
        return features_without_stop_words(text, spec.tokenizer, spec.word_ngram, spec.segmenter)
    return features(text, spec.tokenizer, spec.char_ngram, spec.word_ngram, spec.segmenter)


def weights_of(features: list[str], spec: FeatureSpec) -> tuple[list[str], np.ndarray | None]:
    """Feature occurrences and their integer weights (None means 1 per occurrence: term frequency)."""
    if spec.weighting == "tf":
        return features, None
    if spec.weighting == "binary":
        unique = list(dict.fromkeys(features))
        return unique, None
    if spec.weighting == "tfidf":
        table, median = jieba_idf()
        return features, np.fromiter((table.get(t, median) for t in features), dtype=np.int64, count=len(features))
    if spec.weighting == "tfidf-corpus":
        if spec.idf is None:
            raise ValueError("weighting tfidf-corpus needs the corpus idf table (FeatureSpec.idf; the job computes it)")
        table, unknown = spec.idf.table, spec.idf.unknown
        return features, np.fromiter((table.get(t, unknown) for t in features), dtype=np.int64, count=len(features))
    raise ValueError(f"unknown weighting {spec.weighting!r}; choose one of {', '.join(WEIGHTINGS)}")


def distinct_auto_features(spec: FeatureSpec) -> bool:
    """Whether the spec's features are the distinct auto tokens (binary weights, the default), which have
    fast paths: auto_set per page, split_pages per Arrow batch."""
    return spec.weighting == "binary" and spec.tokenizer == "auto" and spec.word_ngram <= 1 and not spec.stop_words


def weighted_features(text: str, spec: FeatureSpec):
    """weights_of(features_of(text, spec), spec); binary weights of auto tokens (the default) take the
    fast path that de-duplicates the segmenter's output before anything else touches it. The features'
    order is then arbitrary: the bit sums are integer sums, the same in any order."""
    if distinct_auto_features(spec):
        return auto_set(text, spec.segmenter), None
    return weights_of(features_of(text, spec), spec)


def fingerprint_batch(texts: Iterable[str | None], spec: FeatureSpec = FeatureSpec(),
                      signature: SignatureSpec | None = None) -> tuple[np.ndarray, ...]:
    """Fingerprints (int64) and feature counts (int32) of a batch of texts; with `signature`, also the
    verification signatures of the same features (pages x bins, signature.py).

    A null text gets feature count -1, a text with no features (empty, only punctuation or white space)
    gets 0; for both the fingerprint is 0 and the caller stores null (and no signature).
    """
    if spec.tokenizer == "char" and spec.weighting == "binary":
        return char_ngram_fingerprints(texts, spec.char_ngram, signature)
    return _fingerprints((None if text is None else weighted_features(text, spec) for text in texts), spec, signature)


def char_ngram_fingerprints(texts: Iterable[str | None], n: int,
                            signature: SignatureSpec | None = None) -> tuple[np.ndarray, ...]:
    """fingerprint_batch with the distinct character n-grams of each text as its features (binary weights: the
    short-text fingerprint's), the same values: the texts are normalised together (text.normalize_texts), then
    their n-grams are found, made distinct and hashed for the whole batch in numpy, none of them a Python str.

    An n-gram is the UTF-8 bytes of n characters (a text shorter than n: its whole text); all of a text's are
    hashed, and two with the same hash in one text are the same n-gram, checked on their code points: a
    collision of different ones (never seen) sends the batch to the per-text path, so the features are exactly
    its distinct n-grams."""
    texts = list(texts)
    normals = normalize_texts(["" if t is None else t for t in texts])
    chars = np.fromiter(map(len, normals), dtype=np.int64, count=len(normals))
    windows = np.where(chars >= n, chars - n + 1, chars > 0)
    joined = "".join(normals)
    buf = padded_buffer(joined.encode("utf-8"))
    size = len(buf) - PAD
    char_byte = np.r_[np.flatnonzero((buf[:size] & 0xC0) != 0x80), size]  # the byte each character starts at
    char_start = np.r_[0, np.cumsum(chars)]
    page = np.repeat(np.arange(len(texts), dtype=np.int64), windows)
    first = np.repeat(char_start[:-1] - np.r_[0, np.cumsum(windows)][:-1], windows) + np.arange(len(page))
    last = np.minimum(first + n, char_start[page + 1])  # the window's end (a short text's own end)
    hashes = mmh3_64_batch(buf, char_byte[first], char_byte[last])
    order, again = repeats_in_page(hashes, page)
    if len(again):
        code = np.frombuffer(joined.encode("utf-32-le"), dtype="<u4")
        a, b = order[again], order[again - 1]
        same = last[a] - first[a] == last[b] - first[b]
        for j in range(n):
            inside = j < last[a] - first[a]
            same &= ~inside | (code[np.minimum(first[a] + j, len(code) - 1)] == code[np.minimum(first[b] + j, len(code) - 1)])
        if not same.all():
            spec = FeatureSpec(tokenizer="char", weighting="binary", char_ngram=n)
            return _fingerprints((None if t is None else weighted_features(t, spec) for t in texts), spec, signature)
        order = np.delete(order, again)
    page, hashes = page[order], hashes[order]
    counts = np.bincount(page, minlength=len(texts)).astype(np.int32)
    counts[[i for i, t in enumerate(texts) if t is None]] = -1
    return binary_fingerprints(hashes, counts, signature)


def fingerprint_arrow(texts: pa.Array, spec: FeatureSpec = FeatureSpec(),
                      signature: SignatureSpec | None = None, chars: BatchChars | None = None) -> tuple[np.ndarray, ...]:
    """fingerprint_batch of an Arrow string array, the same values. For the default features the pages are
    normalised and split for the whole batch at once (text_batch.split_pages_bytes; chars: the batch's
    text_batch.classify(), when made already): the words of the rest are found, made distinct and hashed in
    numpy (distinct_words), the Han runs go to the segmenter (han_features), and only pages with characters outside
    its table are turned into Python strings for the per-page path."""
    if not distinct_auto_features(spec):
        return fingerprint_batch(texts.to_pylist(), spec, signature)
    han, rest, rest_offsets, slow = split_pages_bytes(texts, chars)
    valid = np.asarray(texts.is_valid())
    words = distinct_words(rest, rest_offsets, valid & ~slow)
    slow_pages = np.flatnonzero(slow & valid).tolist()
    for i in slow_pages:
        han[i] = ""
    joined, counts = han_features(han, segmenter(spec.segmenter))
    for i in slow_pages:
        features = auto_set(texts[i].as_py(), spec.segmenter)
        joined[i], counts[i] = FEATURE_SEPARATOR.join(features), len(features)
    counts[~valid] = -1
    result = None if words is None else fingerprints_of_joined(joined, counts, signature, words)
    # two different words of a page with one hash, or a feature holding the separator (never seen): per page
    return fingerprint_batch(texts.to_pylist(), spec, signature) if result is None else result


FEATURE_SEPARATOR = "\n"  # no auto feature holds white space: the separator of the joined features


def han_features(han: list[str], cut) -> tuple[list[str], np.ndarray]:
    """From each page's Han runs joined by RUN_SEPARATOR (split_pages_bytes), its distinct tokens (text.distinct_tokens
    without words) joined by FEATURE_SEPARATOR ("" for a page without), and their numbers (int32). One segmenter call
    a page with Han; its tokens go into a set, which is joined at once: the set and the tokens are freed while they are
    still in the CPU's caches (building all the sets of a batch first and joining them after costs about a quarter more)."""
    joined: list[str] = []
    counts: list[int] = []
    for text in han:
        if text:
            tokens = set(cut(text))
            tokens.discard(RUN_SEPARATOR)
            joined.append(FEATURE_SEPARATOR.join(tokens))
            counts.append(len(tokens))
        else:
            joined.append("")
            counts.append(0)
    return joined, np.array(counts, dtype=np.int32)


def distinct_words(rest: bytes, offsets: np.ndarray, use: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(hashes, page) of the distinct words of each page's rest (split_pages_bytes: ASCII, words between spaces)
    for the pages in `use`, ordered by page, never as Python strings; None when two different words of a page have
    one hash (distinct_pieces)."""
    buf = padded_buffer(rest)
    for i in np.flatnonzero(~use & (offsets[1:] > offsets[:-1])).tolist():  # the pages not asked for: no words
        buf[offsets[i]:offsets[i + 1]] = SPACE
    word = np.zeros(len(rest) + 2, dtype=np.int8)  # a non-word byte either side
    word[1:-1] = buf[:len(rest)] != SPACE
    edge = np.diff(word)  # 1 where a word starts, -1 after its end
    starts, ends = np.flatnonzero(edge == 1), np.flatnonzero(edge == -1)
    inner = np.unique(offsets[1:-1])  # (an empty page repeats an offset)
    joint = inner[(word[inner] == 1) & (word[inner + 1] == 1)]  # a word never runs into the next page: cut there
    if len(joint):
        starts = np.insert(starts, np.searchsorted(starts, joint), joint)
        ends = np.insert(ends, np.searchsorted(ends, joint), joint)
    page = np.repeat(np.arange(len(offsets) - 1), np.diff(np.searchsorted(starts, offsets)))
    return distinct_pieces(buf, starts, ends, page)


# An odd 64-bit multiplier (2^64 / golden ratio): multiplying by it is a bijection whose high bits depend on all bits.
_SPREAD = np.uint64(0x9E3779B97F4A7C15)
SHORT_PIECE = 7  # bytes: a piece this short is its own 64-bit key (its bytes and its length)


def distinct_pieces(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, page: np.ndarray,
                    ) -> tuple[np.ndarray, np.ndarray] | None:
    """(hashes, page) of the distinct pieces buf[starts[i]:ends[i]] of each page (pieces ordered by page; buf with
    PAD zero bytes after its end), ordered by page; None when two different pieces of a page have one hash.

    Each piece has a 64-bit key: a piece of at most SHORT_PIECE bytes its bytes and its length (the piece itself),
    a longer one its hash. The keys are made distinct per page (repeats_in_page, by the keys spread over their 64
    bits), and only then are the short pieces hashed: a repeated short piece is never hashed, nor its bytes compared.
    Two pieces with one key of which one is long are compared on their bytes."""
    length = ends - starts
    short = length <= SHORT_PIECE
    words = words_at(buf)
    key = (words[starts] & LOW_BYTES[np.minimum(length, SHORT_PIECE)]) | (length.astype(np.uint64) << np.uint64(56))
    long = np.flatnonzero(~short)
    key[long] = mmh3_64_batch(buf, starts[long], ends[long])
    with np.errstate(over="ignore"):
        order, again = repeats_in_page(key * _SPREAD, page)
    a, b = order[again], order[again - 1]
    pair = np.flatnonzero(~short[a] | ~short[b])  # both short: the same key is the same piece
    a, b = a[pair], b[pair]
    size = length[a]
    same = size == length[b]
    for k in (0, 8):
        mask = LOW_BYTES[np.clip(size - k, 0, 8)]
        same &= (words[starts[a] + k] & mask) == (words[starts[b] + k] & mask)
    for i in np.flatnonzero(same & (size > 16)):
        same[i] = np.array_equal(buf[starts[a[i]]:ends[a[i]]], buf[starts[b[i]]:ends[b[i]]])
    if not same.all():
        return None
    order = np.delete(order, again)
    hashes = key[order]
    at = np.flatnonzero(short[order])
    hashes[at] = mmh3_64_batch(buf, starts[order[at]], ends[order[at]])
    return hashes, page[order]


def repeats_in_page(hashes: np.ndarray, page: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(order, again): the features in (page, hash) order, and the places in that order whose feature has the hash
    of the one before it in the same page (order[again] and order[again - 1] are the pair; the caller checks
    that they are the same feature and drops order[again]).

    One sort of one 64-bit key, the page in its high bits and the hash's high bits below it (a quarter of the
    time of sorting by two keys); page holds non-negative ints. Two features of a page whose hashes differ only in
    the bits the key leaves out (never seen) could leave equal hashes apart: the batch is then sorted by both keys."""
    hashes = np.asarray(hashes, dtype=np.uint64)
    page_bits = max(1, int(page.max()).bit_length()) if len(page) else 1
    if page_bits >= 64:
        return repeats_in_page_by_two_keys(hashes, page)
    key = (page.astype(np.uint64) << np.uint64(64 - page_bits)) | (hashes >> np.uint64(page_bits))
    order = np.argsort(key, kind="stable")  # timsort: the pages arrive in order, so the key in runs
    ordered_key, ordered_hash = key[order], hashes[order]
    same_key = ordered_key[1:] == ordered_key[:-1]
    same_hash = ordered_hash[1:] == ordered_hash[:-1]
    if (same_key & ~same_hash).any():
        return repeats_in_page_by_two_keys(hashes, page)
    return order, np.flatnonzero(same_key) + 1


def repeats_in_page_by_two_keys(hashes: np.ndarray, page: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """repeats_in_page sorted by page, then hash (the reference, and the way out of a key collision)."""
    order = np.lexsort((hashes, page))
    again = np.flatnonzero((hashes[order[1:]] == hashes[order[:-1]]) & (page[order[1:]] == page[order[:-1]])) + 1
    return order, again


def fingerprints_of_joined(joined: list[str], counts: np.ndarray, signature: SignatureSpec | None = None,
                           more: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, ...] | None:
    """_fingerprints of each text's distinct features with binary weights, the same values, hashed in numpy
    (mmh3_batch): joined[i] is text i's distinct str features joined by FEATURE_SEPARATOR ("" for none), counts[i]
    their number (-1 for a null text); `more`: (hashes, page) of more distinct features of the texts (ordered by
    page), none of them among the text's str features.

    The texts' joined features are joined again, and the batch's are encoded and hashed at once: no Python int and
    no look-up per feature. A feature that holds the separator would shift the pieces: the count shows it, and
    then there is no result (None). Each text's joined features give at least its count of pieces, but for a text
    whose only feature is "" (no piece): that one is refused first, so that no other text's extra piece can make
    up for it in the batch's sum."""
    if any(c > 0 and not part for part, c in zip(joined, counts.tolist())):
        return None
    parts = [part for part in joined if part]
    hashes = hash_joined(FEATURE_SEPARATOR.join(parts)) if parts else np.zeros(0, np.uint64)
    if len(hashes) != np.maximum(counts, 0).sum():
        return None
    if more is not None and len(more[0]):
        page = np.concatenate([np.repeat(np.arange(len(counts)), np.maximum(counts, 0)), more[1]])
        hashes = np.concatenate([hashes, more[0]])[np.argsort(page, kind="stable")]
        counts = counts + np.bincount(more[1], minlength=len(counts)).astype(np.int32)
    return binary_fingerprints(hashes, counts, signature)


def binary_fingerprints(hashes: np.ndarray, counts: np.ndarray,
                        signature: SignatureSpec | None = None) -> tuple[np.ndarray, ...]:
    """The fingerprints (and signatures) of texts from their distinct features' hashes with binary weights, the
    texts' hashes one after another; counts: features per text (-1 for a null text, which has none)."""
    offsets = np.r_[0, np.cumsum(np.maximum(counts, 0), dtype=np.int64)]
    fps = simhash_from_hashes(hashes, offsets)
    if signature is None:
        return to_signed(fps), counts
    return to_signed(fps), counts, oph_signatures(hashes, offsets, signature)[0]


def _fingerprints(weighted, spec: FeatureSpec, signature: SignatureSpec | None = None) -> tuple[np.ndarray, ...]:
    """Fingerprints and feature counts (and signatures) from each text's (features, weights or None), None
    for a null text. The signature is computed from the same hashes as the fingerprint: no second pass.

    A text's features are hashed as soon as they are made, while their str objects are still in the CPU's
    caches (looking them up after the whole batch costs about twice as much)."""
    hashes: list[int] = []
    weight_parts: list[np.ndarray] = []
    lengths: list[int] = []
    lookup = _HASHES.__getitem__
    for item in weighted:
        if item is None:
            lengths.append(-1)
            continue
        feats, w = item
        hashes.extend(map(lookup, feats))
        lengths.append(len(feats))
        if w is not None:
            weight_parts.append(w)
    counts = np.asarray(lengths, dtype=np.int32)
    offsets = np.r_[0, np.cumsum(np.maximum(counts, 0), dtype=np.int64)]
    weights = np.concatenate([np.zeros(0, np.int64), *weight_parts]) if spec.weighting.startswith("tfidf") else None
    hash_array = np.array(hashes, dtype=np.uint64)
    fps = simhash_from_hashes(hash_array, offsets, weights)
    if signature is None:
        return to_signed(fps), counts
    return to_signed(fps), counts, oph_signatures(hash_array, offsets, signature)[0]


def fingerprint_text(text: str, spec: FeatureSpec = FeatureSpec()) -> int | None:
    """One text's fingerprint as a Python int64, or None when it has no features."""
    fps, counts = fingerprint_batch([text], spec)
    return int(fps[0]) if counts[0] > 0 else None


