"""A run folder is whole: results.json covers every file of the run (report.html too), a run is swapped into
--out only once it is complete, a killed or failed re-run leaves the previous run readable, and what a killed
writer left behind is removed by the next write."""
import errno
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import time

import jsonschema
import pytest

from chimdqa_eval import cli, release
from chimdqa_eval.report.results import SCHEMA_PATH, SCHEMA_VERSION, read_items, read_results, write_results
from chimdqa_eval.schema import InputError

SAMPLE_PREDICTIONS = release.SAMPLE_DIR / "predictions.jsonl"


def sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two runs of the same predictions under two model names: the same items.jsonl, different reports (the
    SIGKILL case of the issue: a checksum of items.jsonl alone cannot tell their reports apart)."""
    root = tmp_path_factory.mktemp("runs")
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    try:
        for name in ("a", "b"):
            assert cli.main(["evaluate", "--predictions", str(SAMPLE_PREDICTIONS), "--out", str(root / name),
                             "--resamples", "0", "--metrics", "factual", "rouge_l", "--model", f"model-{name}"]) == 0
    finally:
        mp.undo()
    return root


def document(folder) -> dict:
    return json.loads((folder / "results.json").read_text(encoding="utf-8"))


def rewrite(folder, doc: dict) -> None:
    (folder / "results.json").write_text(json.dumps(doc, ensure_ascii=False, indent=1), encoding="utf-8")


def copy_run(runs, tmp_path, name="a"):
    folder = tmp_path / f"copy-{name}"
    shutil.copytree(runs / name, folder)
    return folder


def leftovers(root) -> list[str]:
    """Temporary files and scratch folders (hidden names ending .tmp) anywhere under `root`."""
    return sorted(str(p.relative_to(root)) for p in root.rglob(".*") if p.name.endswith(".tmp"))


# ---- results.json covers every file of the run ------------------------------------------------------------

def test_results_list_every_file_of_the_run_with_its_checksum(runs):
    doc = document(runs / "a")
    assert doc["schema_version"] == SCHEMA_VERSION == "2.2"
    assert doc["files"] == {"items": "items.jsonl", "items_sha256": sha256(runs / "a" / "items.jsonl"),
                            "report": "report.html", "report_sha256": sha256(runs / "a" / "report.html")}
    assert read_results(runs / "a")["run_id"] == doc["run_id"]


def test_a_report_of_another_run_is_refused_naming_it(runs, tmp_path, capsys):
    torn = copy_run(runs, tmp_path)
    shutil.copy(runs / "b" / "report.html", torn / "report.html")  # run b killed after its report was written
    assert sha256(torn / "items.jsonl") == sha256(runs / "b" / "items.jsonl")  # items cannot tell the runs apart
    with pytest.raises(InputError, match=f"{torn / 'report.html'} does not match results.json"):
        read_results(torn)
    for command in (["compare", str(runs / "b"), str(torn)],
                    ["leaderboard", str(torn), "--out", str(tmp_path / "board")]):
        assert cli.main(command) == 2
        err = capsys.readouterr().err
        assert f"{torn / 'report.html'} does not match" in err and "Traceback" not in err, err


def test_a_run_file_that_results_json_does_not_list_is_refused(runs, tmp_path):
    folder = copy_run(runs, tmp_path)
    doc = document(folder)
    del doc["files"]["report"], doc["files"]["report_sha256"]
    rewrite(folder, doc)
    with pytest.raises(InputError, match=f"{folder / 'report.html'}: a file of a run, but not listed in "
                                         "results.json"):
        read_results(folder)
    (folder / "report.html").unlink()  # a run written without a report: nothing unlisted left
    assert read_results(folder)["run_id"] == doc["run_id"]


def test_a_listed_report_must_be_there(runs, tmp_path):
    folder = copy_run(runs, tmp_path)
    (folder / "report.html").unlink()
    with pytest.raises(InputError, match=f"{folder / 'report.html'}: report not found, listed in results.json"):
        read_results(folder)


def test_schema_2_0_results_are_read_without_a_report_checksum_but_2_1_must_have_one(runs, tmp_path):
    """Schema 2.0 never recorded the report's checksum: such a folder is still read (every reader uses only
    results.json and items.jsonl, both checked), its report.html unchecked. From 2.1 on a listed report has one."""
    folder = copy_run(runs, tmp_path)
    doc = document(folder)
    del doc["files"]["report_sha256"]
    rewrite(folder, dict(doc, schema_version="2.0"))
    shutil.copy(runs / "b" / "report.html", folder / "report.html")
    assert read_results(folder)["run_id"] == doc["run_id"]
    rewrite(folder, doc)
    with pytest.raises(InputError, match="files.report_sha256 missing"):
        read_results(folder)


def test_the_json_schema_describes_the_files(runs):
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    doc = document(runs / "a")
    validator.validate(doc)
    without = dict(doc, files={k: v for k, v in doc["files"].items() if k != "report_sha256"})
    with pytest.raises(jsonschema.ValidationError, match="report_sha256"):
        validator.validate(without)
    validator.validate(dict(without, schema_version="2.0"))  # what 2.0 wrote stays valid
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(dict(doc, files=dict(doc["files"], report_sha256="not a checksum")))


# ---- a run is swapped in whole ----------------------------------------------------------------------------

def prepared(runs, name) -> tuple[dict, list[dict]]:
    """(results document, items rows) of a fixture run, ready to be written again by write_results."""
    doc = {k: v for k, v in document(runs / name).items() if k != "files"}
    rows = [json.loads(line) for line in (runs / name / "items.jsonl").read_text(encoding="utf-8").splitlines()]
    return doc, rows


def page(doc: dict) -> str:
    return f"<p>{doc['model']['model']} {doc['run_id']}</p>"


def snapshot(folder) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_a_document_the_schema_refuses_is_not_written(runs, tmp_path):
    """write_results checks the document against results.schema.json before anything is written (what every
    reader checks): a run whose results.json no reader would take fails at once, naming the field, and leaves
    the previous run as it was."""
    out = tmp_path / "out"
    doc, rows = prepared(runs, "a")
    write_results(out, doc, rows, report=page)
    before = snapshot(out)
    bad, _ = prepared(runs, "b")
    bad["metrics"]["factual"]["F1"]["n"] = 2.5
    with pytest.raises(InputError, match=r"results.json: invalid results file: 1 problem\n  "
                                         r"metrics.factual.F1.n must be an integer or null, got float 2.5"):
        write_results(out, bad, rows, report=page)
    assert snapshot(out) == before and leftovers(tmp_path) == []


def test_rows_made_while_items_jsonl_is_written_are_written_as_a_list_would_be(runs, tmp_path):
    """items.jsonl is streamed (rows made as they are written, never the whole file in memory): the same bytes
    and checksum as from a list of the rows; a row that fails halfway through leaves the previous run whole and
    no temporary file."""
    doc, rows = prepared(runs, "a")
    write_results(tmp_path / "listed", dict(doc), rows, report=page)
    write_results(tmp_path / "streamed", dict(doc), (dict(row) for row in rows), report=page)
    listed, streamed = tmp_path / "listed" / "items.jsonl", tmp_path / "streamed" / "items.jsonl"
    assert streamed.read_bytes() == listed.read_bytes() == (runs / "a" / "items.jsonl").read_bytes()
    assert document(tmp_path / "streamed")["files"]["items_sha256"] == sha256(streamed)
    before = snapshot(tmp_path / "streamed")

    def failing_rows():
        yield from rows[:40]
        raise RuntimeError("scoring failed at row 41")

    with pytest.raises(RuntimeError, match="row 41"):
        write_results(tmp_path / "streamed", prepared(runs, "b")[0], failing_rows(), report=page)
    assert snapshot(tmp_path / "streamed") == before and leftovers(tmp_path) == []


def test_item_rows_are_made_on_demand_from_the_families_values():
    """ItemRows gives each question's labels, then each family's values for the questions it scored (arrays of
    floats written as numbers, NaN as null), read in order or by index; families out of the items' order are
    an error, not rows with values missing."""
    import numpy as np

    from chimdqa_eval.families import FamilyScores
    from chimdqa_eval.report.results import ItemRows
    items = [{"id": f"q{i}", "domain": "law", "category": "factual" if i % 2 else "open_ended",
              "prediction": f"answer {i}"} for i in range(5)]
    factual = FamilyScores("factual", ["q1", "q3"], {}, {"grade": ["CO", "NA"]}, "grades", {})
    open_ended = FamilyScores("open_ended", ["q0", "q2", "q4"], {},
                              {"rouge_l": np.array([12.5, np.nan, 1 / 3]), "perplexity": [None, 2.0, 3.5]},
                              "mean", {})
    rows = ItemRows(items, [factual, open_ended], ("domain", "prediction", "level"))
    assert len(rows) == 5 and list(rows) == [rows[i] for i in range(5)] == rows[:]
    assert rows[0] == {"id": "q0", "domain": "law", "prediction": "answer 0",
                       "open_ended": {"rouge_l": 12.5, "perplexity": None}}
    assert rows[3] == {"id": "q3", "domain": "law", "prediction": "answer 3", "factual": {"grade": "NA"}}
    assert json.dumps(rows[2]["open_ended"]) == '{"rouge_l": null, "perplexity": 2.0}'
    assert type(rows[4]["open_ended"]["rouge_l"]) is float and rows[4]["open_ended"]["rouge_l"] == 1 / 3
    shuffled = FamilyScores("factual", ["q3", "q1"], {}, {"grade": ["CO", "NA"]}, "grades", {})
    with pytest.raises(ValueError, match="factual: its items are not the run's items in their order"):
        list(ItemRows(items, [shuffled], ()))


@pytest.mark.parametrize("other_files", [False, True], ids=["run-only", "with-other-files"])
@pytest.mark.parametrize("failing_call", range(1, 8))
def test_a_rerun_that_fails_while_writing_leaves_the_previous_run(runs, tmp_path, monkeypatch, other_files,
                                                                    failing_call):
    """Every rename of the write fails in turn (a full disk, a quota): the previous run stays whole and readable,
    or the new one is there whole; nothing left behind."""
    out = tmp_path / "out"
    old_doc, old_rows = prepared(runs, "a")
    write_results(out, old_doc, old_rows, report=page)
    if other_files:  # as `chimdqa run` leaves its predictions in the folder it evaluates into
        (out / "predictions.jsonl").write_text('{"id": "x"}\n', encoding="utf-8")
        (out / "notes").mkdir()
        (out / "notes" / "todo.txt").write_text("mine", encoding="utf-8")
    before = snapshot(out)
    calls = []
    replace = os.replace

    def failing_replace(source, target, *args, **kwargs):
        calls.append((source, target))
        if len(calls) == failing_call:
            raise OSError(errno.ENOSPC, "No space left on device")
        return replace(source, target, *args, **kwargs)

    new_doc, new_rows = prepared(runs, "b")
    new_rows.append({"id": "pad-b", "note": "only in run b"})  # so that its items.jsonl differs too
    monkeypatch.setattr(os, "replace", failing_replace)
    try:
        write_results(out, new_doc, new_rows, report=page)
        failed = False
    except OSError as err:
        assert err.errno == errno.ENOSPC
        failed = True
    finally:
        monkeypatch.undo()
    moving_in = failed and os.fspath(calls[-1][1]).startswith(os.fspath(out) + os.sep)
    if other_files and moving_in:  # a shared folder gets the staged files moved in one by one, results.json last
        try:  # never a mix read as a run: the old run (nothing moved yet), or a folder refused as torn
            assert read_results(out)["model"]["model"] == "model-a"
        except InputError as err:
            assert "does not match results.json" in str(err)
    else:
        if failed:
            assert snapshot(out) == before
        assert read_results(out)["model"]["model"] == ("model-a" if failed else "model-b")
    if other_files:
        assert (out / "predictions.jsonl").read_text(encoding="utf-8") == '{"id": "x"}\n'
        assert (out / "notes" / "todo.txt").read_text(encoding="utf-8") == "mine"
    assert leftovers(tmp_path) == []


def test_a_run_swapped_into_a_folder_of_its_own_keeps_the_folder(runs, tmp_path):
    """The folder's permissions survive the swap, and --out given as a link still is one afterwards."""
    real = tmp_path / "real"
    link = tmp_path / "link"
    doc, rows = prepared(runs, "a")
    write_results(real, doc, rows, report=page)
    real.chmod(0o750)
    link.symlink_to(real, target_is_directory=True)
    write_results(link, *prepared(runs, "b"), report=page)
    assert link.is_symlink() and (real.stat().st_mode & 0o777) == 0o750
    assert read_results(real)["model"]["model"] == "model-b"
    assert sorted(p.name for p in real.iterdir()) == ["items.jsonl", "report.html", "results.json"]
    assert leftovers(tmp_path) == []


