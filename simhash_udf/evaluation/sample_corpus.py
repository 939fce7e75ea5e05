"""A small, deterministic sample crawl of Chinese and English pages with planted near-duplicates.

Used by the demo and the tests. Every page is generated from ``random.Random(seed)`` alone (no global random
state, no clock, no network), so ``make_sample_corpus(n, seed)`` always returns the same rows.

Chinese text is drawn from jieba's own dictionary (``dict.txt`` inside the installed package), words chosen
with probability proportional to their frequency; English text from a small vocabulary written inline below.
About 40% of the originals get 1 to 3 near-duplicate variants on other domains:

* ``mirror``    the identical text;
* ``ad``        one advertisement paragraph (20-60 characters) inserted between two paragraphs;
* ``numbers``   every counter, date and price changed, nothing else;
* ``edits``     1 to 3 words replaced, inserted or deleted;
* ``fullwidth`` English: some ASCII letters/digits in full-width forms and some words' case changed;
                Chinese: ASCII digits in full-width forms.

Each row carries ``group`` (the id of the original it was derived from; an original's own id) and
``variant`` as ground truth.

CLI: ``python -m simhash_udf.evaluation.sample_corpus OUT_PATH [--originals N] [--seed S] [--format jsonl|parquet]``.
"""
from __future__ import annotations

import argparse
import bisect
import itertools
import json
import os
import random
import re
import sys

__all__ = ["make_sample_corpus", "write_sample_corpus", "VARIANTS"]

VARIANTS = ("original", "mirror", "ad", "numbers", "edits", "fullwidth")
_DERIVED = VARIANTS[1:]

MIN_CHARS = 800
MAX_CHARS = 3000
# Originals are built a little inside [MIN_CHARS, MAX_CHARS] so that their variants stay inside too.
_TARGET_MIN = 850
_TARGET_MAX = 2800
_HARD_MAX = 2920

_VARIANT_SHARE = 0.4  # share of the originals that get near-duplicates
_ZH_TOP_WORDS = 20000
_ZH_TOPIC_FROM = 300  # topic words come from below the 300 most frequent words

# --------------------------------------------------------------------------------------------------------
# Chinese vocabulary: jieba's dictionary, parsed once per process.

_CJK_WORD = re.compile(r"^[\u4e00-\u9fff]+$")
_ZH_VOCAB: tuple[list[str], list[int], list[str]] | None = None  # words, cumulative weights, nouns


def _common_hanzi(word: str) -> bool:
    """Only characters of GB2312 (the 6,763 common simplified characters): jieba's dictionary gives a few
    rare characters surprisingly high frequencies."""
    try:
        word.encode("gb2312")
    except UnicodeEncodeError:
        return False
    return True


def _zh_vocab() -> tuple[list[str], list[int], list[str]]:
    """The top ``_ZH_TOP_WORDS`` all-CJK words of jieba's dict.txt by frequency (ties by word), their
    cumulative frequencies, and the subset tagged as nouns."""
    global _ZH_VOCAB
    if _ZH_VOCAB is None:
        import jieba  # here, not at the top: slow to load, for Chinese samples only

        path = os.path.join(os.path.dirname(jieba.__file__), "dict.txt")
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
        # Rank every line by frequency first (cheap), then filter from the top until enough words pass.
        ranked: list[tuple[int, str, str]] = []
        for line in lines:
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                freq = int(parts[1])
                if freq > 0:
                    ranked.append((-freq, parts[0], parts[2] if len(parts) > 2 else ""))
        ranked.sort()
        entries: list[tuple[int, str, str]] = []
        for entry in ranked:
            if _CJK_WORD.match(entry[1]) and _common_hanzi(entry[1]):
                entries.append(entry)
                if len(entries) == _ZH_TOP_WORDS:
                    break
        words = [w for _, w, _ in entries]
        cum = list(itertools.accumulate(-f for f, _, _ in entries))
        nouns = [w for _, w, tag in entries if tag.startswith("n") and len(w) >= 2]
        _ZH_VOCAB = (words, cum, nouns)
    return _ZH_VOCAB


