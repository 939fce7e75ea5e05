"""report.json's schema: one dataclass per part, each field with its type and meaning. The job and the Python
API build their report from these classes (report.py) and write `Report.to_dict()`; readers load one back with
`load(path)` or `Report.from_dict(d)` and use attributes, so a renamed key changes here and nowhere else.
docs/report.md is generated from these classes (`python -m simhash_udf.job.report_schema > docs/report.md`;
tests/test_report_schema.py checks that the two agree).

Writing: a field left None is written as null, except an *optional* one (present only in some reports: the
job's run, an empty run, with a history), which is then left out. `Report.api_dict()` is the part the Python
API returns (no job-only fields). Reading is tolerant: keys of a newer version are ignored, and a field that an
older report lacks reads as None. `check(d)` names every key of a report that does not fit the schema.

Only the standard library is imported, so this module reads a report anywhere Python runs."""
from __future__ import annotations

import dataclasses
import json
import sys
import types
import typing
from dataclasses import dataclass
from typing import Any


def item(doc: str, *, optional: bool = False, job_only: bool = False):
    """A report field: `doc` says what it means; optional: left out of the JSON when None (otherwise written
    as null); job_only: only in the job's report.json, not in the Python API's report."""
    return dataclasses.field(default=None, metadata={"doc": doc, "optional": optional, "job_only": job_only})


class Part:
    """A part of report.json: to_dict in field order, from_dict tolerant of added and missing keys."""

    def to_dict(self) -> dict:
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None and f.metadata.get("optional"):
                continue
            out[f.name] = _plain(value)
        return out

    @classmethod
    def from_dict(cls, d: dict):
        hints = typing.get_type_hints(cls)
        return cls(**{f.name: _typed(d.get(f.name), hints[f.name]) for f in dataclasses.fields(cls)})


def _plain(value):
    if isinstance(value, Part):
        return value.to_dict()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _typed(value, hint):
    """value (as read from JSON) as the type `hint` says: the Parts built, the rest as it is."""
    if value is None:
        return None
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        if len(args) == 1:
            return _typed(value, args[0])
        parts = [a for a in args if isinstance(a, type) and issubclass(a, Part)]
        if parts and isinstance(value, dict):  # the Part whose fields the dict matches best
            return max(parts, key=lambda p: len(value.keys() & {f.name for f in dataclasses.fields(p)})).from_dict(value)
        return value
    if origin is list and isinstance(value, list):
        return [_typed(v, args[0]) for v in value]
    if origin is dict and isinstance(value, dict):
        return {k: _typed(v, args[1]) for k, v in value.items()}
    if isinstance(hint, type) and issubclass(hint, Part) and isinstance(value, dict):
        return hint.from_dict(value)
    return value



def check(d: dict, cls: type[Part] | None = None, where: str = "", api: bool = False) -> list[str]:
    """What in the report dict `d` does not fit the schema (empty: it fits): keys the schema does not know,
    required keys missing, values of another type. A report written by this version fits exactly.
    api: d is the Python API's report (Report.api_dict), which has no job-only fields."""
    cls = cls or Report
    hints = typing.get_type_hints(cls)
    names = {f.name: f for f in dataclasses.fields(cls)}
    problems = [f"{where}{k}: not in the schema" for k in d if k not in names]
    for name, f in names.items():
        if name not in d:
            if not f.metadata["optional"] and not (api and f.metadata["job_only"]):
                problems.append(f"{where}{name}: missing")
            continue
        problems += _check_value(d[name], hints[name], f"{where}{name}")
    return problems


