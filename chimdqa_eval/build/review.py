"""The human review round trip: `chimdqa build review-export` and `chimdqa build review-import`.

review-export writes, for each reviewer, the pairs the screen kept as

    WORK/review/<reviewer>.csv                 UTF-8 (with BOM, for spreadsheet programs); fill in the columns
                                               verdict (accept | edit | reject), edited_question, edited_answer, note
    WORK/review/<reviewer>.labelstudio.json    Label Studio tasks ([{"data": {...}}]) for the labeling config
    WORK/review/labelstudio-config.xml         verdict (Choices), edited_question, edited_answer, note (TextArea)

Each row / task carries the evidence pages' text, so a reviewer needs no PDF viewer. A CSV cell whose text a
spreadsheet would run as a formula (it starts with = + - @, a tab or a carriage return: generated questions can)
starts with an apostrophe, as on the leaderboard's CSV; the import reads it back as the text without it.
Verdicts may also be written 通过 / 修改 / 拒绝; a blank verdict means not reviewed yet. `edit` needs an edited
question or answer (a blank edited field keeps the original).

review-import reads filled CSV sheets and Label Studio exports: JSON (a list of tasks whose `annotations[].result`
hold the verdict choice and the text areas; the last annotation that was not cancelled counts, and a task
annotated by two people is refused: one project per reviewer) or JSON-MIN (one
flat object per task). The reviewer
is the sheet's `reviewer` column / the task's data.reviewer. Verdicts are merged into WORK/review/verdicts.jsonl
(a file imported again replaces that reviewer's verdicts). Pairs the reviewers disagree on (different verdicts,
or different edits) go to WORK/review/arbitration.csv / arbitration.labelstudio.json for a third reviewer
(`arbiter`), whose imported verdicts decide them; the manifest's review record lists the pairs the reviewers
disagree on (`disputed`) and those of them the arbiter has not decided yet (`awaiting_arbiter`, counted as
`disagreement`). Cohen's kappa over the verdicts is reported per reviewer pair.
Bad files stop the import before anything is written, with one InputError listing every bad row of every file
(file, row and id) and every file that cannot be read as a sheet or an export at all.

A verdict counts only for the text it was given on: each sheet row / task carries the pair's `text_version` (a
digest of its question and answer), each stored verdict the same digest. When a pair is generated again with other
words under the same id, its earlier verdicts stop counting (the pair is pending again) and a sheet of the old
text is refused (by its text_version, or by its question and answer when it has no such column).
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
from itertools import combinations
from pathlib import Path

from chimdqa_eval import jsonio
from chimdqa_eval.agreement import agreement
from chimdqa_eval.build import work as W
from chimdqa_eval.build.generate import context_text
from chimdqa_eval.build.screen import screened_pairs
from chimdqa_eval.release import read_jsonl
from chimdqa_eval.report.safe import csv_cell, one_line
from chimdqa_eval.schema import InputError, raise_problems
from chimdqa_eval.signature import make_signature

VERDICTS = ("accept", "edit", "reject")
VERDICT_ALIASES = {"accept": "accept", "通过": "accept", "edit": "edit", "修改": "edit", "reject": "reject",
                   "拒绝": "reject"}
ARBITER = "arbiter"
SHEET_COLUMNS = ("id", "reviewer", "domain", "question_type", "level", "doc_id", "evidence_pages", "evidence",
                 "question", "answer", "verdict", "edited_question", "edited_answer", "note", "text_version")
ANSWER_COLUMNS = ("verdict", "edited_question", "edited_answer", "note")
LABEL_STUDIO_CONFIG = """<View>
  <Header value="$domain / $question_type / $level / $doc_id (pages $evidence_pages)"/>
  <Text name="evidence" value="$evidence"/>
  <Header value="Question"/>
  <Text name="question" value="$question"/>
  <Header value="Answer"/>
  <Text name="answer" value="$answer"/>
  <Choices name="verdict" toName="question" choice="single" required="true">
    <Choice value="accept"/>
    <Choice value="edit"/>
    <Choice value="reject"/>
  </Choices>
  <TextArea name="edited_question" toName="question" maxSubmissions="1" placeholder="edited question (edit only)"/>
  <TextArea name="edited_answer" toName="answer" maxSubmissions="1" placeholder="edited answer (edit only)"/>
  <TextArea name="note" toName="question" maxSubmissions="1" placeholder="note"/>