# --------------------------------------------------------------------------------------------------------
# English vocabulary (inline).

_EN_FUNCTION = """
the the the the a a an of of of to to to in in and and and for on with at by from as is was are were be
been has have had it its this that these those they we our their he she his her but or not more most many
some all each other after before over under into about than then also just only very can will would could
should may which who while when where there here because through during between against without within
""".split()

_EN_CONTENT = """
city country government market company business school student teacher family children parent house home
water river mountain forest garden field farm village road bridge train station airport flight ship harbor
island coast weather rain snow storm wind summer winter spring autumn morning evening night week month year
history culture music film book story writer artist painting museum library theater festival holiday
restaurant kitchen recipe bread coffee tea rice soup fruit vegetable market price cost budget bank money
tax income salary job worker office manager team project plan report research study science scientist
data computer software network internet phone camera screen battery energy power solar engine car bicycle
street traffic parking building tower window door floor wall roof garden park playground hospital doctor
nurse patient health medicine disease treatment exercise sport football basketball tennis runner race
match player coach season league champion record victory defeat score goal election vote council mayor
minister policy law court judge police safety security army border trade export import factory product
industry supply demand customer service quality design fashion shop store mall online delivery package
letter message email meeting conference speech interview question answer problem solution idea reason
result effect change growth decline increase level rate number amount percent average total share value
stock investor fund loan debt profit loss region province district neighborhood community population
language education university college degree course lesson exam grade classroom campus dormitory
animal bird fish dog cat horse tree flower grass leaf stone sand ocean lake valley desert climate
pollution recycling waste plastic paper glass metal wood cotton clothing shoes jacket hat travel tourist
hotel ticket museum guide map journey adventure photo video podcast radio newspaper magazine article
editor reader audience viewer channel platform app update version feature launch release partner
announce build create develop discover explain improve include increase measure offer prepare produce
protect provide publish reduce remain replace report require return review share support test visit
watch win write open close start finish travel cook clean repair paint sing dance read learn teach
local national global public private modern ancient traditional digital smart green quiet busy crowded
large small tall short long wide narrow early late fast slow cheap expensive popular famous rare common
important major minor simple complex strong weak bright dark warm cold fresh old young happy careful
recent annual daily weekly monthly rural urban coastal northern southern eastern western central
""".split()

_EN_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
              "October", "November", "December")

# --------------------------------------------------------------------------------------------------------
# Boilerplate and ads.

_ZH_SITES = ("晨光资讯", "南方视野", "北辰新闻网", "东海日报", "西岭在线", "江南生活网", "华夏观察",
             "长风财经", "青禾科技", "远山文旅", "星河体育", "锦城快报")
_ZH_CHANNELS = ("科技", "财经", "社会", "文化", "体育", "旅游", "健康", "教育", "汽车", "房产")
_EN_SITES = ("Harbor Gazette", "Daily Ledger", "Northside Post", "Valley Times", "Metro Chronicle",
             "River Herald", "Summit Review", "Coastal Courier", "Evening Dispatch", "Plains Observer")
_EN_CHANNELS = ("Technology", "Business", "Local News", "Culture", "Sports", "Travel", "Health",
                "Education", "Science", "Opinion")

_ZH_AD_PREFIX = ("【广告】", "【推广】", "【赞助】")
_ZH_AD_BODY = ("限时特惠，{item}低至{price}元，点击购买！", "{item}全场五折，今日下单立享包邮！",
               "新用户专享{item}优惠券，扫码立即领取！", "爆款{item}直降{price}元，库存有限，速抢！",
               "{item}会员首月仅需{price}元，马上开通！")
_ZH_AD_ITEMS = ("智能手机", "蓝牙耳机", "空气净化器", "扫地机器人", "运动鞋", "护肤套装", "咖啡机",
                "在线课程", "旅行套餐", "笔记本电脑")
_EN_AD = ("Sponsored: {item} now {pct}% off. Shop today!", "Sponsored: Get free {item} with your order.",
          "Advertisement: Try {item} free for {days} days.", "Sponsored: Best {item} deals, limited time.",
          "Ad: Save {pct}% on {item} this week only.")
