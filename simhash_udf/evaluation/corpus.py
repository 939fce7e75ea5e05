"""An evaluation corpus with ground truth: originals (generated or real prose) plus the edits crawls see.

Pure Python, no Spark. Every document comes from ``random.Random`` seeded by (seed, document number), so a
seed gives the same rows on every machine. Two sources of originals:

* ``generated``: Chinese from jieba's own dictionary (words drawn by frequency, real punctuation, sentences,
  paragraphs; sample_corpus.py's sentence model) and English from wordfreq's 30,000 most frequent words; every page has a
  topic (a few hundred words drawn more often) and sits inside its site's boilerplate (header, navigation,
  footer). Lengths: 35% short (20-140 characters), 15% medium (140-500), 45% long (500-5,000), 5% very long
  (5,000-12,000).
* ``manpages``: real prose that is not generated: Debian's Chinese man pages (package manpages-zh) and the
  machine's English man pages, troff markup stripped, used as whole pages (long) and as single paragraphs
  (short and medium). Normalised-identical originals are dropped (man pages repeat option lines).

The same text-level edits are then applied to either source (``VARIANTS``, among them copy_kinds.py's: the
text in a host's site frame, with reader comments, with an ad paragraph, Chinese punctuation typed in ASCII);
about 40% of the originals get 1 to 4 variants. Negatives (``NEGATIVES``), each its own cluster with
`related` naming the page it is no copy of: for 10% of the originals a hard negative (another page on the same
topic under the same site's boilerplate, or another paragraph of the same man page), for 5% of the short
texts an anthology page holding it among other pieces (4-10 times its size), for 5% of the texts whose first
paragraph is under a 3.5th of them that paragraph as a page (an abstract inside its article).

Every row names its host (docs.parquet's `host` column, which the job does not read; scripts/bench/host_lines.py
does): a framed copy its frame's host (copy_kinds.host_frame: the 40 hosts of a language), a generated page its
site's (the pages of a site share its boilerplate; a copy under another site's boilerplate that site's), every
other row (real text, reposts) one of N_REPOST_HOSTS hosts drawn at random. The hosts are drawn from Randoms of their own, so
a corpus's texts are those it had before rows had hosts.
"""
from __future__ import annotations

import bisect
import glob
import gzip
import itertools
import os
import random
import re
from dataclasses import dataclass

import numpy as np

from ..core.text import normalize_text
from .copy_kinds import (
    ABSTRACT_RATIO_MIN,
    IN_PAGE_MIN,
    abstract_of,
    anthology,
    framed,
    punct_swapped,
    with_ad_paragraph,
    with_comments,
)
from .quality import contained_pairs, shingle_set, similar_pairs
from .sample_corpus import (
    _EN_CONTENT,
    _en_sentence,
    _render_sentence,
    _zh_sentence,
    _zh_vocab,
)

# Near-duplicate kinds. Short texts (< 140 characters) only get the ones that make sense for a post; the
# kinds of copy_kinds.py: a text in a host's frame, with comments or an ad paragraph (texts of IN_PAGE_MIN
# characters or more), Chinese punctuation typed in ASCII (Chinese texts).
VARIANTS = ("mirror", "boilerplate", "ad", "numbers", "edits", "moved", "truncated", "width_case",
            "frame", "comments", "ad_paragraph", "punct")
SHORT_VARIANTS = ("mirror", "numbers", "edits", "truncated", "width_case", "punct")
IN_PAGE_VARIANTS = ("frame", "comments", "ad_paragraph")
# Pages that are no copy of the page they are related to (truth: a cluster of their own, `related` names the
# page they must not be merged with): another page of the same topic or man page, a page holding a short page
# among many others, the first paragraph of an article.
NEGATIVES = ("hard_negative", "anthology", "abstract")
SHORT_MAX = 140
LONG_MIN = 500
VARIANT_SHARE = 0.4
HARD_NEGATIVE_SHARE = 0.1
CONTAINED_SHARE = 0.05  # of the originals that can be: an anthology holds it; and its abstract is a page
# A page at least 0.9 inside another of at most this many times its characters is its copy with something
# added (the job's --max-size-ratio with containment on): the man-page truth keeps no such pair apart.
NESTED_RATIO = 1.6
ANTHOLOGY_PIECE = (40, 1500)  # lengths of the texts an anthology holds (a poem, a paragraph)
_LENGTHS = ((0.35, 20, SHORT_MAX - 1), (0.15, SHORT_MAX, LONG_MIN - 1), (0.45, LONG_MIN, 5000), (0.05, 5000, 12000))
_N_TOPICS = 400
_N_SITES = 300
N_REPOST_HOSTS = 1000  # hosts of real text and of reposts that are not framed (repost_host)
_SENTENCE_END = re.compile(r"(?<=[。！？.!?])\s*")
_DIGITS = re.compile(r"\d+")
_EN_WORD = re.compile(r"[A-Za-z]+")
_HAN_RUN = re.compile(r"[\u4e00-\u9fff]{2,}")