</View>
"""


# ---- pure parts ------------------------------------------------------------------------------------------------

def _same_text(x: str, y: str) -> bool:
    return " ".join(x.split()) == " ".join(y.split())


def pair_digest(pair: dict) -> str:
    """Short sha256 of a pair's question and answer: the text a verdict was given on."""
    return hashlib.sha256(f"{pair['question']}\x1f{pair['answer']}".encode("utf-8")).hexdigest()[:16]


def split_stale(verdicts: dict, digests: dict) -> tuple[dict, list[tuple[str, str]]]:
    """(id -> {reviewer: verdict} of the verdicts given on each pair's current text, [(id, reviewer)] of those
    given on an earlier text: the pair was generated again with other words since; they no longer count)."""
    live, stale = {}, []
    for pair_id, digest in digests.items():
        live[pair_id] = {}
        for reviewer, record in verdicts.get(pair_id, {}).items():
            if record.get("pair", digest) == digest:
                live[pair_id][reviewer] = record
            else:
                stale.append((pair_id, reviewer))
    return live, stale


def decide(verdicts: dict, reviewers) -> dict:
    """The decision on one pair from {reviewer: verdict record}: the arbiter's verdict when there is one, else
    the reviewers' common verdict; 'pending' while a reviewer has none, 'disagreement' when they differ."""
    if ARBITER in verdicts and verdicts[ARBITER]["verdict"]:
        return {**verdicts[ARBITER], "decided_by": ARBITER}
    given = [verdicts.get(r) for r in reviewers]
    if any(v is None or not v["verdict"] for v in given):
        return {"verdict": "pending"}
    first = given[0]
    same = all(v["verdict"] == first["verdict"] for v in given)
    if same and first["verdict"] == "edit":
        same = all(_same_text(v["edited_question"], first["edited_question"])
                   and _same_text(v["edited_answer"], first["edited_answer"]) for v in given)
    return {**first, "decided_by": "reviewers"} if same else {"verdict": "disagreement"}


def kappas(verdicts_by_id: dict, reviewers) -> list[dict]:
    """For each pair of reviewers, over the pairs both gave a verdict on: n, agreement (%), Cohen's kappa
    (None when undefined), the labels and the confusion matrix (chimdqa_eval.agreement)."""
    out = []
    for r1, r2 in combinations(reviewers, 2):
        both = [(v[r1]["verdict"], v[r2]["verdict"]) for v in verdicts_by_id.values()
                if v.get(r1, {}).get("verdict") and v.get(r2, {}).get("verdict")]
        stats = agreement([x for x, _ in both], [y for _, y in both], VERDICTS)
        if stats["kappa"] is not None:
            stats["kappa"] = round(stats["kappa"], 4)
        out.append({"reviewers": [r1, r2], **stats})
    return out


# ---- reading verdict files --------------------------------------------------------------------------------------

def _verdict_record(raw: dict, location: str) -> dict:
    for column in ANSWER_COLUMNS:
        if raw.get(column) is not None and not isinstance(raw[column], str):
            raise InputError(f"{location}: {column} must be text, got {type(raw[column]).__name__}")
    verdict = (raw.get("verdict") or "").strip()
    canonical = VERDICT_ALIASES.get(verdict.lower(), None) if verdict else ""
    if canonical is None:
        raise InputError(f"{location}: unknown verdict {verdict!r}; expected {', '.join(VERDICTS)} "
                         "(or 通过 / 修改 / 拒绝), or blank when not reviewed yet")
    record = {"verdict": canonical, **{k: (raw.get(k) or "").strip() for k in ANSWER_COLUMNS[1:]}}
    if canonical == "edit" and not (record["edited_question"] or record["edited_answer"]):
        raise InputError(f"{location}: verdict edit without an edited_question or edited_answer")
    if canonical != "edit" and (record["edited_question"] or record["edited_answer"]):
        raise InputError(f"{location}: edited text given with verdict {canonical or 'blank'}; use edit")
    return record


def _shown(row: dict) -> dict:
    """What a sheet or task says about the text it showed the reviewer: text_version, question, answer (those it
    has)."""
    return {k: row[k].strip() for k in ("text_version", "question", "answer") if isinstance(row.get(k), str)}


