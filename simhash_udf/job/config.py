"""The job's configuration: one typed dataclass, defaults from conf/default.toml, then --config FILE,
then the command line. Every check that needs no data happens here, before Spark starts."""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import glob
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from ..core.blocks import check_k, plan_tables
from ..core.fingerprint import WEIGHTINGS, FeatureSpec
from ..core.short_text import ShortTextSpec
from ..core.signature import SignatureSpec
from ..core.text import SEGMENTERS, TOKENIZERS
from ..core.verified import VerifySpec
from ..errors import DedupError
from ..io.history import check_run_date

CLUSTER_MODES = ("verified", "transitive", "star")
INPUT_FORMATS = ("auto", "parquet", "json", "csv", "text", "wet", "fingerprints")
DEFAULT_CONF = Path(__file__).resolve().parents[2] / "conf" / "default.toml"


@dataclass
class DedupConfig:
    input: str = ""
    output: str = ""
    input_format: str = "auto"
    id_col: str = "id"
    text_col: str = "text"
    k: int = 6
    blocks: int = 0
    tokenizer: str = "auto"
    segmenter: str = "rjieba"
    weighting: str = "binary"
    char_ngram: int = 5
    word_ngram: int = 1
    stop_words: bool = False
    keep: str = "id"
    cluster_mode: str = "verified"
    min_similarity: float = 0.7  # estimated feature-set Jaccard a pair needs; 0 = no verification
    short_text_chars: int = 140  # short-text mode for pages with fewer characters; 0 = off
    short_k: int = 8
    short_char_ngram: int = 5
    short_min_jaccard: float = 0.7
    max_text_chars: int = 1_000_000
    arrow_batch_size: int = 2000
    arrow_batch_mb: int = 16
    shuffle_partitions: int = 0
    max_component_rounds: int = 200
    checkpoint_dir: str = ""
    overwrite: bool = False
    lock_stale_minutes: int = 10  # another host's lock (or history staging owner) without a heartbeat this long is dead
    allow_empty: bool = False  # an input of 0 rows writes an empty, finished output instead of failing
    input_partitions: int = 0  # repartition the input (0 = as read); for tests and skewed inputs
    history: str = ""  # incremental mode: fingerprints and clusters of earlier runs, by run date
    run_date: str = ""  # this run's date in the history (YYYY-MM-DD); "" = today (UTC)
    simulate_fingerprint_bits: int = 0  # benchmarks only: search on fingerprints cut to this many bits (0 = all 64)

    @property
    def features(self) -> FeatureSpec:
        return FeatureSpec(self.tokenizer, self.weighting, self.char_ngram, self.word_ngram, self.segmenter,
                           self.stop_words)

    @property
    def signature(self) -> SignatureSpec:
        return SignatureSpec()

    @property
    def verify(self) -> VerifySpec | None:
        """How pairs are verified; None with --min-similarity 0 (fingerprint distance alone)."""
        if self.min_similarity <= 0:
            return None
        return VerifySpec(self.min_similarity, self.signature, self.short_min_jaccard, self.short_char_ngram)

    def fingerprint_version(self) -> str:
        """The feature definition and the signature's: what stored fingerprints and signatures depend on."""
        return f"{self.features.version()}+{self.signature.version()}"

    @property
    def short_text(self) -> ShortTextSpec:
        return ShortTextSpec(self.short_text_chars, self.short_k, self.short_char_ngram, self.short_min_jaccard)

    def short_text_off_because(self) -> str:
        """Why the short-text mode does not run ("" when it does)."""
        if not self.short_text.enabled:
            return "--short-text-chars 0"
        if self.input_format == "fingerprints":
            return "--input-format fingerprints has no text"
        if self.cluster_mode == "star":
            return "--cluster-mode star keeps a duplicate only within k of its kept page's fingerprint"
        return ""

    def validate(self) -> "DedupConfig":
        def bad(msg: str) -> DedupError:
            return DedupError(msg)

        if not self.input:
            raise bad("no input: pass --input PATH (a file or directory of Parquet, JSON Lines, CSV, text or WET)")
        if not self.output:
            raise bad("no output: pass --output DIR (a directory the job creates)")
        self.check_options()
        local = local_path(self.input)
        if is_local(self.input) and not (os.path.exists(local) or glob.glob(local) or has_hadoop_glob(local)):
            raise bad(f"input {self.input} does not exist: fix --input")
        if os.path.abspath(self.input) == os.path.abspath(self.output):
            raise bad("--output must not be the input path")
        if self.history:
            if self.input_format == "fingerprints":
                raise bad("--history needs fingerprints of a known version: it cannot be used with --input-format fingerprints")
            if os.path.abspath(self.history) in (os.path.abspath(self.output), os.path.abspath(self.input)):
                raise bad("--history must be a directory of its own, not the input or the output")
            self.run_date = check_run_date(self.run_date or datetime.datetime.now(datetime.timezone.utc).date().isoformat())
        elif self.run_date:
            raise bad("--run-date only means something with --history DIR")
        return self

    def check_options(self) -> "DedupConfig":
        """The checks that need no paths (the job's and the Python API's)."""
        bad = DedupError
        if self.input_format not in INPUT_FORMATS:
            raise bad(f"--input-format {self.input_format!r} is unknown; choose one of {', '.join(INPUT_FORMATS)}")
        if self.tokenizer not in TOKENIZERS:
            raise bad(f"--tokenizer {self.tokenizer!r} is unknown; choose one of {', '.join(TOKENIZERS)}")
        if self.segmenter not in SEGMENTERS:
            raise bad(f"--segmenter {self.segmenter!r} is unknown; choose one of {', '.join(SEGMENTERS)}")
        if self.weighting not in WEIGHTINGS:
            raise bad(f"--weighting {self.weighting!r} is unknown; choose one of {', '.join(WEIGHTINGS)}")
        if self.stop_words and self.tokenizer == "char":
            raise bad("--stop-words removes word tokens; it does not apply to --tokenizer char (drop one of them)")
        if self.weighting == "tfidf-corpus" and self.input_format == "fingerprints":
            raise bad("--weighting tfidf-corpus needs the text; --input-format fingerprints has none")
        if not (self.keep in ("id", "longest") or (self.keep.startswith("earliest:") and len(self.keep) > 9)):
            raise bad(f"--keep {self.keep!r} is unknown; use id, longest or earliest:COLUMN")
        if self.cluster_mode not in CLUSTER_MODES:
            raise bad(f"--cluster-mode {self.cluster_mode!r} is unknown; choose one of {', '.join(CLUSTER_MODES)}")
        if self.weighting == "tfidf-corpus" and self.history:
            raise bad("--weighting tfidf-corpus takes its idf from each run's own input, so fingerprints of different "
                      "runs would not be comparable: use tf, tfidf or binary with --history")
        if not 0.0 <= self.min_similarity <= 1.0:
            raise bad("--min-similarity must be in 0..1 (an estimated Jaccard index; 0 = no verification), "
                      f"got {self.min_similarity}")
        if self.cluster_mode == "star" and self.history:
            raise bad("--cluster-mode star cannot be combined with --history yet: use the transitive mode")
        for name in ("char_ngram", "word_ngram", "max_text_chars", "arrow_batch_size", "arrow_batch_mb", "max_component_rounds",
                     "lock_stale_minutes"):
            if getattr(self, name) < 1:
                raise bad(f"--{name.replace('_', '-')} must be at least 1 (got {getattr(self, name)})")
        if self.simulate_fingerprint_bits and not self.k < self.simulate_fingerprint_bits <= 64:
            raise bad(f"--simulate-fingerprint-bits must be 0 (off) or k+1..64 (got {self.simulate_fingerprint_bits})")
        for name in ("shuffle_partitions", "input_partitions"):
            if getattr(self, name) < 0:
                raise bad(f"--{name.replace('_', '-')} must be 0 or more (got {getattr(self, name)})")
        try:
            plan_tables(self.k, self.blocks) if self.blocks else check_k(self.k)
            self.short_text.check()
        except ValueError as exc:
            raise bad(str(exc)) from None
        if self.input_format == "fingerprints" and self.keep == "longest":
            raise bad("--keep longest needs the text; with --input-format fingerprints use --keep id or earliest:COLUMN")
        return self

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def is_local(path: str) -> bool:
    """A plain path or file: URI (checked before Spark starts); hdfs:, s3a: etc. are checked by Spark."""
    return "://" not in path or path.startswith("file:")


