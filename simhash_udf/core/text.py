"""Text normalisation and tokenisation: the first two of the fingerprint's five steps.

Pure Python, no Spark. Normalisation folds the differences crawls really show between copies of a page
(full-width vs half-width forms, case, runs of white space, and, as in CCNet, every digit to 0 so that a
changed counter, date or price does not move the fingerprint); tokenisation drops white space and
punctuation entirely, so indentation runs and punctuation can never dominate a fingerprint.

Han runs are segmented by jieba's dictionary and algorithm, through one of two implementations: `jieba`
(the reference, pure Python) or `rjieba` (jieba-rs, a Rust port using the same dictionary, ~20x faster).
"""
from __future__ import annotations

import logging
import os
import re
import unicodedata
from functools import lru_cache
from importlib.metadata import version
from typing import Callable

import numpy as np

# Han ideographs (CJK unified, extension A, compatibility, extensions B+). Kana and Hangul are left to the
# word tokenizer: they are written with spaces or are rare in our crawls.
HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_WHITESPACE = re.compile(r"\s+")
_DIGIT = re.compile(r"\d")
_HAN_CHAR = re.compile(f"[{HAN}]")
# A run of Han characters, or a run of word characters that are neither Han nor underscore.
_RUNS = re.compile(f"([{HAN}]+)|([^\\W_{HAN}]+)")
_WORDS = re.compile(f"[^\\W_{HAN}]+")
_HAN_RUNS = re.compile(f"[{HAN}]+")
# White space between two Han characters: Chinese is written without spaces, so a line break or space there is
# where a page was wrapped, not a word boundary (a re-wrapped copy must give the same features).
_HAN_GAP = re.compile(f"(?<=[{HAN}])\\s+(?=[{HAN}])")
_WORDS_AND_HAN_CHARS = re.compile(f"[{HAN}]|[^\\W_{HAN}]+")
_WORD_TOKEN = re.compile(r"[^\W_]")
RUN_SEPARATOR = "\n"  # segmenters split at it and return it as a token of its own

# Han ideographs that normalisation leaves alone (no compatibility mapping, no case, not digits, starters
# that never compose): a page can be cut at them and each piece normalised on its own. The compatibility
# ideographs (U+F900-FAFF, U+2F800-2FA1F) are not among them: NFKC maps them to unified ones.
INERT_HAN = "\u3400-\u4dbf\u4e00-\u9fff\U00020000-\U0002f7ff\U0002fa20-\U0003134f"
_INERT_HAN_RUNS = re.compile(f"([{INERT_HAN}]+)")
# ASCII text in one pass: NFKC is the identity on ASCII, so normalising and finding words is lower-casing,
# digits to 0 and every character that is not a letter or digit to a space, then str.split().
# Chinese punctuation that NFKC keeps and that is never part of a word: replaced by spaces, the rest of a
# Chinese page is usually ASCII after normalisation and takes the translate path too.
_CJK_PUNCTUATION = "。、“”‘’《》【】「」『』〈〉〔〕—·"
_ASCII_FOLD = str.maketrans(
    {c: ("0" if c.isdigit() else c.lower() if c.isalnum() else " ") for c in map(chr, range(128))}
)

TOKENIZERS = ("auto", "jieba", "word", "char")
WORD_TOKENIZERS = TOKENIZERS[:3]
SEGMENTERS = ("jieba", "rjieba")


# A lone surrogate (a str made with errors="surrogateescape", never a page read by Spark or Arrow, which
# hold valid UTF-8) becomes U+FFFD, as invalid UTF-8 in the job's input does: mmh3 crashed the interpreter
# (SIGSEGV) hashing a character n-gram or shingle that held one. The other tokenizers drop it (not a word
# character).
_SURROGATE = re.compile("[\ud800-\udfff]")


# Chinese punctuation that NFKC keeps, as the ASCII a repost typed on an English keyboard has instead (NFKC
# already maps the full-width ，！？；：（） and the half-width ｡ to ASCII or to these).
PUNCTUATION_FOLD = {"。": ".", "、": ",", "“": '"', "”": '"', "‘": "'", "’": "'", "「": '"', "」": '"', "『": '"',
                    "』": '"', "《": "<", "》": ">", "〈": "<", "〉": ">", "【": "[", "】": "]", "〔": "[", "〕": "]",
                    "—": "-"}


