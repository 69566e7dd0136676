"""Submissions: a predictions jsonl plus a small metadata side file, checked in full before any scoring.

One line per question: ``{"id": ..., "prediction": ..., "retrieved_contexts": [...], "logprobs": [...],
"confidence": ...}`` (the last three optional, but each all-or-none across the file). A retrieved context is a
string or ``{"text": ..., "doc_id": ..., "page": ...}`` (what `chimdqa generate` writes); a confidence is a number
0-100 or null (the model stated none). The metadata sits next to it as ``<stem>.meta.json``:
``{"model": ..., "rag": true|false, "date": "YYYY-MM-DD", "notes": ..., "url": ..., "generation": {...}}``
(``generation``: what `chimdqa generate` records about the run; the fields that reports read as numbers or
mappings are checked by type, GENERATION_SCHEMA). Both files are read by jsonio, with its limits.

Every problem in the file (bad JSON, wrong types, duplicates, ids the dataset does not have, missing ids) is
collected first and reported in one InputError, so a submitter fixes everything in one round.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path

from chimdqa_eval import jsonio
from chimdqa_eval.release import id_in_raw_line
from chimdqa_eval.schema import (ID_LIMIT, METADATA_LIMITS, InputError, logprobs_problem, raise_problems, shown,
                                 surrogate_problem, too_long, url_problem, where)
from chimdqa_eval.schema import date_problem, schema_problems

PREDICTION_FIELDS = ("id", "prediction", "retrieved_contexts", "logprobs", "confidence")
OPTIONAL_FIELDS = ("retrieved_contexts", "logprobs", "confidence")
METADATA_FIELDS = ("model", "rag", "date", "notes", "url", "generation")
CONTEXT_FIELDS = ("text", "doc_id", "page")
# Scoring time grows faster than linearly with an answer's length (LCS, alignments, claim checks): answers and
# contexts far beyond any real one (references reach ~4,700 characters, chunks 400) would hold a run for hours.
PREDICTION_LIMIT = 20_000
CONTEXT_LIMIT = 20_000
CONTEXTS_LIMIT = 100
# what `chimdqa generate` writes stays under 100 KB for a whole release, plus about 70 bytes a question in long mode
# (its per-question record of what the truncation kept): some 400 KB for 6,000 questions
METADATA_MAX_BYTES = 2**20

# The fields of `generation` (what `chimdqa generate` records) that reports and summaries read as numbers or
# mappings, with their types, so that metadata written by hand fails here, naming the field, rather than halfway
# through a report. Other fields are shown as text.
_COUNT = {"type": "integer", "minimum": 0}
_POSITIVE = {"type": "integer", "minimum": 1}
_SHARE = {"type": "number", "minimum": 0, "maximum": 100}
_QUALITY = {"type": "object", "required": ["hit_at_k", "recall_at_k", "n"],
            "properties": {"hit_at_k": _SHARE, "recall_at_k": _SHARE, "n": _POSITIVE}}
GENERATION_SCHEMA = {
    "type": "object", "required": ["mode"],
    "properties": {
        "mode": {"enum": ["long", "rag", "closed-book"]},
        "temperature": {"type": ["number", "null"], "minimum": 0},
        "max_tokens": {"type": ["integer", "null"], "minimum": 1},
        "template": {"type": "object"},
        "n_questions": _COUNT, "n_answered": _COUNT, "n_from_cache": _COUNT,
        "context": {"type": "object", "properties": {
            "max_context_tokens": _POSITIVE, "questions_truncated": _COUNT,
            "truncation": {"enum": ["middle", "head", "tail"]}, "signature": {"type": "string"},
            "evidence_pages": {"type": "object", "additionalProperties": _COUNT},
            "tokens": {"type": "object", "additionalProperties": {"type": "array", "items": _COUNT,
                                                                  "minItems": 2, "maxItems": 2}},
            "questions": {"type": "object", "additionalProperties": {
                "type": "object", "required": ["tokens"],
                "properties": {"tokens": _COUNT, "evidence": {
                    "type": "object", "propertyNames": {"pattern": "^[1-9][0-9]*$"},
                    "additionalProperties": {"enum": ["kept", "partly", "cut"]}}}}}}},
        "retrieval": {"type": "object",
                      "properties": {"top_k": _POSITIVE, "chunk_size": _POSITIVE, "chunk_overlap": _COUNT}},
        "retrieval_quality": {
            "type": "object", "required": ["k", *_QUALITY["required"]],
            "properties": {**_QUALITY["properties"], "k": _POSITIVE, "n_without_evidence": _COUNT,
                           "by": {"type": "object", "additionalProperties": {"type": "object",
                                                                             "additionalProperties": _QUALITY}}}},
    },
}


@dataclass
class Submission:
    path: Path
    metadata: dict
    items: list[dict]                       # dataset rows merged with their prediction, in dataset order
    missing_ids: list[str] = field(default_factory=list)
    n_questions: int = 0
    n_outside: int = 0                      # predictions for release questions outside the selected config
    fields: tuple = ()                      # the optional fields the file gives (all-or-none across it)

    @property
    def coverage(self) -> float:
        return len(self.items) / self.n_questions if self.n_questions else 0.0


def metadata_path_for(predictions_path) -> Path:
    """``preds.jsonl`` -> ``preds.meta.json`` (the side file a submission's metadata lives in)."""
    path = Path(predictions_path)
    return path.with_name(path.name.removesuffix(".jsonl") + ".meta.json")


def _unknown_fields(record: dict, allowed) -> str | None:
    """"unknown field(s) predicton (did you mean prediction?); allowed: ...", or None when all are known."""
    unknown = sorted(set(record) - set(allowed))
    if not unknown:
        return None
    named = []
    for name in unknown:
        close = difflib.get_close_matches(name, allowed, n=1, cutoff=0.7)
        named.append(shown(name, quoted=False) + (f" (did you mean {close[0]}?)" if close else ""))
    return f"unknown field(s) {', '.join(named)}; allowed: {', '.join(allowed)}"


def _record_problems(record, loc: str) -> list[str]:
    """Type problems of one parsed line (an empty list when it is fine)."""
    if not isinstance(record, dict):
        return [f"{loc}: expected a JSON object, got {type(record).__name__}"]
    problems = []
    unknown = _unknown_fields(record, PREDICTION_FIELDS)
    if unknown:
        problems.append(f"{loc}: {unknown}")
    surrogate = surrogate_problem(record)
    if surrogate:
        problems.append(f"{loc}: {surrogate}")
    if "id" not in record:
        problems.append(f"{loc}: missing field 'id'")
    elif not isinstance(record["id"], str) or not record["id"].strip():
        problems.append(f"{loc}: 'id' must be a non-empty string, got {shown(record['id'])}")
    elif long_id := too_long("'id'", record["id"], ID_LIMIT):
        problems.append(f"{loc}: {long_id}")
    if "prediction" not in record:
        problems.append(f"{loc}: missing field 'prediction' (use \"\" for a question the system did not answer)")
    elif not isinstance(record["prediction"], str):
        problems.append(f"{loc}: 'prediction' must be a string, got {type(record['prediction']).__name__}")
    elif len(record["prediction"]) > PREDICTION_LIMIT:
        problems.append(f"{loc}: 'prediction' has {len(record['prediction']):,} characters, more than the "
                        f"{PREDICTION_LIMIT:,} an answer may have")
    if "retrieved_contexts" in record and not _valid_contexts(record["retrieved_contexts"]):
        problems.append(f"{loc}: 'retrieved_contexts' must be a list of strings or of objects "
                        "{\"text\": string, \"doc_id\": string, \"page\": integer >= 1}")
    elif "retrieved_contexts" in record and (problem := _contexts_size_problem(record["retrieved_contexts"])):
        problems.append(f"{loc}: 'retrieved_contexts' {problem}")
    confidence = record.get("confidence")
    if confidence is not None and (isinstance(confidence, bool) or not isinstance(confidence, (int, float))
                                   or not 0 <= confidence <= 100):
        problems.append(f"{loc}: 'confidence' must be a number from 0 to 100 or null, got {shown(confidence)}")
    if "logprobs" in record:
        prediction = record.get("prediction") if isinstance(record.get("prediction"), str) else None
        problem = logprobs_problem(record["logprobs"], prediction)
        if problem:
            problems.append(f"{loc}: 'logprobs'{problem}")
    return problems


def _contexts_size_problem(contexts) -> str | None:
    if len(contexts) > CONTEXTS_LIMIT:
        return f"has {len(contexts)} contexts, more than the {CONTEXTS_LIMIT} a question may have"
    for i, context in enumerate(contexts):
        text = context if isinstance(context, str) else context["text"]
        if len(text) > CONTEXT_LIMIT:
            return f"[{i}] has {len(text):,} characters, more than the {CONTEXT_LIMIT:,} a context may have"
    return None


def _valid_contexts(contexts) -> bool:
    def valid(c):
        if isinstance(c, str):
            return True
        return (isinstance(c, dict) and set(c) == set(CONTEXT_FIELDS) and isinstance(c["text"], str)
                and isinstance(c["doc_id"], str) and isinstance(c["page"], int) and not isinstance(c["page"], bool)
                and c["page"] >= 1)

    return isinstance(contexts, list) and all(valid(c) for c in contexts)


def context_texts(contexts) -> list[str] | None:
    """The texts of retrieved contexts given as strings or as {text, doc_id, page} objects."""
    return None if contexts is None else [c if isinstance(c, str) else c["text"] for c in contexts]


def read_predictions(path) -> list[dict]:
    """Parse and type-check a predictions jsonl; each row gets its 1-based ``line``. All problems in one error."""
    rows, problems, _ = _parse_predictions(Path(path))
    if problems:
        raise_problems(problems, f"{path}: invalid predictions file")
    return rows


def _parse_predictions(path: Path):
    """(valid rows, problems, ids named on any line, valid or not) of a predictions jsonl."""
    rows, problems = [], []
    first_line_of: dict = {}
    named: set = set()
    for line_no, record, problem in jsonio.iter_jsonl(path, what="predictions file"):
        if problem is not None:  # the line as text: its id may still be read off it
            record_id = id_in_raw_line(record)
            named.add(record_id)
            problems.append(f"{where(path.name, line_no, record_id=record_id)}: {problem}")
            continue
        loc = where(path.name, line_no)
        if isinstance(record, dict) and isinstance(record.get("id"), str):
            loc = where(path.name, line_no, record_id=record["id"])
            named.add(record["id"])
        record_problems = _record_problems(record, loc)
        if record_problems:
            problems += record_problems
            continue
        if record["id"] in first_line_of:
            problems.append(f"{loc}: duplicate id (first on line {first_line_of[record['id']]})")
            continue
        first_line_of[record["id"]] = line_no
        rows.append({**record, "line": line_no})
    if not rows and not problems:
        raise InputError(f"{path}: empty predictions file (expected one JSON object per line)")
    for name in OPTIONAL_FIELDS:
        having = [r for r in rows if name in r]
        if having and len(having) < len(rows):
            lacking = [r for r in rows if name not in r]
            problems.append(
                f"{path.name}: '{name}' is given on {len(having)} line(s) but missing on {len(lacking)} "
                f"(lines {', '.join(str(r['line']) for r in lacking[:10])}{' ...' if len(lacking) > 10 else ''}); "
                "give it on every line or on none")
    return rows, problems, named


def generation_problems(generation: dict) -> list[str]:
    """Each way `generation` breaks GENERATION_SCHEMA, in the words of schema.schema_problems, naming the field as
    ``generation.<path>``."""
    import jsonschema

    errors = jsonschema.Draft202012Validator(GENERATION_SCHEMA).iter_errors(generation)
    return schema_problems(sorted(errors, key=lambda e: list(map(str, e.absolute_path))), root=("generation",))


def read_metadata(path, *, overrides: dict | None = None, has_contexts: bool = False) -> dict:
    """The submission's metadata: the side file (if present) updated by `overrides` (e.g. from the CLI).

    ``model`` defaults to the predictions file's stem; ``rag`` defaults to whether contexts were given.
    """
    path = Path(path)
    meta: dict = {}
    if path.exists() and not path.is_file():
        raise InputError(f"{path}: is a folder or other non-file; expected the submission metadata (JSON)")
    if path.is_file():
        meta = jsonio.read_json(path, what="submission metadata file", max_bytes=METADATA_MAX_BYTES)
        if not isinstance(meta, dict):
            raise InputError(f"{path}: expected a JSON object with {', '.join(METADATA_FIELDS)}")
    meta.update({k: v for k, v in (overrides or {}).items() if v is not None})
    problems = []
    unknown = _unknown_fields(meta, METADATA_FIELDS)
    if unknown:
        problems.append(unknown)
    surrogate = surrogate_problem(meta)
    if surrogate:
        problems.append(surrogate)
    for name, limit in METADATA_LIMITS.items():
        if name in meta and not isinstance(meta[name], str):
            problems.append(f"'{name}' must be a string, got {type(meta[name]).__name__}")
        elif name in meta and not meta[name] and name != "date":  # results.schema.json takes no empty name or note
            problems.append(f"'{name}' must be a non-empty string (leave it out instead)")
        elif name in meta and (long_value := too_long(f"'{name}'", meta[name], limit)):
            problems.append(long_value)
        elif name == "url" and name in meta and (bad_url := url_problem("'url'", meta["url"])):
            problems.append(bad_url)
    if "generation" in meta and not isinstance(meta["generation"], dict):
        problems.append(f"'generation' must be an object, got {type(meta['generation']).__name__}")
    elif "generation" in meta:
        problems += generation_problems(meta["generation"])
    if "rag" in meta and not isinstance(meta["rag"], bool):
        problems.append(f"'rag' must be true or false, got {shown(meta['rag'])}")
    if isinstance(meta.get("date"), str) and len(meta["date"]) <= METADATA_LIMITS["date"]:
        if bad_date := date_problem("'date'", meta["date"]):
            problems.append(bad_date)
    if meta.get("rag") is False and has_contexts:
        problems.append("'rag' is false but the predictions carry retrieved_contexts")
    if problems:
        raise_problems(problems, f"{path}: invalid submission metadata")
    meta.setdefault("model", Path(path).name.removesuffix(".meta.json"))
    meta.setdefault("rag", has_contexts)
    return {k: meta[k] for k in METADATA_FIELDS if k in meta}


def _join_problems(rows: list[dict], questions: list[dict], allow_partial: bool, source: str, named=frozenset()):
    """(problems, missing ids): ids the dataset lacks are always a problem, missing ids unless `allow_partial`.

    A question is missing when no line names its id; a line that names it but has other problems is reported
    with those problems, not as a missing prediction."""
    known = {q["id"] for q in questions}
    problems = [f"{where(source, r['line'], record_id=r['id'])}: id not in the dataset"
                for r in rows if r["id"] not in known]
    predicted = {r["id"] for r in rows} | set(named)
    missing = [q["id"] for q in questions if q["id"] not in predicted]
    if missing and not allow_partial:
        listed = ", ".join(shown(i, quoted=False) for i in missing[:10]) + (" ..." if len(missing) > 10 else "")
        problems.append(f"{source}: {len(missing)} of {len(questions)} questions have no prediction "
                        f"(coverage {100 * (len(questions) - len(missing)) / len(questions):.1f}%): {listed}; "
                        "allow a partial submission (--allow-partial) to score the covered questions only")
    return problems, missing


def join_with_dataset(rows: list[dict], questions: list[dict]) -> list[dict]:
    """Each question row that has a prediction, merged with its prediction fields, in dataset order."""
    predicted = {r["id"]: r for r in rows}
    items = []
    for q in questions:
        r = predicted.get(q["id"])
        if r is not None:
            items.append({**q, "prediction": r["prediction"],
                          "retrieved_contexts": context_texts(r.get("retrieved_contexts")),
                          "logprobs": r.get("logprobs"), "confidence": r.get("confidence"), "line": r["line"]})
    return items


def load_submission(predictions_path, questions: list[dict], *, metadata_path=None, metadata_overrides=None,
                    allow_partial: bool = False, outside_ids=frozenset()) -> Submission:
    """Read, validate and join a submission with the dataset's question rows (dicts with at least ``id``).

    `outside_ids` are ids of the release that the selection (e.g. one domain) leaves out: predictions for them
    are counted in ``n_outside`` and not scored, instead of being reported as unknown ids."""
    predictions_path = Path(predictions_path)
    if not questions:
        raise InputError("the dataset selection has no questions to score")
    rows, problems, named = _parse_predictions(predictions_path)
    n_all = len(rows)
    rows = [r for r in rows if r["id"] not in outside_ids]
    join_problems, missing = _join_problems(rows, questions, allow_partial, predictions_path.name, named)
    problems += join_problems
    if metadata_path is not None and not Path(metadata_path).exists():  # only the default side file is optional
        problems.append(f"{metadata_path}: no such metadata file")
    try:  # metadata problems join the same list: one round of fixes
        metadata = read_metadata(metadata_path or metadata_path_for(predictions_path), overrides=metadata_overrides,
                                 has_contexts=bool(rows) and "retrieved_contexts" in rows[0])
    except InputError as err:
        problems.append(str(err))
    if problems:
        raise_problems(problems, f"{predictions_path}: invalid submission")
    items = join_with_dataset(rows, questions)
    if not items:
        raise InputError(f"{predictions_path}: no prediction matches a question of the dataset selection")
    return Submission(path=predictions_path, metadata=metadata, items=items, missing_ids=missing,
                      n_questions=len(questions), n_outside=n_all - len(rows),
                      fields=tuple(f for f in OPTIONAL_FIELDS if f in rows[0]))