@dataclass
class Doc:
    text: str
    lang: str
    body: str  # the article without site boilerplate (the unit the edits work on)
    site: int  # -1 for real text


# --------------------------------------------------------------------------------------------------------
# Generated originals.


def _topic_picker(rng: random.Random, lang: str, topic: int):
    """pick() and pick_noun() for a topic: the topic's 300 words (fixed by the topic number) drawn 45% (zh) or
    30% (en) of the time, else any word of the vocabulary; all in proportion to their frequencies."""
    trng = random.Random(f"topic:{lang}:{topic}")
    if lang == "zh":
        words, cum, nouns = _zh_vocab()
        chosen = sorted(trng.sample(range(300, len(words)), 300))
        t_words = [words[i] for i in chosen]
        t_cum = list(itertools.accumulate(cum[i] - (cum[i - 1] if i else 0) for i in chosen))
        t_nouns = trng.sample(nouns, 40)

        def pick() -> str:
            if rng.random() < 0.45:
                return t_words[bisect.bisect_right(t_cum, rng.random() * t_cum[-1])]
            return words[bisect.bisect_right(cum, rng.random() * cum[-1])]

        return pick, lambda: rng.choice(t_nouns)
    words, cum = _en_vocab()
    chosen = sorted(trng.sample(range(300, len(words)), 300))
    t_words = [words[i] for i in chosen]
    t_cum = list(itertools.accumulate(cum[i] - cum[i - 1] for i in chosen))

    def pick_en() -> str:
        if rng.random() < 0.3:
            return t_words[bisect.bisect_right(t_cum, rng.random() * t_cum[-1])]
        return words[bisect.bisect_right(cum, rng.random() * cum[-1])]

    return pick_en, lambda: rng.choice(t_words[:60])


_EN_VOCAB: tuple[list[str], list[float]] | None = None


def _en_vocab() -> tuple[list[str], list[float]]:
    """The 30,000 most frequent English words of wordfreq (alphabetic only) and cumulative frequencies."""
    global _EN_VOCAB
    if _EN_VOCAB is None:
        import wordfreq  # here, not at the top: a dev dependency (pyproject.toml), for English corpora only

        words = [w for w in wordfreq.top_n_list("en", 32000) if w.isascii() and w.isalpha() and w != "i"][:30000]
        freqs = [wordfreq.word_frequency(w, "en") for w in words]
        _EN_VOCAB = (words, list(itertools.accumulate(freqs)))
    return _EN_VOCAB


def site_boilerplate(site: int, lang: str) -> tuple[str, str]:
    """(header with navigation, footer) of a generated site: the same for every page of the site."""
    srng = random.Random(f"site:{lang}:{site}")
    if lang == "zh":
        words, _, nouns = _zh_vocab()
        name = srng.choice(nouns[:3000]) + srng.choice(("网", "在线", "资讯", "日报", "之家", "论坛"))
        nav = " | ".join(srng.sample(("首页", "新闻", "科技", "财经", "体育", "娱乐", "汽车", "房产", "教育",
                                      "健康", "旅游", "视频", "图片", "专题", "社区"), srng.randint(5, 9)))
        header = f"{name} {nav} 登录 注册 搜索"
        footer = (f"关于我们 | 联系方式 | 广告服务 | 版权声明 © {srng.randint(2005, 2025)} {name} 版权所有 "
                  f"京ICP备{srng.randint(10000000, 99999999)}号")
        return header, footer
    name = " ".join(w.capitalize() for w in srng.sample(_EN_CONTENT, 2))
    name += srng.choice((" News", " Times", " Daily", " Post", " Online"))
    nav = " | ".join(srng.sample(("Home", "News", "World", "Business", "Tech", "Sports", "Culture", "Travel",
                                  "Health", "Opinion", "Video", "Podcasts", "Weather"), srng.randint(5, 9)))
    header = f"{name} {nav} Sign in Subscribe Search"
    footer = (f"About us | Contact | Advertise | Privacy policy | Terms of use Copyright {srng.randint(2005, 2025)} "
              f"{name}. All rights reserved.")
    return header, footer


