"""A corpus with ground truth for the quality evaluation (scripts/evaluate.py): Chinese (words from jieba's
dictionary, by frequency) and English pages from 20 to 8,000+ characters, and the copies crawls see.

    python scripts/make_corpus.py OUT.parquet [--n 100000] [--seed 1] [--short-share 0.3]

Columns: id, text, lang, group (the true cluster: the id of the original), variant, site.
Long-page variants: mirror, boilerplate (the same article in another site's header, navigation and footer),
ad (an injected ad paragraph), numbers (counters, dates, prices changed), edits (1-3 words inserted, deleted
or replaced), moved (a sentence moved to another place), truncated (the last paragraph cut), width (full-width
forms and case changes). Short-text variants (microblog-like): mirror, repost ("转发微博//@user:" / "RT @user:"),
tag (a hashtag, link or emoji added), width (punctuation, case and width changed), edit (one word replaced).
Hard negatives: unrelated articles in the same site template (the same header, navigation and footer).
The page and sentence generators are simhash_udf/sample_corpus.py's; everything is seeded, no clock, no network.
"""
from __future__ import annotations

import argparse
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from simhash_udf import sample_corpus as sc  # noqa: E402

LONG_VARIANTS = ("mirror", "boilerplate", "ad", "numbers", "edits", "moved", "truncated", "width")
SHORT_VARIANTS = ("mirror", "repost", "tag", "width", "edit")
_ZH_NAV = ["首页", "新闻", "财经", "体育", "娱乐", "科技", "汽车", "房产", "教育", "旅游", "健康", "军事"]
_EN_NAV = ["Home", "News", "Business", "Sports", "Tech", "Travel", "Health", "Opinion", "Video", "Weather"]
_EMOJI = ["😀", "👍", "🔥", "🙏", "🎉", "😂", "❤️"]


def template(rng: random.Random, lang: str, site: int) -> tuple[str, str]:
    """A site's boilerplate: header with navigation, and footer."""
    if lang == "zh":
        nav = " | ".join(rng.sample(_ZH_NAV, 7))
        return (f"{rng.choice(sc._ZH_SITES)}{site}网 {nav} 登录 注册",
                f"关于我们 | 联系方式 | 广告服务 | 版权所有 © 2025 site{site}.cn 京ICP备{rng.randint(10000000, 99999999)}号")
    nav = " | ".join(rng.sample(_EN_NAV, 7))
    return (f"{rng.choice(sc._EN_SITES)} {site} {nav} Sign in Subscribe",
            f"About us | Contact | Advertise | Privacy | Terms © 2025 Site{site} Media. All rights reserved.")


def long_page(rng: random.Random, lang: str) -> dict:
    """One article; about a third glue two or three generated bodies together (5,000-8,000+ characters)."""
    page = sc._make_page(rng, lang)
    for _ in range(rng.choice([0, 0, 1, 2])):
        more = sc._make_page(rng, lang)
        offset = len(page["slots"])
        page["slots"] += more["slots"]
        page["paras"] += [[[(k, v + offset) if k == "n" else (k, v) for k, v in s] for s in p] for p in more["paras"]]
    return page


def body(page: dict, paras=None, slots=None) -> str:
    slots = page["slots"] if slots is None else slots
    return "\n\n".join(sc._render_paragraph(p, page["lang"], slots) for p in (paras or page["paras"]))


def dressed(tpl: tuple[str, str], text: str) -> str:
    return f"{tpl[0]}\n\n{text}\n\n{tpl[1]}"


def long_variant(rng: random.Random, kind: str, page: dict, tpl, other_tpl) -> str:
    strip = lambda full: full.split("\n\n", 1)[1]  # noqa: E731  (sample_corpus pages start with a header line)
    if kind == "mirror":
        return dressed(tpl, body(page))
    if kind == "boilerplate":
        return dressed(other_tpl, body(page))
    if kind in ("ad", "numbers", "edits"):
        return dressed(tpl, strip(sc._VARIANT_FN[kind](rng, page)))
    if kind == "width":
        return sc._variant_fullwidth(rng, {**page, "header": tpl[0]}) + "\n\n" + tpl[1]
    paras = [list(p) for p in page["paras"]]
    if kind == "moved":
        src = rng.randrange(len(paras))
        sentence = paras[src].pop(rng.randrange(len(paras[src])))
        paras = [p for p in paras if p] or [[]]
        dst = rng.randrange(len(paras))
        paras[dst].insert(rng.randint(0, len(paras[dst])), sentence)
        return dressed(tpl, body(page, paras))
    if kind == "truncated":
        keep = max(1, len(paras) - 1) if len(paras) > 3 else len(paras)
        cut = paras[:keep]
        last = cut[-1]
        cut[-1] = last[: max(1, len(last) - rng.randint(1, 2))]  # and a sentence or two of the new last paragraph
        return dressed(tpl, body(page, cut))
    raise ValueError(kind)


