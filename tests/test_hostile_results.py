"""Results files are input too: what a crafted results.json can put into the leaderboard's HTML, Markdown and
CSV, and into the file names `chimdqa export` writes, is contained; wrong types are clear errors."""
import csv
import io
import json
import re
import shutil

import pytest

from chimdqa_eval import cli, release
from chimdqa_eval.hub import exports
from chimdqa_eval.report.safe import check_results_values, csv_cell, html_text, md_cell
from chimdqa_eval.schema import InputError

ATTACK = '<img src=x onerror="alert(1)">'


# ---- the escaping rules, one by one ------------------------------------------------------------------------

def test_html_text_escapes_markup_and_quotes():
    assert html_text(ATTACK) == "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;"
    assert html_text("a & 'b'") == "a &amp; &#x27;b&#x27;"
    assert html_text(12.5) == "12.5"


@pytest.mark.parametrize("value, cell", [
    ("plain 模型-7B", "plain 模型-7B"),
    ("two\nlines\r\nand\u2028more", "two lines and more"),
    ("a|b", "a\\|b"),
    (ATTACK, '&lt;img src=x onerror="alert(1)"&gt;'),
    ("[click](javascript:alert(1))", "\\[click\\](javascript:alert(1))"),
    ("**bold** `code` _em_ \\", "\\*\\*bold\\*\\* \\`code\\` \\_em\\_ \\\\"),
    ("bell\x07 esc\x1b[2J", "bell esc\\[2J"),
    (None, ""),
])
def test_md_cell(value, cell):
    assert md_cell(value) == cell


@pytest.mark.parametrize("value, cell", [
    ('=HYPERLINK("http://x","y")', '\'=HYPERLINK("http://x","y")'),
    ("+1+2", "'+1+2"), ("-2+3", "'-2+3"), ("@SUM(A1)", "'@SUM(A1)"), ("\t=1", "' =1"), ("\r=1", "' =1"),
    ("model\nname", "model name"),
    ("model-7b", "model-7b"),
    # a character dropped or a line break turned into a space must not uncover a formula
    ("\x01=HYPERLINK(\"http://x\")", "'=HYPERLINK(\"http://x\")"), ("\x00+1", "'+1"), ("\n=1", "' =1"),
    (-1.5, -1.5), (3, 3),
])
def test_csv_cell(value, cell):
    assert csv_cell(value) == cell


# ---- the results document ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("run")
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    try:
        assert cli.main(["evaluate", "--predictions", str(release.SAMPLE_DIR / "predictions.jsonl"),
                         "--out", str(root / "a"), "--resamples", "0", "--metrics", "factual", "rouge_l"]) == 0
    finally:
        mp.undo()
    return root / "a"


def crafted(run_dir, tmp_path, name="crafted", **changes) -> dict:
    """A copy of the run folder whose results.json has `changes` applied (dotted paths)."""
    folder = tmp_path / name
    shutil.copytree(run_dir, folder)
    doc = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    for dotted, value in changes.items():
        *parents, last = dotted.split(".")
        target = doc
        for key in parents:
            target = target[key]
        target[last] = value
    (folder / "results.json").write_text(json.dumps(doc), encoding="utf-8")  # ASCII: escapes stay escapes
    return folder


def test_a_real_results_document_passes(run_dir):
    doc = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    assert check_results_values(doc, "r.json") is doc