def _check_value(value, hint, where: str) -> list[str]:
    if hint is Any:
        return []
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return []
        tried = [_check_value(value, a, where) for a in args if a is not type(None)]
        return [] if any(not t for t in tried) else min(tried, key=len)
    if isinstance(hint, type) and issubclass(hint, Part):
        return check(value, hint, where + ".") if isinstance(value, dict) else [f"{where}: not an object"]
    if origin is list:
        if not isinstance(value, list):
            return [f"{where}: not a list"]
        return [p for i, v in enumerate(value) for p in _check_value(v, args[0], f"{where}[{i}]")]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{where}: not an object"]
        return [p for k, v in value.items() for p in _check_value(v, args[1], f"{where}.{k}")]
    fits = {int: lambda v: isinstance(v, int) and not isinstance(v, bool),
            float: lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
            bool: lambda v: isinstance(v, bool), str: lambda v: isinstance(v, str)}[hint]
    return [] if fits(value) else [f"{where}: {value!r} is not {hint.__name__}"]

# --------------------------------------------------------------------------------------------------------
# The parts.


@dataclass(kw_only=True)
class InputFiles(Part):
    format: str = item("the input format read (parquet, json, csv, text, wet, fingerprints)")
    files: int = item("data files read")
    layout: str = item("how the files lie below the input: flat, recursive or partitioned (key=value directories)")
    partition_columns: list[str] = item("the partition columns of a partitioned layout (key=value directories)")


@dataclass(kw_only=True)
class BadRows(Part):
    null_text: int = item("rows whose text is null")
    no_features: int = item("rows whose text has no features (empty, only white space or punctuation)")
    invalid_utf8_replaced: int = item("rows whose text held invalid UTF-8 (replaced by U+FFFD)")
    truncated: int = item("rows whose text is longer than max_text_chars (fingerprinted up to that length)")
    truncated_records: int = item("WET records cut off by the end of their file")
    treatment: str = item("what the job does with each kind of bad row")


@dataclass(kw_only=True)
class ContainmentTextCheck(Part):
    checked_on_texts: int = item("duplicates joined to their kept page only by containment, compared with it on the "
                                 "two texts (character 5-grams: the smaller at least min_containment inside the larger "
                                 "within max_size_ratio, or a Jaccard index of at least 0.5)")
    left_cluster: int = item("of those, pages whose texts did not hold: they left the cluster and were clustered again "
                           "among themselves, by similarity alone")
    alone_compared: int = item("pages alone in their cluster that share one of their longest sentences with a page of "
                               "another cluster, compared on the two texts with that cluster's kept page (or with the "
                               "page itself when it is alone too and comes first in keep order); 0 without sentence "
                               "keys")
    joined_on_texts: int = item("of those, pages that joined that cluster: the smaller text's character 5-grams at "
                                "least min_containment inside the larger, within max_size_ratio")


@dataclass(kw_only=True)
class Clusters(Part):
    total: int = item("clusters (one kept page each) of this run's pages")
    with_duplicates: int = item("clusters of more than one page")
    largest: int = item("pages in the largest cluster")
    size_histogram: dict[str, int] = item("cluster size -> clusters of that size")
    max_distance_to_kept_histogram: dict[str, int] = item(
        "clusters by the largest Hamming distance of a member to its kept page (beyond k: joined by a chain)")
    containment_check: ContainmentTextCheck | None = item("the text check of the pages joined only by containment; null "
                                                      "with containment off and in reports of older versions")


@dataclass(kw_only=True)
class BandCounts(Part):
    verified: int = item("pairs verified (edges)")
    rejected: int = item("pairs rejected")


@dataclass(kw_only=True)
class Verification(Part):
    min_similarity: float = item("estimated Jaccard index a candidate pair needs to become an edge")
    signature: str = item("the signature's version")
    agreeing_bins_needed: int = item("signature bins on which two pages must agree (min_similarity in bins)")
    bins: int = item("bins of a signature")
    short_min_jaccard: float | None = item("exact shingle Jaccard index that verifies two short pages")
    min_containment: float | None = item("estimated share of the smaller page's features inside the larger page "
                                         "that also verifies a pair (within max_size_ratio); 0 = containment off")
    max_size_ratio: float | None = item("a contained pair's larger page has at most this many times the smaller's "
                                        "features")


@dataclass(kw_only=True)
class VerifiedExample(Part):
    ids: list[Any] = item("the two pages' ids (the best page of each fingerprint)")
    features: list[int] = item("their distinct feature counts")
    similarity: float = item("estimated Jaccard index of their feature sets")
    containment: float = item("estimated share of the smaller page's features inside the larger's")


