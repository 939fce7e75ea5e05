r"""Longest-sentence keys: a third candidate source beside the SimHash tables and the signature bands (pure
Python/numpy, no Spark).

A page copied into another page (a site's frame of header, menu and footer, reader comments, an inserted ad)
is not Jaccard-similar to its original when the added part is large, and its fingerprint moves far. What
survives is the article's longest sentences: menus, footers, comments and ads are made of short lines (the
longest-sentence signature of the seed documents, n = 3). Two pages that share one of their n longest
sentences are compared and verified like any other pair (verified.py: similar, or contained within a size
bound).

Definition (version "sent{n}x{min_chars}"):
  the page is cut into sentences at every character whose NFKC form holds a sentence end of Chinese or English
  text (`。.!?;`: so also `！？；．｡`, `…`, the small and vertical forms) and at line ends (what str.splitlines
  cuts at); the cutting character belongs to no sentence;
  a sentence's length is its number of letters: characters of Python's `[^\W\d_]` (white space, punctuation,
  digits and `_` not counted, so ASCII against full-width punctuation, spacing and numbers change no length);
  its text is its letters alone after NFKC and lower case (`normalized`);
  of the sentences of at least min_chars letters, the n with the most letters whose texts differ (a text's
  length: the most letters of the sentences that have it), ties in code-point order of the text;
  each one's key: the first 64 bits of MurmurHash3 x64-128 of its text's UTF-8 (seed SEED), as a signed int64.

Counted over a whole Arrow batch at once in numpy (each character classified by a table of code points, the
letters of every sentence summed), so only the few longest sentences of a page become Python strings: the
keys cost a small share of the fingerprint pass that computes them.

A key shared by more than max_group pages (a licence sentence, a site's slogan) makes no group: its pairs are
not compared (they would grow as the square of the group) and the skipped keys are counted in the report.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

import mmh3
import numpy as np
import pyarrow as pa

from .mmh3_batch import LOW_BYTES, mmh3_64_batch, padded_buffer, words_at
from .text_batch import BatchChars, classify, classify_bytes

SEED = 0x5E47  # distinct from the features' seed 0: a one-word sentence's key is not that word's feature hash
LINE_ENDS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"  # what str.splitlines cuts at
SENTENCE_ENDS = "。.!?;"
LETTERS = re.compile(r"[^\W\d_]+")
# Code points whose NFKC form can hold a sentence end (an exhaustive scan finds none elsewhere:
# tests/test_sentence_keys.py), and the end of the code points that can be letters (none above it is one).
END_RANGES = ((0x20, 0x80), (0x80, 0x3400), (0xF900, 0x10000), (0x1F100, 0x1F200))
LETTER_LIMIT = 0x32400
OTHER, LETTER, END = 0, 1, 2
MAX_SENTENCE_BLOCKS = 64  # sentence texts of up to 1 KB hashed in numpy (mmh3_batch), longer ones by mmh3


@lru_cache(maxsize=1)
def char_classes() -> np.ndarray:
    """uint8 per code point below LETTER_LIMIT: LETTER, END or OTHER, and OTHER at LETTER_LIMIT (for every code
    point from there on)."""
    chars = "".join(" " if 0xD800 <= c < 0xE000 else chr(c) for c in range(LETTER_LIMIT))
    table = np.zeros(LETTER_LIMIT + 1, dtype=np.uint8)  # the last entry: every code point from LETTER_LIMIT on
    for m in LETTERS.finditer(chars):
        table[m.start():m.end()] = LETTER
    for lo, hi in END_RANGES:
        for c in range(lo, hi):
            if any(e in unicodedata.normalize("NFKC", chr(c)) for e in SENTENCE_ENDS):
                table[c] = END
    table[[ord(c) for c in LINE_ENDS]] = END
    return table


_NOT_ASCII_LETTERS = bytes(c for c in range(128) if not chr(c).isalpha())


def normalized(sentence: str) -> str:
    """A sentence's text: its letters alone, after NFKC and lower case."""
    return "".join(LETTERS.findall(unicodedata.normalize("NFKC", sentence).lower()))


def normalized_utf8(raw: bytes) -> str:
    """normalized of a sentence's UTF-8 bytes; ASCII ones by a bytes translate (NFKC leaves ASCII as it is)."""
    if raw.isascii():
        return raw.translate(None, _NOT_ASCII_LETTERS).lower().decode("ascii")
    return normalized(raw.decode("utf-8"))


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


@lru_cache(maxsize=1)
def _end_pattern() -> re.Pattern:
    """The characters that cut sentences (END in char_classes), as one character class."""
    ends = np.flatnonzero(char_classes() == END)
    return re.compile("[" + "".join(re.escape(chr(c)) for c in ends) + "]")