def wrap(body: str, site: int, lang: str) -> str:
    if site < 0 or len(body) < LONG_MIN:  # short posts and real text carry no boilerplate of their own
        return body
    header, footer = site_boilerplate(site, lang)
    return f"{header}\n\n{body}\n\n{footer}"


def generated_body(rng: random.Random, lang: str, topic: int, length: int) -> str:
    """Paragraphs of sentences until `length` characters; cut at the last sentence end (or hard) above it."""
    pick, pick_noun = _topic_picker(rng, lang, topic)
    sentence = _zh_sentence if lang == "zh" else _en_sentence
    slots: list = []
    slot_p = rng.uniform(0.1, 0.3)
    paras: list[str] = []
    size = 0
    while size < length:
        para: list[str] = []
        for _ in range(rng.randint(3, 8)):
            para.append(_render_sentence(sentence(rng, pick, pick_noun, slots, slot_p), lang, slots))
            size += len(para[-1]) + (lang == "en")
            if size >= length:
                break
        paras.append(("" if lang == "zh" else " ").join(para))
        size += 2
    body = "\n\n".join(paras)
    if len(body) > length:
        cut = body[:length]
        ends = [m.end() for m in _SENTENCE_END.finditer(cut)]
        body = cut[: ends[-1]].rstrip() if ends and ends[-1] >= max(length * 0.7, 24) else cut.rstrip()
    return body


def generated_original(seed: int, number: int) -> tuple[Doc, int, random.Random]:
    rng = random.Random(f"{seed}:orig:{number}")
    lang = "zh" if rng.random() < 0.5 else "en"
    r, acc = rng.random(), 0.0
    for share, lo, hi in _LENGTHS:  # noqa: B007 (lo, hi are used after the break)
        acc += share
        if r < acc:
            break
    body = generated_body(rng, lang, topic := rng.randrange(_N_TOPICS), rng.randint(lo, hi))
    site = rng.randrange(_N_SITES)
    return Doc(wrap(body, site, lang), lang, body, site), topic, rng


# --------------------------------------------------------------------------------------------------------
# Real originals: man pages.

_TROFF_ESCAPE = re.compile(r"\\f[BIRP0-9]|\\\(..|\\[-&e|^]|\\s[-+]?\d|\\\*\(..|\\\*.")
_PARAGRAPH_MACRO = re.compile(r"^\.(SH|SS|PP|P|LP|TP|IP|HP|sp|br)\b")


def man_page_paragraphs(path: str) -> list[str]:
    """The prose paragraphs of one man page, troff markup stripped (macro lines end a paragraph)."""
    try:
        raw = gzip.open(path, "rt", encoding="utf-8", errors="replace").read()
    except (OSError, EOFError):
        return []
    paras, cur = [], []
    for line in raw.splitlines():
        if line.startswith((".", "'")) or not line.strip():
            if _PARAGRAPH_MACRO.match(line) or not line.strip():
                if cur:
                    paras.append(" ".join(cur))
                    cur = []
            continue
        cur.append(_TROFF_ESCAPE.sub("", line).strip())
    if cur:
        paras.append(" ".join(cur))
    return [p for p in paras if len(p) >= 20]


def _sections(rng: random.Random, paras: list[str], n: int) -> list[str]:
    """Up to n runs of consecutive paragraphs of 500-5,000 characters (long documents from one page)."""
    out = []
    for _ in range(n):
        start = rng.randrange(len(paras)) if paras else 0
        run: list[str] = []
        for p in paras[start:]:
            if sum(map(len, run)) + len(p) > 5000:
                break
            run.append(p)
        if sum(map(len, run)) >= LONG_MIN:
            out.append("\n\n".join(run))
    return out