@pytest.mark.parametrize("dotted, value, problem", [
    ("metrics.factual.F1.value", "61.2", "metrics.factual.F1.value must be a finite number or null, got str '61.2'"),
    ("metrics.factual.F1.ci95", [0, "x"], "metrics.factual.F1.ci95[1] must be a finite number or null, got str 'x'"),
    ("metrics.factual.F1.n", 2.5, "metrics.factual.F1.n must be an integer or null, got float 2.5"),
    ("submission.coverage", 7, "submission.coverage must be between 0 and 1, got 7"),
    ("metrics.factual.F1.by.domain.law.value", [1], "metrics.factual.F1.by.domain.law.value must be a finite"),
    ("model.model", 5, "model.model must be a non-empty string, got int 5"),
    ("model.model", "M" * 300, "model.model is 300 characters long; at most 200 are allowed"),
    ("dataset.revision", None, "dataset.revision must be a non-empty string, got NoneType None"),
    ("model.rag", "yes", "model.rag must be true or false, got str 'yes'"),
    ("metrics.evil", {}, "metrics: unknown family 'evil'; expected one of factual, open_ended, rag"),
    ("dataset", "ChiMDQA", "dataset must be an object, got str 'ChiMDQA'"),
    ("model.url", "javascript:alert(1)", "model.url must be an http:// or https:// address without spaces"),
    ("model.notes", "a\ud800", "model.notes (character 2: '\\ud800') holds a lone UTF-16 surrogate"),
    # .eval_results carries the date to the Hub: an ISO date, as the submission's metadata must have
    ("model.date", "June 2025", "model.date must be an ISO date such as 2025-01-31, got 'June 2025'"),
    # what JSON Schema cannot state, checked beside it: a real calendar date, printable URLs, finite numbers
    ("model.date", "2025-02-30", "model.date must be an ISO date such as 2025-01-31, got '2025-02-30'"),
    ("model.url", "https://x.test/\u202eevil", "model.url must be an http:// or https:// address without spaces"),
    ("metrics.factual.F1.value", float("nan"), "metrics.factual.F1.value must be a finite number, got float nan"),
    ("skipped", [{"family": "factual", "metric": None, "reason": ""}],
     "skipped[0].reason must be a non-empty string, got str ''"),
    ("metrics.factual.F1.by.domain", {"x" * 5: []}, "metrics.factual.F1.by.domain.xxxxx must be an object, got list"),
    ("run_id", "1", "run_id must be 32 hex digits, got '1'"),
])
def test_wrong_types_are_named_by_file_and_field(run_dir, tmp_path, capsys, dotted, value, problem):
    folder = crafted(run_dir, tmp_path, **{dotted: value})
    if "\ud800" in str(value):  # json.dumps wrote the escape; the file itself is valid UTF-8
        assert "\\ud800" in (folder / "results.json").read_text(encoding="utf-8")
    assert cli.main(["leaderboard", str(folder), "--out", str(tmp_path / "board")]) == 2
    err = capsys.readouterr().err
    assert f"{folder / 'results.json'}: invalid results file" in err and problem in err, err
    assert "Traceback" not in err and not (tmp_path / "board" / "index.html").exists()


def test_the_papers_rows_pass_the_page_check_and_a_bad_one_would_not():
    """The papers' rows are no results files (no run, no counts): the page writers check them against the part
    of results.schema.json the pages show, as every document they are given."""
    from chimdqa_eval.report.leaderboard import paper_rows

    rows = paper_rows(("ChiMDQA", "Chinese SimpleQA"))
    assert len(rows) > 10 and all(check_results_values(row, "paper") is row for row in rows)
    rows[0]["metrics"]["factual"]["F1"]["value"] = "70.5"
    with pytest.raises(InputError, match="paper: invalid results file: 1 problem\n  metrics.factual.F1.value must "
                                         "be a finite number or null, got str '70.5'"):
        check_results_values(rows[0], "paper")


# ---- the leaderboard's outputs -----------------------------------------------------------------------------

def test_leaderboard_outputs_contain_hostile_names(run_dir, tmp_path):
    folder = crafted(run_dir, tmp_path, **{"dataset.revision": ATTACK, "model.model": '=HYPERLINK("http://x")|\n# h'})
    other = crafted(run_dir, tmp_path, "other", **{"model.model": "<script>alert(2)</script>", "run_id": "0" * 32})
    assert cli.main(["leaderboard", str(folder), str(other), "--out", str(tmp_path / "board")]) == 0
    page = (tmp_path / "board" / "index.html").read_text(encoding="utf-8")
    assert "<img src=x" not in page and "<script>alert" not in page
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in page  # the revision note, escaped
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in page
    rows = list(csv.DictReader(io.StringIO((tmp_path / "board" / "leaderboard.csv").read_text(encoding="utf-8"))))
    assert {r["model"] for r in rows} == {"'=HYPERLINK(\"http://x\")| # h", "<script>alert(2)</script>"}
    markdown = (tmp_path / "board" / "leaderboard.md").read_text(encoding="utf-8").splitlines()
    # two groups (the crafted revision is another dataset revision): a heading, then header, rule and one row
    headings = [line for line in markdown if line.startswith("### ")]
    table = [line for line in markdown if line.startswith("|")]
    assert len(headings) == 2 and len(table) == 2 * 3 and len(markdown) == 2 * 5 + 1  # blank lines around
    cells = [len(re.findall(r"(?<!\\)\|", line)) for line in table]
    assert cells == [cells[0]] * 6  # no cell was split or added
    assert any("=HYPERLINK(\"http://x\")\\| # h" in line for line in table)
    assert "&lt;script&gt;" in "\n".join(markdown) and "<script>" not in "\n".join(markdown)
    assert "<img" not in "\n".join(headings) and "&lt;img src=x" in "\n".join(headings)


