"""report.json's schema (job/report_schema.py): docs/report.md is generated from it, reports of this version fit it
exactly and read back to the same JSON, reports of other versions read tolerantly, and check() names what does
not fit. A real run's report is checked in tests/test_job.py (test_report_fits_its_schema)."""
from __future__ import annotations

import dataclasses
import os
import time
import typing

from simhash_udf.job.config import DedupConfig
from simhash_udf.job.report import empty_report
from simhash_udf.job.report_schema import Report, check, markdown, parts_in_order

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_docs_are_generated_from_the_schema():
    with open(os.path.join(ROOT, "docs", "report.md"), encoding="utf-8") as f:
        assert f.read() == markdown(), "regenerate: python -m simhash_udf.job.report_schema > docs/report.md"


def test_every_field_has_a_meaning_and_a_json_type():
    for part in parts_in_order():
        hints = typing.get_type_hints(part)
        for f in dataclasses.fields(part):
            assert f.metadata.get("doc"), f"{part.__name__}.{f.name} has no doc"
            assert f.name in hints
    assert f"| `{dataclasses.fields(Report)[0].name}` | string |" in markdown()


def empty_run_report(history: str | None) -> dict:
    cfg = DedupConfig(input="/in", output="/out", allow_empty=True, history=history or "", run_date="2026-01-02")
    report = empty_report(cfg, "the input holds no rows", {"read": 1.5}, "4.0", time.time())
    if history:
        report.history.earlier_attempt_removed = True
    return report.to_dict()


def test_an_empty_run_report_fits_and_reads_back():
    for history in (None, "/history"):
        d = empty_run_report(history)
        assert check(d) == []
        assert Report.from_dict(d).to_dict() == d and list(Report.from_dict(d).to_dict()) == list(d)
    d = empty_run_report("/history")
    assert d["history"] == {"path": "/history", "run_date": "2026-01-02", "written": False,
                            "earlier_attempt_removed": True}
    assert "candidates" not in d and d["plots"] == [] and empty_run_report(None)["history"] is None


def test_check_names_what_does_not_fit():
    d = empty_run_report(None)
    renamed = {("rows_read" if k == "input_rows" else k): v for k, v in d.items()}
    assert check(renamed) == ["rows_read: not in the schema", "input_rows: missing"]
    assert check({**d, "kept": "12"}) == ["kept: '12' is not int"]
    assert check({**d, "kept": True}) == ["kept: True is not int"]
    assert check({**d, "clusters": {**d["clusters"], "size_histogram": {"1": 1.5}}}) == [
        "clusters.size_histogram.1: 1.5 is not int"]
    assert check({**d, "history": {"path": "/h"}})  # neither kind of history
    api = Report.from_dict(d).api_dict()
    assert "history" not in api and "config" not in api and check(api, api=True) == [] and check(api) != []


def test_reports_of_other_versions_read_tolerantly():
    d = empty_run_report("/history")
    newer = {**d, "added_later": {"x": 1}, "clusters": {**d["clusters"], "median": 3}}
    report = Report.from_dict(newer)
    assert report.clusters.total == 0 and report.to_dict() == d  # keys of a newer version are left out
    older = {k: v for k, v in d.items() if k not in ("bad_rows", "distinct_fingerprints")}
    report = Report.from_dict(older)
    assert report.bad_rows is None and report.distinct_fingerprints is None and report.history.written is False