def test_a_scratch_folder_taken_by_another_writer_before_its_lock_is_replaced(runs, tmp_path, monkeypatch):
    """Another writer's clean-up may remove a fresh scratch folder in the instant before it is locked: the write
    takes another folder and lands whole, beside `out` (the one-step swap), not inside it."""
    from chimdqa_eval.report import results

    if results.fcntl is None:
        pytest.skip("no folder locks on this platform")
    real_open, taken = os.open, []

    def open_racing(path, flags, *args, **kwargs):
        if str(path).endswith(".tmp") and not taken:  # the first scratch folder vanishes before it is opened
            taken.append(path)
            shutil.rmtree(path)
        return real_open(path, flags, *args, **kwargs)

    out = tmp_path / "out"
    write_results(out, *prepared(runs, "a"), report=page)
    monkeypatch.setattr(results.os, "open", open_racing)
    write_results(out, *prepared(runs, "b"), report=page)
    assert taken and read_results(out)["model"]["model"] == "model-b" and leftovers(tmp_path) == []


WRITER = """
import json, sys, uuid
from chimdqa_eval.report.results import write_results

out, source = sys.argv[1], sys.argv[2]
runs = json.load(open(source, encoding="utf-8"))
print("ready", flush=True)
for i in range(500):  # killed by the test long before; bounded should the test die first
    doc, rows = runs[i % 2]
    write_results(out, dict(doc, run_id=uuid.uuid4().hex), rows,
                  report=lambda d: "<p>" + d["model"]["model"] + "</p>" + "x" * 3_000_000)
"""


