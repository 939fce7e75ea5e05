"""The copy kinds of a page inside another page, and the pages that hold another without being a copy of it.

Pure Python, no Spark; used by corpus.py on generated and real originals alike. Copies (truth variants):

* ``frame``: the page (as it is, with any boilerplate of its own) inside a host's site frame (a header line,
  a menu, a column of short link lines, a footer), the frame 15-35% of the copy. A host's frame is the same
  text on every page of the host (``host_frame``), as on a real site; hosts come in sizes from a few dozen to
  thousands of characters, and a copy goes to the host whose frame gives it the share drawn for it.
* ``comments``: three reader comments (a name and date line, then one or two sentences) appended; the
  comments at most a third of the copy.
* ``ad_paragraph``: an advertisement paragraph (several ad sentences) inserted between two paragraphs, 10%
  to a third of the copy.
* ``punct``: every Chinese full-width punctuation mark written in ASCII (，。！？；：、“” and the like).

Contained pages that are not copies (negatives: never to be merged with the page they are inside):

* ``anthology``: a page holding a short page (a poem, one paragraph) among other pieces, 4-10 times its size.
* ``abstract``: the first paragraph of an article as a page of its own, the article at least 3.5 times its
  size.
"""
from __future__ import annotations

import math
import random
import re
from functools import lru_cache

from .sample_corpus import _EN_CONTENT, _EN_FUNCTION, _zh_vocab

FRAME_SHARE = (0.15, 0.35)  # the frame's share of a framed copy
ADDED_MAX = 1 / 3  # comments or an ad: at most this share of the copy
AD_SHARE_MIN = 0.10
N_COMMENTS = 3
ANTHOLOGY_RATIO = (4.0, 10.0)  # the anthology page's size over the piece it holds
ABSTRACT_RATIO_MIN = 3.5  # the article's size over its abstract's
HOSTS_PER_LANG = 40
HOST_FRAME_CHARS = (40, 7000)  # hosts' frame sizes, spread evenly on a log scale
IN_PAGE_MIN = 300  # frames, comments and ads go on texts of at least this many characters
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
_SENTENCE_END = re.compile(r"(?<=[。！？.!?])\s*")

# Full-width marks and the ASCII a Chinese repost typed on an English keyboard has instead.
PUNCT_TO_ASCII = {"，": ",", "。": ".", "！": "!", "？": "?", "；": ";", "：": ":", "、": ",", "“": '"', "”": '"',
                  "‘": "'", "’": "'", "（": "(", "）": ")", "【": "[", "】": "]", "《": "<", "》": ">"}
_PUNCT_TABLE = str.maketrans(PUNCT_TO_ASCII)


def punct_swapped(text: str) -> str:
    """The text with its Chinese full-width punctuation in ASCII."""
    return text.translate(_PUNCT_TABLE)


# --------------------------------------------------------------------------------------------------------
# Filler text: titles, comments and ads from the same vocabularies as the generated pages.


def _zh_words() -> list[str]:
    return _zh_vocab()[0][:4000]


_EN_WORDS = _EN_CONTENT + _EN_FUNCTION


def phrase(rng: random.Random, lang: str, lo: int, hi: int) -> str:
    """A run of lo-hi common words (a link title, a comment's clause)."""
    n = rng.randint(lo, hi)
    if lang == "zh":
        words = _zh_words()
        return "".join(rng.choice(words) for _ in range(n))
    text = " ".join(rng.choice(_EN_WORDS) for _ in range(n))
    return text[:1].upper() + text[1:]


def sentence(rng: random.Random, lang: str, lo: int, hi: int) -> str:
    """One or two clauses with the language's punctuation."""
    body = phrase(rng, lang, lo, hi)
    if rng.random() < 0.4:
        body += ("，" if lang == "zh" else ", ") + (phrase(rng, lang, 2, 5).lower() if lang == "en" else
                                                    phrase(rng, lang, 2, 5))
    return body + ("。" if lang == "zh" else ".")


