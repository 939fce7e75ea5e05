"""Text normalisation and tokenisation: the first two of the fingerprint's five steps.

Pure Python, no Spark. Normalisation folds the differences crawls really show between copies of a page
(full-width vs half-width forms, case, runs of white space, and, as in CCNet, every digit to 0 so that a
changed counter, date or price does not move the fingerprint); tokenisation drops white space and
punctuation entirely, so indentation runs and punctuation can never dominate a fingerprint.
"""
from __future__ import annotations

import logging
import re
import unicodedata
from functools import lru_cache

# Han ideographs (CJK unified, extension A, compatibility, extensions B+). Kana and Hangul are left to the
# word tokenizer: they are written with spaces or are rare in our crawls.
HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_WHITESPACE = re.compile(r"\s+")
_DIGIT = re.compile(r"\d")
# A run of Han characters, or a run of word characters that are neither Han nor underscore.
_RUNS = re.compile(f"([{HAN}]+)|([^\\W_{HAN}]+)")
_WORDS_AND_HAN_CHARS = re.compile(f"[{HAN}]|[^\\W_{HAN}]+")
_WORD_TOKEN = re.compile(r"[^\W_]")

TOKENIZERS = ("auto", "jieba", "word", "char")


def normalize_text(text: str) -> str:
    """Unicode NFKC, lower case, every decimal digit to 0, every white-space run to one space, ends stripped."""
    folded = _DIGIT.sub("0", unicodedata.normalize("NFKC", text).lower())
    return _WHITESPACE.sub(" ", folded).strip()


@lru_cache(maxsize=1)
def _jieba():
    import jieba

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()
    return jieba.dt


def jieba_version() -> str:
    import jieba

    return jieba.__version__


def tokens_auto(text: str) -> list[str]:
    """jieba (precise mode, HMM on) for each Han run, whole words for everything else."""
    cut = _jieba().lcut
    out: list[str] = []
    for han, word in _RUNS.findall(text):
        if han:
            out.extend(cut(han))
        else:
            out.append(word)
    return out


def tokens_jieba(text: str) -> list[str]:
    """The whole text through jieba; white-space and punctuation tokens dropped."""
    return [t for t in _jieba().lcut(text) if _WORD_TOKEN.search(t)]


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


def tokenize(text: str, tokenizer: str = "auto", char_ngram: int = 5, word_ngram: int = 1) -> list[str]:
    """Features of an already normalised text."""
    if tokenizer == "char":
        return tokens_char(text, char_ngram)
    if tokenizer == "auto":
        tokens = tokens_auto(text)
    elif tokenizer == "jieba":
        tokens = tokens_jieba(text)
    elif tokenizer == "word":
        tokens = tokens_word(text)
    else:
        raise ValueError(f"unknown tokenizer {tokenizer!r}; choose one of {', '.join(TOKENIZERS)}")
    return word_shingles(tokens, word_ngram)