_EN_AD_ITEMS = ("headphones", "running shoes", "coffee makers", "laptops", "smart watches", "streaming",
                "travel insurance", "meal kits", "phone plans", "yoga classes")

_SECTIONS = ("news", "tech", "finance", "life", "sports", "culture", "travel", "health", "local", "world")

# --------------------------------------------------------------------------------------------------------
# Pages: a page is a header, paragraphs of sentences of tokens, and number slots. Tokens are
# ("w", word), ("p", punctuation) or ("n", slot index); slots are [kind, template, value].


def _zh_word_picker(rng: random.Random):
    words, cum, nouns = _zh_vocab()
    total = cum[-1]
    # A page's topic: a few hundred words of the vocabulary below the most frequent function words, still
    # drawn in proportion to frequency.
    topic = sorted(rng.sample(range(_ZH_TOPIC_FROM, len(words)), 300))
    topic_words = [words[i] for i in topic]
    topic_cum = list(itertools.accumulate(cum[i] - (cum[i - 1] if i else 0) for i in topic))
    topic_nouns = rng.sample(nouns, 40)

    def pick() -> str:
        if rng.random() < 0.45:
            return topic_words[bisect.bisect_right(topic_cum, rng.random() * topic_cum[-1])]
        return words[bisect.bisect_right(cum, rng.random() * total)]

    def pick_noun() -> str:
        return rng.choice(topic_nouns)

    return pick, pick_noun


def _en_word_picker(rng: random.Random):
    topic = rng.sample(_EN_CONTENT, 45)

    def pick() -> str:
        r = rng.random()
        if r < 0.38:
            return rng.choice(_EN_FUNCTION)
        if r < 0.75:
            return rng.choice(topic)
        return rng.choice(_EN_CONTENT)

    return pick, lambda: rng.choice(topic)


def _new_slot(rng: random.Random, lang: str) -> list:
    kind = rng.choice(("date", "count", "count", "price"))
    if lang == "zh":
        templates = {"date": ("{y}年{m}月{d}日",),
                     "count": ("阅读 {n} 次", "共有 {n} 人参与", "评论 {n} 条", "点赞 {n} 次", "浏览量达到 {n}"),
                     "price": ("￥{p}", "售价 {p} 元", "仅需 ￥{p}")}[kind]
    else:
        templates = {"date": ("{month} {d}, {y}", "on {y}-{mm:02d}-{d:02d}"),
                     "count": ("{n:,} views", "{n} comments", "{n:,} readers", "{n:,} people"),
                     "price": ("${p}.{c:02d}", "{p} dollars")}[kind]
    return [kind, rng.choice(templates), _slot_value(rng, kind)]


def _slot_value(rng: random.Random, kind: str) -> tuple:
    if kind == "date":
        return (rng.randint(2012, 2025), rng.randint(1, 12), rng.randint(1, 28))
    if kind == "count":
        return (rng.randint(12, 99999),)
    return (rng.randint(9, 4999), rng.randint(0, 99))


def _render_slot(slot: list) -> str:
    kind, template, value = slot
    if kind == "date":
        y, m, d = value
        return template.format(y=y, m=m, mm=m, d=d, month=_EN_MONTHS[m - 1])
    if kind == "count":
        return template.format(n=value[0])
    return template.format(p=value[0], c=value[1])


def _zh_sentence(rng: random.Random, pick, pick_noun, slots: list, slot_p: float) -> list:
    n = rng.randint(8, 25)
    toks: list = []
    since_comma = 0
    for i in range(n):
        if 0 < i < n - 2 and since_comma >= 4 and rng.random() < 0.22:
            toks.append(("p", "；" if rng.random() < 0.08 else "，"))
            since_comma = 0
        if i < n - 3 and rng.random() < 0.04:  # a short enumeration: 甲、乙、丙
            for j in range(rng.randint(2, 3)):
                if j:
                    toks.append(("p", "、"))
                toks.append(("w", pick_noun()))
        else:
            toks.append(("w", pick()))
        since_comma += 1
    if rng.random() < slot_p:
        slots.append(_new_slot(rng, "zh"))
        toks.insert(rng.randint(1, len(toks)), ("n", len(slots) - 1))
    r = rng.random()
    toks.append(("p", "。" if r < 0.84 else "？" if r < 0.92 else "！"))
    return toks


