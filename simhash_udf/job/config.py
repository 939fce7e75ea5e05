"""The job's configuration: one typed dataclass, defaults from conf/default.toml, then --config FILE,
then the command line. Every check that needs no data happens here, before Spark starts."""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import decimal
import glob
import logging
import os
import re
import sys
import textwrap
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from ..core.bands import SignatureBands
from ..core.blocks import check_k, plan_tables
from ..core.fingerprint import WEIGHTINGS, FeatureSpec
from ..core.related import DEFAULT_RELATED_DISTANCE, MAX_RELATED_DISTANCE
from ..core.sentence_keys import SentenceKeySpec
from ..core.short_text import ShortTextSpec
from ..core.signature import SignatureSpec
from ..core.text import SEGMENTERS, TOKENIZERS
from ..core.verified import VerifySpec
from ..errors import DedupError
from ..io.hadoop_conf import plain_paths_are_local
from ..io.history import check_run_date

CLUSTER_MODES = ("verified", "transitive", "star")
INT_MAX = 2**31 - 1  # Spark's int settings and arguments
INPUT_FORMATS = ("auto", "parquet", "json", "csv", "text", "wet", "fingerprints")
log = logging.getLogger("simhash_dedup")
SECTIONS = ("input", "features", "search", "short_text", "output", "history", "spark")
# The shipped defaults file (package data: also in the wheel and the executor zip); conf/default.toml is the
# same file (a symbolic link), the one to copy for --config. Both are generated: render_defaults_toml().
DEFAULT_CONF = "default.toml"  # a resource of this package (read with importlib.resources: works from a zip)

# their defaults are the job's
_FEATURES, _SHORT, _VERIFY, _SENTENCES = FeatureSpec(), ShortTextSpec(), VerifySpec(), SentenceKeySpec()


def option(default, section: str, help: str, *, choices: tuple | None = None, toml: bool = True,
           listed: bool = True):
    """A DedupConfig field: its default, TOML section and help text; the command-line option and the TOML
    key are made from it (build_parser, render_defaults_toml). listed=False: an option for the project's own
    benchmarks, which works but is left out of --help."""
    assert section in SECTIONS, section
    return field(default=default, metadata={"section": section, "help": help, "choices": choices, "toml": toml,
                                            "listed": listed})


