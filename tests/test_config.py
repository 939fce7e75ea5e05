"""One source of defaults: the dataclasses. The shipped TOML, the command line and the core's spec
dataclasses all follow DedupConfig; TOML files are read in sections."""
from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
import tomllib

import pytest

from simhash_udf.core.fingerprint import FeatureSpec
from simhash_udf.core.short_text import ShortTextSpec
from simhash_udf.core.verified import VerifySpec
from simhash_udf.errors import DedupError
from simhash_udf.job.config import (
    SECTIONS,
    DedupConfig,
    build_parser,
    load_config,
    program_name,
    render_defaults_toml,
    shipped_defaults,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARGS = ["--input", ".", "--output", "x"]


def test_shipped_toml_is_generated_from_the_dataclass():
    """default.toml (package data) is exactly what render_defaults_toml() prints, and conf/default.toml is
    that file: edit DedupConfig, then `python -m simhash_udf.job.config > simhash_udf/job/default.toml`."""
    assert shipped_defaults() == render_defaults_toml()
    with open(os.path.join(ROOT, "conf", "default.toml"), encoding="utf-8") as fh:
        assert fh.read() == shipped_defaults()
    parsed = tomllib.loads(shipped_defaults())
    assert list(parsed) == list(SECTIONS)
    defaults = DedupConfig()
    for f in dataclasses.fields(DedupConfig):
        if f.metadata["toml"]:
            assert parsed[f.metadata["section"]][f.name] == getattr(defaults, f.name), f.name


def test_core_specs_have_the_same_defaults():
    cfg = DedupConfig()
    assert cfg.features == FeatureSpec()
    assert cfg.short_text == ShortTextSpec()
    assert cfg.verify == VerifySpec()


def test_every_field_is_an_option_and_files_and_flags_override_in_order(tmp_path):
    parser_dests = {a.dest for a in build_parser()._actions}
    assert {f.name for f in dataclasses.fields(DedupConfig)} <= parser_dests
    conf = tmp_path / "mine.toml"
    conf.write_text('[features]\ntokenizer = "char"\nstop_words = false\n[search]\nk = 5\n')
    cfg = load_config(ARGS + ["--config", str(conf), "--k", "4"])
    assert (cfg.tokenizer, cfg.k, cfg.weighting) == ("char", 4, DedupConfig().weighting)
    assert load_config(ARGS + ["--config", str(conf)]).k == 5
    assert load_config(ARGS + ["--stop-words"]).stop_words is True
    assert load_config(ARGS + ["--overwrite", "--no-overwrite"]).overwrite is False
    conf.write_text("k = 3\n")  # flat files of earlier versions still work
    assert load_config(ARGS + ["--config", str(conf)]).k == 3


@pytest.mark.parametrize("text, message", [
    ('[search]\ntokenizer = "char"\n', r"tokenizer belongs in \[features\], not \[search\]"),
    ("[search]\nkk = 5\n", "unknown setting 'kk'"),
    ('[search]\nk = "six"\n', "k must be int"),
    ("[search\n", "not valid TOML"),
    # the run's own paths and --plan are the command line's (a `plan` in a file made every run exit 0 unrun)
    ("[search]\nplan = 100\n", r"plan is given on the command line only \(--plan\)"),
    ('[input]\ninput = "/other/day"\n', r"input is given on the command line only"),
    ('output = "/x"\n', r"output is given on the command line only"),
])
def test_bad_settings_files_say_what_to_change(tmp_path, text, message):
    conf = tmp_path / "bad.toml"
    conf.write_text(text)
    with pytest.raises(DedupError, match=message):
        load_config(ARGS + ["--config", str(conf)])


def test_help_lists_options_by_section_with_defaults():
    text = build_parser().format_help()
    for section in SECTIONS:
        assert f"\n{section}:\n" in text
    assert "--min-similarity MIN_SIMILARITY" in text and "(default: 0.8)" in text


def test_help_names_the_command_as_typed_and_leaves_out_the_benchmarks_option():
    """The usage line is the command the user ran (it said dedup_job.py to every user); the benchmarks' option
    is not listed but still works."""
    assert program_name("/opt/x/jobs/dedup_job.py") == "spark-submit jobs/dedup_job.py"
    assert program_name("/venv/lib/python3.11/site-packages/simhash_udf/job/cli.py") == "python -m simhash_udf.job.cli"
    assert program_name("/venv/bin/simhash-dedup") == program_name("") == "simhash-dedup"
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "jobs", "dedup_job.py"), "--help"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: spark-submit jobs/dedup_job.py [-h]")
    assert "--simulate-fingerprint-bits" not in proc.stdout and "benchmarks only" not in proc.stdout
    assert load_config(ARGS + ["--simulate-fingerprint-bits", "40"]).simulate_fingerprint_bits == 40