def real_originals(seed: int, n: int, zh_glob: str, en_glob: str) -> list[tuple[Doc, list[str]]]:
    """Up to n real documents, half Chinese: whole man pages (capped at 12,000 characters) and single
    paragraphs, each with its page's other paragraphs (for hard negatives). Sorted file lists and a seeded
    shuffle: deterministic given the installed pages."""
    rng = random.Random(f"{seed}:real")
    out: list[tuple[Doc, list[str]]] = []
    for lang, pattern in (("zh", zh_glob), ("en", en_glob)):
        # Google Cloud SDK pages (thousands, generated from one template) would crowd out the prose.
        files = sorted(f for f in glob.glob(pattern) if not os.path.basename(f).startswith(("gcloud", "bq")))
        rng.shuffle(files)
        want = n // 2 if lang == "zh" else n - len(out)
        docs: list[tuple[Doc, list[str]]] = []
        seen: set[str] = set()
        for path in files:
            paras = man_page_paragraphs(path)
            if lang == "zh" and not any(_HAN_RUN.search(p) for p in paras):
                continue
            units = ["\n\n".join(paras)[:12000], *_sections(rng, paras, 2)] + rng.sample(paras, min(len(paras), 5))
            for unit in units:
                key = normalize_text(unit)
                if len(unit) >= 20 and key not in seen:
                    seen.add(key)
                    docs.append((Doc(unit, lang, unit, -1), paras))
            if len(docs) >= want:
                break
        out.extend(docs[:want])
    return out


# --------------------------------------------------------------------------------------------------------
# Text-level edits (any text, generated or real).


def _sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE_END.split(text) if s]


def _word_spans(text: str, lang: str) -> list[tuple[int, int]]:
    """Spans of editable words: English words; in Chinese text, two-character pieces of Han runs."""
    if lang == "zh":
        spans = [(m.start() + i, m.start() + i + 2) for m in _HAN_RUN.finditer(text)
                 for i in range(0, len(m.group()) - 1, 2)]
        if spans:
            return spans
    return [m.span() for m in _EN_WORD.finditer(text)]


def edit_words(rng: random.Random, text: str, lang: str, n_edits: int) -> str:
    """n_edits words replaced, inserted or deleted (replacements drawn from the text's own words)."""
    for _ in range(n_edits):
        spans = _word_spans(text, lang)
        if len(spans) < 2:
            break
        a, b = rng.choice(spans)
        c, d = rng.choice(spans)
        other = text[c:d]
        op = rng.choice(("replace", "insert", "delete"))
        sep = "" if lang == "zh" and _HAN_RUN.match(other) else " "
        if op == "replace" and other != text[a:b]:
            text = text[:a] + other + text[b:]
        elif op == "insert":
            text = text[:b] + sep + other + text[b:]
        else:
            text = text[:a] + text[b:]
    return text


def change_numbers(rng: random.Random, text: str) -> str:
    """Every number gets another value, often of another length (digit folding alone does not hide it)."""
    return _DIGITS.sub(lambda m: str(rng.randint(0, 10 ** rng.randint(1, max(1, len(m.group()) + 1)))), text)


def move_sentence(rng: random.Random, text: str) -> str:
    parts = _sentences(text)
    if len(parts) < 3:
        return text
    s = parts.pop(rng.randrange(len(parts)))
    parts.insert(rng.randrange(len(parts) + 1), s)
    sep = "" if any("\u4e00" <= c <= "\u9fff" for c in s[:5]) else " "
    return sep.join(parts)


def truncate(rng: random.Random, text: str) -> str:
    """The last 2-20% cut (a page truncated by the crawler or by the site's "read more")."""
    return text[: max(1, int(len(text) * (1 - rng.uniform(0.02, 0.2))))].rstrip()


def width_case(rng: random.Random, text: str) -> str:
    """Some ASCII in full-width forms, some words re-cased, Chinese punctuation in half-width forms."""
    out = []
    for ch in text:
        r = rng.random()
        if "!" <= ch <= "~" and r < 0.1:
            out.append(chr(ord(ch) + 0xFEE0))
        elif ch.isascii() and ch.isalpha() and r < 0.2:
            out.append(ch.swapcase())
        elif ch in "，。：；！？" and r < 0.5:
            out.append(chr(ord(ch) - 0xFEE0) if ch in "，：；！？" else ".")
        else:
            out.append(ch)
    return "".join(out)