@pytest.mark.slow  # a dozen writer processes killed at random moments, for each case: ~20 s each
@pytest.mark.parametrize("other_files", [False, True], ids=["run-only", "with-other-files"])
def test_a_killed_rerun_leaves_the_old_run_or_the_new_one(runs, tmp_path, other_files):
    """A writer re-writing runs A and B into one folder, killed with SIGKILL at random moments, 12 times: every
    time read_results reads run A or run B whole; the next write removes what the killed writers left."""
    out = tmp_path / "out"
    docs = []
    for name in ("a", "b"):
        doc, rows = prepared(runs, name)
        padding = [{"id": f"pad-{n}", "note": name * 400} for n in range(12_000)]  # ~5 MB: writes take a while
        docs.append([doc, rows + padding])
    source = tmp_path / "runs.json"
    source.write_text(json.dumps(docs), encoding="utf-8")
    write_results(out, docs[0][0], docs[0][1], report=page)
    if other_files:
        (out / "predictions.jsonl").write_text('{"id": "x"}\n', encoding="utf-8")
    rng = random.Random(22)
    seen = set()
    for _ in range(12):
        child = subprocess.Popen([sys.executable, "-c", WRITER, str(out), str(source)], stdout=subprocess.PIPE,
                                 text=True)
        try:
            assert child.stdout.readline().strip() == "ready"
            time.sleep(rng.uniform(0.0, 1.5))
        finally:
            child.kill()
            child.wait(timeout=60)
            child.stdout.close()
        try:
            results = read_results(out)
        except InputError as err:
            # only where other files share the folder: the run's files are moved in one by one
            assert other_files and "does not match results.json" in str(err), err
            continue
        assert results["model"]["model"] in ("model-a", "model-b")
        assert len(read_items(results)) == len(docs[0][1])
        assert (out / "report.html").read_text(encoding="utf-8").startswith(f"<p>{results['model']['model']}</p>") \
            or results["run_id"] == docs[0][0]["run_id"]
        seen.add(results["model"]["model"])
        if other_files:
            assert (out / "predictions.jsonl").read_text(encoding="utf-8") == '{"id": "x"}\n'
    assert seen == {"model-a", "model-b"} or other_files, seen  # the kills landed after 0, 1, 2... writes
    write_results(out, docs[1][0], docs[1][1], report=page)
    assert read_results(out)["model"]["model"] == "model-b"
    assert leftovers(tmp_path) == []


