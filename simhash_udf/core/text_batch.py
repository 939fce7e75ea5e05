"""The default features' normalisation and Han/rest split for a whole Arrow batch of pages at once.

Binary weighting of auto tokens (the default) needs two strings of each page: its Han runs joined by newlines,
for the segmenter, and the rest normalised (NFKC, lower case, digits to 0) with every character that is not
part of a word made a space, for str.split(). Per page in Python that is a regular-expression split, NFKC and
a str.translate: on Chinese pages together more time than the segmenter itself. Here it is a dozen numpy
passes over the batch's UTF-8 bytes.

Each character is classified by its code point. Inert Han ideographs (text.INERT_HAN, untouched by
normalisation) go to the Han string. ASCII characters and the non-ASCII characters of `fold_table` go to the
rest as one ASCII byte each; the table is computed from the definition itself (text.normalize_chars of the
character alone), and holds only characters that normalise to one ASCII letter or digit or to no word
character at all and that never compose with a neighbour (full-width forms, CJK and general punctuation,
symbols, emoji). A page with any other character (a non-ASCII letter, a combining mark, a compatibility
ideograph) is marked slow and its caller takes text.auto_set, the per-page path, for it: the features are
the definition's either way (tests/test_text_batch.py).
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pyarrow as pa

from .text import _ASCII_FOLD, _HAN_CHAR, _WORDS, is_han_gap, normalize_chars

# Non-ASCII code points looked at for the table (all others make a page slow): Latin-1 and Latin Extended
# (only their symbols qualify), general punctuation to miscellaneous symbols and arrows, CJK symbols and
# punctuation, variation selectors, CJK compatibility and small forms, half- and full-width forms, emoji.
FOLD_RANGES = ((0x80, 0x250), (0x2000, 0x2C00), (0x3000, 0x3040), (0xFE00, 0xFE70), (0xFF00, 0xFFF0), (0x1F000, 0x1FB00))
TABLE_SIZE = 0x20000
SPACE, NEWLINE = 0x20, 0x0A
_CONTINUATION_BYTES = bytes(range(0x80, 0xC0))
# Inert Han (text.INERT_HAN) as code point ranges, inclusive.
HAN_RANGES = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0x20000, 0x2F7FF), (0x2FA20, 0x3134F))


def fold_char(char: str) -> int | None:
    """The one ASCII byte a non-ASCII character stands for in the normalised rest of a page (a space when it
    has no word character), or None when it cannot be replaced by one byte without looking at its neighbours."""
    if 0xD800 <= ord(char) < 0xE000 or any(map(unicodedata.combining, unicodedata.normalize("NFKD", char))):
        return None  # a combining mark, or a character with one in its decomposition (¨ is a space and U+0308)
    normal = normalize_chars(char)
    if _HAN_CHAR.search(normal):
        return None
    if not _WORDS.search(normal):
        return SPACE
    if len(normal) == 1 and normal.isascii():
        return ord(normal)
    return None


@lru_cache(maxsize=1)
def fold_table() -> np.ndarray:
    """int16 per code point below TABLE_SIZE: the byte of the normalised rest, or -1 (the page is slow)."""
    table = np.full(TABLE_SIZE, -1, dtype=np.int16)
    table[:128] = np.frombuffer(bytes(range(128)).decode("ascii").translate(_ASCII_FOLD).encode("ascii"), np.uint8)
    for lo, hi in FOLD_RANGES:
        for cp in range(lo, hi):
            byte = fold_char(chr(cp))
            if byte is not None:
                table[cp] = byte
    return table


@lru_cache(maxsize=1)
def _ascii_fold_bytes() -> bytes:
    """bytes.translate table: each ASCII byte folded (bytes >= 0x80 never reach it: lead bytes are overwritten
    with their character's byte and continuation bytes deleted by the same translate)."""
    return bytes(fold_table()[:128].astype(np.uint8)) + bytes([SPACE]) * 128


def _string_buffers(texts: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(bytes, offsets from 0) of a string or large_string array without copying the text."""
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    if pa.types.is_string(texts.type):
        offset_type = np.int32
    elif pa.types.is_large_string(texts.type):
        offset_type = np.int64
    else:
        raise TypeError(f"expected a string array, got {texts.type}")
    _, offsets_buf, data_buf = texts.buffers()
    n = len(texts)
    if n == 0:
        return np.zeros(0, np.uint8), np.zeros(1, np.int64)
    offsets = np.frombuffer(offsets_buf, dtype=offset_type)[texts.offset : texts.offset + n + 1].astype(np.int64)
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    return data[offsets[0] : offsets[-1]], offsets - offsets[0]


def page_strings(n: int, data, offsets: np.ndarray) -> list[str]:
    """n Python strings from UTF-8 bytes and int64 offsets (through Arrow: one decode per page, no copies)."""
    array = pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data))
    return array.to_pylist()


REPLACEMENT_CHAR = b"\xef\xbf\xbd"  # U+FFFD, what invalid UTF-8 is replaced by


def pages_holding_replacement_char(texts: pa.Array) -> np.ndarray:
    """bool per page of a string array of valid UTF-8: the page holds U+FFFD (a null page does not).

    A numpy search of its three bytes over the batch's data (each page's bytes are whole characters, so no match
    spans two pages): ~1/5 of the CPU of the same test per page in the JVM (UTF8String.contains)."""
    data, offsets = _string_buffers(texts)
    out = np.zeros(len(offsets) - 1, dtype=bool)
    b0, b1, b2 = REPLACEMENT_CHAR
    at = np.flatnonzero(data[:-2] == b0)
    at = at[(data[at + 1] == b1) & (data[at + 2] == b2)]
    out[np.searchsorted(offsets, at, side="right") - 1] = True
    return out


def _before(positions: np.ndarray, cumulative: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """At each offset, cumulative[number of positions before it] (positions sorted, cumulative starting at 0)."""
    return cumulative[np.searchsorted(positions, offsets)]


@dataclass
class BatchChars:
    """The non-ASCII characters of a batch's UTF-8 bytes, classified once: split_pages and the sentence keys
    (sentence_keys.py) of the same batch both read them."""

    data: np.ndarray  # the batch's bytes (_string_buffers)
    offsets: np.ndarray  # int64, page i is data[offsets[i]:offsets[i+1]]
    padded: np.ndarray  # data and 3 zero bytes (the bytes after a lead byte, even in broken UTF-8)
    lead: np.ndarray  # the first byte of every non-ASCII character
    width: np.ndarray  # its bytes: 2 to 4 (uint8)
    is_han: np.ndarray  # bool per lead: an inert Han ideograph (text.INERT_HAN)
    other: np.ndarray  # the indices into lead of the characters that are not
    code: np.ndarray  # their code points
    folded: np.ndarray  # their fold_table value (-1: outside the table)
    slow: np.ndarray  # bool per page: a character outside fold_table


def classify(texts: pa.Array) -> BatchChars:
    """The batch's bytes and its non-ASCII characters, classified (BatchChars)."""
    data, offsets = _string_buffers(texts)
    n = len(offsets) - 1
    slow = np.zeros(n, dtype=bool)
    size = len(data)
    padded = np.zeros(size + 3, dtype=np.uint8)
    padded[:size] = data
    lead = np.flatnonzero(data >= 0xC0)
    b0 = data[lead]
    # Han in three bytes: U+3400-4DBF is E3 90 80 - E4 B6 BF, U+4E00-9FFF is E4 B8 80 - E9 BF BF (the second byte
    # read only where the first is E3 or E4).
    is_han = (b0 >= 0xE5) & (b0 <= 0xE9)
    e3_e4 = np.flatnonzero((b0 == 0xE3) | (b0 == 0xE4))
    b1 = padded[lead[e3_e4] + 1]
    is_han[e3_e4] = np.where(b0[e3_e4] == 0xE4, b1 != 0xB7, b1 >= 0x90)
    four = np.flatnonzero(b0 >= 0xF0)
    if len(four):
        cp4 = _code_points(padded, lead[four])
        is_han[four] = np.logical_or.reduce([(cp4 >= lo) & (cp4 <= hi) for lo, hi in HAN_RANGES[2:]])
    other = np.flatnonzero(~is_han)  # non-ASCII characters that are not Han: looked up in the table
    cp = _code_points(padded, lead[other])
    folded = np.where(cp < TABLE_SIZE, fold_table()[np.minimum(cp, TABLE_SIZE - 1)], -1)
    unknown = folded < 0
    if unknown.any():
        slow[np.searchsorted(offsets, lead[other[unknown]], side="right") - 1] = True
    width = np.full(len(lead), 2, dtype=np.uint8)  # one byte each: the arrays of every non-ASCII character are long
    width += b0 >= 0xE0
    width += b0 >= 0xF0
    return BatchChars(data, offsets, padded, lead, width, is_han, other, cp, folded, slow)


def split_pages(texts: pa.Array, chars: BatchChars | None = None) -> tuple[list[str], list[str], np.ndarray]:
    """(han, rest, slow) of a string array of pages (split_pages_bytes, each page's rest a str)."""
    han, rest, rest_offsets, slow = split_pages_bytes(texts, chars)
    return han, page_strings(len(han), rest, rest_offsets), slow


def split_pages_bytes(texts: pa.Array, chars: BatchChars | None = None) -> tuple[list[str], bytes, np.ndarray, np.ndarray]:
    """(han, rest, rest_offsets, slow) of a string array of pages (chars: its classify(), when already made); page
    i's rest is rest[rest_offsets[i]:rest_offsets[i+1]].

    han[i]: the inert Han runs of page i, each followed by a newline when more text follows it (the
    segmenter returns that newline as a token of its own, to be dropped); rest[i]: the page with every Han
    ideograph made a space, normalised, every non-word character a space (ASCII, ready for str.split());
    slow[i]: the page has a character outside fold_table, its han and rest are not to be used. Null pages
    come back as empty strings (the caller knows them by the array's validity).

    Both are made by one bytes.translate of the batch's bytes each, its non-ASCII characters marked in numpy first:
    the rest keeps ASCII (folded) and one byte for each non-ASCII character, the Han keeps the bytes of Han
    characters and a newline in place of the first character after each run. Where a page's pieces start in them
    is counted from the characters before the page's first byte (binary searches over the batch's characters)."""
    c = chars or classify(texts)
    data, offsets, lead, width, is_han, other = c.data, c.offsets, c.lead, c.width, c.is_han, c.other
    n, size, slow = len(offsets) - 1, len(data), c.slow
    if n == 0:
        return [], b"", offsets, slow
    if len(lead) == 0:  # an all-ASCII batch: folded as it is, no Han
        return [""] * n, bytes(bytearray(data).translate(_ascii_fold_bytes())), offsets, slow
    han_lead, han_width = lead[is_han], width[is_han]
    other_lead, other_width = lead[other], width[other]
    han4 = han_lead[han_width == 4]  # Han beyond the BMP: four bytes, the others three
    other3, other4 = other_lead[other_width >= 3], other_lead[other_width == 4]

    # The rest: ASCII bytes folded, each non-ASCII character one byte (Han: a space), continuation bytes dropped.
    rest = bytearray(data)
    rest_view = np.frombuffer(rest, dtype=np.uint8)
    rest_view[lead] = SPACE
    rest_view[other_lead] = np.where(c.folded < 0, SPACE, c.folded).astype(np.uint8)
    del rest_view  # a bytearray with a live view cannot be resized, and translate needs none
    rest_bytes = bytes(rest.translate(_ascii_fold_bytes(), _CONTINUATION_BYTES))  # every byte >= 0x80 continues one
    del rest
    # a character of w bytes has w - 1 continuation bytes: 1 for each, 1 more from three bytes on, 1 more for four
    han_before = np.searchsorted(han_lead, offsets)
    rest_offsets = offsets - (np.searchsorted(lead, offsets) + han_before + np.searchsorted(other3, offsets)
                              + np.searchsorted(han4, offsets) + np.searchsorted(other4, offsets))
    if len(han_lead) == 0:
        return [""] * n, rest_bytes, rest_offsets, slow

    # The Han runs: the bytes of Han characters, and a newline in place of the first character after each run in a
    # page (a Han character is followed by another one at its end byte, or ends a run).
    ends = han_lead + han_width
    run = np.flatnonzero(ends[:-1] != han_lead[1:])
    run = np.r_[run, len(han_lead) - 1] if ends[-1] < size else run
    page = np.searchsorted(offsets, ends[run], side="right") - 1  # offsets is short: this search is cheap
    inside = ends[run] != offsets[page]  # not at the start of the next page
    run, page = run[inside], page[inside]
    newline = ends[run]
    newline = newline[~_white_gap(newline, run + 1, han_lead, offsets[page + 1], data, c.padded)]
    marked = bytearray(data)
    marked_view = np.frombuffer(marked, dtype=np.uint8)
    for k, at in enumerate((other_lead, other_lead, other3, other4)):  # the other characters' bytes: dropped
        marked_view[np.minimum(at + k, size - 1)] = _DROPPED  # (the minimum: a character cut short in broken UTF-8)
    marked_view[newline] = _NEWLINE_MARK
    del marked_view
    han = marked.translate(_HAN_BYTES, _NOT_HAN_BYTES)
    han_offsets = 3 * han_before + np.searchsorted(han4, offsets) + np.searchsorted(newline, offsets)
    return page_strings(n, han, han_offsets), rest_bytes, rest_offsets, slow


# Marks of split_pages_bytes' Han bytes, two bytes never found in UTF-8: a byte to drop, and a newline to keep (the
# batch's own newlines are ASCII, dropped with all other ASCII bytes).
_DROPPED, _NEWLINE_MARK = 0xFE, 0xFF
_HAN_BYTES = bytes(range(255)) + bytes([NEWLINE])
_NOT_HAN_BYTES = bytes(range(128)) + bytes([_DROPPED])


def all_chars(n: int) -> str:
    """The code points below n in one string, each surrogate (never in a str decoded from UTF-8) as a space: the
    per-code-point tables are made from it with C loops (map, a regular expression), not a Python loop a point."""
    if n <= 0xD800:
        return "".join(map(chr, range(n)))
    return "".join(map(chr, range(0xD800))) + " " * (min(n, 0xE000) - 0xD800) + "".join(map(chr, range(0xE000, n)))


@lru_cache(maxsize=1)
def white_table() -> np.ndarray:
    """bool per code point below TABLE_SIZE: the character is white space once normalised (text.is_han_gap); a
    surrogate is not."""
    table = np.fromiter(map(is_han_gap, all_chars(TABLE_SIZE)), dtype=bool, count=TABLE_SIZE)
    table[0xD800:0xE000] = False
    return table


# First bytes of the characters that can be white space once normalised: ASCII white space, and the lead
# bytes of U+0085/U+00A0 (C2), U+1680 (E1), U+2000-U+205F (E2) and U+3000 (E3). Other run ends are no gap.
_WHITE_FIRST = np.zeros(256, dtype=bool)
_WHITE_FIRST[[0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x1F, 0x20, 0xC2, 0xE1, 0xE2, 0xE3]] = True
_GAP_WINDOW = 16  # bytes looked at per gap in one vectorised pass; longer gaps are checked one by one


def _white_gap(ends: np.ndarray, nxt: np.ndarray, han_lead: np.ndarray, page_end: np.ndarray, data: np.ndarray,
               padded: np.ndarray) -> np.ndarray:
    """For each run end (the byte after a Han run), whether only white space separates it from the next Han
    character of the same page: normalisation removes that gap (text.normalize_chars), so the runs join.
    nxt: the index in han_lead of the Han character after each end (the one after the run's last; in broken
    UTF-8 a lead can sit inside the character before it, and then it is searched for); page_end: the end of
    each end's page; padded: data with 3 zero bytes after it (for _code_points).

    The gaps that start with white space are read byte by byte, all of them at once, each step only those white so
    far (a character's continuation bytes: its lead byte decides): most gaps end at their second byte (a space
    before a word). A gap white for its first _GAP_WINDOW bytes is checked whole."""
    out = np.zeros(len(ends), dtype=bool)
    if len(ends) == 0:
        return out
    has_next = nxt < len(han_lead)
    nxt_pos = han_lead[np.minimum(nxt, len(han_lead) - 1)]
    if (has_next & (nxt_pos <= ends)).any():  # only in broken UTF-8
        nxt = np.searchsorted(han_lead, ends)
        has_next = nxt < len(han_lead)
        nxt_pos = han_lead[np.minimum(nxt, len(han_lead) - 1)]
    candidate = np.flatnonzero(has_next & (nxt_pos < page_end) & _WHITE_FIRST[data[ends]])
    table = white_table()
    first = ends[candidate]
    multi = data[first] >= 0xC0  # the gap's first character, decoded: white once normalised?
    if multi.any():
        code = _code_points(padded, first[multi])
        keep = np.ones(len(candidate), dtype=bool)
        keep[multi] = table[np.minimum(code, TABLE_SIZE - 1)] & (code < TABLE_SIZE)
        candidate = candidate[keep]
    if len(candidate) == 0:
        return out
    start, stop = ends[candidate], nxt_pos[candidate]
    white_so_far = np.ones(len(candidate), dtype=bool)
    alive = np.arange(len(candidate))  # the gaps white so far that go on
    for k in range(1, _GAP_WINDOW):  # (byte 0 is white: the candidates)
        alive = alive[stop[alive] - start[alive] > k]
        if len(alive) == 0:
            break
        byte = data[start[alive] + k]
        white = np.where(byte < 0x80, table[:128][np.minimum(byte, 127)], True)
        is_lead = np.flatnonzero(byte >= 0xC0)
        if len(is_lead):
            code = _code_points(padded, start[alive[is_lead]] + k)
            white[is_lead] = table[np.minimum(code, TABLE_SIZE - 1)] & (code < TABLE_SIZE)
        white_so_far[alive[~white]] = False
        alive = alive[white]
    long = stop - start > _GAP_WINDOW
    out[candidate[white_so_far & ~long]] = True
    for i in np.flatnonzero(white_so_far & long):  # white space longer than the window: rare, checked whole
        out[candidate[i]] = is_han_gap(bytes(data[start[i]:stop[i]]).decode("utf-8", "replace"))
    return out


def _code_points(padded: np.ndarray, lead: np.ndarray) -> np.ndarray:
    """Code points of the UTF-8 characters whose first bytes are at lead (padded: 3 bytes after the data)."""
    b0 = padded[lead].astype(np.int32)
    b1, b2, b3 = (padded[lead + i].astype(np.int32) & 0x3F for i in (1, 2, 3))
    return np.where(
        b0 < 0xE0, ((b0 & 0x1F) << 6) | b1,
        np.where(b0 < 0xF0, ((b0 & 0x0F) << 12) | (b1 << 6) | b2, ((b0 & 0x07) << 18) | (b1 << 12) | (b2 << 6) | b3),
    )