@dataclass(kw_only=True)
class SentenceKeyStats(Part):
    keys_per_page: int = item("a page's longest sentences that make keys")
    min_chars: int = item("letters a sentence needs to make a key")
    max_group: int = item("a key of more fingerprints than this makes no group")
    keys: int = item("distinct sentence keys of the run's fingerprints")
    key_groups: int = item("keys shared by 2..max_group fingerprints")
    skipped_keys: int = item("keys shared by more than max_group fingerprints: not compared")
    skipped_rows: int = item("fingerprint-key rows of the skipped keys")
    pairs_compared: int = item("distinct pairs of fingerprints that share a key, each verified once")
    pairs_verified_by_similarity: int = item("of those, pairs verified by estimated Jaccard (>= min_similarity)")
    pairs_verified_by_containment: int = item("pairs verified only by containment (one page inside the other, "
                                              "within max_size_ratio)")
    pairs_rejected: int = item("pairs neither similar nor contained")
    examples: dict[str, VerifiedExample] = item(
        "one verified pair of each kind (similarity, containment), the smallest by fingerprints; empty when none")


@dataclass(kw_only=True)
class SignatureBandStats(Part):
    bands: int = item("bands of a signature (a pair equal on all bins of a band is a candidate)")
    bins_per_band: int = item("signature bins a band")
    key_bits: int = item("bits of a band's key")
    min_runs: int = item("the band keys take part from this many runs of the history on")
    key_groups: int = item("band key groups with more than one fingerprint")
    pairs_compared: int = item("pairs of fingerprints looked at in the band groups (once per band they share)")
    pairs_accepted: int = item("the bands' candidate pairs: distinct pairs of the band groups more than k bits apart "
                               "(the closer ones are the tables')")
    pairs_verified: int = item("of those, pairs verified")
    rows: int = item("band rows (distinct fingerprints x bands)")
    expected_chance_comparisons: float = item("band comparisons expected of unrelated pages")


@dataclass(kw_only=True)
class PairSource(Part):
    key_group_pairs: int = item("pairs of fingerprints looked at in the source's key groups, a bit comparison each "
                                "(a pair that shares several keys is looked at once per key)")
    compared: int = item("candidate pairs: distinct pairs the source found, each compared once (SimHash tables: within "
                         "k bits; signature bands: equal on every bin of a band and more than k bits apart, the "
                         "closer ones being the tables'; short text: short pages within the short k); "
                         "compared = verified + rejected")
    verified: int = item("of those, pairs verified similar (signatures; short text: exact shingle Jaccard); with "
                         "--min-similarity 0 every candidate pair")
    rejected: int = item("of those, pairs not similar enough")


@dataclass(kw_only=True)
class PairSearch(Part):
    simhash_tables: PairSource = item("candidates of the SimHash tables (fingerprints within k bits)")
    signature_bands: PairSource | None = item("candidates of the signature bands; null when off")
    short_text: PairSource | None = item("candidates of the short-text stage; null when off")
    sentence_keys: PairSource | None = item("candidates of the longest-sentence keys (pages sharing one of their longest "
                                            "sentences); left out when off", optional=True)
    compared: int = item("candidate pairs compared, over the sources: the sum of theirs")
    found_by_more_than_one_source: int = item(
        "of those, pairs that another source found as well (a short-text pair within k bits, or sharing a band; a "
        "sentence-key pair that the tables, the bands or short text found): compared once per source, so counted "
        "once more in the sums per extra source; distinct pairs = compared minus this")
    verified: int = item("pairs verified, over the sources: the sum of theirs")
    rejected: int = item("pairs rejected, over the sources: the sum of theirs; compared = verified + rejected")

    def sources(self) -> dict[str, PairSource]:
        """The sources that ran, by the name the report's page and the log give them."""
        return {name: s for name, s in (("SimHash tables", self.simhash_tables), ("signature bands",
                                        self.signature_bands), ("short text", self.short_text),
                                       ("sentence keys", self.sentence_keys)) if s is not None}

    def summary(self) -> str:
        """The log's line of the pair search: the same numbers as report.json and report.html."""
        per = "; ".join(f"{name}: {s.compared:,} compared = {s.verified:,} verified + {s.rejected:,} rejected "
                        f"({s.key_group_pairs:,} pairs looked at in key groups)" for name, s in self.sources().items())
        both = self.found_by_more_than_one_source
        return (f"pair search: candidate pairs by source: {per}; all sources: {self.compared:,} compared = "
                f"{self.verified:,} verified + {self.rejected:,} rejected, {both:,} found by two sources "
                f"({self.compared - both:,} distinct pairs)")