def longest_sentences(text: str, spec: SentenceKeySpec) -> list[str]:
    """The texts of the page's n longest sentences (the definition above, one page in Python; sentence_keys
    computes the same for a batch)."""
    if not spec.enabled:
        return []
    best: dict[str, int] = {}
    for piece in _end_pattern().split(text):
        letters = sum(map(len, LETTERS.findall(piece)))
        if letters >= spec.min_chars and (t := normalized(piece)):
            best[t] = max(best.get(t, 0), letters)
    return [t for t, _ in sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))[: spec.n]]


def sentence_key(sentence: str | bytes) -> int:
    """A sentence text's key (signed int64), of the text or of its UTF-8."""
    return mmh3.hash64(sentence, SEED, True, True)[0]


def sentence_keys(texts, spec: SentenceKeySpec, chars: BatchChars | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(keys int64, offsets int64) of an Arrow string array (or a list of str or None) of pages: page i owns
    keys[offsets[i]:offsets[i+1]], in the order of longest_sentences (none for a null page or one without a
    long enough sentence). chars: the batch's text_batch.classify(), when the fingerprint pass has made it.

    The sentences' letters are counted for the whole batch in numpy (_long_segments). Only a page's candidates
    for its n longest (its sentences with at least the letters of its n-th longest) get a text, from the
    normalised letters of those sentences alone (_candidate_letters); they are hashed (mmh3_batch) and ordered
    by letters and text in numpy (_ordered_candidates). A page whose candidates repeat a text, or tie on
    letters and on the first 16 bytes of their texts, goes through _chosen, one page at a time in Python."""
    if chars is None:
        if not isinstance(texts, (pa.Array, pa.ChunkedArray)):
            texts = pa.array(texts, pa.large_string())
        chars = classify(texts)
    n_pages = len(chars.offsets) - 1
    segments = _long_segments(chars, spec.min_chars) if spec.enabled and len(chars.data) else None
    if segments is None or len(segments[0]) == 0:
        return np.zeros(0, np.int64), np.zeros(n_pages + 1, np.int64)
    page, counts, byte_lo, byte_hi = segments
    first = np.flatnonzero(np.r_[True, page[1:] != page[:-1]])  # each page's first candidate
    size = np.diff(np.r_[first, len(page)])
    group = np.repeat(np.arange(len(first)), size)
    read = np.flatnonzero(counts >= counts[first + np.minimum(size, spec.n) - 1][group])
    buf, starts, ends = _candidate_letters(chars, byte_lo[read], byte_hi[read])
    keys = mmh3_64_batch(buf, starts, ends, SEED, MAX_SENTENCE_BLOCKS).view(np.int64)
    order, rank, unsure = _ordered_candidates(group[read], counts[read], keys, buf, starts, ends, len(first))
    taken = order[(rank < spec.n) & ~unsure[group[read][order]]]
    pages, page_keys = [page[read[taken]]], [keys[taken]]
    count_list, lo_list, hi_list = counts.tolist(), byte_lo.tolist(), byte_hi.tolist()
    position = np.full(len(page), -1, np.int64)
    position[read] = np.arange(len(read))

    def text_of(i: int) -> bytes:
        at = position[i]
        if at >= 0:
            return buf[starts[at]:ends[at]].tobytes()
        return normalized_utf8(chars.data[lo_list[i]:hi_list[i]].tobytes()).encode("utf-8")

    for p in np.flatnonzero(unsure).tolist():
        chosen = _chosen(text_of, count_list, int(first[p]), int(first[p] + size[p]), spec.n)
        pages.append(np.full(len(chosen), page[first[p]], np.int64))
        page_keys.append(np.array([sentence_key(t) for t in chosen], np.int64))
    out_page, out_key = np.concatenate(pages), np.concatenate(page_keys)
    by_page = np.argsort(out_page, kind="stable")
    return out_key[by_page], np.r_[0, np.cumsum(np.bincount(out_page, minlength=n_pages))]


def _ordered_candidates(group: np.ndarray, counts: np.ndarray, keys: np.ndarray, buf: np.ndarray, starts: np.ndarray,
                        ends: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(order, rank, unsure) of candidates (by group: their page's group, letters, keys and texts
    buf[starts:ends]): the candidates ordered by group, most letters and then text (its first 16 bytes: UTF-8
    orders as code points do), each one's rank in its group in that order, and per group whether that may not
    be _chosen's order: an empty text, two candidates of one key (a text repeated), or two of the same letters
    whose texts start with the same 16 bytes."""
    lengths = ends - starts
    words = words_at(buf)
    head = (words[starts] & LOW_BYTES[np.clip(lengths, 0, 8)]).byteswap()
    next_head = (words[starts + 8] & LOW_BYTES[np.clip(lengths - 8, 0, 8)]).byteswap()
    order = np.lexsort((next_head, head, -counts, group))
    g, c, h, h2 = group[order], counts[order], head[order], next_head[order]
    first = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    rank = np.arange(len(order)) - np.repeat(first, np.diff(np.r_[first, len(order)]))
    unsure = np.zeros(n_groups, dtype=bool)
    unsure[g[1:][(g[1:] == g[:-1]) & (c[1:] == c[:-1]) & (h[1:] == h[:-1]) & (h2[1:] == h2[:-1])]] = True
    unsure[group[lengths == 0]] = True
    by_key = np.lexsort((keys, group))
    g, k = group[by_key], keys[by_key]
    unsure[g[1:][(g[1:] == g[:-1]) & (k[1:] == k[:-1])]] = True
    return order, rank, unsure


def _long_segments(chars: BatchChars, min_chars: int):
    """(page, letters, byte_lo, byte_hi) of every sentence of at least min_chars letters of a batch's UTF-8
    bytes, ordered by page and then by letters, most first; byte_hi stops before the cutting character.

    Counted over bytes, not characters: a character's class sits on its first byte (continuation bytes are
    OTHER), so sums of letters and the cuts need no array of character positions; the sentences' bounds are
    merged from the pages' starts and the cuts (far fewer than bytes). The non-ASCII characters are the batch's
    classified ones (text_batch.classify): Han of three bytes (U+3400-U+4DBF, U+4E00-U+9FFF) are letters
    (tests/test_sentence_keys.py checks the ranges against the table), the others' code points are looked up."""
    table = char_classes()
    data, offsets, lead = chars.data, chars.offsets, chars.lead
    cls = np.take(_byte_classes(), data)  # ASCII by the table, Han of three bytes by their first byte
    if len(lead):
        cls[lead[chars.other]] = np.take(table, np.minimum(chars.code, LETTER_LIMIT))
        han4 = lead[chars.is_han & (chars.width == 4)]
        if len(han4):
            cls[han4] = table[np.minimum(_decoded(data, han4), LETTER_LIMIT)]
    end_lead = np.flatnonzero(cls == END)
    b0 = data[end_lead]
    after_end = end_lead + 1 + (b0 >= 0xC0) + (b0 >= 0xE0) + (b0 >= 0xF0)  # the byte after each cutting character
    bounds = np.concatenate([offsets, after_end])
    bounds.sort(kind="stable")
    bounds = bounds[np.r_[True, bounds[1:] != bounds[:-1]]]
    lo, hi = bounds[:-1], bounds[1:]
    counts = np.add.reduceat((cls == LETTER).view(np.uint8), lo, dtype=np.int32)  # bounds are distinct
    keep = counts >= min_chars
    lo, hi, counts = lo[keep], hi[keep], counts[keep].astype(np.int64)
    page = np.searchsorted(offsets, lo, side="right") - 1
    byte_hi = hi
    if len(after_end):  # a sentence cut off by a character stops before it
        at = np.minimum(np.searchsorted(after_end, hi), len(after_end) - 1)
        byte_hi = np.where(after_end[at] == hi, end_lead[at], hi)
    order = np.lexsort((-counts, page))
    return page[order], counts[order], lo[order], byte_hi[order]


def _candidate_letters(chars: BatchChars, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(buf, starts, ends): the text (`normalized`, as UTF-8) of the sentence data[lo[i]:hi[i]] of a batch is
    buf[starts[i]:ends[i]] (buf padded for mmh3_batch). The sentences' bytes are joined (in the batch's order)
    into a batch of their own, a sentence a page, whose letters _letters reads in numpy: the work is on the
    candidates' bytes, a small share of the batch's. A sentence with a slow character (BatchChars.slow) is
    normalised in Python, its text put after the others."""
    order = np.argsort(lo, kind="stable")
    lo, hi = lo[order], hi[order]
    lo_list, hi_list, data = lo.tolist(), hi.tolist(), chars.data.tobytes()
    joined = np.frombuffer(b"".join([data[a:b] for a, b in zip(lo_list, hi_list)]), np.uint8)
    sentences = classify_bytes(joined, np.r_[0, np.cumsum(hi - lo)])
    letters, bounds = _letters(sentences)
    starts, ends = np.empty(len(order), np.int64), np.empty(len(order), np.int64)
    starts[order], ends[order] = bounds[:-1], bounds[1:]
    slow = np.flatnonzero(sentences.slow)
    if len(slow):
        texts = [normalized_utf8(chars.data[lo_list[i]:hi_list[i]].tobytes()).encode("utf-8") for i in slow.tolist()]
        ends[order[slow]] = len(letters) + np.cumsum([len(t) for t in texts])
        starts[order[slow]] = ends[order[slow]] - [len(t) for t in texts]
        letters += b"".join(texts)
    return padded_buffer(letters), starts, ends


@lru_cache(maxsize=1)
def _byte_classes() -> np.ndarray:
    """The class of each byte value: an ASCII character's, LETTER for the first bytes of U+3000-U+9FFF (E3-E9:
    the Han of three bytes; the other characters they begin are BatchChars.other, looked up), OTHER for the
    other bytes from 0x80 on."""
    out = np.full(256, OTHER, dtype=np.uint8)
    out[:128] = char_classes()[:128]
    out[0xE3:0xEA] = LETTER
    return out


def _decoded(data: np.ndarray, lead: np.ndarray) -> np.ndarray:
    """Code points of the UTF-8 characters whose first bytes are at lead (bytes past the end read as the last)."""
    b0 = data[lead].astype(np.int32)
    b1, b2, b3 = (data.take(lead + i, mode="clip").astype(np.int32) & 0x3F for i in (1, 2, 3))
    return np.where(
        b0 < 0xE0, ((b0 & 0x1F) << 6) | b1,
        np.where(b0 < 0xF0, ((b0 & 0x0F) << 12) | (b1 << 6) | b2, ((b0 & 0x07) << 18) | (b1 << 12) | (b2 << 6) | b3))


def _chosen(text_of, counts: list[int], a: int, b: int, n: int) -> list[bytes]:
    """The n texts of one page's candidates a:b (most letters first; text_of(i): candidate i's text): a text's
    length is the most letters of its sentences, so the candidates are read until n texts are known and the
    next one has fewer letters than the n-th (ties are all read, then ordered by text)."""
    best: dict[bytes, int] = {}  # UTF-8 orders as code points do
    nth = -1
    for i in range(a, b):
        c = counts[i]
        if c < nth:
            break
        t = text_of(i)
        if t and t not in best:
            best[t] = c
            if len(best) == n:
                nth = c
    return [t for t, _ in sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))[:n]]


@lru_cache(maxsize=1)
def _ascii_letters() -> tuple[np.ndarray, np.ndarray]:
    """Per byte value: whether it is an ASCII letter, and its normalised letter byte: an ASCII letter in lower
    case, 0 for any other ASCII byte, every byte from 0x80 on as it is."""
    is_letter = np.array([c < 128 and chr(c).isalpha() for c in range(256)])
    out = np.array([ord(chr(c).lower()) if is_letter[c] else 0 if c < 128 else c for c in range(256)], dtype=np.uint8)
    return is_letter, out


def _letters(chars: BatchChars) -> tuple[bytes, np.ndarray]:
    """(letters, starts): the normalised letters of the batch's characters (their `normalized` text: an ASCII
    letter in lower case, a Han letter as it is, a fold-table character that normalises to an ASCII letter as
    that letter, nothing for any other) one after another, and where each page's begin in them (n + 1 offsets),
    so that page i's text is letters[starts[i]:starts[i+1]]. Right for pages without a slow character
    (BatchChars.slow) only: fold-table characters never compose with a neighbour, so the normalised letters
    of such a page are its characters' one by one. Each byte is mapped to its letter byte (0: none) by one
    table; the bytes of the non-Han characters are then cleared, and a fold-table letter's first byte set."""
    is_letter, letter_byte = _ascii_letters()
    data, lead, offsets = chars.data, chars.lead, chars.offsets
    out = np.take(letter_byte, data)
    if len(lead):
        four = np.flatnonzero(chars.is_han & (chars.width == 4))
        if len(four):  # inert Han beyond the BMP: letters where the table says so (unassigned ones are not)
            not_letter = four[char_classes()[np.minimum(_decoded(data, lead[four]), LETTER_LIMIT)] != LETTER]
            for k in range(4):
                out[lead[not_letter] + k] = 0
        other, folded, width = lead[chars.other], chars.folded, chars.width[chars.other]
        for k in range(4):
            out[other[width > k] + k] = 0
        as_letter = (folded >= 0) & is_letter[np.maximum(folded, 0)]
        out[other[as_letter]] = folded[as_letter]
    keep = out != 0
    per_page = np.zeros(len(offsets) - 1, np.int64)
    filled = np.flatnonzero(offsets[1:] > offsets[:-1])
    if len(filled):
        per_page[filled] = np.add.reduceat(keep.view(np.uint8), offsets[filled], dtype=np.int64)
    return out[keep].tobytes(), np.r_[0, np.cumsum(per_page)]


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