def fold_punctuation(text: str) -> str:
    """text.translate(PUNCTUATION_FOLD), the same str: one str.replace per mark the text holds (each mark is one
    character, and no replacement holds a mark), several times faster than a translate by dict on non-ASCII text."""
    for mark, ascii_mark in PUNCTUATION_FOLD.items():
        if mark in text:
            text = text.replace(mark, ascii_mark)
    return text

# White space between a Han character and an ASCII mark (either side): "中文, 中文" or '他说 "好"' typed with
# the spaces an English keyboard habit adds, where the Chinese original "中文，中文" has none.
_MARKS = r",.!?;:\"'()<>\[\]\-"
_HAN_MARK_GAP = re.compile(f"(?<=[{HAN}])\\s+(?=[{_MARKS}])|(?<=[{_MARKS}])\\s+(?=[{HAN}])")


def normalize_text(text: str) -> str:
    """Unicode NFKC, lower case, every decimal digit to 0, white space between two Han characters removed,
    Chinese punctuation as ASCII (PUNCTUATION_FOLD) and white space between a Han character and a mark removed,
    every other white-space run to one space, ends stripped (lone surrogates made U+FFFD).

    The text of character n-grams (--tokenizer char, the short-text fingerprint and shingles): a Chinese
    repost with its punctuation typed in ASCII has the same n-grams. Word features (normalize_chars) never
    hold punctuation and do not need the fold."""
    normal = fold_punctuation(normalize_chars(_SURROGATE.sub("\ufffd", text)))
    if _HAN_CHAR.search(normal):
        normal = _HAN_MARK_GAP.sub("", normal)
    return _WHITESPACE.sub(" ", normal).strip()


# What normalize_texts joins texts by: normalisation keeps it as it is (NFKC, case, digits), it is no white space,
# word character, Han character or mark, and composes with no neighbour, so each text normalises as it would alone.
_TEXT_SEPARATOR = "\x00"


def normalize_texts(texts: list[str]) -> list[str]:
    """[normalize_text(t) for t in texts], the same strings, normalised as one string (each step's Python and
    regular-expression calls once, not once a text: most of the cost of a short text's normalisation), the white
    space of all of them folded in one numpy pass (normalized_codes). Texts that hold the separator themselves are
    normalised one by one."""
    joined = _joined_normal(texts)
    if joined is None:
        return [normalize_text(t) for t in texts]
    return joined.tobytes().decode("utf-32-le").split(_TEXT_SEPARATOR)