@dataclass(kw_only=True)
class CandidateStats(Part):
    pair_search: PairSearch | None = item("the pair search's numbers by source, which add up (the report's page and "
                                          "the log show the same); null in reports of older versions")
    key_groups: int = item("(table, key) groups with more than one fingerprint")
    pairs_compared: int = item("the SimHash tables' key_group_pairs: pairs of fingerprints looked at in the key groups")
    pairs_accepted: int = item("the SimHash tables' candidate pairs: distinct pairs within k bits (an accepted pair is "
                               "a candidate, compared on its signatures)")
    pairs_verified: int = item("candidate pairs of the SimHash tables and the signature bands that their signatures "
                               "verified (edges)")
    pairs_rejected: int = item("candidate pairs of the SimHash tables and the signature bands that their signatures "
                               "rejected")
    similarity_bands: dict[str, BandCounts] | None = item(
        "estimated similarity band (0.0-0.1, ...) -> verified and rejected candidate pairs of the SimHash tables and "
        "the signature bands; null without verification")
    verification: Verification | None = item("how pairs are verified; null without verification")
    forest_edges: int = item("edges kept for the components (a spanning forest of each group)")
    pairs_accepted_by_distance: dict[str, int] = item("Hamming distance 0..k -> the SimHash tables' candidate pairs")
    component_rounds: int = item("rounds of the connected-components search (large-star / small-star rounds; "
                                  "with at most --driver-component-edges edges, the driver's hooking rounds)")
    chance_pairs_uniform: float = item("pairs within k expected among as many uniformly random fingerprints")
    signature_bands: SignatureBandStats | None = item("the signature bands' search; null when off")
    sentence_keys: SentenceKeyStats | None = item("the longest-sentence key search; left out when off",
                                                  optional=True)


@dataclass(kw_only=True)
class TablePlanStats(Part):
    f: int = item("bits of a fingerprint")
    k: int = item("largest Hamming distance of a candidate pair")
    blocks: int = item("blocks the fingerprint is cut into")
    block_widths: list[int] = item("bits of each block")
    tables: int = item("tables (a key each per fingerprint)")
    key_bits: list[int] = item("bits of each table's key")
    table_blocks: list[list[int]] = item("the blocks that make each table's key")
    rows: int = item("exploded (table, key) rows")
    expected_comparisons: float = item("comparisons expected for as many uniformly random fingerprints")
    cost: float = item("the planner's cost of the plan (rows and comparisons)")


@dataclass(kw_only=True)
class ShortTextStats(Part):
    enabled: bool = item("whether the short-text stage ran")
    off_because: str | None = item("why it is off (only when off)", optional=True)
    max_chars: int | None = item("pages shorter than this many characters are short", optional=True)
    k: int | None = item("candidate distance of the short pages' character n-gram fingerprints", optional=True)
    char_ngram: int | None = item("characters of a shingle", optional=True)
    min_jaccard: float | None = item("exact shingle Jaccard index that verifies a pair", optional=True)
    fingerprint_version: str | None = item("version of the short pages' fingerprint", optional=True)
    short_pages_represented: int | None = item("short pages with a fingerprint", optional=True)
    short_fingerprints: int | None = item("distinct short fingerprints searched", optional=True)
    tables: int | None = item("tables of the short pages' search", optional=True)
    key_bits: list[int] | None = item("bits of each of those tables' keys", optional=True)
    pairs_compared: int | None = item("pairs of short fingerprints compared", optional=True)
    candidate_pairs: int | None = item("of those, distinct pairs of pages within the short k (candidates)", optional=True)
    verified_pairs: int | None = item("of those, pairs verified by their shingles (edges)", optional=True)