def test_operations_table_lists_every_option_with_its_default():
    """docs/operations.md's table of options names every command-line option, and a default it writes as a
    literal (`3`, `0.8`, `rjieba`) is the dataclass's: the table had gone on saying k = 6 and 0.7 after the
    defaults changed, and left out the signature bands and --plan."""
    with open(os.path.join(ROOT, "docs", "operations.md"), encoding="utf-8") as fh:
        rows = [line for line in fh if line.startswith("| `--")]
    listed: dict[str, str] = {}
    for row in rows:
        options_cell, default_cell = row.split("|")[1:3]
        names = re.findall(r"`(--[a-z-]+)", options_cell)
        defaults = re.findall(r"`([^`]+)`", default_cell)
        for i, name in enumerate(names):
            listed[name] = defaults[i if len(defaults) == len(names) else 0] if defaults else ""
    fields = {f.name: f.default for f in dataclasses.fields(DedupConfig)}
    for action in build_parser()._actions:
        for flag in (f for f in action.option_strings if f.startswith("--") and f != "--help"):
            if flag.startswith("--no-"):  # the negative of a boolean flag, listed with it
                continue
            assert flag in listed, f"{flag} is not in the options table of docs/operations.md"
            field = flag[2:].replace("-", "_")
            if listed[flag] and field in fields and not isinstance(fields[field], bool):
                assert listed[flag] == str(fields[field]), (flag, listed[flag], fields[field])


@pytest.mark.parametrize("flag, value, most", [
    ("--arrow-batch-mb", "4096", "2,047"), ("--arrow-batch-size", "3000000000", "2,147,483,647"),
    ("--shuffle-partitions", "3000000000", "2,147,483,647"), ("--max-text-chars", "3000000000", "2,147,483,647"),
    ("--input-partitions", "3000000000", "2,147,483,647")])
def test_values_spark_cannot_take_are_refused_before_it_starts(flag, value, most):
    """Spark takes these as 32-bit ints (the batch size in bytes): larger values ended in a traceback inside
    Spark (exit 1) after the run had started."""
    with pytest.raises(DedupError, match=rf"{flag} must be at most {most} \(got "):
        load_config(ARGS + [flag, value])
    load_config(ARGS + [flag, most.replace(",", "")])  # the bound itself is accepted


def test_a_toml_date_is_a_run_date(tmp_path):
    conf = tmp_path / "day.toml"
    conf.write_text("[history]\nrun_date = 2026-11-27\n")  # unquoted: a TOML date, taken as its ISO string
    cfg = load_config(ARGS + ["--config", str(conf), "--history", str(tmp_path / "h")])
    assert cfg.run_date == "2026-11-27"


def test_signature_bands_without_verification_are_off_with_a_warning(caplog):
    """A band candidate is accepted only once verified, so --min-similarity 0 turns the band search off; before,
    --signature-bands 8 with it was ignored without a word."""
    with caplog.at_level("WARNING", logger="simhash_dedup"):
        cfg = load_config(ARGS + ["--signature-bands", "8", "--min-similarity", "0"])
    assert cfg.bands is None
    assert "--signature-bands 8 is not used with --min-similarity 0" in caplog.text
    assert "pass --signature-bands 0" in caplog.text
    for quiet in (["--signature-bands", "0", "--min-similarity", "0"], ["--signature-bands", "8"]):
        caplog.clear()
        with caplog.at_level("WARNING", logger="simhash_dedup"):
            cfg = load_config(ARGS + quiet)
        assert "signature-bands" not in caplog.text, quiet
        assert (cfg.bands is None) == (quiet[1] == "0")
