"""Crash-safe history: a kill after every step of the history's publish (and of an empty re-run's removal of
a date), in child processes, never loses a date or a row: the next run, of any date, finds every date
complete (the earlier attempt's rows put back, or the killed run's publish finished). A damaged history (a
date gone, a part file missing or truncated, the fingerprint pin deleted) is a clear error naming the date,
never a silent success; a damaged file of a date without manifest is named as the history's."""
import json
import os
import re
import shutil
import subprocess
import sys

import pandas as pd
import pytest

from simhash_udf.errors import DedupError
from simhash_udf.evaluation.sample_corpus import make_sample_corpus
from simhash_udf.io.history import HISTORY_COMMIT_STEPS, HISTORY_REMOVE_STEPS, History
from simhash_udf.io.history_manifest import Manifest
from simhash_udf.io.ownership import Owner
from simhash_udf.io.write import EXIT_AFTER_CODE, EXIT_AFTER_ENV
from simhash_udf.job.config import load_config
from simhash_udf.job.pipeline import run
from simhash_udf.spark.session import SHORT_RUN_JAVA_OPTIONS

D1, D2, D3 = "2026-02-01", "2026-02-02", "2026-02-03"
TOKEN = "5afe00000001"  # the killed runs' staging token
ENV = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
           PYSPARK_SUBMIT_ARGS=f"--driver-java-options '{SHORT_RUN_JAVA_OPTIONS}' pyspark-shell")


def job(spark, *argv):
    return run(load_config([str(a) for a in argv]), spark)


def write_input(path, seed):
    os.makedirs(path)
    with open(os.path.join(path, "pages.jsonl"), "w") as fh:
        for r in make_sample_corpus(8, seed=seed):
            fh.write(json.dumps({"id": r["id"], "text": r["text"]}, ensure_ascii=False) + "\n")
    return path


def rows(directory):
    """A date's rows as written (pyarrow skips the `_` entries: band index, manifest, _SUCCESS)."""
    return pd.read_parquet(directory).sort_values("id").reset_index(drop=True)


def same_rows(directory, template) -> bool:
    return os.path.isdir(directory) and rows(directory).equals(rows(template))


def dates(history):
    return sorted(n.split("=", 1)[1] for n in os.listdir(history) if n.startswith("run_date="))


def records(history):
    folder = os.path.join(history, "_manifests")
    return sorted(n for n in os.listdir(folder)) if os.path.isdir(folder) else []


def staging_entries(history):
    return sorted(n for n in os.listdir(history) if n.startswith("_staging-"))


def dead_owner_file(path, token):
    """An owner file of a run that died on this host (its pid is gone)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    me = Owner.this_process(token)
    with open(path, "wb") as fh:
        fh.write(Owner(token, me.host, proc.pid, None, me.boot_id, me.started).to_bytes())


def without_manifests(history):
    """The history as a version before manifests wrote it."""
    shutil.rmtree(os.path.join(history, "_manifests"))
    for d in dates(history):
        os.remove(os.path.join(history, f"run_date={d}", "_manifest.json"))


@pytest.fixture(scope="module")
def base(spark, tmp_path_factory):
    """A history of two days, and a replacement of the second day staged as a run stages it (its first three
    rows, so that old and new rows differ), kept as a template staging directory."""
    root = tmp_path_factory.mktemp("base")
    inputs = {d: write_input(str(root / f"in-{d}"), seed) for d, seed in ((D1, 1), (D2, 2), (D3, 3))}
    hist = root / "history"
    reports = {d: job(spark, "--input", inputs[d], "--output", root / f"out-{d}", "--history", hist, "--run-date", d)
               for d in (D1, D2)}
    cfg = load_config(["--input", inputs[D2], "--output", str(root / "unused")])
    scratch = root / "scratch"
    shutil.copytree(hist, scratch)
    stager = History(spark, str(scratch), D2, token=TOKEN)
    stager.stage(spark.read.parquet(str(hist / f"run_date={D2}")).orderBy("id").limit(3), cfg.fingerprint_version(),
                 cfg.bands)
    shutil.copytree(stager.staging, root / "replacement")
    stager.abort()
    return {"root": root, "hist": hist, "inputs": inputs, "reports": reports, "version": cfg.fingerprint_version(),
            "bands": cfg.bands, "replacement": root / "replacement"}


def copy_history(base, to):
    shutil.copytree(base["hist"], to)
    return to


# --- the records ----------------------------------------------------------------------------------------

def test_each_date_is_recorded_with_its_files_and_rows(base):
    hist = base["hist"]
    assert records(hist) == [f"run_date={D1}.json", f"run_date={D2}.json"]
    for d in (D1, D2):
        record = (hist / "_manifests" / f"run_date={d}.json").read_bytes()
        assert (hist / f"run_date={d}" / "_manifest.json").read_bytes() == record  # the copy moved in with the rows
        m = Manifest.parse(record)
        directory = hist / f"run_date={d}"
        on_disk = {str(p.relative_to(directory)): p.stat().st_size for p in directory.rglob("*")
                   if p.is_file() and not p.name.startswith(("_", "."))}
        assert m.files == on_disk and any(n.startswith("_band_index-") for n in on_disk)
        assert m.rows == len(rows(directory)) == base["reports"][d]["input_rows"]
        assert m.run_date == d and m.fingerprint_version == base["version"] == (hist / "_fingerprint_version").read_text().strip()
        assert m.id_type == "bigint" and m.band_index and m.band_index in {n.split("/")[0] for n in on_disk}


# --- a kill after every step ------------------------------------------------------------------------------

CHILD = r"""
import sys
from pyspark.java_gateway import launch_gateway
from simhash_udf.io.hadoop_fs import HadoopFS
from simhash_udf.io.history import History