@dataclass(kw_only=True)
class RelatedPlanStats(Part):
    kind: str = item("exact: multi-index hashing probed within distance // blocks bits, every pair within the "
                     "distance is found; approximate: a smaller probe radius over one or more arrangements of the "
                     "bits (where the exact plan costs more per page than the planner's budget and an approximate "
                     "one of recall >= 0.95 costs less), see expected_recall")
    distance: int = item("largest Hamming distance of a related page (--related-distance)")
    tables: int = item("arrangements of the 64 bits (tables), each cut into the same number of blocks: consecutive "
                       "bits, every m-th bit, consecutive bits shifted by half a block")
    blocks: int = item("blocks over all tables")
    block_bits: list[int] = item("bits of each block")
    probe_radius: int = item("each block's keys within this many bits of a page's own are probed")
    probes_per_page: int = item("probe keys per page, over the blocks")
    expected_recall: float = item("the chance that the plan finds a pair exactly `distance` bits apart, counted "
                                  "exactly over the placements of its differing bits (nearer pairs are found at "
                                  "least as often); 1.0 for an exact plan")
    expected_pairs: float = item("pairs the probes meet among as many uniformly random fingerprints (the join's cost)")


@dataclass(kw_only=True)
class RelatedExample(Part):
    id: Any = item("a kept page's id")
    related_id: Any = item("its nearest related page's id (rank 1)")
    distance: int = item("Hamming distance of their fingerprints")
    similarity: float | None = item("estimated Jaccard index from their signatures; null without them")


@dataclass(kw_only=True)
class RelatedStats(Part):
    n: int = item("related pages asked for per kept page (--related)")
    pages: int = item("kept pages searched")
    pages_with_related: int = item("kept pages with at least one related page")
    rows: int = item("rows written to related/")
    distance_histogram: dict[str, int] = item("Hamming distance -> rows of related/")
    chance_neighbours_per_page: float = item(
        "other pages expected within the distance of a page among as many uniformly random fingerprints: near 1 "
        "or above, related lists hold chance pages")
    plan: RelatedPlanStats = item("the search's plan")
    examples: list[RelatedExample] = item(
        "a few pages with their nearest related page, at distances spread over those found (for each distance "
        "the page of the smallest id)")


@dataclass(kw_only=True)
class RunHistory(Part):
    path: str = item("the history directory")
    run_date: str = item("this run's date in it")
    runs_read: int = item("earlier runs read")
    first_run: str | None = item("date of the first run read; null when none")
    later_or_same_runs_ignored: list[str] = item("runs on or after run_date, not read")
    duplicates_of_earlier_runs: int = item("this run's pages that are duplicates of earlier runs' pages")
    history_rows: int = item("history rows taking part in the pair search")
    history_fingerprints_compared: int = item("history fingerprints that share a key with this run's")
    repaired: list[str] = item("what the run repaired in the history before reading it (a date restored from where "
                               "a killed run had moved it, a killed publish finished), in words; empty when nothing")
    runs_without_manifest: int = item("earlier runs written before per-date manifests, read without their checks")


@dataclass(kw_only=True)
class EmptyRunHistory(Part):
    path: str = item("the history directory")
    run_date: str = item("this run's date in it")
    written: bool = item("whether this run wrote rows into it (false: a day without pages adds nothing)")
    earlier_attempt_removed: bool | None = item("whether an earlier attempt's rows of the date were removed",
                                                optional=True)