# ---- what a killed writer left is removed by the next write -----------------------------------------------

@pytest.mark.parametrize("other_files", [False, True], ids=["run-only", "with-other-files"])
def test_leftovers_of_an_older_writer_are_removed_by_the_next_write(runs, tmp_path, other_files):
    out = tmp_path / "out"
    doc, rows = prepared(runs, "a")
    write_results(out, doc, rows, report=page)
    if other_files:
        (out / "predictions.jsonl").write_text('{"id": "x"}\n', encoding="utf-8")
    old = time.time() - 2 * 3600
    stale = out / ".items.jsonl.0123abcd.tmp"  # what an older writer's temporary file looked like
    stale.write_text("half", encoding="utf-8")
    os.utime(stale, (old, old))
    write_results(out, *prepared(runs, "b"), report=page)
    assert leftovers(tmp_path) == []
    assert read_results(out)["model"]["model"] == "model-b"


CONCURRENT = """
import json, sys, uuid
from chimdqa_eval.report.results import write_results

out, source, which = sys.argv[1], sys.argv[2], int(sys.argv[3])
doc, rows = json.load(open(source, encoding="utf-8"))[which]
for _ in range(6):
    write_results(out, dict(doc, run_id=uuid.uuid4().hex), rows, report=lambda d: "<p>" + d["run_id"] + "</p>")
"""