path, run_date, token, action = sys.argv[1:5]
jvm = launch_gateway().jvm  # a bare JVM with Hadoop's file systems: the publish without a SparkSession
fs = HadoopFS(jvm, jvm.org.apache.hadoop.conf.Configuration(), path)
history = History(None, path, run_date, fs=fs, token=token)
history.claim_staging()
if action == "publish":
    history.publish()
else:
    history.remove_date()
    history.abort()
print("done")
"""

# Which rows of D2 the history holds once the next run has settled what the killed run left: the earlier
# attempt's ("old"), the killed run's ("new") or none. "replace": a re-run of D2 publishes over D2; "first":
# the first run of a new history publishes D2; "remove": an empty re-run of D2 removes it (--allow-empty).
AFTER_KILL = {
    "replace": {"history_begin": "old", "history_move_old_aside": "old", "history_move_new_in": "new",
                "history_record": "new", "history_pin": "new", "history_drop_old": "new"},
    "first": {"history_move_new_in": "new", "history_record": "new", "history_pin": "new"},
    "remove": {"history_remove_move_aside": "old", "history_remove_record": "old", "history_remove_drop": None},
}
CASES = [(variant, step) for variant, steps in AFTER_KILL.items() for step in steps]
assert set(AFTER_KILL["replace"]) == set(HISTORY_COMMIT_STEPS) and set(AFTER_KILL["remove"]) == set(HISTORY_REMOVE_STEPS)


@pytest.fixture(scope="module")
def killed(base, tmp_path_factory):
    """One child process per (variant, step), ended (os._exit, like a kill) right after its step; all at once."""
    root = tmp_path_factory.mktemp("killed")
    children = {}
    for variant, step in CASES:
        path = root / f"{variant}-{step}"
        if variant == "first":
            path.mkdir()
        else:
            copy_history(base, path)
        if variant != "remove":
            shutil.copytree(base["replacement"], path / f"_staging-{TOKEN}")
        action = "remove" if variant == "remove" else "publish"
        children[variant, step] = (path, subprocess.Popen(
            [sys.executable, "-c", CHILD, str(path), D2, TOKEN, action], env=dict(ENV, **{EXIT_AFTER_ENV: step}),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    done = {}
    for case, (path, proc) in children.items():
        stdout, stderr = proc.communicate(timeout=600)
        done[case] = (path, proc.returncode, stdout + stderr)
    # the state a kill between the renames leaves, kept as it is for the whole job (the test above settles its copy)
    shutil.copytree(done["replace", "history_move_old_aside"][0], root / "between-the-renames")
    done["between the renames"] = root / "between-the-renames"
    return done


def check_complete(base, path, d2: str | None, d1: bool = True):
    """The history holds D1 as written (when d1) and D2 as expected ("old", "new" or absent), each recorded,
    and nothing of the dead run is left."""
    assert dates(path) == ([D1] if d1 else []) + ([D2] if d2 else [])
    assert records(path) == [f"run_date={d}.json" for d in dates(path)]
    if d1:
        assert same_rows(path / f"run_date={D1}", base["hist"] / f"run_date={D1}")
    if d2:
        template = base["hist"] / f"run_date={D2}" if d2 == "old" else base["replacement"]
        assert same_rows(path / f"run_date={D2}", template)
    assert staging_entries(path) == []
    if dates(path):
        assert (path / "_fingerprint_version").read_text().strip() == base["version"]


@pytest.mark.parametrize("variant,step", CASES)
def test_kill_after_each_history_step(spark, base, killed, variant, step):
    """Old code: a kill between the publish's two renames left no run_date=D2, and the next run deleted the
    rows it had moved aside ("removed staging directories of dead runs") and read one date fewer."""
    path, code, output = killed[variant, step]
    assert code == EXIT_AFTER_CODE, output[-3000:]
    expect = AFTER_KILL[variant][step]
    # the next day's run settles what the killed run left, then reads every earlier date with all its rows
    nxt = History(spark, str(path), D3)
    nxt.recover(600, base["version"])
    check_complete(base, path, expect, d1=variant != "first")
    earlier, read, _ = nxt.earlier()
    assert read == dates(path)
    if earlier is not None:
        expected_rows = sum(int(rows(path / f"run_date={d}")["fingerprint"].notna().sum()) for d in read)
        assert earlier.count() == expected_rows > 0
    # and a re-run of the same day publishes over whatever is there, checked by the run after it
    again = History(spark, str(path), D2, token=f"a9a1{CASES.index((variant, step)):08d}")
    again.recover(600, base["version"])
    again.stage(spark.read.parquet(str(base["replacement"])), base["version"], base["bands"])
    again.publish()
    History(spark, str(path), D3).recover(600, base["version"])
    check_complete(base, path, "new", d1=variant != "first")


def test_the_next_day_after_a_kill_between_the_renames_reads_every_date(spark, base, killed, tmp_path):
    """The whole job after a kill with D2's earlier attempt moved aside and nothing moved in: exit 0, and
    both dates are read (before: one, and the aside rows deleted)."""
    hist = shutil.copytree(killed["between the renames"], tmp_path / "history")
    assert D2 not in dates(hist)
    assert staging_entries(hist) == [f"_staging-{TOKEN}", f"_staging-{TOKEN}-replaced-{D2}", f"_staging-{TOKEN}.owner"]
    report = job(spark, "--input", base["inputs"][D3], "--output", tmp_path / "out", "--history", hist, "--run-date", D3)
    h = report["history"]
    assert h["runs_read"] == 2 and h["first_run"] == D1
    assert h["history_rows"] == sum(int(rows(base["hist"] / f"run_date={d}")["fingerprint"].notna().sum()) for d in (D1, D2))
    assert len(h["repaired"]) == 1 and f"run_date={D2} restored" in h["repaired"][0]
    assert same_rows(hist / f"run_date={D2}", base["hist"] / f"run_date={D2}")
    assert dates(hist) == [D1, D2, D3] and staging_entries(hist) == []


def test_a_date_moved_aside_by_a_run_of_the_version_before_is_restored(spark, base, tmp_path):
    """What the issue's run left (the previous version: the aside named without its date, no manifests): the
    next day's run restores the date from the rows' kept_run_date and reads it. Old code: exit 0, the aside
    rows deleted, one date read. Also: dates without manifests are read unchecked beside recorded ones, and
    a damaged recorded date is still refused."""
    hist = copy_history(base, tmp_path / "history")
    without_manifests(hist)
    os.rename(hist / f"run_date={D2}", hist / "_staging-dead00000001-replaced")
    dead_owner_file(hist / "_staging-dead00000001.owner", "dead00000001")
    report = job(spark, "--input", base["inputs"][D3], "--output", tmp_path / "out", "--history", hist, "--run-date", D3)
    assert report["history"]["runs_read"] == 2 and report["history"]["runs_without_manifest"] == 2
    assert same_rows(hist / f"run_date={D2}", base["hist"] / f"run_date={D2}")
    assert staging_entries(hist) == [] and records(hist) == [f"run_date={D3}.json"]
    # the new date is checked, the two earlier ones are read as before
    part = sorted((hist / f"run_date={D3}").glob("part-*"))[0]
    os.remove(part)
    with pytest.raises(DedupError, match=rf"run_date={D3}: .*{part.name} is missing"):
        History(spark, str(hist), "2026-02-04").recover(600, base["version"])
    History(spark, str(hist), D3).recover(600, base["version"])  # its own date: replaced, not read


# --- a damaged history is a clear error --------------------------------------------------------------------

def run_d3(spark, base, hist, tmp_path, *options):
    return job(spark, "--input", base["inputs"][D3], "--output", tmp_path / "out", "--history", hist,
               "--run-date", D3, *options)


def test_a_history_without_its_pin_is_refused(spark, base, tmp_path):
    """Old code: a history whose _fingerprint_version was deleted accepted another tokenizer's fingerprints
    and pinned them (0 duplicates of earlier runs, exit 0)."""
    hist = copy_history(base, tmp_path / "history")
    os.remove(hist / "_fingerprint_version")
    version = re.escape(repr(base["version"]))
    with pytest.raises(DedupError, match=rf"holds fingerprints of version {version}"):
        run_d3(spark, base, hist, tmp_path, "--tokenizer", "char")
    with pytest.raises(DedupError, match=rf"holds 2 dates \({D1}, {D2}\) but no _fingerprint_version file .*restore "
                                         rf"the file \(its dates' manifests record version {version}"):
        run_d3(spark, base, hist, tmp_path)
    without_manifests(hist)  # a history from before manifests: nothing records the version
    for options in (["--tokenizer", "char"], []):
        with pytest.raises(DedupError, match=r"no _fingerprint_version file .*report.json"):
            run_d3(spark, base, hist, tmp_path, *options)
    assert not (hist / "_fingerprint_version").exists() and dates(hist) == [D1, D2]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("damage", ["part file deleted", "part file truncated", "band index file deleted",
                                    "date deleted", "foreign file"])
def test_a_damaged_date_is_refused_naming_it(spark, base, tmp_path, damage):
    """Old code: 56 of 200 rows of a date missing (a part file deleted), or a whole date deleted, went
    unnoticed (exit 0); a truncated file was reported as an "input file" with advice about --input-format."""
    hist = copy_history(base, tmp_path / "history")
    day = hist / f"run_date={D1}"
    part = sorted(day.glob("part-*"))[-1]
    index = next(day.glob("_band_index-*"))
    band_part = sorted(index.glob("part-*"))[0]
    if damage == "part file deleted":
        os.remove(part)
        what = rf"{part.name} is missing"
    elif damage == "part file truncated":
        size = part.stat().st_size
        os.truncate(part, size // 2)
        what = rf"{part.name} is {size // 2} bytes, shorter \(truncated\?\) than the {size} written"
    elif damage == "band index file deleted":
        os.remove(band_part)
        what = rf"{index.name}/{band_part.name} is missing"
    elif damage == "date deleted":
        shutil.rmtree(day)
        what = rf"is gone: its record _manifests/run_date={D1}.json lists the date \(\d+ rows in \d+ files\)"
    else:
        shutil.copy(part, day / "part-99999-copied.parquet")
        what = "part-99999-copied.parquet was not written by the run that wrote the date"
    with pytest.raises(DedupError, match=rf"history .* is damaged in dates this run reads: run_date={D1}: .*{what}.* "
                                         rf"Re-run each date named \(--run-date {D1} with that day's input"):
        run_d3(spark, base, hist, tmp_path)
    assert not (tmp_path / "out").exists() and D3 not in dates(hist)
    # a run of that date itself replaces it, and a run of an earlier date does not read it: warnings, no error
    History(spark, str(hist), D1).recover(600, base["version"])
    History(spark, str(hist), "2026-01-31").recover(600, base["version"])


def test_a_damaged_file_of_a_date_without_manifest_is_named_as_the_historys(spark, base, tmp_path):
    """Old code: "input file .../run_date=D/part-... cannot be read (java.lang.RuntimeException: ... Expected magic
    number at tail, but found): replace or remove it, or fix --input-format"."""
    hist = copy_history(base, tmp_path / "history")
    without_manifests(hist)
    part = sorted((hist / f"run_date={D1}").glob("part-*"))[0]
    data = part.read_bytes()
    part.write_bytes(data[:-8] + b"\0" * 8)  # the footer's length and magic number overwritten
    with pytest.raises(DedupError) as err:
        run_d3(spark, base, hist, tmp_path)
    message = str(err.value)
    assert message.startswith(f"history {hist}: the file run_date={D1}/{part.name} cannot be read (")
    assert f"run_date={D1} of the history is damaged: re-run --run-date {D1} with that day's input" in message
    assert "input file" not in message and "--input-format" not in message
    cause = message.split(" cannot be read (", 1)[1].split("): ", 1)[0]
    assert cause and str(hist) not in cause and (cause.endswith(" ...") or len(cause) < 240)
    assert "Exception" not in cause and "the file is not a Parquet file" in cause


def test_a_band_index_removed_whole_is_not_damage(spark, base, tmp_path):
    """A date without its band index has its band keys computed from its signatures (as a date written before
    band indexes): removing the whole index is allowed; removing part of it is refused (above)."""
    hist = copy_history(base, tmp_path / "history")
    shutil.rmtree(next((hist / f"run_date={D1}").glob("_band_index-*")))
    History(spark, str(hist), D3).recover(600, base["version"])