_ZH_ADS = ("【广告】限时特惠，{x}低至{p}元，点击购买！", "【推广】新用户专享{x}优惠券，扫码立即领取！",
           "【赞助】爆款{x}直降{p}元，库存有限，速抢！")
_EN_ADS = ("Sponsored: {x} now {p}% off. Shop today and get free delivery!",
           "Advertisement: try {x} free for 30 days. Cancel anytime.", "Ad: the best {x} deals, this week only.")
_ZH_ITEMS = ("智能手机", "蓝牙耳机", "空气净化器", "扫地机器人", "咖啡机", "在线课程", "旅行套餐")
_EN_ITEMS = ("headphones", "running shoes", "coffee makers", "laptops", "smart watches", "meal kits")


def insert_ad(rng: random.Random, text: str, lang: str) -> str:
    ads, items = (_ZH_ADS, _ZH_ITEMS) if lang == "zh" else (_EN_ADS, _EN_ITEMS)
    ad = rng.choice(ads).format(x=rng.choice(items), p=rng.randint(5, 500))
    cuts = [m.end() for m in re.finditer(r"\n\n", text)] or [m.end() for m in _SENTENCE_END.finditer(text)][:-1]
    at = rng.choice(cuts) if cuts else len(text)
    return text[:at] + ad + "\n\n" + text[at:]


def site_host(site: int, lang: str) -> str:
    """The host of a generated site (its pages share site_boilerplate)."""
    return f"site-{lang}-{site}.example"


def frame_host(host: int, lang: str) -> str:
    """The host of copy_kinds.host_frame(host, lang) (its pages share that frame)."""
    return f"frame-{lang}-{host}.example"


def repost_host(seed: int, row: int) -> str:
    """One of N_REPOST_HOSTS hosts for a page that has no site of its own (real text, a repost), drawn from a
    Random of its own so that the rows' texts do not depend on it."""
    return f"repost-{random.Random(f'{seed}:host:{row}').randrange(N_REPOST_HOSTS)}.example"


def make_variant(rng: random.Random, kind: str, doc: Doc) -> tuple[str, str | None]:
    """(the copy's text, its host when the kind decides it: the frame's or the boilerplate's site, else None)."""
    if kind == "mirror":
        return doc.text, None
    if kind == "boilerplate":
        lang_sites = [s for s in range(_N_SITES) if s != doc.site]
        site = rng.choice(lang_sites)
        return (wrap(doc.body, site, doc.lang), site_host(site, doc.lang)) if len(doc.body) >= LONG_MIN else (doc.text, None)
    if kind == "frame":  # the whole page inside another host's frame: the added part is the frame alone
        text, host = framed(rng, doc.text, doc.lang)
        return text, frame_host(host, doc.lang)
    edited = {
        "ad": lambda b: insert_ad(rng, b, doc.lang),
        "numbers": lambda b: change_numbers(rng, b),
        "edits": lambda b: edit_words(rng, b, doc.lang, rng.randint(1, 3)),
        "moved": lambda b: move_sentence(rng, b),
        "truncated": lambda b: truncate(rng, b),
        "width_case": lambda b: width_case(rng, b),
        "comments": lambda b: with_comments(rng, b, doc.lang),
        "ad_paragraph": lambda b: with_ad_paragraph(rng, b, doc.lang),
        "punct": punct_swapped,
    }[kind](doc.body)
    return (doc.text.replace(doc.body, edited, 1) if doc.site >= 0 else edited), None


def variant_kinds(rng: random.Random, doc: Doc) -> list[str]:
    kinds = SHORT_VARIANTS if len(doc.body) < SHORT_MAX else VARIANTS
    if len(doc.body) < LONG_MIN:  # medium texts carry no boilerplate to swap
        kinds = tuple(k for k in kinds if k != "boilerplate")
    if len(doc.body) < IN_PAGE_MIN:
        kinds = tuple(k for k in kinds if k not in IN_PAGE_VARIANTS)
    if punct_swapped(doc.body) == doc.body:  # no full-width punctuation (English)
        kinds = tuple(k for k in kinds if k != "punct")
    if not _DIGITS.search(doc.body):
        kinds = tuple(k for k in kinds if k != "numbers")
    return rng.sample(kinds, min(len(kinds), rng.randint(1, 4)))