@dataclass
class DedupConfig:
    # input
    input: str = option("", "input", "input file, directory or glob (read recursively)", toml=False)
    input_format: str = option("auto", "input", "auto (by file extension), parquet, json, csv, text, wet, fingerprints",
                               choices=INPUT_FORMATS)
    id_col: str = option("id", "input", "column with the document id (unique, not null)")
    text_col: str = option("text", "input", "column with the text (string or binary UTF-8)")
    max_text_chars: int = option(1_000_000, "input", "characters fingerprinted per page; longer pages are cut there "
                                 "and counted")
    input_partitions: int = option(0, "input", "repartition the input (0 = as read, but a text input of fewer "
                                   "partitions than cores and enough rows is split into two per core)")
    allow_empty: bool = option(False, "input", "an input of 0 rows writes an empty, finished output; false = it fails "
                               "(exit 2)")
    # features
    tokenizer: str = option(_FEATURES.tokenizer, "features", "auto: jieba for Han runs, words elsewhere; jieba; word; "
                            "char", choices=TOKENIZERS)
    segmenter: str = option(_FEATURES.segmenter, "features", "jieba (reference, pure Python) or rjieba (jieba-rs: same "
                            "dictionary and results, ~20x faster)", choices=SEGMENTERS)
    weighting: str = option(_FEATURES.weighting, "features", "binary, tf, tfidf (jieba's idf), tfidf-corpus (idf of "
                            "this input: one extra pass)", choices=WEIGHTINGS)
    char_ngram: int = option(_FEATURES.char_ngram, "features", "n for tokenizer char")
    word_ngram: int = option(_FEATURES.word_ngram, "features", "token n-gram shingles (1 = single tokens)")
    stop_words: bool = option(_FEATURES.stop_words, "features", "drop stop words (jieba's English list + 60 Chinese "
                              "function words) before shingling")
    # search
    k: int = option(3, "search", "max Hamming distance between fingerprints of candidate pairs")
    blocks: int = option(0, "search", "fingerprint blocks; 0 = the planner chooses from the distinct count")
    min_similarity: float = option(_VERIFY.min_similarity, "search", "estimated Jaccard index of two pages' feature "
                                   "sets a pair needs to be verified; 0 = no verification (fingerprint distance alone)")
    signature_bands: int = option(10, "search", "a second candidate source: pages whose signatures are equal on all "
                                  "bins of one of this many bands are compared too, then verified (MinHash LSH; "
                                  "0 = off; off without verification)")
    band_bins: int = option(5, "search", "signature bins a band (bands x bins <= 128; 8 bits a bin)")
    min_containment: float = option(_VERIFY.min_containment, "search", "a pair also verifies when this share of the "
                                    "smaller page's features (estimated) is in the larger page and the larger is at "
                                    "most --max-size-ratio times the smaller, and the two texts hold it too: a page "
                                    "inside another page's frame, comments or ads; 0 = off (similarity alone)")
    max_size_ratio: float = option(_VERIFY.max_size_ratio, "search", "a contained pair's larger page has at most this "
                                   "many times the smaller's characters (a poem is not a copy of the anthology holding it)")
    sentence_keys: int = option(3, "search", "a third candidate source: pages sharing one of their this many "
                                "longest sentences are compared, then verified; 0 = off (off without verification)")
    sentence_min_chars: int = option(_SENTENCES.min_chars, "search", "letters a sentence needs to make a key "
                                     "(digits, punctuation and white space not counted)")
    sentence_max_group: int = option(_SENTENCES.max_group, "search", "a sentence key shared by more pages than this "
                                     "(a licence line, a slogan) makes no group; such keys are counted in the report")
    cluster_mode: str = option("verified", "search", "verified: every duplicate is verified-similar to its kept page; "
                               "transitive: components of verified pairs; star: a duplicate is within k of its kept "
                               "page", choices=CLUSTER_MODES)
    keep: str = option("id", "search", "which page of a cluster is kept: id (smallest id), longest, earliest:COLUMN "
                       "(with --min-containment: among the pages most of the cluster verifies with)")
    max_component_rounds: int = option(200, "search", "large-star/small-star rounds before the job gives up")
    driver_component_edges: int = option(2_000_000, "search", "verified edges up to which the connected components "
                                         "are found on the driver (numpy) instead of in Spark rounds; the same "
                                         "clusters; 0 = always the Spark rounds")
    plan: int = option(0, "search", "print the plan and estimated cost of a run over this many pages (e.g. 1e9), "
                       "then exit (no Spark, no input needed)", toml=False)
    simulate_fingerprint_bits: int = option(0, "search", "benchmarks only (scripts/bench/quality.py --crawl): cut fingerprints "
                                            "to this many bits before the pair search; 0 = off", listed=False)
    # short_text
    short_text_chars: int = option(_SHORT.max_chars, "short_text", "short-text mode for pages with fewer characters; "
                                   "0 = off (also off for --input-format fingerprints and --cluster-mode star)")
    short_k: int = option(_SHORT.k, "short_text", "candidate distance on the short pages' character n-gram "
                          "fingerprint (wider than k: each candidate is verified)")
    short_char_ngram: int = option(_SHORT.char_ngram, "short_text", "character n-grams of the short fingerprint and of "
                                   "the verified shingles")
    short_min_jaccard: float = option(_SHORT.min_jaccard, "short_text", "exact shingle Jaccard a short candidate pair "
                                      "needs")
    # output
    output: str = option("", "output", "output directory (clusters/, kept/, report.json, report.html, _SUCCESS)",
                         toml=False)
    overwrite: bool = option(False, "output", "replace an existing finished output")
    related: int = option(0, "output", "related pages: for every kept page the N nearest other kept pages within "
                          "--related-distance bits, written to related/ (0 = off)")
    related_distance: int = option(DEFAULT_RELATED_DISTANCE, "output", "max Hamming distance of related pages "
                                   f"(1..{MAX_RELATED_DISTANCE}; 14 marks pages on the same topic, k marks copies)")
    lock_stale_minutes: int = option(10, "output", "a lock on the output from another host without a heartbeat this "
                                     "long is a dead run's (taken over; on the same host as soon as its process is gone)")
    # history
    history: str = option("", "history", "incremental mode: directory with the fingerprints and clusters of earlier "
                          "runs (run_date=YYYY-MM-DD/); read, then appended")
    run_date: str = option("", "history", "this run's date in the history, YYYY-MM-DD; \"\" = today (UTC)")
    # spark
    arrow_batch_size: int = option(2000, "spark", "documents per Arrow batch of the fingerprint stage")
    arrow_batch_mb: int = option(16, "spark", "and at most this many MB of text per batch")
    shuffle_partitions: int = option(0, "spark", "spark.sql.shuffle.partitions for the run; 0 = the session's, "
                                     "raised to one per 250,000 input rows")
    checkpoint_dir: str = option("", "spark", "reliable checkpoints of the component rounds; \"\" = inside the "
                                 "output's staging directory")

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
        # containment compares feature counts: the sizes of the feature sets with binary weighting (the default);
        # other weightings count repeats, and stored fingerprints carry no count
        counts_are_sizes = self.weighting == "binary" and self.input_format != "fingerprints"
        return VerifySpec(self.min_similarity, self.signature, self.short_min_jaccard, self.short_char_ngram,
                          self.min_containment if counts_are_sizes else 0.0, self.max_size_ratio)

    @property
    def sentences(self) -> SentenceKeySpec | None:
        """The longest-sentence key search; None when off (n 0, no text, or no verification)."""
        if self.sentence_keys <= 0 or self.verify is None or self.input_format == "fingerprints":
            return None
        return SentenceKeySpec(self.sentence_keys, self.sentence_min_chars, self.sentence_max_group)

    @property
    def bands(self) -> SignatureBands | None:
        """The signature-band search; None when off (no bands, or no verification)."""
        if self.signature_bands <= 0 or self.verify is None:
            return None
        return SignatureBands(self.signature_bands, self.band_bins, self.signature)

    @property
    def keep_column(self) -> str | None:
        """The column of --keep earliest:COLUMN; None for the other policies."""
        return self.keep.split(":", 1)[1] if self.keep.startswith("earliest:") else None

    def fingerprint_version(self, features: FeatureSpec | None = None) -> str:
        """The feature definition and the signature's: what stored fingerprints and signatures depend on
        (report.json, the history's version file). features: the run's, when weighting tfidf-corpus has
        added the corpus idf table (its digest is part of the version); the configured ones otherwise."""
        if self.input_format == "fingerprints":
            return "as stored in the input"
        return f"{(features if features is not None else self.features).version()}+{self.signature.version()}"

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

        if self.plan:
            if self.plan < 2:
                raise bad(f"--plan needs a number of pages of 2 or more (got {self.plan})")
            return self.check_options()
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
        check_fingerprint_options({name: getattr(self, name) for name in FINGERPRINT_OPTIONS}, option_flag)
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
        if not 0.0 <= self.min_containment <= 1.0:
            raise bad(f"--min-containment must be in 0..1 (a share of the smaller page's features; 0 = off), got "
                      f"{self.min_containment}")
        if self.max_size_ratio < 1.0:
            raise bad(f"--max-size-ratio must be at least 1 (the larger page's features over the smaller's), got "
                      f"{self.max_size_ratio}")
        try:
            SentenceKeySpec(self.sentence_keys, self.sentence_min_chars, self.sentence_max_group).check()
        except ValueError as exc:
            raise bad(f"{exc}: fix --sentence-keys, --sentence-min-chars or --sentence-max-group") from None
        if self.cluster_mode == "star" and self.history:
            raise bad("--cluster-mode star cannot be combined with --history yet: use the transitive mode")
        for name in ("arrow_batch_size", "arrow_batch_mb", "max_component_rounds", "lock_stale_minutes"):
            if getattr(self, name) < 1:
                raise bad(f"--{name.replace('_', '-')} must be at least 1 (got {getattr(self, name)})")
        if self.related < 0:
            raise bad(f"--related must be 0 (off) or the number of related pages per kept page (got {self.related})")
        if not 1 <= self.related_distance <= MAX_RELATED_DISTANCE:
            raise bad(f"--related-distance must be in 1..{MAX_RELATED_DISTANCE} bits (got {self.related_distance})")
        if self.simulate_fingerprint_bits and not self.k < self.simulate_fingerprint_bits <= 64:
            raise bad(f"--simulate-fingerprint-bits must be 0 (off) or k+1..64 (got {self.simulate_fingerprint_bits})")
        for name in ("shuffle_partitions", "input_partitions", "driver_component_edges"):
            if getattr(self, name) < 0:
                raise bad(f"--{name.replace('_', '-')} must be 0 or more (got {getattr(self, name)})")
        # Spark takes these as 32-bit ints (arrow_batch_mb in bytes): larger values failed inside Spark
        for name, most in (("input_partitions", INT_MAX), ("arrow_batch_size", INT_MAX), ("shuffle_partitions", INT_MAX),
                           ("arrow_batch_mb", INT_MAX >> 20)):
            if getattr(self, name) > most:
                raise bad(f"--{name.replace('_', '-')} must be at most {most:,} (got {getattr(self, name):,})")
        try:
            plan_tables(self.k, self.blocks) if self.blocks else check_k(self.k)
            self.short_text.check()
            SignatureBands(self.signature_bands, self.band_bins, self.signature).check()
        except ValueError as exc:
            raise bad(str(exc)) from None
        if self.input_format == "fingerprints" and self.keep == "longest":
            raise bad("--keep longest needs the text; with --input-format fingerprints use --keep id or earliest:COLUMN")
        if self.signature_bands > 0 and self.min_similarity <= 0:
            log.warning("--signature-bands %d is not used with --min-similarity 0: a band candidate is accepted only once "
                        "verified, so without verification the band search is off and only the fingerprint distance "
                        "(--k) finds pairs; pass --signature-bands 0 to leave the bands off without this warning, or a "
                        "--min-similarity above 0 to search them", self.signature_bands)
        return self

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