def has_hadoop_glob(path: str) -> bool:
    """Hadoop's glob syntax has {a,b}, which Python's glob has not: such a path is checked by the read stage."""
    return "{" in path


def local_path(path: str) -> str:
    return path[len("file://"):] if path.startswith("file://") else path.removeprefix("file:")


_FIELDS = {f.name: f for f in dataclasses.fields(DedupConfig)}


def _apply(cfg: DedupConfig, values: dict, source: str) -> None:
    for key, value in values.items():
        name = key.replace("-", "_")
        if name not in _FIELDS:
            raise DedupError(f"{source}: unknown setting {key!r}; known settings: {', '.join(sorted(_FIELDS))}")
        expected = type(getattr(DedupConfig(), name))
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if expected is int and isinstance(value, bool) or not isinstance(value, expected):
            raise DedupError(f"{source}: {key} must be {expected.__name__}, got {value!r}")
        setattr(cfg, name, value)


def read_toml(path: str | Path) -> dict:
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise DedupError(f"config file {path} does not exist: fix the --config path") from None
    except tomllib.TOMLDecodeError as exc:
        raise DedupError(f"config file {path} is not valid TOML: {exc}") from None


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse exits with 2 and a usage line; we want our error type
        raise DedupError(f"{message} (see --help for the options)")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="dedup_job.py",
        description="Find near-duplicate documents with 64-bit SimHash and keep one per cluster.",
        allow_abbrev=False,
    )
    p.add_argument("--input", required=True, help="input file or directory")
    p.add_argument("--output", required=True, help="output directory (clusters/, kept/, report.json, _SUCCESS)")
    p.add_argument("--config", help="TOML file overriding conf/default.toml")
    p.add_argument("--input-format", choices=INPUT_FORMATS)
    p.add_argument("--id-col")
    p.add_argument("--text-col")
    p.add_argument("--k", type=int, help="max Hamming distance of near-duplicates (default 6)")
    p.add_argument("--blocks", type=int, help="fingerprint blocks (0 = chosen by the table planner)")
    p.add_argument("--tokenizer", choices=TOKENIZERS)
    p.add_argument("--segmenter", choices=SEGMENTERS, help="jieba implementation for Han runs (default rjieba)")
    p.add_argument("--weighting", choices=WEIGHTINGS)
    p.add_argument("--char-ngram", type=int)
    p.add_argument("--word-ngram", type=int)
    p.add_argument("--stop-words", action=argparse.BooleanOptionalAction, default=None,
                   help="drop stop words (jieba's English list and 60 Chinese function words) before the shingles")
    p.add_argument("--keep", help="id | longest | earliest:COLUMN")
    p.add_argument("--cluster-mode", choices=CLUSTER_MODES,
                   help="verified (default): every duplicate is verified-similar to its kept page; transitive: "
                   "connected components of verified pairs; star: a duplicate is within k of its kept page")
    p.add_argument("--min-similarity", type=float,
                   help="estimated Jaccard index of the feature sets a pair needs (default 0.7; 0 = no verification)")
    p.add_argument("--short-text-chars", type=int,
                   help="short-text mode for pages with fewer characters (default 140; 0 = off)")
    p.add_argument("--short-k", type=int, help="max distance of short-text candidates on the character n-gram fingerprint")
    p.add_argument("--short-char-ngram", type=int, help="character n-gram size of the short-text mode")
    p.add_argument("--short-min-jaccard", type=float, help="shingle Jaccard a short-text candidate pair needs")
    p.add_argument("--max-text-chars", type=int)
    p.add_argument("--arrow-batch-size", type=int)
    p.add_argument("--arrow-batch-mb", type=int)
    p.add_argument("--shuffle-partitions", type=int)
    p.add_argument("--input-partitions", type=int)
    p.add_argument("--max-component-rounds", type=int)
    p.add_argument("--checkpoint-dir")
    p.add_argument("--overwrite", action="store_true", default=None, help="replace a finished output")
    p.add_argument("--lock-stale-minutes", type=int,
                   help="a lock on the output held from another host is taken over after this many minutes without "
                   "a heartbeat (default 10; on the same host as soon as its process is gone)")
    p.add_argument("--allow-empty", action="store_true", default=None,
                   help="an input of 0 rows writes an empty, finished output (default: it fails with exit 2)")
    p.add_argument("--history", help="incremental mode: directory of earlier runs' fingerprints (read, then appended)")
    p.add_argument("--run-date", help="this run's date in the history, YYYY-MM-DD (default: today, UTC)")
    p.add_argument("--simulate-fingerprint-bits", type=int,
                   help="benchmarks only: cut every fingerprint to this many bits (spread over the 64) before the "
                   "pair search, so chance pairs are as frequent as in a far larger crawl (scripts/bench_chance.py)")
    return p


def load_config(argv: list[str] | None = None, defaults_file: str | Path | None = DEFAULT_CONF) -> DedupConfig:
    """Defaults < conf/default.toml < --config FILE < command line; then validated."""
    args = build_parser().parse_args(argv)
    cfg = DedupConfig()
    if defaults_file and Path(defaults_file).exists():
        _apply(cfg, read_toml(defaults_file), str(defaults_file))
    if args.config:
        _apply(cfg, read_toml(args.config), args.config)
    overrides = {k: v for k, v in vars(args).items() if v is not None and k != "config"}
    _apply(cfg, overrides, "command line")
    return cfg.validate()