# --------------------------------------------------------------------------------------------------------
# The corpus.


def make_corpus(n: int, seed: int = 1, source: str = "generated",
                zh_glob: str = "/usr/share/man/zh_CN/man*/*.gz",
                en_glob: str = "/usr/share/man/man[1-8]/*.gz") -> list[dict]:
    """About n rows {id, text, lang, cluster, variant, related}: cluster is the id of the original a row
    derives from (its own id for originals and negatives); related is, for a negative (NEGATIVES), the id of
    the page it must not be merged with (None for other rows). Ids are a seeded permutation of 1..rows, so
    the smallest id of a cluster is not always the original."""
    rows: list[dict] = []  # cluster and related hold row indexes until ids are assigned
    per_original = 1 + VARIANT_SHARE * 2.5 + HARD_NEGATIVE_SHARE + CONTAINED_SHARE
    n_originals = max(1, round(n / per_original))
    if source == "generated":
        originals = (generated_original(seed, i) for i in range(n_originals))
        other_piece = _generated_piece
    elif source == "manpages":
        real = real_originals(seed, n_originals, zh_glob, en_glob)
        if not real:
            raise ValueError(f"no man pages found under {zh_glob} or {en_glob}: install manpages-zh and man-db pages")
        originals = ((doc, i, random.Random(f"{seed}:real:{i}"), paras) for i, (doc, paras) in enumerate(real))
        other_piece = _real_piece({lang: [p for d, paras in real if d.lang == lang for p in paras] for lang in ("zh", "en")})
    else:
        raise ValueError(f"unknown source {source!r}; choose generated or manpages")
    def host(site: int, lang: str) -> str:  # a generated site's host, else a repost host for the next row
        return site_host(site, lang) if site >= 0 else repost_host(seed, len(rows))

    for item in originals:
        doc, topic, rng = item[:3]
        idx = len(rows)
        rows.append(_row(doc.text, doc.lang, idx, "original", host=host(doc.site, doc.lang)))
        if rng.random() < VARIANT_SHARE:
            for kind in variant_kinds(rng, doc):
                text, copy_host = make_variant(rng, kind, doc)
                rows.append(_row(text, doc.lang, idx, kind, host=copy_host or host(-1, doc.lang)))
        if rng.random() < HARD_NEGATIVE_SHARE:
            if source == "generated":
                body = generated_body(rng, doc.lang, topic, max(20, len(doc.body)))
                text = wrap(body, doc.site, doc.lang)
            else:
                others = [p for p in item[3] if p != doc.body]
                text = rng.choice(others) if others else None
            if text:
                rows.append(_row(text, doc.lang, len(rows), "hard_negative", idx, host(doc.site, doc.lang)))
        for kind, text, site in contained_negatives(random.Random(f"{seed}:contained:{idx}"), doc, other_piece):
            rows.append(_row(text, doc.lang, len(rows), kind, idx, host(site, doc.lang)))
    if source == "manpages":
        rows = without_copies_across_clusters(rows)
    ids = random.Random(f"{seed}:ids").sample(range(1, len(rows) + 1), len(rows))
    out = [{"id": ids[i], "text": r["text"], "lang": r["lang"], "cluster": ids[r["cluster"]], "variant": r["variant"],
            "related": None if r["related"] is None else ids[r["related"]], "host": r["host"]}
           for i, r in enumerate(rows)]
    out.sort(key=lambda r: r["id"])
    return out


def _row(text: str, lang: str, cluster: int, variant: str, related: int | None = None, host: str = "") -> dict:
    return {"text": text, "lang": lang, "cluster": cluster, "variant": variant, "related": related, "host": host}


def contained_negatives(rng: random.Random, doc: Doc, other_piece) -> list[tuple[str, str, int]]:
    """(kind, text, site: -1 for none) of the contained pages that are not copies of `doc`: with
    CONTAINED_SHARE each, an anthology holding its text (texts of ANTHOLOGY_PIECE characters; on a generated
    page, under another site's boilerplate) and the page of its text's first paragraph (copy_kinds.abstract_of)."""
    out = []
    if rng.random() < CONTAINED_SHARE and ANTHOLOGY_PIECE[0] <= len(doc.body) <= ANTHOLOGY_PIECE[1]:
        text = anthology(rng, doc.body, lambda r, chars: other_piece(r, doc.lang, chars), doc.lang, len(doc.text))
        site = rng.randrange(_N_SITES) if doc.site >= 0 else -1
        out.append(("anthology", wrap(text, site, doc.lang) if doc.site >= 0 else text, site))
    if rng.random() < CONTAINED_SHARE and (abstract := abstract_of(doc.body)) is not None:
        page = wrap(abstract, doc.site, doc.lang)  # as its site shows it: the article is 3.5x the whole page
        if len(doc.text) >= ABSTRACT_RATIO_MIN * len(page):
            out.append(("abstract", page, doc.site))
    return out