def _en_sentence(rng: random.Random, pick, pick_noun, slots: list, slot_p: float) -> list:
    n = rng.randint(8, 25)
    toks: list = []
    since_comma = 0
    for i in range(n):
        if 0 < i < n - 2 and since_comma >= 4 and rng.random() < 0.12:
            toks.append(("p", ","))
            since_comma = 0
        toks.append(("w", pick()))
        since_comma += 1
    if rng.random() < slot_p:
        slots.append(_new_slot(rng, "en"))
        toks.insert(rng.randint(1, len(toks)), ("n", len(slots) - 1))
    r = rng.random()
    toks.append(("p", "." if r < 0.88 else "?" if r < 0.94 else "!"))
    return toks


def _render_sentence(toks: list, lang: str, slots: list) -> str:
    if lang == "zh":
        return "".join(_render_slot(slots[v]) if k == "n" else v for k, v in toks)
    out: list[str] = []
    first = True
    for k, v in toks:
        if k == "p":
            if out:
                out[-1] += v
            continue
        s = _render_slot(slots[v]) if k == "n" else v
        if first and k == "w":
            s = s[:1].upper() + s[1:]
        first = False
        out.append(s)
    return " ".join(out)


def _render_paragraph(para: list, lang: str, slots: list) -> str:
    return ("" if lang == "zh" else " ").join(_render_sentence(s, lang, slots) for s in para)


def _render_page(page: dict, slots: list | None = None, extra: tuple[int, str] | None = None) -> str:
    """Header and paragraphs separated by blank lines; ``extra`` = (index, paragraph) inserts one more."""
    slots = page["slots"] if slots is None else slots
    paras = [_render_paragraph(p, page["lang"], slots) for p in page["paras"]]
    if extra is not None:
        paras.insert(extra[0], extra[1])
    return "\n\n".join([page["header"], *paras])


def _make_page(rng: random.Random, lang: str) -> dict:
    if lang == "zh":
        pick, pick_noun = _zh_word_picker(rng)
        sentence = _zh_sentence
        header = f"{rng.choice(_ZH_SITES)} | {rng.choice(_ZH_CHANNELS)}频道"
    else:
        pick, pick_noun = _en_word_picker(rng)
        sentence = _en_sentence
        header = f"{rng.choice(_EN_SITES)} | {rng.choice(_EN_CHANNELS)}"
    slots: list = []
    slot_p = rng.uniform(0.12, 0.3)
    target = rng.randint(_TARGET_MIN, _TARGET_MAX)
    paras: list = []
    length = len(header)
    tries = 0
    while (length < target or len(paras) < 2) and tries < 50:
        tries += 1
        n_slots = len(slots)
        para = [sentence(rng, pick, pick_noun, slots, slot_p) for _ in range(rng.randint(3, 8))]
        plen = 2 + len(_render_paragraph(para, lang, slots))
        while length + plen > _HARD_MAX and len(para) > 3:
            para.pop()
            plen = 2 + len(_render_paragraph(para, lang, slots))
        if length + plen > _HARD_MAX:
            del slots[n_slots:]
            if length >= _TARGET_MIN and len(paras) >= 2:
                break
            continue
        # Slots of dropped sentences are unused; renumbering is unnecessary because indices stay valid.
        paras.append(para)
        length += plen
    page = {"lang": lang, "header": header, "paras": paras, "slots": slots, "pick": pick}
    # Every page has at least two numbers (so "numbers" and Chinese "fullwidth" variants always differ).
    while len(_used_slots(page)) < 2:
        slots.append(_new_slot(rng, lang))
        sent = rng.choice(rng.choice(paras))
        sent.insert(rng.randint(1, len(sent) - 1), ("n", len(slots) - 1))
    return page