# The options that decide a fingerprint, checked by check_fingerprint_options for the job and the Python API
# (DedupConfig.check_options) and for the Params of the SimHashFingerprint Transformer (spark/ml.py).
FINGERPRINT_OPTIONS = ("tokenizer", "segmenter", "weighting", "char_ngram", "word_ngram", "stop_words", "max_text_chars")


def option_flag(name: str) -> str:
    """The command-line flag of a DedupConfig field: char_ngram -> --char-ngram."""
    return "--" + name.replace("_", "-")


def check_fingerprint_options(values: dict, flag=option_flag) -> None:
    """The one check of the options that decide a fingerprint (FINGERPRINT_OPTIONS: name -> value), raising
    DedupError with a message naming the option as `flag(name)` gives it (the job's flags by default; the
    Transformer passes its Param names)."""
    for name, allowed in (("tokenizer", TOKENIZERS), ("segmenter", SEGMENTERS), ("weighting", WEIGHTINGS)):
        if values[name] not in allowed:
            raise DedupError(f"{flag(name)} {values[name]!r} is unknown; choose one of {', '.join(allowed)}")
    if values["stop_words"] and values["tokenizer"] == "char":
        raise DedupError(f"{flag('stop_words')} removes word tokens; it does not apply to {flag('tokenizer')} char "
                         "(drop one of them)")
    for name in ("char_ngram", "word_ngram", "max_text_chars"):
        if values[name] < 1:
            raise DedupError(f"{flag(name)} must be at least 1 (got {values[name]})")
    if values["max_text_chars"] > INT_MAX:  # Spark takes it as a 32-bit int: a larger one failed inside Spark
        raise DedupError(f"{flag('max_text_chars')} must be at most {INT_MAX:,} (got {values['max_text_chars']:,})")