def _generated_piece(rng: random.Random, lang: str, chars: int) -> str:
    """A generated text of about `chars` characters on a random topic (an anthology's other pieces)."""
    return generated_body(rng, lang, rng.randrange(_N_TOPICS), chars)


def _real_piece(paragraphs: dict[str, list[str]]):
    """other_piece for real text: a random man-page paragraph of the language, cut at twice `chars`."""
    def piece(rng: random.Random, lang: str, chars: int) -> str:
        return rng.choice(paragraphs[lang])[: 2 * chars]

    return piece


def without_copies_across_clusters(rows: list[dict], threshold: float = 0.9,
                                   max_ratio: float = NESTED_RATIO) -> list[dict]:
    """Rows whose truth clusters hold no copies of each other: no near-copies (Jaccard >= threshold, the
    oracle's) and no page at least `threshold` inside another of at most max_ratio times its characters.

    Man pages repeat themselves: a page of one paragraph is also its section and that paragraph, two sections
    can cover the same paragraphs, a boilerplate paragraph is in many pages, and a hard negative (another
    paragraph of the page) can be one of the page's sampled originals. Such rows in two truth clusters made the
    truth wrong: a perfect clustering scored truth precision 0.78 on 1,000 pages. A paragraph inside a run of
    paragraphs that adds at most max_ratio - 1 of it is, to containment, what a copy with comments is (the
    page plus added text within the bound): two truth clusters then call a copy no copy. Of each such pair the
    later cluster is dropped (an original with its copies, or a negative), and so is a negative whose related
    page was dropped; `cluster` and `related` are row indexes here."""
    sets = [shingle_set(r["text"]) for r in rows]
    a, b, _ = similar_pairs(sets, threshold)
    c, d, _ = contained_pairs(sets, [len(r["text"]) for r in rows], threshold, max_ratio)
    pairs = np.unique(np.sort(np.c_[np.r_[a, c], np.r_[b, d]].astype(np.int64), axis=1), axis=0)
    dropped: set[int] = set()
    for i, j in pairs.tolist():
        ci, cj = rows[i]["cluster"], rows[j]["cluster"]
        if ci != cj and ci not in dropped and cj not in dropped:
            dropped.add(max(ci, cj))
    kept = [i for i, r in enumerate(rows) if r["cluster"] not in dropped
            and (r["related"] is None or rows[r["related"]]["cluster"] not in dropped)]
    position = {old: new for new, old in enumerate(kept)}
    return [{**rows[i], "cluster": position[rows[i]["cluster"]],
             "related": None if rows[i]["related"] is None else position[rows[i]["related"]]} for i in kept]


def write_corpus(rows: list[dict], out_dir: str) -> tuple[str, str]:
    """OUT/docs.parquet (id, text, lang, host): the job's input; OUT/truth.parquet (id, cluster, variant, related)."""
    import pyarrow as pa  # here, not at the top: the generators run without it; writing Parquet needs it
    import pyarrow.parquet as pq

    os.makedirs(out_dir, exist_ok=True)
    docs = os.path.join(out_dir, "docs.parquet")
    truth = os.path.join(out_dir, "truth.parquet")
    pq.write_table(pa.table({"id": pa.array([r["id"] for r in rows], pa.int64()),
                             "text": [r["text"] for r in rows], "lang": [r["lang"] for r in rows],
                             "host": [r["host"] for r in rows]}), docs)
    pq.write_table(pa.table({"id": pa.array([r["id"] for r in rows], pa.int64()),
                             "cluster": pa.array([r["cluster"] for r in rows], pa.int64()),
                             "variant": [r["variant"] for r in rows],
                             "related": pa.array([r.get("related") for r in rows], pa.int64())}), truth)
    return docs, truth