def text_version(pair: dict) -> str:
    """The sheets' text_version of a pair (a letter first, so spreadsheet programs keep it as text)."""
    return "v" + pair_digest(pair)


def _csv_rows(path: Path) -> tuple[list[str], list[dict]]:
    """(columns, rows) of a CSV file, its cells as the text they stand for (_sheet_text); InputError naming the
    file, or the row where the csv module gives up (a cell over its 128 KB, say)."""
    data = jsonio.read_capped(path, what="review sheet", max_bytes=jsonio.MAX_FILE_BYTES)
    try:
        text = data.decode("utf-8-sig")  # no newline translation: a carriage return in a cell stays one
    except UnicodeDecodeError as err:
        raise InputError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    columns, rows = None, []
    try:
        columns = reader.fieldnames or []
        for row in reader:
            rows.append(row)
    except csv.Error as err:
        number = 1 if columns is None else len(rows) + 2  # as a spreadsheet numbers rows: the header is row 1
        raise InputError(f"{path} row {number}: not readable as CSV ({err})") from None
    return columns, [{k: _sheet_text(v) if isinstance(v, str) else v for k, v in row.items()} for row in rows]


def _row(location: str, parse) -> tuple[str, dict | None, str | None]:
    """(location, the record parse() returns, None), or (location, None, the problem) when the row is bad."""
    try:
        return location, parse(), None
    except InputError as err:
        return location, None, str(err)


def _csv_verdict(row: dict, pair_id: str, location: str) -> dict:
    if None in row:
        raise InputError(f"{location}: more cells than columns")
    if not pair_id:
        raise InputError(f"{location}: empty id")
    return {"id": pair_id, "reviewer": (row["reviewer"] or "").strip(), **_verdict_record(row, location),
            "shown": _shown(row)}


def read_csv_verdicts(path: Path) -> list[tuple[str, dict | None, str | None]]:
    """(location, {id, reviewer, verdict, edited_question, edited_answer, note, shown}, None) per row of a filled
    sheet, or (location, None, problem) for a bad row; InputError when the file is not a sheet at all."""
    columns, rows = _csv_rows(path)
    missing = [c for c in ("id", "reviewer", *ANSWER_COLUMNS) if c not in columns]
    if missing:
        raise InputError(f"{path}: not a review sheet; missing column(s) {', '.join(missing)}")
    out = []
    for number, row in enumerate(rows, start=2):  # row 1 is the header, as a spreadsheet numbers them
        pair_id = (row.get("id") or "").strip()
        location = f"{path} row {number}" + (f" (id {pair_id})" if pair_id else "")
        out.append(_row(location, lambda: _csv_verdict(row, pair_id, location)))
    return out


def _annotation_values(annotation: dict, location: str) -> dict:
    values = {}
    for item in annotation.get("result") or []:
        if not isinstance(item, dict):
            raise InputError(f"{location}: an annotation result is not an object")
        name, value = item.get("from_name"), item.get("value") or {}
        if name == "verdict":
            choices = value.get("choices") or []
            if len(choices) != 1:
                raise InputError(f"{location}: verdict must be one choice, got {choices!r}")
            values["verdict"] = choices[0]
        elif name in ANSWER_COLUMNS[1:]:
            text = value.get("text") or []
            values[name] = "\n".join(text) if isinstance(text, list) else str(text)
    return values


def _task_verdict(task: dict, minimal: bool, data: dict, pair_id: str, location: str) -> dict:
    if not pair_id:
        raise InputError(f"{location}: pair_id is missing")
    if minimal:
        values = {k: data.get(k) for k in ANSWER_COLUMNS}
    else:
        live = [a for a in task.get("annotations") or [] if isinstance(a, dict) and not a.get("was_cancelled")]
        annotators = {json.dumps(a.get("completed_by"), sort_keys=True) for a in live}
        if len(annotators) > 1:  # one project for all reviewers: the task's reviewer cannot say whose is whose
            raise InputError(f"{location}: annotations by {len(annotators)} different annotators on a task of "
                             f"{data.get('reviewer')}; give each reviewer a Label Studio project of their own "
                             "(their own .labelstudio.json) and import each project's export")
        values = _annotation_values(live[-1], location) if live else {}
    return {"id": pair_id, "reviewer": str(data.get("reviewer") or "").strip(), **_verdict_record(values, location),
            "shown": _shown(data)}