def normalized_codes(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The code points (uint32) of normalize_text(t) of every text, one text after another, and each text's
    number of them (int64): normalize_texts without making strings of the results (the shingles hash code points)."""
    joined = _joined_normal(texts)
    if joined is None:
        normals = [normalize_text(t) for t in texts]
        codes = np.frombuffer("".join(normals).encode("utf-32-le"), dtype=np.uint32)
        return codes, np.fromiter(map(len, normals), dtype=np.int64, count=len(normals))
    cut = np.flatnonzero(joined == ord(_TEXT_SEPARATOR))
    return np.delete(joined, cut), np.diff(np.r_[-1, cut, len(joined)]) - 1


def _joined_normal(texts: list[str]) -> np.ndarray | None:
    """The code points of the texts normalised as one string, separated by _TEXT_SEPARATOR; None for fewer than two
    texts or a text that holds the separator. normalize_text's steps up to the white space run on the joined
    string (each is the same character by character); its white-space steps, three regular expressions with
    look-arounds that tried every position of the text, are one pass of numpy over the runs (_fold_white)."""
    joined = _TEXT_SEPARATOR.join(texts)
    if len(texts) < 2 or joined.count(_TEXT_SEPARATOR) != len(texts) - 1:
        return None
    normal = fold_punctuation(_folded_chars(_SURROGATE.sub("\ufffd", joined)))
    return _fold_white(np.frombuffer(normal.encode("utf-32-le"), dtype=np.uint32), ord(_TEXT_SEPARATOR))


# _fold_white's classes of code points: white space (str.isspace, what \s, str.split and str.strip take; none is
# above U+3000), Han (HAN) and the ASCII marks of _HAN_MARK_GAP.
_WHITE, _HAN_CLASS, _MARK = 1, 2, 4
_CLASS_LIMIT = 0x31350  # above the last Han code point: every code point from here on is of no class


@lru_cache(maxsize=1)
def _code_classes() -> np.ndarray:
    table = np.zeros(_CLASS_LIMIT + 1, dtype=np.uint8)
    table[[c for c in range(0x3001) if chr(c).isspace()]] = _WHITE
    for lo, hi in ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x3134F)):  # HAN
        table[lo:hi + 1] = _HAN_CLASS
    table[[ord(c) for c in ",.!?;:\"'()<>[]-"]] = _MARK  # _MARKS
    return table


def _fold_white(codes: np.ndarray, separator: int) -> np.ndarray:
    """normalize_text's white-space steps on code points, each text's ending at `separator`: a white-space run
    between two Han characters, or between a Han character and a mark (either side), is removed (_HAN_GAP,
    _HAN_MARK_GAP), one at a text's start or end is removed (strip), and any other becomes one space (_WHITESPACE).
    Each run is decided by its two neighbours alone, which those steps do not change."""
    cls = _code_classes()[np.minimum(codes, _CLASS_LIMIT)]
    white = (cls & _WHITE) != 0
    if not white.any():
        return codes
    edges = np.diff(np.r_[np.int8(0), white.view(np.int8), np.int8(0)])
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)  # each run is codes[starts:ends]
    last = len(codes) - 1
    before, after = np.maximum(starts - 1, 0), np.minimum(ends, last)
    cls_before, cls_after = cls[before], cls[after]
    removed = ((starts == 0) | (ends > last) | (codes[before] == separator) | (codes[after] == separator)
               | (((cls_before & _HAN_CLASS) != 0) & ((cls_after & (_HAN_CLASS | _MARK)) != 0))
               | (((cls_before & _MARK) != 0) & ((cls_after & _HAN_CLASS) != 0)))
    one_space = starts[~removed]
    out = codes.copy()
    out[one_space] = 0x20
    keep = ~white
    keep[one_space] = True
    return out[keep]


def normalize_chars(text: str) -> str:
    """normalize_text without the white-space folding, which cannot change any token but char n-grams."""
    normal = _folded_chars(text)
    return _HAN_GAP.sub("", normal) if _HAN_CHAR.search(normal) else normal


def _folded_chars(text: str) -> str:
    """NFKC, lower case, every decimal digit to 0: the character steps of normalize_chars and normalize_texts."""
    return _DIGIT.sub("0", unicodedata.normalize("NFKC", text).lower())


def is_han_gap(piece: str) -> bool:
    """A piece of a page between two Han runs that normalisation removes: white space once normalised."""
    return unicodedata.normalize("NFKC", piece).isspace()


def han_runs_and_rest(raw: str) -> tuple[list[str], list[str]]:
    """The inert Han runs of a page, runs separated only by white space joined (the page re-wrapped), and
    the pieces between them (the rest)."""
    pieces = _INERT_HAN_RUNS.split(raw)
    runs, rest = [], [pieces[0]]
    for i in range(1, len(pieces), 2):
        if runs and is_han_gap(rest[-1]) and len(rest) > 1:
            rest.pop()
            runs[-1] += pieces[i]
        else:
            runs.append(pieces[i])
        rest.append(pieces[i + 1])
    return runs, rest


@lru_cache(maxsize=None)
def segmenter(name: str = "jieba") -> Callable[[str], list[str]]:
    """The cut function of a segmentation backend: precise mode, HMM for unknown words on."""
    if name == "jieba":
        import jieba  # here, not at the top: slow to load, and only texts with CJK runs need a segmenter

        jieba.setLogLevel(logging.WARNING)
        jieba.initialize()
        return jieba.dt.lcut
    if name == "rjieba":
        import rjieba  # an optional backend (--segmenter rjieba), installed separately

        return rjieba.cut  # hmm=True by default
    raise ValueError(f"unknown segmenter {name!r}; choose one of {', '.join(SEGMENTERS)}")


def segmenter_version(name: str) -> str:
    return f"{name}-{version(name)}"


def tokens_auto(text: str, segment: str = "jieba", ordered: bool = True) -> list[str]:
    """The segmenter for each Han run, whole words for everything else.

    ordered=False returns the same tokens grouped (Han tokens first): enough for order-free features, and
    all Han runs of a page then go to the segmenter in one call."""
    if not _HAN_CHAR.search(text):
        return _WORDS.findall(text)
    cut = segmenter(segment)
    if not ordered:
        han = cut(RUN_SEPARATOR.join(_HAN_RUNS.findall(text)))
        return [t for t in han if t != RUN_SEPARATOR] + _WORDS.findall(text)
    out: list[str] = []
    for han, word in _RUNS.findall(text):
        if han:
            out.extend(cut(han))
        else:
            out.append(word)
    return out


def auto_bag(raw: str, segment: str = "jieba") -> list[str]:
    """tokens_auto(normalize_chars(raw), segment, ordered=False), the same multiset, fast.

    The hot path of the default fingerprint. ASCII pages are normalised and split in one str.translate;
    other pages are cut at their (inert) Han runs, only the rest is normalised (for Chinese pages that is
    punctuation and the odd Latin word), and all Han runs go to the segmenter in one call. Pieces are
    joined by a newline, which like a Han character is a boundary for NFKC, lower-casing (final sigma
    looks through neither) and words. When normalising the rest yields Han characters (compatibility
    ideographs, Kangxi radicals), the page takes the slow path, so the result never differs."""
    if raw.isascii():
        return raw.translate(_ASCII_FOLD).split()
    runs, pieces = han_runs_and_rest(raw)
    words = _rest_words(RUN_SEPARATOR.join(pieces))
    if words is None:
        return tokens_auto(normalize_chars(raw), segment, ordered=False)
    if not runs:
        return words
    han = segmenter(segment)(RUN_SEPARATOR.join(runs))
    return [t for t in han if t != RUN_SEPARATOR] + words


def auto_set(raw: str, segment: str = "jieba") -> set[str]:
    """The distinct features of auto_bag(raw, segment) (binary weighting's hot path: the segmenter's
    output goes straight into a set and its separator tokens are dropped once, not once per token)."""
    if raw.isascii():
        return set(raw.translate(_ASCII_FOLD).split())
    runs, pieces = han_runs_and_rest(raw)
    words = _rest_words(RUN_SEPARATOR.join(pieces))
    if words is None:
        return set(tokens_auto(normalize_chars(raw), segment, ordered=False))
    return distinct_tokens(RUN_SEPARATOR.join(runs), words, segment)


def distinct_tokens(han: str, words: list[str], segment: str = "jieba") -> set[str]:
    """The distinct tokens of a page from its Han runs joined by RUN_SEPARATOR (segmented in one call, the
    separator tokens dropped once) and its words."""
    distinct = set(segmenter(segment)(han)) if han else set()
    distinct.discard(RUN_SEPARATOR)
    distinct.update(words)
    return distinct


def _rest_words(rest: str) -> list[str] | None:
    """The words of a page's non-Han rest (its pieces joined by newlines), normalised; None when normalising
    it yields Han characters (the caller then takes the slow path).

    NFKC first: on Chinese pages it maps the full-width punctuation to ASCII; then lower case, and only then
    the CJK marks it keeps are replaced by spaces (final sigma looks through case-ignorable marks such as
    U+00B7: "ΑΣ·é" lower-cases to "ασ·é", but "ΑΣ é" to "ας é"), so the rest is usually ASCII and one
    str.translate does digits and word boundaries."""
    if rest.isascii():
        return rest.translate(_ASCII_FOLD).split()
    rest = unicodedata.normalize("NFKC", rest).lower()
    for mark in _CJK_PUNCTUATION:
        if mark in rest:
            rest = rest.replace(mark, " ")
    if rest.isascii():
        return rest.translate(_ASCII_FOLD).split()
    rest = _DIGIT.sub("0", rest)
    if _HAN_CHAR.search(rest):
        return None
    return rest.translate(_ASCII_FOLD).split() if rest.isascii() else _WORDS.findall(rest)


def tokens_segmenter(text: str, segment: str = "jieba") -> list[str]:
    """The whole text through the segmenter; white-space and punctuation tokens dropped."""
    return [t for t in segmenter(segment)(text) if _WORD_TOKEN.search(t)]


def tokens_word(text: str) -> list[str]:
    """Words for alphabetic scripts, one token per Han character (no dictionary)."""
    return _WORDS_AND_HAN_CHARS.findall(text)


def tokens_char(text: str, n: int) -> list[str]:
    """Overlapping character n-grams of the normalised text (a text shorter than n is one token)."""
    if len(text) <= n:
        return [text] if text else []
    return [text[i : i + n] for i in range(len(text) - n + 1)]


def word_shingles(tokens: list[str], n: int) -> list[str]:
    """Contiguous token n-grams joined by U+001F (a separator no token contains)."""
    if n <= 1:
        return tokens
    if len(tokens) <= n:
        return ["\x1f".join(tokens)] if tokens else []
    return ["\x1f".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


def tokenize(
    text: str, tokenizer: str = "auto", char_ngram: int = 5, word_ngram: int = 1, segment: str = "jieba"
) -> list[str]:
    """Features of a normalised text (as a multiset: for word_ngram = 1 their order is not defined)."""
    if tokenizer == "char":
        return tokens_char(text, char_ngram)
    if tokenizer not in WORD_TOKENIZERS:
        raise ValueError(f"unknown tokenizer {tokenizer!r}; choose one of {', '.join(TOKENIZERS)}")
    return word_shingles(word_tokens(text, tokenizer, word_ngram, segment), word_ngram)


def word_tokens(normal: str, tokenizer: str, word_ngram: int, segment: str) -> list[str]:
    """The words of a normalised text for a word tokenizer (in text order when shingles of 2+ words need it)."""
    if tokenizer == "auto":
        return tokens_auto(normal, segment, ordered=word_ngram > 1)
    if tokenizer == "jieba":
        return tokens_segmenter(normal, segment)
    return tokens_word(normal)


def features(text: str, tokenizer: str = "auto", char_ngram: int = 5, word_ngram: int = 1, segment: str = "jieba"):
    """Normalise then tokenise; skips the white-space folding where it cannot matter."""
    if tokenizer == "auto" and word_ngram <= 1:
        return auto_bag(text, segment)
    normal = normalize_text(text) if tokenizer == "char" else normalize_chars(text)
    return tokenize(normal, tokenizer, char_ngram, word_ngram, segment)


# Stop words (option --stop-words): jieba's own English list (jieba.analyse.TFIDF.STOP_WORDS) plus the 60 most
# frequent words of jieba's dictionary tagged as particles, conjunctions, prepositions, pronouns or modal
# particles (u*, c, p, r, y): 的 了 在 和 他 我 ... Derived from the installed jieba, so the list is reproducible.
STOP_WORD_TAGS = ("u", "c", "p", "r", "y")
N_ZH_STOP_WORDS = 60


@lru_cache(maxsize=1)
def stop_words() -> frozenset[str]:
    import jieba  # here, not at the top: slow to load, and only --stop-words needs its list
    from jieba.analyse.tfidf import TFIDF

    path = os.path.join(os.path.dirname(jieba.__file__), "dict.txt")
    entries = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            parts = line.split()
            if len(parts) >= 3 and parts[2].startswith(STOP_WORD_TAGS):
                entries.append((-int(parts[1]), parts[0]))
    zh = [w for _, w in sorted(entries)[:N_ZH_STOP_WORDS]]
    return frozenset(TFIDF.STOP_WORDS) | frozenset(zh)


def features_without_stop_words(text: str, tokenizer: str = "auto", word_ngram: int = 1, segment: str = "jieba"):
    """features() for word tokenizers with stop words removed before the shingles are formed."""
    if tokenizer not in WORD_TOKENIZERS:
        raise ValueError(f"stop words apply to word tokens, not to tokenizer {tokenizer!r}")
    stop = stop_words()
    tokens = word_tokens(normalize_chars(text), tokenizer, word_ngram, segment)
    return word_shingles([t for t in tokens if t not in stop], word_ngram)