_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")  # as Hadoop's Path parses one: hdfs://nn/x, hdfs:/x, s3a://b/x


def is_local(path: str) -> bool:
    """Whether --input is checked on this machine's disk before Spark starts: a file: URI, or a plain path when
    plain paths name local files. Any other scheme (hdfs://, hdfs:/ without an authority, s3a://) is checked
    by the read stage on its file system (an `hdfs:/crawl/D` looked for on the local disk would be refused
    as missing)."""
    scheme = _SCHEME.match(path)
    if scheme:
        return scheme.group(0).lower() == "file:"
    return plain_paths_are_local()


def has_hadoop_glob(path: str) -> bool:
    """Hadoop's glob syntax has {a,b}, which Python's glob has not: such a path is checked by the read stage."""
    return "{" in path


def local_path(path: str) -> str:
    return path[len("file://"):] if path.startswith("file://") else path.removeprefix("file:")


_FIELDS = {f.name: f for f in dataclasses.fields(DedupConfig)}


def apply_settings(cfg: DedupConfig, values: dict, source: str, file: bool = False) -> None:
    """Set values by name, type-checked; file: from a settings file, where the run's own paths and --plan
    (command line only: toml=False) are refused (a `plan` in a file made every run print a plan and exit 0)."""
    for key, value in values.items():
        name = key.replace("-", "_")
        if name not in _FIELDS:
            raise DedupError(f"{source}: unknown setting {key!r}; known settings: {', '.join(sorted(_FIELDS))}")
        if file and not _FIELDS[name].metadata["toml"]:
            raise DedupError(f"{source}: {key} is given on the command line only (--{name.replace('_', '-')}), "
                             "not in a settings file: remove it from the file")
        expected = type(_FIELDS[name].default)
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if expected is str and isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
            value = value.isoformat()  # a TOML date (run_date = 2026-11-27)
        if expected is int and isinstance(value, bool) or not isinstance(value, expected):
            raise DedupError(f"{source}: {key} must be {expected.__name__}, got {value!r}")
        setattr(cfg, name, value)