def read_label_studio_verdicts(path: Path) -> list[tuple[str, dict | None, str | None]]:
    """The same rows from a Label Studio export: JSON (tasks with `data` and `annotations`; a task without a
    live annotation is pending) or JSON-MIN (one flat object per task: pair_id, reviewer, verdict, ...)."""
    tasks = jsonio.read_json(path, what="Label Studio JSON export")  # a byte order mark (Notepad's) is fine
    if not isinstance(tasks, list):
        raise InputError(f"{path}: a Label Studio export is a JSON list of tasks, got {type(tasks).__name__}")
    out = []
    for number, task in enumerate(tasks, start=1):
        location = f"{path} task {number}"
        if not isinstance(task, dict):
            out.append((location, None, f"{location}: not an object"))
            continue
        minimal = "data" not in task
        data = task if minimal else task["data"]
        if not isinstance(data, dict):
            out.append((location, None, f"{location}: data is not an object"))
            continue
        pair_id = str(data.get("pair_id") or "").strip()
        location += f" (id {pair_id})" if pair_id else ""
        out.append(_row(location, lambda: _task_verdict(task, minimal, data, pair_id, location)))
    return out


def verdict_rows(path) -> list[tuple[str, dict | None, str | None]]:
    """(location, record, None) or (location, None, problem) per row of a review sheet or Label Studio export;
    InputError when the file cannot be read as one at all."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: file not found")
    if path.suffix.lower() == ".csv":
        return read_csv_verdicts(path)
    if path.suffix.lower() == ".json":
        return read_label_studio_verdicts(path)
    raise InputError(f"{path}: expected a .csv review sheet or a .json Label Studio export")


def read_verdict_file(path) -> list[tuple[str, dict]]:
    """(location, record) per row; InputError listing every bad row."""
    rows = verdict_rows(path)
    problems = [problem for _, _, problem in rows if problem]
    if problems:
        raise_problems(problems, f"{path}: not a usable review file")
    return [(location, record) for location, record, _ in rows]


# ---- writing sheets -----------------------------------------------------------------------------------------------

def _sheet_cell(value):
    """`value` for a sheet's cell: text that a spreadsheet would run as a formula (csv_cell, the leaderboard's
    rule: starting with = + - @, a tab or a carriage return) gets its apostrophe; unlike a board's cell it keeps
    its line breaks, which evidence and answers need and which the import must read back as they were."""
    if isinstance(value, str) and csv_cell(value) != one_line(value):  # csv_cell put an apostrophe before it
        return "'" + value
    return value


def _sheet_text(cell: str) -> str:
    """A sheet's cell as the text it stands for: _sheet_cell's apostrophe taken off again (a spreadsheet program
    either keeps it in the cell or hides it and saves the text without it)."""
    return cell[1:] if cell.startswith("'") and _sheet_cell(cell[1:]) == cell else cell


def _csv_text(rows, columns) -> str:
    out = io.StringIO(newline="")
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\r\n")
    writer.writeheader()
    writer.writerows({k: _sheet_cell(v) for k, v in row.items()} for row in rows)
    return "\ufeff" + out.getvalue()


def _sheet_rows(pairs, pages, reviewer: str) -> list[dict]:
    return [{"id": p["id"], "reviewer": reviewer, "domain": p["domain"], "question_type": p["question_type"],
             "level": p["level"], "doc_id": p["doc_id"], "evidence_pages": ", ".join(map(str, p["evidence_pages"])),
             "evidence": context_text(pages[p["doc_id"]], p["evidence_pages"]), "question": p["question"],
             "answer": p["answer"], **{c: "" for c in ANSWER_COLUMNS}, "text_version": text_version(p)}
            for p in pairs]


def _tasks(rows) -> list[dict]:
    return [{"data": {"pair_id" if k == "id" else k: v for k, v in row.items() if k not in ANSWER_COLUMNS}}
            for row in rows]


def write_sheet(folder: Path, name: str, rows, columns, force: bool) -> list[Path]:
    """<name>.csv and <name>.labelstudio.json; an existing sheet is kept (it may hold verdicts) unless force."""
    written = []
    for path, text in ((folder / f"{name}.csv", _csv_text(rows, columns)),
                       (folder / f"{name}.labelstudio.json", json.dumps(_tasks(rows), ensure_ascii=False, indent=1))):
        if path.exists() and not force:
            continue
        W.write_text(path, text)
        written.append(path)
    return written


def review_export(work, reviewers, force: bool = False) -> dict:
    work = W.work_dir(work)
    W.check_fresh(work, ["screen"])
    pairs = [p for p in screened_pairs(work) if p["screen"]["status"] == "kept"]
    if not pairs:
        raise InputError(f"{work / W.SCREENED}: no kept pairs to review")
    pages = W.pages_by_document(work)
    folder = work / W.REVIEW_DIR
    W.write_text(folder / "labelstudio-config.xml", LABEL_STUDIO_CONFIG)
    written = []
    for reviewer in reviewers:
        written += write_sheet(folder, reviewer, _sheet_rows(pairs, pages, reviewer), SHEET_COLUMNS, force)
    record = W.record_stage(work, "review-export", {"reviewers": list(reviewers)},
                            {"pairs": len(pairs), "files_written": len(written)}, inputs=(W.SCREENED,),
                            ids=[p["id"] for p in pairs])
    record["written"] = written
    return record


# ---- importing verdicts ---------------------------------------------------------------------------------------------

def _record_problem(location: str, record: dict, pairs: dict, allowed, seen: dict) -> str | None:
    """What is wrong with one verdict record, or None. pairs: id -> the screened pair, for the ids of the review
    set; seen: (id, reviewer) -> where a verdict was first given, filled as records pass."""
    if record["id"] not in pairs:
        return f"{location}: id {record['id']} is not in the review set (see `build review-export`)"
    shown, pair = record["shown"], pairs[record["id"]]
    # the text_version when the sheet has one (a spreadsheet program may reformat an answer such as 3/4), else
    # the question and answer themselves
    if shown.get("text_version"):
        changed = ([f"text_version {shown['text_version']} is not the current {text_version(pair)}"]
                   if shown["text_version"] != text_version(pair) else [])
    else:
        changed = [f"its {field} differs from the current one" for field in ("question", "answer")
                   if field in shown and not _same_text(shown[field], pair[field])]
    if changed:
        return (f"{location}: exported for an earlier text of this pair ({changed[0]}; it was generated again "
                "since); export the sheets again (`chimdqa build review-export --force`) and review them")
    if record["reviewer"] not in allowed:
        return f"{location}: reviewer {record['reviewer']!r} is not one of {', '.join(allowed)}"
    key = (record["id"], record["reviewer"])
    if key in seen:
        return f"{location}: a second verdict of {record['reviewer']} on this id (first at {seen[key]})"
    seen[key] = location
    return None


def read_review_files(files, pairs: dict, reviewers) -> list[tuple[str, dict]]:
    """(location, record) of every row of the files; InputError listing every bad row of every file (and every
    file that cannot be read at all), so one round of fixes makes them all importable."""
    allowed, seen = (*reviewers, ARBITER), {}
    records, problems = [], []
    for path in files:
        try:
            rows = verdict_rows(path)
        except InputError as err:
            problems.append(str(err))
            continue
        for location, record, problem in rows:
            problem = problem or _record_problem(location, record, pairs, allowed, seen)
            if problem:
                problems.append(problem)
            else:
                records.append((location, record))
    if problems:
        raise_problems(problems, f"nothing imported from {', '.join(map(str, files))}")
    return records


def read_verdicts(work: Path) -> dict:
    """id -> {reviewer: verdict record}, from WORK/review/verdicts.jsonl (empty before the first import)."""
    path = work / W.VERDICTS
    out: dict = {}
    if path.is_file():
        for _, record in read_jsonl(path):
            out.setdefault(record["id"], {})[record["reviewer"]] = record
    return out


def _arbitration_rows(pairs, pages, verdicts, reviewers) -> list[dict]:
    """The arbiter's sheet: each disputed pair with every reviewer's verdict, and the arbiter's own where one was
    imported already."""
    rows = []
    for row in _sheet_rows(pairs, pages, ARBITER):
        given = verdicts[row["id"]]
        row.update({k: given[ARBITER][k] for k in ANSWER_COLUMNS} if ARBITER in given else {})
        for r in reviewers:
            row.update({f"{r}_{k}": given[r][k] for k in ANSWER_COLUMNS})
        rows.append(row)
    return rows


def _unimported(path: Path, verdicts: dict) -> list[str]:
    """Locations of verdicts in an existing arbitration sheet that were never imported."""
    if not path.is_file():
        return []
    return [location for location, r in read_verdict_file(path)
            if r["verdict"] and verdicts.get(r["id"], {}).get(ARBITER, {}).get("verdict") != r["verdict"]]


def review_import(work, files) -> dict:
    work = W.work_dir(work)
    export = W.stage_record(work, "review-export")
    W.check_fresh(work, ["screen", "review-export"])
    reviewers, ids = export["settings"]["reviewers"], export["ids"]
    pairs = {p["id"]: p for p in W.read_rows(work, W.SCREENED)}
    records = read_review_files(files, {i: pairs[i] for i in ids}, reviewers)
    verdicts = read_verdicts(work)
    for _, record in records:
        record.pop("shown")
        verdicts.setdefault(record["id"], {})[record["reviewer"]] = {**record, "pair": pair_digest(pairs[record["id"]])}
    W.write_jsonl(work / W.VERDICTS, [v for pair_id in ids for v in verdicts.get(pair_id, {}).values()])
    verdicts, stale = split_stale(verdicts, {i: pair_digest(pairs[i]) for i in ids})

    def reviewers_only(pair_id):
        return {r: v for r, v in verdicts.get(pair_id, {}).items() if r != ARBITER}

    disputed = [i for i in ids if decide(reviewers_only(i), reviewers)["verdict"] == "disagreement"]
    decided = {i: decide(verdicts.get(i, {}), reviewers)["verdict"] for i in ids}
    awaiting = [i for i in disputed if decided[i] == "disagreement"]  # the others the arbiter decided
    sheet = work / W.REVIEW_DIR / "arbitration.csv"
    kept_sheet = _unimported(sheet, verdicts)
    if disputed and not kept_sheet:
        rows = _arbitration_rows([pairs[i] for i in disputed], W.pages_by_document(work), verdicts, reviewers)
        W.write_text(sheet, _csv_text(rows, (*SHEET_COLUMNS, *(f"{r}_{k}" for r in reviewers
                                                                for k in ANSWER_COLUMNS))))
        W.write_text(sheet.with_suffix(".labelstudio.json"), json.dumps(_tasks(rows), ensure_ascii=False, indent=1))
    counts = {v: list(decided.values()).count(v) for v in (*VERDICTS, "pending", "disagreement")}
    counts["arbitrated"] = sum(bool(verdicts.get(i, {}).get(ARBITER, {}).get("verdict")) for i in ids)
    return W.record_stage(work, "review", {"reviewers": reviewers, "files": [str(f) for f in files]}, counts,
                          signature=make_signature({"stage": "build-review", "kappa": "cohen",
                                                    "labels": ",".join(VERDICTS)}),
                          kappa=kappas({i: reviewers_only(i) for i in ids}, reviewers), disputed=disputed,
                          awaiting_arbiter=awaiting, arbitration_sheet_kept=kept_sheet, stale=[list(s) for s in stale])


def _live_and_stale(work: Path, ids) -> tuple[dict, list]:
    pairs = {p["id"]: p for p in W.read_rows(work, W.SCREENED)}
    return split_stale(read_verdicts(work), {i: pair_digest(pairs[i]) for i in ids})


def live_verdicts(work: Path) -> dict:
    """id -> {reviewer: verdict} for the pairs of the review set, only verdicts given on the pair's current text."""
    return _live_and_stale(work, W.stage_record(work, "review-export")["ids"])[0]


def decisions(work: Path) -> dict:
    """id -> decision record (verdict accept / edit / reject / pending / disagreement, edits, decided_by) for
    every pair of the review set."""
    export = W.stage_record(work, "review-export")
    verdicts, stale = _live_and_stale(work, export["ids"])
    out = {i: decide(verdicts[i], export["settings"]["reviewers"]) for i in export["ids"]}
    for pair_id, reviewer in stale:
        out[pair_id].setdefault("stale", []).append(reviewer)
    return out