# --------------------------------------------------------------------------------------------------------
# Site frames: one per host, the same text on every page of the host.


def host_frame_chars() -> list[int]:
    """The frame size of each host (the same for both languages)."""
    lo, hi = HOST_FRAME_CHARS
    return [round(lo * (hi / lo) ** (h / (HOSTS_PER_LANG - 1))) for h in range(HOSTS_PER_LANG)]


@lru_cache(maxsize=None)
def host_frame(host: int, lang: str) -> tuple[str, str]:
    """(top, bottom) of a host's frame: a header line and a menu above the text, link lines and a footer
    below it; about host_frame_chars()[host] characters in all, made of short lines."""
    rng = random.Random(f"frame:{lang}:{host}")
    size = host_frame_chars()[host]
    zh = lang == "zh"
    name = phrase(rng, lang, 1, 2) + rng.choice(("网", "在线", "论坛", "之家") if zh else (" Hub", " Online", " Forum"))
    header = f"{name} {phrase(rng, lang, 2, 3)}" if zh else f"{name} - {phrase(rng, lang, 2, 4)}"
    menu = " | ".join(phrase(rng, lang, 1, 1) for _ in range(rng.randint(3, 8)))
    year = rng.randint(2005, 2025)
    footer = f"© {year} {name} 版权所有" if zh else f"© {year} {name}. All rights reserved."
    above: list[str] = []
    below: list[str] = []
    total = len(header) + len(menu) + len(footer) + 2
    while total < size:  # link lines (related posts, popular this week) above and below the text
        line = phrase(rng, lang, 2, 6)
        (above if rng.random() < 0.4 else below).append(line)
        total += len(line) + 1
    return "\n".join([header, menu, *above]), "\n".join([*below, footer])


def frame_size(host: int, lang: str) -> int:
    top, bottom = host_frame(host, lang)
    return len(top) + len(bottom) + 4  # the two blank lines around the text


def framed(rng: random.Random, text: str, lang: str) -> tuple[str, int]:
    """(the text inside a host's frame, the host): the host whose frame's share of the copy is nearest a
    share drawn from FRAME_SHARE, among the hosts whose share lies in it (the nearest of all when none does)."""
    want = rng.uniform(*FRAME_SHARE)
    sizes = [frame_size(h, lang) for h in range(HOSTS_PER_LANG)]
    shares = [s / (s + len(text)) for s in sizes]
    inside = [h for h, s in enumerate(shares) if FRAME_SHARE[0] <= s <= FRAME_SHARE[1]] or range(HOSTS_PER_LANG)
    host = min(inside, key=lambda h: (abs(math.log(shares[h] / want)), h))
    top, bottom = host_frame(host, lang)
    return f"{top}\n\n{text}\n\n{bottom}", host


# --------------------------------------------------------------------------------------------------------
# Comments and ads.