def flatten_sections(values: dict, source: str) -> dict:
    """TOML in sections ([features] tokenizer = ...) to settings; keys outside a section are accepted too
    (the files of earlier versions were flat). A key in the wrong section is refused, naming the right one."""
    flat = {}
    for key, value in values.items():
        if key in SECTIONS and isinstance(value, dict):
            for name, v in value.items():
                f = _FIELDS.get(name.replace("-", "_"))
                if f is not None and f.metadata["section"] != key:
                    raise DedupError(f"{source}: {name} belongs in [{f.metadata['section']}], not [{key}]")
                flat[name] = v
        else:
            flat[key] = value
    return flat


def shipped_defaults() -> str:
    """The text of the package's default.toml (in the wheel and in the executor zip)."""
    return resources.files(__package__).joinpath(DEFAULT_CONF).read_text(encoding="utf-8")


def read_toml(path: str | Path) -> dict:
    """A TOML settings file, flattened (flatten_sections)."""
    try:
        with open(path, "rb") as fh:
            return flatten_sections(tomllib.load(fh), str(path))
    except FileNotFoundError:
        raise DedupError(f"config file {path} does not exist: fix the --config path") from None
    except tomllib.TOMLDecodeError as exc:
        raise DedupError(f"config file {path} is not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise DedupError(f"config file {path} is not UTF-8 text (byte {exc.start}): save it as UTF-8, which TOML "
                         "requires") from None
    except OSError as exc:  # a directory, no permission to read
        raise DedupError(f"config file {path} cannot be read ({exc.strerror or exc}): fix the --config path") from None


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(v)


def render_defaults_toml() -> str:
    """The text of default.toml, from the dataclass: every setting with its default and help, by section."""
    lines = ["# Default configuration of simhash-dedup, generated from simhash_udf/job/config.py (DedupConfig):",
             "#   python -m simhash_udf.job.config > simhash_udf/job/default.toml",
             "# Copy it for --config FILE (any subset of the keys, in these sections); the command line overrides",
             "# both (--k 4, --tokenizer char, ...). input and output are given on the command line."]
    for section in SECTIONS:
        lines += ["", f"[{section}]"]
        for f in dataclasses.fields(DedupConfig):
            if f.metadata["section"] == section and f.metadata["toml"]:
                lines += ["# " + line for line in textwrap.wrap(f.metadata["help"], 108)]
                lines.append(f"{f.name} = {_toml_value(f.default)}")
    return "\n".join(lines) + "\n"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse exits with 2 and a usage line; we want our error type
        raise DedupError(f"{message} (see --help for the options)")