def _used_slots(page: dict) -> list[int]:
    return sorted({v for p in page["paras"] for s in p for k, v in s if k == "n"})


# --------------------------------------------------------------------------------------------------------
# Variants.


def _variant_ad(rng: random.Random, page: dict) -> str:
    while True:
        if page["lang"] == "zh":
            ad = rng.choice(_ZH_AD_PREFIX) + rng.choice(_ZH_AD_BODY).format(
                item=rng.choice(_ZH_AD_ITEMS), price=rng.randint(9, 999))
        else:
            ad = rng.choice(_EN_AD).format(item=rng.choice(_EN_AD_ITEMS), pct=rng.choice((10, 20, 30, 40, 50)),
                                           days=rng.choice((7, 14, 30)))
        if 20 <= len(ad) <= 60:
            break
    return _render_page(page, extra=(rng.randint(1, len(page["paras"]) - 1), ad))


def _variant_numbers(rng: random.Random, page: dict) -> str:
    slots = [list(s) for s in page["slots"]]
    for s in slots:
        old = _render_slot(s)
        while _render_slot(s) == old:
            s[2] = _slot_value(rng, s[0])
    return _render_page(page, slots=slots)


def _variant_edits(rng: random.Random, page: dict) -> str:
    paras = [[list(s) for s in p] for p in page["paras"]]
    pick = page["pick"]
    for _ in range(rng.randint(1, 3)):
        sent = rng.choice(rng.choice(paras))
        positions = [i for i, (k, _v) in enumerate(sent) if k == "w"]
        op = rng.choice(("replace", "insert", "delete"))
        if op == "delete" and len(positions) > 4:
            del sent[rng.choice(positions)]
        elif op == "replace":
            i = rng.choice(positions)
            word = pick()
            while word == sent[i][1]:
                word = pick()
            sent[i] = ("w", word)
        else:
            sent.insert(rng.choice(positions) + 1, ("w", pick()))
    return _render_page({**page, "paras": paras})


_FULLWIDTH_DIGITS = str.maketrans({c: chr(ord(c) + 0xFEE0) for c in "0123456789"})


def _to_fullwidth(ch: str) -> str:
    return chr(ord(ch) + 0xFEE0) if "!" <= ch <= "~" else ch


def _variant_fullwidth(rng: random.Random, page: dict) -> str:
    text = _render_page(page)
    if page["lang"] == "zh":
        return text.translate(_FULLWIDTH_DIGITS)
    words = text.split(" ")  # split on spaces only: the blank lines between paragraphs survive
    for i, w in enumerate(words):
        if rng.random() < 0.08:
            r = rng.random()
            words[i] = w.upper() if r < 0.4 else w.lower() if r < 0.7 else w.swapcase()
    chars = list(" ".join(words))
    alnum = [i for i, c in enumerate(chars) if c.isascii() and c.isalnum()]
    for i in alnum:
        if rng.random() < 0.06:
            chars[i] = _to_fullwidth(chars[i])
    # At least a few conversions, whatever the dice said.
    for i in rng.sample(alnum, 3):
        chars[i] = _to_fullwidth(chars[i])
    return "".join(chars)


_VARIANT_FN = {"mirror": lambda rng, page: _render_page(page), "ad": _variant_ad, "numbers": _variant_numbers,
               "edits": _variant_edits, "fullwidth": _variant_fullwidth}


# --------------------------------------------------------------------------------------------------------
# Public API.


