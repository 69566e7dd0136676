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
import json
import sys
from pathlib import Path

from chimdqa_eval import jsonio
from chimdqa_eval.llm import add_endpoint_arguments, cap_message, endpoint_from_args, format_plan
from chimdqa_eval.rag import metrics as M
from chimdqa_eval.rag.scoring import (CHECKERS, CLAIM_FIELDS, EXTRACTORS, RagItem, evaluate_items, item_structures,
                                      llm_calls_planned)
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


def add_arguments(parser) -> None:
    parser.add_argument("file", help="RAGChecker results JSON ({\"results\": [...]})")
    parser.add_argument("--metrics", nargs="+", default=["all"],
                        help="metric names or groups: overall retriever generator all (default: all)")
    parser.add_argument("--extractor", choices=EXTRACTORS, default="sentence",
                        help="claims for items without them: offline clause splitting, or an LLM")
    parser.add_argument("--checker", choices=CHECKERS, default="nli",
                        help="labels for items without them (precomputed: every item must carry its labels)")
    parser.add_argument("--nli-model", help="path or name of a transformers NLI sequence-classification model")
    llm = parser.add_argument_group("LLM extractor / checker (--extractor llm, --checker llm)")
    add_endpoint_arguments(llm, model_flag="--judge-model")
    llm.add_argument("--cache", dest="llm_cache", metavar="FILE", help="the same as --llm-cache")
    parser.add_argument("--device", help="torch device for the NLI model (default: cuda if available)")
    parser.add_argument("-o", "--output", help="also write the results back in RAGChecker's format to this file")
    parser.add_argument("--per-item", action="store_true", help="include per-query claims, labels and scores")


def run(args) -> int:
    from chimdqa_eval.llm import ChatError
    from chimdqa_eval.rag.checkers import ModelUnavailable
    from chimdqa_eval.rag.claims import LLMFailure

    uses_llm = "llm" in (args.extractor, args.checker)
    endpoint = endpoint_from_args(args, needed_for="--extractor llm / --checker llm" if uses_llm else None)
    items, data = read_ragchecker(args.file)
    M.resolve_metrics(args.metrics)  # an unknown name fails before any request
    client = endpoint.client() if endpoint else None
    try:
        if client is not None:
            plan = llm_calls_planned(items, args.metrics, client, args.extractor, args.checker)
            if args.dry_run:
                print(format_plan(plan))
                return 0
            if any(stage["calls"] for stage in plan.values()):
                client.probe()
        elif args.dry_run:
            print("no LLM calls: neither --extractor llm nor --checker llm")
            return 0
        result = evaluate_items(items, metrics=args.metrics, extractor=args.extractor, checker=args.checker,
                                nli_model=args.nli_model, device=args.device, endpoint=client)
    except LLMFailure as err:
        if client is not None and client.cap_reached:
            raise InputError(cap_message(client, "the scoring")) from None
        # an unusable endpoint is a bad option, exit status 2 as in every other command
        raise InputError(str(err)) from None
    except (ChatError, ModelUnavailable) as err:
        # a missing model or a refused endpoint: exit status 2 as in every other command
        raise InputError(str(err)) from None
    finally:
        if client is not None:
            client.close()
    if client is not None:
        result["llm_usage"] = client.usage_report()
    if args.output:
        jsonio.write_json_atomic(args.output, to_ragchecker(data, items, result), indent=2)
    printed = result if args.per_item else {k: v for k, v in result.items() if k != "per_item"}
    json.dump(printed, sys.stdout, ensure_ascii=False, indent=2)
    sys.stdout.write("\n")
    return 0