def program_name(argv0: str | None = None) -> str:
    """How the user started the job, for --help's usage line and argparse's messages: from the script's name
    (sys.argv[0] by default): spark-submit's jobs/dedup_job.py, `python -m simhash_udf.job.cli`, or the
    simhash-dedup console script (also the name for a call from Python)."""
    name = os.path.basename(sys.argv[0] if argv0 is None and sys.argv else argv0 or "")
    if name == "dedup_job.py":
        return "spark-submit jobs/dedup_job.py"
    if name == "cli.py":
        return "python -m simhash_udf.job.cli"
    return "simhash-dedup"


MAX_PLAN_PAGES = 10**18  # --plan's largest number of pages (1e999999999 would be a billion-digit int)


def page_count(text: str) -> int:
    """--plan's number of pages: a whole number written as 100000000, 100_000_000 or 1e8 (argparse's int()
    refused 1e8). A fraction or a negative number is refused with a message naming the forms accepted."""
    try:
        value = decimal.Decimal(text.strip())
    except decimal.InvalidOperation:
        value = None
    if value is None or not value.is_finite() or value < 0 or value > MAX_PLAN_PAGES \
            or value != value.to_integral_value():
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of pages: give a whole number from 2 to 1e18, "
                                         "e.g. 100000000, 100_000_000 or 1e8")
    return int(value)


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    """The command line, one option per DedupConfig field (--k, --tokenizer, --overwrite/--no-overwrite ...),
    grouped by section; options left out keep the files' values (default None). prog: the usage line's
    command (program_name() by default)."""
    p = _Parser(prog=prog or program_name(), allow_abbrev=False,
                description="Find near-duplicate documents with 64-bit SimHash and keep one per cluster.")
    p.add_argument("--config", help="TOML file of settings (sections as in conf/default.toml)")
    groups = {section: p.add_argument_group(section) for section in SECTIONS}
    for f in dataclasses.fields(DedupConfig):
        flag, meta = "--" + f.name.replace("_", "-"), f.metadata
        help_text = f"{meta['help']} (default: {f.default!r})" if meta["toml"] else meta["help"]
        if not meta["listed"]:
            help_text = argparse.SUPPRESS
        group = groups[meta["section"]]
        if isinstance(f.default, bool):
            group.add_argument(flag, action=argparse.BooleanOptionalAction, default=None, help=help_text)
        elif f.name in ("input", "output"):
            group.add_argument(flag, help=help_text + " (required, but for --plan)")
        else:
            kind = page_count if f.name == "plan" else type(f.default)
            group.add_argument(flag, type=kind, choices=meta["choices"], default=None, help=help_text)
    return p


def load_config(argv: list[str] | None = None, shipped: bool = True) -> DedupConfig:
    """Defaults (the dataclass) < the shipped default.toml (the same values unless edited where installed)
    < --config FILE < command line; then validated."""
    args = build_parser().parse_args(argv)
    cfg = DedupConfig()
    if shipped:
        source = f"{__package__}/{DEFAULT_CONF}"
        try:
            apply_settings(cfg, flatten_sections(tomllib.loads(shipped_defaults()), source), source)
        except tomllib.TOMLDecodeError as exc:
            raise DedupError(f"{source} (the shipped defaults) is not valid TOML: {exc}") from None
    if args.config:
        apply_settings(cfg, read_toml(args.config), args.config, file=True)
    overrides = {k: v for k, v in vars(args).items() if v is not None and k != "config"}
    apply_settings(cfg, overrides, "command line")
    return cfg.validate()


if __name__ == "__main__":
    print(render_defaults_toml(), end="")
