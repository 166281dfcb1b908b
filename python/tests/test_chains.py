"""Restore chains through Python: ``mdfkit.open`` of a chain's files, with and without stop
points, reads the min and max of ``dbo.steps.dt`` that a real SQL Server restore of the same
files gives (the corpus' ``chains/EXPECTED.json``, from dbatools' own tests)."""

import csv
import io
import json
import subprocess

import pyarrow as pa
import pytest

import mdfkit


def expected_cases(corpus, folder):
    chains = json.loads((corpus / "chains" / "EXPECTED.json").read_text())["chains"]
    return [c for c in chains if c["folder"] == folder]


def min_max_dt(db):
    column = db.table("dbo.steps").to_arrow().column("dt").to_pylist()
    # EXPECTED.json cuts datetime2(7) to whole seconds.
    return min(column).strftime("%Y-%m-%d %H:%M:%S"), max(column).strftime("%Y-%m-%d %H:%M:%S")


def log_records(mdfkit_bin, operation, files):
    """The log records of one operation in ``files``, as ``mdfkit log --format csv`` lists them."""
    log = subprocess.run(
        [mdfkit_bin, "log", "--operation", operation, "--format", "csv", *map(str, files)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return list(csv.DictReader(io.StringIO(log)))


def test_restoretimeclean_at_its_end_and_at_stopat(corpus):
    files = sorted((corpus / "chains" / "restoretimeclean").iterdir())
    cases = expected_cases(corpus, "restoretimeclean")
    assert len(cases) == 2
    for case in cases:
        db = mdfkit.open(files, stopat=case.get("stopat"))
        assert min_max_dt(db) == (case["min_dt"], case["max_dt"]), case["restore"]


def test_splits_read_at_their_stop_point_in_a_process_that_read_another(corpus):
    """A worker keeps the databases of the splits it has read open: splits planned at STOPAT,
    read after splits of the same chain at its end (and the other way round), read their own
    point's rows."""
    files = sorted((corpus / "chains" / "restoretimeclean").iterdir())
    cases = expected_cases(corpus, "restoretimeclean")
    assert {"stopat" in case for case in cases} == {True, False}
    for case in cases + cases:
        splits = mdfkit.open(files, stopat=case.get("stopat")).table("dbo.steps").splits()
        column = pa.concat_tables(mdfkit.read_split(s).read_all() for s in splits).column("dt").to_pylist()
        got = min(column).strftime("%Y-%m-%d %H:%M:%S"), max(column).strftime("%Y-%m-%d %H:%M:%S")
        assert got == (case["min_dt"], case["max_dt"]), case["restore"]


def test_simplerecovery_full_and_differential(corpus):
    (case,) = expected_cases(corpus, "simplerecovery")
    folder = corpus / "chains" / "simplerecovery"
    db = mdfkit.open([folder / "SimpleBacktest.bak", folder / "SimpleBackTest_1.bak"])
    assert min_max_dt(db) == (case["min_dt"], case["max_dt"])


def test_a_stop_lsn_in_each_spelling_reads_as_the_stop_time_of_its_commit(corpus, mdfkit_bin):
    """Stopping at the LSN of the last commit at or before EXPECTED.json's STOPAT time (found with
    ``mdfkit log``) reads the STOPAT restore; stopping before it leaves that transaction out; an
    LSN past the log reads the whole chain."""
    files = sorted((corpus / "chains" / "restoretimeclean").iterdir())
    cases = expected_cases(corpus, "restoretimeclean")
    (case,) = [c for c in cases if "stopat" in c]
    (whole,) = [c for c in cases if "stopat" not in c]
    commits = log_records(mdfkit_bin, "LOP_COMMIT_XACT", files)
    commit = max(c["current_lsn"] for c in commits if c["end_time"] and c["end_time"][:19] <= case["stopat"])
    vlf, block, slot = (int(p, 16) for p in commit.split(":"))
    want = (case["min_dt"], case["max_dt"])
    for lsn in [f"{vlf}{block:010}{slot:05}", f"0x{commit}", f"{vlf}:{block}:{slot}"]:
        assert min_max_dt(mdfkit.open(files, stopatlsn=lsn)) == want, lsn
    assert min_max_dt(mdfkit.open(files, stopatmark=f"lsn:{vlf}{block:010}{slot:05}")) == want
    before = min_max_dt(mdfkit.open(files, stopbeforemark=f"lsn:{vlf}{block:010}{slot:05}"))
    assert before[0] == want[0] and before[1] < want[1]
    assert min_max_dt(mdfkit.open(files, stopatlsn="99:1:1")) == (whole["min_dt"], whole["max_dt"])


def test_bad_stop_points_are_value_errors(corpus):
    files = sorted((corpus / "chains" / "restoretimeclean").iterdir())
    with pytest.raises(ValueError, match="stopatlsn"):
        mdfkit.open(files, stopatlsn="19:51")
    with pytest.raises(ValueError, match="one stop point"):
        mdfkit.open(files, stopat="2017-06-01 13:22:44", stopatlsn="25:1:1")
    with pytest.raises(ValueError, match="stopat"):
        mdfkit.open(files, stopat="yesterday")
    with pytest.raises(mdfkit.NotFoundError, match="no mark"):
        mdfkit.open(files, stopatmark="nosuchmark")


def stopat_files(corpus):
    chains = corpus / "chains"
    return sorted((chains / "stopat").iterdir()) + sorted((chains / "stopat-later-logs").iterdir())


def max_step(db):
    return max(db.table("dbo.steps").to_arrow().column("step").to_pylist())


def test_stopat_marks_read_the_expected_steps(corpus):
    """The StopAt chain's marked transaction ``dbatoolstest``: STOPATMARK, STOPBEFOREMARK and
    STOPATMARK ... AFTER read EXPECTED.json's max_step."""
    (case,) = expected_cases(corpus, "stopat + stopat-later-logs")
    expect = {key: value["max_step"] for key, value in case["expect"].items()}
    files = stopat_files(corpus)
    assert max_step(mdfkit.open(files, stopatmark="dbatoolstest")) == expect["STOPATMARK 'dbatoolstest'"]
    assert max_step(mdfkit.open(files, stopbeforemark="dbatoolstest")) == expect["STOPBEFOREMARK 'dbatoolstest'"]
    after = mdfkit.open(files, stopatmark="dbatoolstest", after="2020-05-12 13:33:35")
    assert max_step(after) == expect["STOPATMARK 'dbatoolstest' AFTER '2020-05-12 13:33:35'"]


def test_a_stop_lsn_inside_the_marked_transaction_undoes_it(corpus, mdfkit_bin):
    """Stopping at the insert of ``dbatoolstest`` (found with ``mdfkit log``), before its commit:
    the insert is rolled forward, then undone as restore recovery does, so the chain reads as
    STOPBEFOREMARK; the table's ``rows`` counts the rows read."""
    (case,) = expected_cases(corpus, "stopat + stopat-later-logs")
    files = stopat_files(corpus)
    inserts = log_records(mdfkit_bin, "LOP_INSERT_ROWS", files)
    insert = min(r["current_lsn"] for r in inserts if r["transaction_name"] == "dbatoolstest")
    db = mdfkit.open(files, stopatlsn=f"0x{insert}")
    assert max_step(db) == case["expect"]["STOPBEFOREMARK 'dbatoolstest'"]["max_step"]
    steps = db.table("dbo.steps")
    assert steps.rows == steps.to_arrow().num_rows