def test_a_formula_behind_a_control_character_is_neutralized_in_the_csv(run_dir, tmp_path):
    folder = crafted(run_dir, tmp_path, **{"model.model": '\x01=HYPERLINK("http://x","y")'})
    assert cli.main(["leaderboard", str(folder), "--out", str(tmp_path / "board")]) == 0
    rows = list(csv.DictReader(io.StringIO((tmp_path / "board" / "leaderboard.csv").read_text(encoding="utf-8"))))
    assert [r["model"] for r in rows] == ['\'=HYPERLINK("http://x","y")']


@pytest.mark.parametrize("dotted, value, problem", [
    ("reported", "paper", "'reported' marks the papers' own rows"),
    ("dataset.revision", "paper", "dataset.revision 'paper' is the one the papers' rows carry"),
])
def test_a_results_file_cannot_pass_for_the_papers_rows(run_dir, tmp_path, capsys, dotted, value, problem):
    """Paper rows are never ranked and are labelled "reported in the paper": a measured run must not be able to
    claim that label (or hide from the ranking) by what its results.json says."""
    folder = crafted(run_dir, tmp_path, **{dotted: value, "run_id": "1" * 32})
    assert cli.main(["leaderboard", str(run_dir), str(folder), "--out", str(tmp_path / "board")]) == 2
    err = capsys.readouterr().err
    assert f"{folder / 'results.json'}: " in err and problem in err, err
    assert "Traceback" not in err and not (tmp_path / "board" / "index.html").exists()


@pytest.mark.parametrize("dotted, value, problem", [
    ("files", ["items.jsonl"], "files must be an object"),
    ("dataset", "ChiMDQA", "dataset must be an object, got str 'ChiMDQA'"),
    ("metrics.factual.F1.value", "61.2", "metrics.factual.F1.value must be a finite number or null"),
])
def test_compare_checks_the_results_it_reads(run_dir, tmp_path, capsys, dotted, value, problem):
    folder = crafted(run_dir, tmp_path, **{dotted: value})
    assert cli.main(["compare", str(run_dir), str(folder)]) == 2
    err = capsys.readouterr().err
    assert f"{folder / 'results.json'}" in err and problem in err and "Traceback" not in err, err


@pytest.mark.parametrize("line", ['[1, 2]', '{"factual": {"grade": "CO"}}'])
def test_a_crafted_items_file_with_a_matching_checksum_is_still_checked(run_dir, tmp_path, capsys, line):
    import hashlib

    folder = crafted(run_dir, tmp_path)
    items = (folder / "items.jsonl").read_text(encoding="utf-8") + line + "\n"
    (folder / "items.jsonl").write_text(items, encoding="utf-8")
    doc = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    doc["files"]["items_sha256"] = hashlib.sha256(items.encode("utf-8")).hexdigest()
    doc["run_id"] = "1" * 32
    (folder / "results.json").write_text(json.dumps(doc), encoding="utf-8")
    assert cli.main(["compare", str(run_dir), str(folder)]) == 2
    err = capsys.readouterr().err
    n = items.count("\n")
    assert f"{folder / 'items.jsonl'} line {n}: not an object with an id" in err and "Traceback" not in err, err


# ---- file names from results.json --------------------------------------------------------------------------

@pytest.mark.parametrize("dotted, value", [("dataset.config", "../../../escaped"), ("dataset.split", "../../x"),
                                           ("dataset.config", "all/../.."), ("dataset.name", "../x")])
def test_export_file_names_cannot_leave_the_out_folder(run_dir, tmp_path, capsys, dotted, value):
    folder = crafted(run_dir, tmp_path, **{dotted: value})
    out = tmp_path / "repo" / "model"
    before = {p for p in tmp_path.rglob("*")}
    assert cli.main(["export", "--format", "eval-results", str(folder), "--dataset-id", "o/d",
                     "--out", str(out)]) == 2
    err = capsys.readouterr().err
    field = dotted.split(".")[1]
    if field == "name":  # results.schema.json names the two benchmarks: refused on reading, before export
        assert f"{folder / 'results.json'}: invalid results file" in err, err
        assert f"dataset.name must be one of ChiMDQA, Chinese SimpleQA, got str {value!r}" in err, err
    else:
        assert f"{folder / 'results.json'}: dataset.{field} {value!r} is not one this toolkit writes" in err
    assert {p for p in tmp_path.rglob("*")} == before  # nothing written anywhere


