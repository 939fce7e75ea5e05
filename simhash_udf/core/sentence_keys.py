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

Computed for a whole Arrow batch at once in numpy: each byte coded by one table (the non-ASCII characters
that are not Han by their code points, from the batch's text_batch.classify), the letters of every sentence
counted, and only the candidates for a page's n longest read as texts, hashed and ordered; a page whose
candidates tie on letters and share the start of their texts, or repeat a text, is chosen in Python. The
keys cost a small share of the fingerprint pass that computes them (docs/quality.md).

A key shared by more than max_group pages (a licence sentence, a site's slogan) makes no group: its pairs are
not compared (they would grow as the square of the group) and the skipped keys are counted in the report.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from itertools import repeat

import mmh3
import numpy as np
import pyarrow as pa

from .mmh3_batch import LOW_BYTES, mmh3_64_batch, padded_buffer, words_at
from .text_batch import BatchChars, all_chars, classify

SEED = 0x5E47  # distinct from the features' seed 0: a one-word sentence's key is not that word's feature hash
LINE_ENDS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"  # what str.splitlines cuts at
SENTENCE_ENDS = "。.!?;"
LETTERS = re.compile(r"[^\W\d_]+")
# Code points whose NFKC form can hold a sentence end (an exhaustive scan finds none elsewhere:
# tests/test_sentence_keys.py), and the end of the code points that can be letters (none above it is one).
END_RANGES = ((0x20, 0x80), (0x80, 0x3400), (0xF900, 0x10000), (0x1F100, 0x1F200))
LETTER_LIMIT = 0x32400
OTHER, LETTER, END = 0, 1, 2
END_CODE, TEXT_MIN = 1, 0x61  # _coded: a cutting character's first byte; the least byte of a text ('a')
MAX_SENTENCE_BLOCKS = 16  # sentence texts of up to 256 bytes hashed in numpy (mmh3_batch), longer ones by mmh3
# Letters a sentence needs to be prose (page_prose): a site frame's header, menu and link lines have fewer
PROSE_MIN_LETTERS = 40


@lru_cache(maxsize=1)
def char_classes() -> np.ndarray:
    """uint8 per code point below LETTER_LIMIT: LETTER, END or OTHER, and OTHER at LETTER_LIMIT (for every code
    point from there on)."""
    chars = all_chars(LETTER_LIMIT)
    table = np.zeros(LETTER_LIMIT + 1, dtype=np.uint8)  # the last entry: every code point from LETTER_LIMIT on
    for m in LETTERS.finditer(chars):
        table[m.start():m.end()] = LETTER
    holds_end = re.compile(f"[{re.escape(SENTENCE_ENDS)}]").search
    for lo, hi in END_RANGES:
        normals = map(unicodedata.normalize, repeat("NFKC"), chars[lo:hi])
        table[lo:hi][np.fromiter(map(bool, map(holds_end, normals)), dtype=bool, count=hi - lo)] = END
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


def page_prose(text: str, min_letters: int) -> tuple[int, int, int]:
    """(letters, lead, tail) of a page's prose (one page in Python; sentence_keys_and_prose computes the same for
    a batch): the letters of its sentences (cut as for the keys) of at least min_letters letters, and the UTF-8
    bytes of the page before the first of them and after the last (the whole page's bytes for both when it has
    none). A site frame (header and menu above, link lines and footer below: short lines) adds no prose letters
    to the page it holds and adds to both its lead and its tail."""
    letters, first, last = 0, None, None
    at = 0
    for piece in _end_pattern().split(text):
        n = sum(map(len, LETTERS.findall(piece)))
        if n >= min_letters:
            letters += n
            first = at if first is None else first
            last = at + len(piece)
        at += len(piece) + 1  # the cutting character
    size = len(text.encode("utf-8"))
    if first is None:
        return 0, size, size
    return letters, len(text[:first].encode("utf-8")), len(text[last:].encode("utf-8"))


def sentence_keys(texts, spec: SentenceKeySpec, chars: BatchChars | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(keys int64, offsets int64) of an Arrow string array (or a list of str or None) of pages: page i owns
    keys[offsets[i]:offsets[i+1]], in the order of longest_sentences (none for a null page or one without a
    long enough sentence). chars: the batch's text_batch.classify(), when the fingerprint pass has made it."""
    keys, offsets, _ = sentence_keys_and_prose(texts, spec, chars)
    return keys, offsets


def sentence_keys_and_prose(texts, spec: SentenceKeySpec, chars: BatchChars | None = None,
                            prose_min: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """sentence_keys, and with prose_min > 0 each page's page_prose(text, prose_min) as a (pages x 3) int64
    array (letters, lead, tail; zeros for a null page), from the same count of the sentences' letters; None
    with prose_min 0.

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
    no_keys = np.zeros(0, np.int64), np.zeros(n_pages + 1, np.int64)
    if (not spec.enabled and prose_min <= 0) or len(chars.data) == 0:
        return (*no_keys, _prose(None, prose_min, chars.offsets) if prose_min > 0 else None)
    code, letter = _coded(chars)
    # the shortest sentence that the keys or the prose read (one of them is on here)
    shortest = min([spec.min_chars] * spec.enabled + [prose_min] * (prose_min > 0))
    segments = _long_segments(chars, code, letter, shortest)
    prose = _prose(segments, prose_min, chars.offsets) if prose_min > 0 else None
    if not spec.enabled:
        return (*no_keys, prose)
    if shortest < spec.min_chars:  # the keys' candidates: at least min_chars letters
        segments = tuple(x[segments[1] >= spec.min_chars] for x in segments)
    return (*_keys_of(chars, code, segments, spec, n_pages), prose)


def _prose(segments, prose_min: int, offsets: np.ndarray) -> np.ndarray:
    """(pages x 3) page_prose of a batch, from its sentences of some minimum of letters up to prose_min
    (_long_segments, ordered by page; None: none) and the pages' byte offsets."""
    sizes = np.diff(offsets).astype(np.int64)
    out = np.stack([np.zeros_like(sizes), sizes, sizes], axis=1)
    if segments is None:
        return out
    page, counts, lo, hi = segments
    keep = counts >= prose_min
    page, counts, lo, hi = page[keep], counts[keep], lo[keep], hi[keep]
    if not len(page):
        return out
    starts = np.r_[0, np.flatnonzero(page[1:] != page[:-1]) + 1]
    p = page[starts]
    out[p, 0] = np.add.reduceat(counts, starts)
    out[p, 1] = np.minimum.reduceat(lo, starts) - offsets[p]
    out[p, 2] = offsets[p + 1] - np.maximum.reduceat(hi, starts)
    return out


def _keys_of(chars: BatchChars, code: np.ndarray, segments, spec: SentenceKeySpec,
             n_pages: int) -> tuple[np.ndarray, np.ndarray]:
    """(keys, offsets) of a batch's sentences of at least spec.min_chars letters (_long_segments; code: _coded)."""
    page, counts, byte_lo, byte_hi = segments
    if len(page) == 0:
        return np.zeros(0, np.int64), np.zeros(n_pages + 1, np.int64)
    first = np.flatnonzero(np.r_[True, page[1:] != page[:-1]])  # each page's first candidate
    size = np.diff(np.r_[first, len(page)])
    group = np.repeat(np.arange(len(first)), size)
    read = np.flatnonzero(counts >= counts[first + np.minimum(size, spec.n) - 1][group])
    buf, starts, ends = _candidate_letters(chars, code, byte_lo[read], byte_hi[read])
    keys = mmh3_64_batch(buf, starts, ends, SEED, MAX_SENTENCE_BLOCKS).view(np.int64)
    order, rank, unsure = _ordered_candidates(group[read], counts[read], keys, buf, starts, ends, len(first))
    taken = order[(rank < spec.n) & ~unsure[group[read][order]]]
    pages, page_keys = [page[read[taken]]], [keys[taken]]
    position = np.full(len(page), -1, np.int64)
    position[read] = np.arange(len(read))

    def text_of(i: int) -> bytes:
        at = position[i]
        if at >= 0:
            return buf[starts[at]:ends[at]].tobytes()
        return normalized_utf8(chars.data[byte_lo[i]:byte_hi[i]].tobytes()).encode("utf-8")

    for p in np.flatnonzero(unsure).tolist():
        chosen = _chosen(text_of, counts, int(first[p]), int(first[p] + size[p]), spec.n)
        pages.append(np.full(len(chosen), page[first[p]], np.int64))
        page_keys.append(np.array([sentence_key(t) for t in chosen], np.int64))
    out_page, out_key = np.concatenate(pages), np.concatenate(page_keys)
    if len(pages) > 1:
        by_page = np.argsort(out_page, kind="stable")
        out_page, out_key = out_page[by_page], out_key[by_page]
    return out_key, np.r_[0, np.cumsum(np.bincount(out_page, minlength=n_pages))]


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
    primary = (group << 32) - counts  # by group, most letters first (counts < 2^31)
    order = np.argsort(primary, kind="stable")
    p = primary[order]
    tie = np.flatnonzero(p[1:] == p[:-1])
    if len(tie):  # ties on letters ordered by text
        at = np.unique(np.r_[tie, tie + 1])
        sub = order[at]
        order[at] = sub[np.lexsort((next_head[sub], head[sub], primary[sub]))]
    g = group[order]
    first = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    rank = np.arange(len(order)) - np.repeat(first, np.diff(np.r_[first, len(order)]))
    unsure = np.zeros(n_groups, dtype=bool)
    same = (p[1:] == p[:-1]) & (head[order][1:] == head[order][:-1]) & (next_head[order][1:] == next_head[order][:-1])
    unsure[g[1:][same]] = True
    unsure[group[lengths == 0]] = True
    # a repeated key: equal values of key + group * odd next to each other once sorted (both groups marked, so a
    # value two groups share by chance hides no repeat)
    mixed = keys + group * np.int64(0x9E3779B97F4A7C15 - (1 << 64))  # wraps around
    by_key = np.argsort(mixed, kind="stable")
    again = np.flatnonzero(mixed[by_key][1:] == mixed[by_key][:-1])
    unsure[group[by_key[again]]] = True
    unsure[group[by_key[again + 1]]] = True
    return order, rank, unsure


def _coded(chars: BatchChars) -> tuple[np.ndarray, np.ndarray]:
    """(code, letter) per byte of a batch, from one table look-up and a few whole-array comparisons, then the
    non-ASCII characters that are not Han of three bytes set by their code points (BatchChars.other):
    code: END_CODE at the first byte of a cutting character, and otherwise the byte's part of the sentence's
    text (`normalized`, for a sentence without a slow character): an ASCII letter in lower case, every byte of a
    Han letter as it is, a fold-table letter's ASCII letter at its first byte, and 0 for every other byte (a
    text is its codes >= TEXT_MIN); letter: the byte begins a letter (what a sentence's length counts)."""
    data, lead = chars.data, chars.lead
    code = np.take(_byte_codes(), data)
    letter = ((data | np.uint8(0x20)) - np.uint8(0x61) < 26) | (data - np.uint8(0xE3) < 7)  # ASCII, U+3000-U+9FFF
    if len(lead):
        other, width, folded = lead[chars.other], chars.width[chars.other], chars.folded
        cls = np.take(char_classes(), np.minimum(chars.code, LETTER_LIMIT))
        for k in range(1, 4):
            code[other[width > k] + k] = 0
        as_letter = (folded >= 0) & ((folded | 0x20) - 0x61 >= 0) & ((folded | 0x20) - 0x61 < 26)
        code[other] = np.where(cls == END, END_CODE, np.where(as_letter, folded, 0))
        letter[other] = cls == LETTER
        han4 = lead[chars.is_han & (chars.width == 4)]
        if len(han4):  # inert Han beyond the BMP: letters where the table says so (unassigned ones are not)
            is_letter = char_classes()[np.minimum(_decoded(data, han4), LETTER_LIMIT)] == LETTER
            letter[han4] = is_letter
            for k in range(4):
                code[han4[~is_letter] + k] = 0
    return code, letter


def _long_segments(chars: BatchChars, code: np.ndarray, letter: np.ndarray, min_chars: int):
    """(page, letters, byte_lo, byte_hi) of every sentence of at least min_chars letters of a batch's UTF-8
    bytes (code and letter: _coded), ordered by page and then by letters, most first; byte_hi stops before the
    cutting character. Counted over bytes, not characters: a character's letter sits on its first byte, so
    sums of letters and the cuts need no array of character positions; the sentences' bounds are merged from
    the pages' starts and the cuts (far fewer than bytes)."""
    data, offsets = chars.data, chars.offsets
    end_lead = np.flatnonzero(code == END_CODE)
    b0 = data[end_lead]
    after_end = end_lead + 1 + (b0 >= 0xC0) + (b0 >= 0xE0) + (b0 >= 0xF0)  # the byte after each cutting character
    bounds = np.concatenate([offsets, after_end])
    bounds.sort(kind="stable")
    bounds = bounds[np.r_[True, bounds[1:] != bounds[:-1]]]
    lo, hi = bounds[:-1], bounds[1:]
    long = np.flatnonzero(hi - lo >= min_chars)  # a letter is at least a byte
    lo, hi = lo[long], hi[long]
    before_hi, before_lo = _letters_before(letter, hi, lo)
    counts = before_hi - before_lo
    keep = np.flatnonzero(counts >= min_chars)
    lo, hi, counts = lo[keep], hi[keep], counts[keep]
    page = np.searchsorted(offsets, lo, side="right") - 1
    byte_hi = hi.copy()
    for width in range(4, 0, -1):  # a sentence cut off by a character stops before it
        at = np.maximum(hi - width, 0)
        lead = data[at]
        cut = (code[at] == END_CODE) & (1 + (lead >= 0xC0) + (lead >= 0xE0) + (lead >= 0xF0) == width)
        byte_hi[cut] = at[cut]
    order = np.argsort((page << 32) - counts, kind="stable")  # by page, most letters first (counts < 2^31)
    return page[order], counts[order], lo[order], byte_hi[order]


def _letters_before(letter: np.ndarray, *positions: np.ndarray) -> list[np.ndarray]:
    """For each array of positions (0 <= at <= len(letter)), int64: the number of letter bytes before each, from
    the letters packed as bits and a running count of their bytes' bits (an eighth of the bytes)."""
    packed = np.packbits(letter, bitorder="little")
    running = np.zeros(len(packed) + 1, np.int64)
    np.cumsum(np.bitwise_count(packed), out=running[1:])
    out = []
    for at in positions:
        byte, bit = at >> 3, (at & 7).astype(np.uint8)
        partial = np.take(packed, np.minimum(byte, len(packed) - 1)) & ((np.uint8(1) << bit) - np.uint8(1))
        out.append(running[byte] + np.bitwise_count(partial))
    return out


def _candidate_letters(chars: BatchChars, code: np.ndarray, lo: np.ndarray,
                       hi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(buf, starts, ends): the text (`normalized`, as UTF-8) of the sentence data[lo[i]:hi[i]] of a batch is
    buf[starts[i]:ends[i]] (buf padded for mmh3_batch). The sentences' codes (_coded) are joined in the batch's
    order and their text bytes kept: the work is on the candidates' bytes, a small share of the batch's. A
    sentence with a slow character (one outside text_batch's fold table) is normalised in Python, its text put
    after the others."""
    order = np.argsort(lo, kind="stable")
    lo, hi = lo[order], hi[order]
    lo_list, hi_list, codes = lo.tolist(), hi.tolist(), code.tobytes()
    joined = np.frombuffer(b"".join([codes[a:b] for a, b in zip(lo_list, hi_list)]), np.uint8)
    keep = joined >= TEXT_MIN
    letters = joined[keep].tobytes()
    per_sentence = np.add.reduceat(keep.view(np.uint8), np.r_[0, np.cumsum(hi - lo)[:-1]], dtype=np.int64)
    bounds = np.r_[0, np.cumsum(per_sentence)]  # sentences are never empty (they hold min_chars letters)
    starts, ends = np.empty(len(order), np.int64), np.empty(len(order), np.int64)
    starts[order], ends[order] = bounds[:-1], bounds[1:]
    slow_at = chars.lead[chars.other[chars.folded < 0]]
    slow = np.flatnonzero(np.searchsorted(slow_at, hi) > np.searchsorted(slow_at, lo))
    if len(slow):
        texts = [normalized_utf8(chars.data[lo_list[i]:hi_list[i]].tobytes()).encode("utf-8") for i in slow.tolist()]
        sizes = np.array([len(t) for t in texts], np.int64)
        ends[order[slow]] = len(letters) + np.cumsum(sizes)
        starts[order[slow]] = ends[order[slow]] - sizes
        letters += b"".join(texts)
    return padded_buffer(letters), starts, ends


@lru_cache(maxsize=1)
def _byte_codes() -> np.ndarray:
    """_coded's code of each byte value before the non-ASCII characters are looked at: an ASCII letter in lower
    case, END_CODE for an ASCII cutting character, 0 for any other ASCII byte, every byte from 0x80 on as it is
    (Han letters' bytes; the others are cleared by their code points)."""
    out = np.arange(256, dtype=np.uint8)
    for c in range(128):
        cls = char_classes()[c]
        out[c] = ord(chr(c).lower()) if cls == LETTER else END_CODE if cls == END else 0
    return out


def _decoded(data: np.ndarray, lead: np.ndarray) -> np.ndarray:
    """Code points of the UTF-8 characters whose first bytes are at lead (bytes past the end read as the last)."""
    b0 = data[lead].astype(np.int32)
    b1, b2, b3 = (data.take(lead + i, mode="clip").astype(np.int32) & 0x3F for i in (1, 2, 3))
    return np.where(
        b0 < 0xE0, ((b0 & 0x1F) << 6) | b1,
        np.where(b0 < 0xF0, ((b0 & 0x0F) << 12) | (b1 << 6) | b2, ((b0 & 0x07) << 18) | (b1 << 12) | (b2 << 6) | b3))


def _chosen(text_of, counts: np.ndarray, a: int, b: int, n: int) -> list[bytes]:
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


def pairs_within_groups(group_starts: np.ndarray, group_sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions (left, right), left < right, of every pair inside each run of group_sizes[g] consecutive
    entries starting at group_starts[g] (numpy, no loop over the groups)."""
    group_starts = np.asarray(group_starts, dtype=np.int64)
    group_sizes = np.asarray(group_sizes, dtype=np.int64)
    first_of_group = np.cumsum(group_sizes) - group_sizes
    in_group = np.arange(int(group_sizes.sum()), dtype=np.int64) - np.repeat(first_of_group, group_sizes)
    position = np.repeat(group_starts, group_sizes) + in_group
    partners = np.repeat(group_sizes, group_sizes) - in_group - 1
    left = np.repeat(position, partners)
    step = np.arange(len(left), dtype=np.int64) - np.repeat(np.cumsum(partners) - partners, partners)
    return left, left + 1 + step


@dataclass
class KeyGroupCounts:
    """The key groups' counts (report.json's candidates.sentence_keys), from Spark or from key_groups."""

    keys: int  # distinct keys of this run's fingerprints
    groups: int  # keys of 2..max_group fingerprints
    skipped_keys: int  # keys of more than max_group fingerprints: no pairs
    skipped_fingerprints: int  # the fingerprint-key rows of those keys


@dataclass(frozen=True)
class KeyGroups:
    """The key search's pairs and counts (of (fingerprint, key) rows)."""

    a: np.ndarray  # the distinct pairs a < b of fingerprints that share a key of 2..max_group fingerprints
    b: np.ndarray
    counts: KeyGroupCounts


def key_groups(fingerprints: np.ndarray, keys: np.ndarray, max_group: int, max_pairs: int = -1) -> KeyGroups | None:
    """key_group_pairs in whole-array steps, with the counts of the Spark search (for a run whose keys fit on
    the driver: the pairs of a few hundred thousand pages without a Spark job per shuffle); None when the groups
    hold more than max_pairs pairs (repeats counted; -1: no bound)."""
    fps, keys = np.asarray(fingerprints, np.int64), np.asarray(keys, np.int64)
    order = np.lexsort((fps, keys))
    k, f = keys[order], fps[order]
    new = np.r_[True, (k[1:] != k[:-1]) | (f[1:] != f[:-1])] if len(k) else np.zeros(0, bool)
    k, f = k[new], f[new]  # distinct (key, fingerprint) rows, by key, then fingerprint
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]]) if len(k) else np.zeros(0, np.int64)
    sizes = np.diff(np.r_[starts, len(k)])
    use, big = (sizes >= 2) & (sizes <= max_group), sizes > max_group
    if max_pairs >= 0 and int((sizes[use] * (sizes[use] - 1) // 2).sum()) > max_pairs:
        return None
    left, right = pairs_within_groups(starts[use], sizes[use])
    a, b = f[left], f[right]  # a < b: a group's fingerprints are distinct and sorted
    order = np.lexsort((b, a))
    a, b = a[order], b[order]
    keep = np.r_[True, (a[1:] != a[:-1]) | (b[1:] != b[:-1])] if len(a) else np.zeros(0, bool)
    return KeyGroups(a[keep], b[keep], KeyGroupCounts(len(starts), int(use.sum()), int(big.sum()), int(sizes[big].sum())))