@dataclass(kw_only=True)
class DuplicatesToKept(Part):
    compared: int = item("duplicates compared with their kept page (those kept by this run)")
    kept_in_earlier_run: int = item("duplicates of pages kept by earlier runs (not compared)")
    distance_histogram: dict[str, int] = item("Hamming distance to the kept page -> duplicates")
    beyond_k: int = item("duplicates farther than k bits from their kept page (joined through other pages)")
    similarity_histogram: dict[str, int] = item(
        "estimated Jaccard index band (0.00-0.05, ...) -> duplicates; empty without signatures")
    min_similarity: float = item("the run's min_similarity")
    below_min_similarity: int = item("duplicates below it (short pages, or chained in the transitive mode)")
    meaning: str = item("what these numbers are")


@dataclass(kw_only=True)
class RateDimension(Part):
    column: str = item("the input column it is taken from")
    values: int = item("distinct values (a missing one counts)")
    top: list[dict[str, Any]] = item(
        "the values with the most duplicates: {<name>: value, pages, duplicates, duplicate_rate}")


@dataclass(kw_only=True)
class ExamplePair(Part):
    duplicate: Any = item("the duplicate's id")
    kept: Any = item("its kept page's id")
    distance: int = item("Hamming distance of their fingerprints")
    similarity: float | None = item("estimated Jaccard index from their signatures; null without them")
    below_min_similarity: bool = item("whether the similarity is below min_similarity")


@dataclass(kw_only=True)
class DriverJvm(Part):
    compile_seconds: float = item("the JIT compilers' time since the JVM started, summed over their threads (on few "
                                  "cores it is taken from the tasks)")
    gc_seconds: float = item("its garbage collections' time since it started, every collector's summed")
    gc_collections: int = item("its garbage collections since it started")
    heap_max_mb: int = item("its heap's limit, MB")
    uptime_seconds: float = item("seconds since it started (the JVM's start is before total_seconds' clock)")


@dataclass(kw_only=True)
class Report(Part):
    """report.json; the Python API's report is the fields not marked job-only."""

    simhash_dedup_version: str = item("version of simhash-dedup that wrote the report")
    fingerprint_version: str = item("version of the fingerprint definition (features, hashing, signature)")
    input: str | None = item("the input path", optional=True, job_only=True)
    output: str | None = item("the output directory", optional=True, job_only=True)
    input_files: InputFiles | None = item("what was read", optional=True, job_only=True)
    empty_input: str | None = item("why the input has no rows (only an --allow-empty run of an empty input)",
                                   optional=True, job_only=True)
    input_rows: int = item("rows read")
    kept: int = item("pages kept (one per cluster)")
    duplicates: int = item("pages marked duplicate: input_rows - kept")
    exact_duplicates: int = item("duplicates with the same fingerprint as their kept page or a fellow member")
    near_duplicates: int = item("the other duplicates: duplicates - exact_duplicates")
    bad_rows: BadRows = item("bad rows, counted, and their treatment")
    distinct_fingerprints: int = item("distinct fingerprints searched")
    clusters: Clusters = item("the clusters")
    candidates: CandidateStats | None = item("the pair search (not in an empty run's report)", optional=True)
    table_plan: TablePlanStats | None = item("the tables of the pair search (not in an empty run's report)",
                                        optional=True)
    short_text: ShortTextStats | None = item("the short-text stage (not in an empty run's report)", optional=True)
    related: RelatedStats | None = item("related pages (--related N, related/); only in a run with it", optional=True)
    history: RunHistory | EmptyRunHistory | None = item("the history (--history); null without one", job_only=True)
    seconds: dict[str, float] = item("seconds per stage, in the order they ran")
    config: dict[str, Any] | None = item("the configuration (DedupConfig's fields; docs/operations.md)", optional=True,
                                  job_only=True)
    spark_version: str | None = item("Spark's version", optional=True, job_only=True)
    started_at: str | None = item("start of the run, UTC (YYYY-MM-DDTHH:MM:SSZ)", optional=True, job_only=True)
    total_seconds: float | None = item("seconds of the whole run, the pictures included", optional=True, job_only=True)
    driver_jvm: DriverJvm | None = item("what the driver's JVM spent on compiling and collecting, read at the report "
                                        "(in local mode the JVM of every task too; on a cluster the driver's alone)",
                                        optional=True, job_only=True)
    shuffle_partitions: int | None = item("spark.sql.shuffle.partitions of the run (the API's: of its own actions)",
                                          optional=True)
    duplicates_to_kept: DuplicatesToKept | None = item("each duplicate against its kept page", optional=True,
                                                       job_only=True)
    duplicate_rate_by: dict[str, RateDimension] | None = item(
        "duplicate rate per host (a url column) and per language (lang or language); empty without them",
        optional=True, job_only=True)
    example_pairs: list[ExamplePair] | None = item("the example pairs report.html shows", optional=True,
                                                   job_only=True)
    plots: list[str] | None = item("the pictures written beside report.json (none without matplotlib)",
                                   optional=True, job_only=True)
    report_html: str | None = item("the page for a person beside report.json", optional=True, job_only=True)

    def api_dict(self) -> dict:
        """The Python API's report: the fields that are not job-only."""
        job_only = {f.name for f in dataclasses.fields(self) if f.metadata["job_only"]}
        return {k: v for k, v in self.to_dict().items() if k not in job_only}