def short_text(rng: random.Random, lang: str) -> str:
    """A microblog-like post of 20-140 characters."""
    while True:
        page = sc._make_page(rng, lang)
        para = page["paras"][0][: rng.randint(1, 2)]
        text = sc._render_paragraph(para, lang, page["slots"])
        if len(text) > 140:
            text = text[:140].rsplit(" ", 1)[0] if lang == "en" else text[:rng.randint(60, 140)]
        if len(text) >= 20:
            return text


def short_variant(rng: random.Random, kind: str, text: str, lang: str) -> str:
    if kind == "mirror":
        return text
    if kind == "repost":
        user = f"user{rng.randint(100, 99999)}"
        return (f"转发微博//@{user}: " if lang == "zh" else f"RT @{user}: ") + text
    if kind == "tag":
        extra = rng.choice([f" #{'热点' if lang == 'zh' else 'news'}#", f" http://t.cn/{rng.randint(10**6, 10**7)}",
                            " " + rng.choice(_EMOJI)])
        return text + extra
    if kind == "width":
        if lang == "zh":
            return text.replace("，", ",").replace("。", ".") + rng.choice(["！", "!!", "。。"])
        return "".join(sc._to_fullwidth(c) if c.isalnum() and rng.random() < 0.1 else c for c in text).upper()
    if kind == "edit":
        words = text.split(" ") if lang == "en" else list(text)
        i = rng.randrange(len(words))
        words[i] = rng.choice(["very", "new", "big"]) if lang == "en" else rng.choice("新大好")
        return (" " if lang == "en" else "").join(words)
    raise ValueError(kind)


def make_corpus(n: int, seed: int = 1, short_share: float = 0.3, copy_share: float = 0.4) -> list[dict]:
    rng = random.Random(seed)
    n_sites = max(20, n // 200)
    sites: dict = {}
    rows: list[dict] = []

    def add(text, lang, group, variant, site):
        rows.append({"text": text, "lang": lang, "group": group, "variant": variant, "site": site})

    while len(rows) < n:
        lang = rng.choice(["zh", "en"])
        site = rng.randint(1, n_sites)
        tpl = sites.setdefault((lang, site), template(rng, lang, site))
        group = len(rows)
        if rng.random() < short_share:
            text = short_text(rng, lang)
            add(text, lang, group, "original", site)
            if rng.random() < copy_share:
                for kind in rng.sample(SHORT_VARIANTS, rng.randint(1, 3)):
                    add(short_variant(rng, kind, text, lang), lang, group, kind, rng.randint(1, n_sites))
            continue
        page = long_page(rng, lang)
        add(dressed(tpl, body(page)), lang, group, "original", site)
        if rng.random() < 0.15:  # a hard negative: another article in the same site template
            add(dressed(tpl, body(long_page(rng, lang))), lang, len(rows), "same-template", site)
        if rng.random() < copy_share:
            for kind in rng.sample(LONG_VARIANTS, rng.randint(1, 3)):
                other = rng.randint(1, n_sites)
                other_tpl = sites.setdefault((lang, other), template(rng, lang, other))
                add(long_variant(rng, kind, page, tpl, other_tpl), lang, group, kind, other)
    rows = rows[:n]
    ids = rng.sample(range(1, len(rows) + 1), len(rows))
    return [{"id": ids[i], **{k: (ids[v] if k == "group" else v) for k, v in r.items()}} for i, r in enumerate(rows)
            if r["group"] < len(rows)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--short-share", type=float, default=0.3)
    args = ap.parse_args()
    import pandas as pd

    df = pd.DataFrame(make_corpus(args.n, args.seed, args.short_share)).sort_values("id")
    df.to_parquet(args.out, index=False)
    lengths = df["text"].str.len()
    print(f"{len(df):,} documents, {df['group'].nunique():,} true clusters; short (<140) {int((lengths < 140).sum()):,}, "
          f"long (>=500) {int((lengths >= 500).sum()):,}, >=5000 {int((lengths >= 5000).sum()):,}; "
          f"variants: {df['variant'].value_counts().to_dict()}")


if __name__ == "__main__":
    main()
