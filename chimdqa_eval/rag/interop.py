"""RAGChecker interop: read its results JSON, score it, write our results back in its format.

    chimdqa rag-metrics checking_outputs.json                    # labels already there: no model at all
    chimdqa rag-metrics inputs.json --checker llm --extractor llm --judge-model M --api-base URL -o out.json

The file is ``{"results": [{"query_id", "query", "gt_answer", "response", "retrieved_context": [{"doc_id",
"text"}], ...}]}``; items may already carry RAGChecker's claims (``response_claims``, ``gt_answer_claims``) and
labels (``answer2response``, ``response2answer``, ``retrieved2response``, ``retrieved2answer``). What is there
is used as is; what is missing is extracted and checked by the configured tools.
"""
from __future__ import annotations

import copy
from pathlib import Path

from chimdqa_eval import jsonio
from chimdqa_eval.rag import metrics as M
from chimdqa_eval.rag.scoring import (CLAIM_FIELDS, RagItem, item_structures)
from chimdqa_eval.schema import InputError, shown, surrogate_problem

GIVEN_FIELDS = tuple(CLAIM_FIELDS.values()) + M.STRUCTURES


def read_ragchecker(path) -> tuple[list[RagItem], dict]:
    """(items, the parsed file); InputError naming the file and result for anything malformed."""
    path = Path(path)
    data = jsonio.read_json(path, what="RAGChecker results JSON file")
    problem = surrogate_problem(data)
    if problem:
        raise InputError(f"{path}: {problem}")
    results = data.get("results") if isinstance(data, dict) else None
    if not isinstance(results, list) or not results:
        raise InputError(f"{path}: expected a RAGChecker object {{\"results\": [...]}} with at least one result")
    return [_item(path, i, result) for i, result in enumerate(results)], data


def _item(path, i, result) -> RagItem:
    where = f"{path} results[{i}]"
    if not isinstance(result, dict):
        raise InputError(f"{where}: expected an object, got {type(result).__name__}")
    where += f" (query_id {shown(result.get('query_id'), quoted=False)})"
    for key in ("query", "gt_answer", "response"):
        if not isinstance(result.get(key), str):
            raise InputError(f"{where}: {key} must be a string, got {type(result.get(key)).__name__}")
    context = result.get("retrieved_context")
    if not isinstance(context, list):
        raise InputError(f"{where}: retrieved_context must be a list of {{\"doc_id\", \"text\"}} objects")
    chunks = []
    for j, doc in enumerate(context):
        text = doc.get("text") if isinstance(doc, dict) else None
        if not isinstance(text, str):
            raise InputError(f"{where}: retrieved_context[{j}].text must be a string, got {shown(text)}")
        chunks.append(text)
    given = {key: result[key] for key in GIVEN_FIELDS if result.get(key) is not None}
    return RagItem(where, result["query"], result["gt_answer"], result["response"], chunks, given)


def to_ragchecker(data: dict, items: list[RagItem], result: dict) -> dict:
    """The file's own content with what we extracted and checked filled in, RAGChecker's per-result metrics
    (shares in [0, 1]) and its grouped corpus metrics (0-100, full precision), plus our signature."""
    out = copy.deepcopy(data)
    metrics = [m for m in M.ALL_METRICS if m in result]
    for item, entry, record in zip(items, result["per_item"], out["results"]):
        for key in GIVEN_FIELDS:
            if record.get(key) is None and entry.get(key) is not None:
                # RAGChecker types claims as lists of strings (its triplets); ours are whole sentences.
                record[key] = [[c] for c in entry[key]] if key in CLAIM_FIELDS.values() else entry[key]
        labels = {s: entry[s] for s in M.STRUCTURES if s in entry}
        claims = {whose: entry.get(key) for whose, key in CLAIM_FIELDS.items()}
        record["metrics"] = M.query_scores(item_structures(item, labels, claims), metrics)
    out["metrics"] = {group: {m: result[m] for m in names if m in result} for group, names in M.GROUPS.items()}
    out["signature"] = result["signature"]
    return out