def test_two_writers_into_one_folder_leave_one_whole_run(runs, tmp_path):
    """Neither writer takes away the other's scratch folder (it is not abandoned while its writer lives), and the
    folder ends up holding one of the two runs whole."""
    out = tmp_path / "out"
    docs = []
    for name in ("a", "b"):
        doc, rows = prepared(runs, name)
        docs.append([doc, rows + [{"id": f"pad-{n}", "note": name * 400} for n in range(3_000)]])
    source = tmp_path / "runs.json"
    source.write_text(json.dumps(docs), encoding="utf-8")
    children = [subprocess.Popen([sys.executable, "-c", CONCURRENT, str(out), str(source), str(i)],
                                 stderr=subprocess.PIPE, text=True) for i in (0, 1)]
    for child in children:
        _, err = child.communicate(timeout=300)
        assert child.returncode == 0, err
    assert read_results(out)["model"]["model"] in ("model-a", "model-b")
    assert leftovers(tmp_path) == []


def test_a_file_arriving_between_the_check_and_the_swap_is_kept(runs, tmp_path, monkeypatch):
    """Another program writes into --out in the instant between the check that it holds only a run and the
    one-step swap: its file (and folder) end up in the new run's folder, not in the old one that is removed."""
    from chimdqa_eval.report import results

    out = tmp_path / "out"
    write_results(out, *prepared(runs, "a"), report=page)
    real_check = results._holds_only_a_run

    def check_then_race(folder):
        held = real_check(folder)
        (folder / "notes.txt").write_text("mine", encoding="utf-8")
        (folder / "plots").mkdir()
        return held

    monkeypatch.setattr(results, "_holds_only_a_run", check_then_race)
    write_results(out, *prepared(runs, "b"), report=page)
    assert (out / "notes.txt").read_text(encoding="utf-8") == "mine" and (out / "plots").is_dir()
    assert read_results(out)["model"]["model"] == "model-b" and leftovers(tmp_path) == []