def load(path: str) -> Report:
    """A report.json on the local disk, typed."""
    with open(path, encoding="utf-8") as f:
        return Report.from_dict(json.load(f))


# --------------------------------------------------------------------------------------------------------
# docs/report.md, generated.

DOC_HEAD = """# report.json

Every run of the job writes `DIR/report.json` (and `report.html`, a page for a person, from the same numbers).
This page is generated from `simhash_udf/job/report_schema.py`, the one definition of its fields:
`python -m simhash_udf.job.report_schema > docs/report.md`. Read a report in Python with
`simhash_udf.job.report_schema.load(path)` (typed parts; keys of a newer version are ignored, a field an
older report lacks reads as None).

Fields in the order they are written. *optional*: present only in some reports (left out otherwise);
*job only*: not in the Python API's `result.report`. A field without *optional* is always there; where its
type allows null, null says what its text says. The report of an `--allow-empty` run of an empty input has
`empty_input` and no `candidates`, `table_plan`, `short_text` or page parts; its `history` is an
`EmptyRunHistory`.
"""


def type_name(hint) -> str:
    """A field's type as docs/report.md shows it (JSON's names; a part by its heading)."""
    if hint is Any:
        return "any"
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(type_name(a) for a in args)
    if origin is list:
        return f"list of {type_name(args[0])}"
    if origin is dict:
        return f"object of {type_name(args[1])}"
    if isinstance(hint, type) and issubclass(hint, Part):
        return f"[{hint.__name__}](#{hint.__name__.lower()})"
    return {int: "integer", float: "number", str: "string", bool: "boolean", type(None): "null"}[hint]


def parts_in_order(cls: type[Part] = Report, seen: list | None = None) -> list[type[Part]]:
    """cls and every part below it, each once, in the order a reader meets them."""
    seen = [] if seen is None else seen
    if cls not in seen:
        seen.append(cls)
        for hint in typing.get_type_hints(cls).values():
            for sub in _parts_of(hint):
                parts_in_order(sub, seen)
    return seen


def _parts_of(hint) -> list[type[Part]]:
    if isinstance(hint, type) and issubclass(hint, Part):
        return [hint]
    return [p for a in typing.get_args(hint) for p in _parts_of(a)]


def markdown() -> str:
    """docs/report.md: a table of each part's fields."""
    out = [DOC_HEAD]
    for cls in parts_in_order():
        hints = typing.get_type_hints(cls)
        out.append(f"\n## {cls.__name__}\n\n| field | type | meaning |\n|---|---|---|")
        for f in dataclasses.fields(cls):
            hint = hints[f.name]
            if f.metadata["optional"]:
                hint = typing.Union[tuple(a for a in typing.get_args(hint) if a is not type(None))]
            marks = [m for m, on in (("optional", f.metadata["optional"]), ("job only", f.metadata["job_only"])) if on]
            note = f" ({', '.join(marks)})" if marks else ""
            out.append(f"| `{f.name}` | {type_name(hint)} | {f.metadata['doc']}{note} |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.stdout.write(markdown())