def with_comments(rng: random.Random, text: str, lang: str) -> str:
    """Three reader comments after the text, together at most a third of the copy (shortened to fit)."""
    budget = int(len(text) * ADDED_MAX / (1 - ADDED_MAX)) - 2
    zh = lang == "zh"
    comments = []
    for _ in range(N_COMMENTS):
        who = (f"网友{rng.randint(100, 99999)}" if zh else f"{rng.choice(_EN_CONTENT)}{rng.randint(1, 999)}")
        when = f"{rng.randint(2015, 2025)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        body = sentence(rng, lang, 2, 8) if zh else sentence(rng, lang, 4, 14)
        comments.append([f"{who} {when}", body])
    block = _comment_block(comments, zh)
    while len(block) > budget and any(len(c[1]) > 2 for c in comments):
        longest = max(comments, key=lambda c: len(c[1]))
        longest[1] = longest[1][: max(2, len(longest[1]) * 3 // 4)]
        block = _comment_block(comments, zh)
    if len(block) > budget:  # a text too short for three comments of any size: fewer lines
        block = block[: max(0, budget)]
    return f"{text}\n\n{block}" if block else text


def _comment_block(comments: list[list[str]], zh: bool) -> str:
    head = "网友评论" if zh else "Comments"
    return "\n".join([head, *("\n".join(c) for c in comments)])


_ZH_AD_OPENERS = ("【广告】", "【推广】", "【赞助】")
_EN_AD_OPENERS = ("Sponsored:", "Advertisement:", "Promoted:")


def ad_paragraph(rng: random.Random, chars: int, lang: str) -> str:
    """An advertisement paragraph of at most `chars` characters (ad sentences about one product)."""
    zh = lang == "zh"
    opener = rng.choice(_ZH_AD_OPENERS if zh else _EN_AD_OPENERS)
    product = phrase(rng, lang, 1, 2)
    parts = [f"{opener}{product}" if zh else f"{opener} {product}"]
    size = len(parts[0])
    while size < chars:  # the last sentence is cut where the paragraph reaches its size
        price = rng.randint(5, 5000)
        s = (f"{phrase(rng, lang, 2, 5)}仅需{price}元！" if zh and rng.random() < 0.3 else
             f" {phrase(rng, lang, 3, 7).lower()}, now {price}% off!" if not zh and rng.random() < 0.3 else
             (sentence(rng, lang, 2, 6) if zh else " " + sentence(rng, lang, 3, 10)))
        parts.append(s)
        size += len(s)
    return "".join(parts)[:chars]


def with_ad_paragraph(rng: random.Random, text: str, lang: str) -> str:
    """An ad paragraph between two paragraphs (or after a sentence) of the text: 10% to a third of the copy."""
    share = rng.uniform(AD_SHARE_MIN + 0.005, ADDED_MAX - 0.003)  # the margins: blank lines, rounding
    ad = ad_paragraph(rng, round(len(text) * share / (1 - share)) - 2, lang)  # 2: the blank line after it
    cuts = [m.end() for m in _PARAGRAPH_BREAK.finditer(text)]
    if cuts:
        at = rng.choice(cuts)
        return text[:at] + ad + "\n\n" + text[at:]
    ends = [m.end() for m in _SENTENCE_END.finditer(text)][:-1]
    at = rng.choice(ends) if ends else len(text)
    return text[:at].rstrip() + "\n\n" + ad + "\n\n" + text[at:].lstrip()


# --------------------------------------------------------------------------------------------------------
# Contained pages that are not copies.


def anthology(rng: random.Random, piece: str, other_piece, lang: str, page_chars: int = 0) -> str:
    """A page holding `piece` at a random place among other pieces (other_piece(rng, chars) makes one),
    ANTHOLOGY_RATIO times the size of the piece's page (page_chars; the piece alone when 0); pieces are
    separated by blank lines and numbered like a collection."""
    want = max(page_chars, len(piece)) * rng.uniform(*ANTHOLOGY_RATIO)
    pieces = [piece]
    size = len(piece)
    while size < want:
        extra = other_piece(rng, max(20, min(int(want - size), int(len(piece) * rng.uniform(0.6, 1.6)))))
        pieces.append(extra)
        size += len(extra) + 8
    rng.shuffle(pieces)
    title = phrase(rng, lang, 2, 4) + ("选集" if lang == "zh" else " - a collection")
    numbered = [f"{i}. {p}" if lang == "en" else f"（{i}）{p}" for i, p in enumerate(pieces, 1)]
    return "\n\n".join([title, *numbered])


def abstract_of(text: str) -> str | None:
    """The first paragraph of a text when the text is at least ABSTRACT_RATIO_MIN times its size (and the
    paragraph has 40 characters or more), else None."""
    first = _PARAGRAPH_BREAK.split(text.strip(), maxsplit=1)[0].strip()
    if len(first) < 40 or len(text) < ABSTRACT_RATIO_MIN * len(first):
        return None
    return first
