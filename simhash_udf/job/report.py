"""report.json in one place: what the run read, kept and removed, the bad rows and their treatment, the pair
search, the seconds per stage and the configuration, built as report_schema's typed Report (which defines each
field and writes the JSON). The job writes it next to clusters/ and kept/ (with report.html and the plots built
from it); the Python API returns the same dict without the job-only parts (Report.api_dict)."""
from __future__ import annotations

import dataclasses
import time

from .. import __version__
from .config import DedupConfig
from .report_schema import BadRows, Clusters, EmptyRunHistory, InputFiles, Report, RunHistory
from .stages import Clustered, Fingerprinted, Related, ShortText

BAD_ROWS_TREATMENT = (
    "null text or text without features (empty, only white space or punctuation): no fingerprint, kept as a "
    "cluster of its own; invalid UTF-8: replaced by U+FFFD then fingerprinted (counted: texts that hold U+FFFD "
    "once decoded); text longer than max_text_chars: fingerprinted up to that length; truncated_records: WET "
    "records cut off by the end of their file (Content-Length larger than the bytes present, or a cut gzip "
    "member): no fingerprint, kept as a cluster of its own with the bytes present as text")


def bad_rows(stats: dict) -> BadRows:
    """The bad-row part from the fingerprint stage's counts (none counted: zeros)."""
    return BadRows(null_text=stats.get("null_text", 0), no_features=stats.get("no_features", 0),
                   invalid_utf8_replaced=stats.get("invalid_utf8", 0), truncated=stats.get("truncated", 0),
                   truncated_records=stats.get("truncated_records", 0), treatment=BAD_ROWS_TREATMENT)


def dedup_report(cfg: DedupConfig, fp: Fingerprinted, short: ShortText, found: Clustered, kept_rows: int,
                 related: Related | None = None) -> Report:
    """The counts of a run of the stages: the part of report.json that the API returns as well (related: the
    related stage's, with --related N)."""
    near, histogram = found.stats, found.histogram
    input_rows = fp.stats["input_rows"]
    duplicates = input_rows - kept_rows
    return Report(
        simhash_dedup_version=__version__,
        fingerprint_version=cfg.fingerprint_version(fp.spec),
        input_rows=input_rows,
        kept=kept_rows,
        duplicates=duplicates,
        exact_duplicates=near.exact_duplicates,
        near_duplicates=duplicates - near.exact_duplicates,
        bad_rows=bad_rows(fp.stats),
        distinct_fingerprints=near.distinct_fingerprints,
        clusters=Clusters(
            total=sum(histogram.values()),
            with_duplicates=sum(c for s, c in histogram.items() if s > 1),
            largest=max(histogram) if histogram else 0,
            size_histogram={str(s): histogram[s] for s in sorted(histogram)},
            max_distance_to_kept_histogram=near.max_distance_to_kept, containment_check=near.containment_check),
        candidates=near.candidates,
        table_plan=near.table_plan,
        short_text=short.report,
        related=related.stats if related is not None else None)


def run_report(cfg: DedupConfig, body: Report, *, input_files: InputFiles, history: RunHistory | None,
               seconds: dict, spark_version: str, started: float) -> Report:
    """report.json of a job run: the stages' counts plus where the data came from and went, and timing."""
    return dataclasses.replace(
        body, input=cfg.input, output=cfg.output, input_files=input_files, history=history, seconds=seconds,
        config=cfg.to_dict(), spark_version=spark_version, started_at=started_at(started),
        total_seconds=round(time.time() - started, 3))


def empty_report(cfg: DedupConfig, why: str, seconds: dict, spark_version: str, started: float) -> Report:
    """report.json of --allow-empty on an input of 0 rows."""
    return Report(
        simhash_dedup_version=__version__,
        fingerprint_version=cfg.fingerprint_version(),
        input=cfg.input,
        output=cfg.output,
        empty_input=why,
        input_rows=0, kept=0, duplicates=0, exact_duplicates=0, near_duplicates=0,
        bad_rows=bad_rows({}),
        distinct_fingerprints=0,
        clusters=Clusters(total=0, with_duplicates=0, largest=0, size_histogram={}, max_distance_to_kept_histogram={}),
        history=EmptyRunHistory(path=cfg.history, run_date=cfg.run_date, written=False) if cfg.history else None,
        seconds=seconds,
        config=cfg.to_dict(),
        spark_version=spark_version,
        started_at=started_at(started),
        total_seconds=round(time.time() - started, 3),
        plots=[],
    )


def started_at(started: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started))
