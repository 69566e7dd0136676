"""`chimdqa rag-metrics FILE`: RAGChecker's metrics for a RAGChecker results JSON file, optionally written back
in its format (see chimdqa_eval.rag.interop)."""
from __future__ import annotations

import json
import sys

from chimdqa_eval import jsonio
from chimdqa_eval.commands._options import add_endpoint_arguments
from chimdqa_eval.llm import ChatError, cap_message, endpoint_from_args, format_plan
from chimdqa_eval.rag import metrics as M
from chimdqa_eval.rag.checkers import ModelUnavailable
from chimdqa_eval.rag.claims import LLMFailure
from chimdqa_eval.rag.interop import read_ragchecker, to_ragchecker
from chimdqa_eval.rag.scoring import CHECKERS, EXTRACTORS, evaluate_items, llm_calls_planned
from chimdqa_eval.schema import InputError


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