def make_sample_corpus(n_originals: int = 120, seed: int = 7) -> list[dict]:
    """Rows with keys: id (int), url (str), crawl_date (str, ISO date), lang ("zh"|"en"), text (str),
    group (int: id of the original page this row was derived from; an original has group == its own id),
    variant (str: "original", "mirror", "ad", "numbers", "edits", "fullwidth").

    Rows are sorted by id; ids are a random permutation of 1..len(rows), so the smallest id of a group is
    not always its original."""
    if n_originals < 0:
        raise ValueError("n_originals must be >= 0")
    rng = random.Random(seed)
    n_sites = max(12, n_originals // 3)
    langs = ["zh"] * (n_originals // 2) + ["en"] * (n_originals - n_originals // 2)
    rng.shuffle(langs)

    urls: dict[str, None] = {}

    def new_url(site: int, path: str | None = None) -> str:
        while True:
            if path is None:
                path = f"{rng.choice(_SECTIONS)}/{rng.randint(2019, 2025)}/{rng.randint(100000, 999999)}.html"
            url = f"https://site-{site}.example/{path}"
            if url not in urls:
                urls[url] = None
                return url
            path = None

    def crawl_date() -> str:
        return f"2026-01-{rng.randint(1, 31):02d}"

    rows: list[dict] = []  # "group" holds the original's index in rows until ids are assigned
    pages: list[dict] = []
    for lang in langs:
        page = _make_page(rng, lang)
        site = rng.randint(1, n_sites)
        url = new_url(site)
        pages.append(page)
        rows.append({"url": url, "crawl_date": crawl_date(), "lang": lang, "text": _render_page(page),
                     "group": len(rows), "variant": "original", "_site": site})

    chosen = sorted(rng.sample(range(n_originals), round(n_originals * _VARIANT_SHARE)))
    used = {lang: {v: 0 for v in _DERIVED} for lang in ("zh", "en")}
    for idx in chosen:
        orig, page = rows[idx], pages[idx]
        m = rng.randint(1, 3)
        counts = used[orig["lang"]]
        # The m least used kinds for this language so far, ties broken at random: every kind shows up.
        kinds = sorted(_DERIVED, key=lambda v: (counts[v], rng.random()))[:m]
        for kind in kinds:
            counts[kind] += 1
            site = rng.choice([s for s in range(1, n_sites + 1) if s != orig["_site"]])
            path = orig["url"].split("/", 3)[3] if rng.random() < 0.5 else None
            rows.append({"url": new_url(site, path), "crawl_date": crawl_date(), "lang": orig["lang"],
                         "text": _VARIANT_FN[kind](rng, page), "group": idx, "variant": kind})

    ids = rng.sample(range(1, len(rows) + 1), len(rows))
    out = []
    for i, row in enumerate(rows):
        out.append({"id": ids[i], "url": row["url"], "crawl_date": row["crawl_date"], "lang": row["lang"],
                    "text": row["text"], "group": ids[row["group"]], "variant": row["variant"]})
    out.sort(key=lambda r: r["id"])
    return out


def write_sample_corpus(path: str, n_originals: int = 120, seed: int = 7, fmt: str = "jsonl") -> int:
    """Write the rows (all keys) as JSON Lines (one object per line, ensure_ascii=False, UTF-8) or Parquet
    (fmt="parquet", via pyarrow, single file) to `path`; return the number of rows."""
    if fmt not in ("jsonl", "parquet"):
        raise ValueError(f"unknown format {fmt!r}; choose jsonl or parquet")
    rows = make_sample_corpus(n_originals, seed)
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    if fmt == "jsonl":
        with open(path, "w", encoding="utf-8", newline="\n") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False))
                fh.write("\n")
    else:
        import pyarrow as pa  # here, not at the top: only the Parquet output needs it
        import pyarrow.parquet as pq

        schema = pa.schema([("id", pa.int64()), ("url", pa.string()), ("crawl_date", pa.string()),
                            ("lang", pa.string()), ("text", pa.string()), ("group", pa.int64()),
                            ("variant", pa.string())])
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    return len(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m simhash_udf.evaluation.sample_corpus",
        description="Write a deterministic sample crawl (Chinese and English pages with planted near-duplicates).")
    parser.add_argument("out_path", metavar="OUT_PATH")
    parser.add_argument("--originals", type=int, default=120, help="number of original pages (default 120)")
    parser.add_argument("--seed", type=int, default=7, help="random seed (default 7)")
    parser.add_argument("--format", choices=("jsonl", "parquet"), default="jsonl", dest="fmt")
    args = parser.parse_args(argv)
    if args.originals < 0:
        parser.error("--originals must be >= 0")
    n = write_sample_corpus(args.out_path, args.originals, args.seed, args.fmt)
    print(n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