@pytest.mark.parametrize("fmt", ["model-index", "eval-results"])
def test_export_leaves_out_a_metric_without_a_value_and_says_so(run_dir, tmp_path, capsys, fmt):
    """The Hub reads a metric's value as a number: null is not one. Such a metric is left out, by name."""
    import yaml

    folder = crafted(run_dir, tmp_path, **{"metrics.factual.CGA.value": None})
    assert cli.main(["export", "--format", fmt, str(folder), "--dataset-id", "o/d"]) == 0
    captured = capsys.readouterr()
    data = yaml.safe_load(captured.out)
    entries = data["model-index"][0]["results"][0]["metrics"] if fmt == "model-index" else data
    values = [e["value"] for e in entries]
    assert values and all(isinstance(v, (int, float)) for v in values)
    assert len(values) == sum(len(m) for m in json.loads((folder / "results.json").read_text())["metrics"].values()) - 1
    assert "factual CGA has no value (null) and is left out" in captured.err


def test_export_names_stay_the_known_ones(run_dir):
    doc = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    assert exports.eval_results_filename(doc) == "chimdqa.yaml"
    doc["dataset"].update(config="finance", split="factual")
    assert exports.eval_results_filename(doc) == "chimdqa_finance_factual.yaml"
    doc["dataset"]["config"] = ["all"]
    with pytest.raises(InputError, match=r"dataset.config \['all'\] is not one this toolkit writes"):
        exports.eval_results_filename(doc)


# ---- results.json and items.jsonl go through the one JSON reader with limits ------------------------------

PAYLOADS = {  # what a hostile results folder can hold where a value belongs
    "deep": (b"[" * 1000 + b"]" * 1000, "JSON nested more than"),
    "huge-integer": (b"9" * 5000, "an integer of 5000 digits"),
    "not-utf8": (b'"caf\xe9 \xff"', "not UTF-8 text"),
}


def with_payload(run_dir, tmp_path, payload: bytes):
    """A copy of the run folder whose results.json holds `payload` as model.notes; (folder, line of the payload)."""
    folder = tmp_path / "payload"
    shutil.copytree(run_dir, folder)
    doc = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    doc["model"]["notes"] = "@@PAYLOAD@@"
    text = json.dumps(doc, ensure_ascii=False, indent=1).encode("utf-8")
    (folder / "results.json").write_bytes(text.replace(b'"@@PAYLOAD@@"', payload))
    return folder, text[:text.index(b'"@@PAYLOAD@@"')].count(b"\n") + 1


@pytest.mark.parametrize("command", ["compare", "leaderboard"])
@pytest.mark.parametrize("kind", PAYLOADS)
def test_a_hostile_results_json_is_an_input_error(run_dir, tmp_path, capsys, kind, command):
    payload, problem = PAYLOADS[kind]
    folder, line = with_payload(run_dir, tmp_path, payload)
    argv = (["compare", str(run_dir), str(folder)] if command == "compare"
            else ["leaderboard", str(folder), "--out", str(tmp_path / "board")])
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert f"{folder / 'results.json'}: " in err and problem in err and "Traceback" not in err, err
    if kind != "deep":  # a nesting depth is a property of the whole document, not of one line
        assert f"line {line}" in err, err
    assert not (tmp_path / "board").exists()


@pytest.mark.parametrize("kind", PAYLOADS)
def test_a_hostile_items_line_is_an_input_error_naming_the_line(run_dir, tmp_path, capsys, kind):
    import hashlib

    payload, problem = PAYLOADS[kind]
    folder = tmp_path / "items"
    shutil.copytree(run_dir, folder)
    items = (folder / "items.jsonl").read_bytes() + b'{"id": "x", "v": ' + payload + b"}\n"
    (folder / "items.jsonl").write_bytes(items)
    doc = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    doc["files"]["items_sha256"] = hashlib.sha256(items).hexdigest()  # forged to match
    (folder / "results.json").write_text(json.dumps(doc), encoding="utf-8")
    assert cli.main(["compare", str(run_dir), str(folder)]) == 2
    err = capsys.readouterr().err
    line = len(items.splitlines())
    assert f"{folder / 'items.jsonl'} line {line}: " in err and problem in err, err
    assert "Traceback" not in err
