"""`chimdqa generate`: run a model on the release's questions and write a predictions file `chimdqa evaluate`
reads, with its metadata side file.

    chimdqa generate --model qwen2.5-7b-instruct --api-base http://gpu1:8000/v1 http://gpu2:8000/v1 \\
        --mode rag --out preds-rag.jsonl

Modes: ``long`` packs the question's document into the prompt (packing.py), ``rag`` retrieves chunks of it
(retrieval.py), ``closed-book`` gives no document (Chinese SimpleQA always). Answers are cached by the full
request as they arrive, so a re-run asks nothing again and a killed run resumes where it stopped; questions
left unanswered (a request that kept failing) are listed and the command exits 1 after writing the others; a run
stopped by --max-llm-calls writes what it has and exits 2, as evaluate does at the cap. An endpoint that stops
accepting connections stops the run within seconds (chimdqa_eval.llm's circuit breaker): an error (exit 2) names
it and says how many answers are cached for the re-run.
"""
from __future__ import annotations

import argparse
import datetime
import functools
import json
import sys
from pathlib import Path

from chimdqa_eval.generate.backends import BACKENDS
from chimdqa_eval.generate.packing import DEFAULT_MAX_CONTEXT_TOKENS, DEFAULT_TRUNCATION, TRUNCATIONS
from chimdqa_eval.generate.retrieval import METHODS
from chimdqa_eval.llm import add_endpoint_arguments
from chimdqa_eval.schema import QA_SPLITS, InputError

MODES = ("long", "rag", "closed-book")


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """Everything but --mode and --out: shared with `chimdqa run`."""
    from chimdqa_eval.evaluation import CONFIGS

    parser.add_argument("--model", required=True,
                        help="the endpoint's model name, or a local causal LM folder with --backend transformers")
    parser.add_argument("--name", help="model name in the metadata and results (default: --model)")
    parser.add_argument("--notes", help="free text for the metadata")
    parser.add_argument("--backend", choices=BACKENDS, default="openai",
                        help="openai: any OpenAI-compatible chat endpoint (default); transformers: a local model")
    data = parser.add_argument_group("data (as in chimdqa evaluate)")
    data.add_argument("--config", default="all", choices=CONFIGS, help="dataset config (default all)")
    data.add_argument("--split", default="test", choices=tuple(QA_SPLITS), help="split (default test: all)")
    data.add_argument("--data-dir", metavar="DIR", help="release folder (default: the bundled sample)")
    data.add_argument("--data-files", nargs="+", metavar="FILE",
                      help="QA jsonl files instead of the release's (for chinese_simpleqa: its jsonl)")
    add_endpoint_arguments(parser.add_argument_group("endpoint (--backend openai)"), model_flag=None)
    gen = parser.add_argument_group("generation")
    gen.add_argument("--temperature", type=float, default=0.0, help="sampling temperature (default 0)")
    gen.add_argument("--max-tokens", type=int, default=512, help="longest answer in tokens (default 512)")
    gen.add_argument("--prompt", metavar="YAML", help="prompt template (default: the bundled templates/chimdqa.yaml)")
    gen.add_argument("--ask-confidence", action="store_true",
                     help="ask for a 0-100 confidence after the answer (calibration: evaluate reports ECE)")
    gen.add_argument("--logprobs", action="store_true",
                     help="store the answer tokens' log-probabilities (perplexity without a local LM)")
    long = parser.add_argument_group("long mode")
    long.add_argument("--max-context-tokens", type=int, default=DEFAULT_MAX_CONTEXT_TOKENS,
                      help=f"document tokens in the prompt (default {DEFAULT_MAX_CONTEXT_TOKENS})")
    long.add_argument("--truncation", choices=TRUNCATIONS, default=DEFAULT_TRUNCATION,
                      help="how a longer document is cut: middle (keep the first and last halves of the budget, "
                           "LongBench's rule; default), head (keep the start) or tail (keep the end)")
    long.add_argument("--context-tokenizer", metavar="NAME_OR_PATH",
                      help="the served model's Hugging Face tokenizer: counts the document's tokens (default: a "
                           "stated over-estimate) and, with --logprobs --ask-confidence, tells the answer's tokens "
                           "from the confidence line's")
    rag = parser.add_argument_group("rag mode")
    rag.add_argument("--retrieval", choices=METHODS, default="bm25", help="bm25 (default), dense or hybrid (RRF)")
    rag.add_argument("--top-k", type=int, default=5, help="chunks in the prompt (default 5)")
    rag.add_argument("--chunk-size", type=int, default=400, help="chunk size in characters (default 400)")
    rag.add_argument("--chunk-overlap", type=int, default=80, help="overlap in characters (default 80)")
    rag.add_argument("--embedding-model", metavar="NAME_OR_PATH", help="sentence-transformers encoder (dense, hybrid)")
    rag.add_argument("--reranker", metavar="NAME_OR_PATH", help="cross-encoder that re-ranks the candidates")
    rag.add_argument("--rerank-candidates", type=int, default=20, help="candidates re-ranked (default 20)")
    local = parser.add_argument_group("local models (transformers backend, encoders)")
    local.add_argument("--device", help="torch device (default: cuda when available, else cpu)")
    local.add_argument("--batch-size", type=int, default=8, help="prompts per generation batch (default 8)")
    local.add_argument("--allow-download", action="store_true",
                       help="let Hugging Face models download (by default the Hub is used offline)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--mode", required=True, choices=MODES, help="long, rag or closed-book")
    parser.add_argument("--out", required=True, metavar="PREDICTIONS.jsonl",
                        help="predictions file; its metadata goes to <stem>.meta.json beside it")
    add_model_arguments(parser)


SHRINK = {"long": "--max-context-tokens", "rag": "--top-k or --chunk-size"}  # what shortens each mode's context


def run(args) -> int:
    return exit_code(generate(args, args.mode, Path(args.out)))


def exit_code(result: dict) -> int:
    """2 when --max-llm-calls stopped the run (as evaluate at its cap), 1 when questions are left unanswered."""
    return 2 if result.get("capped") else 0 if result["complete"] else 1


def check_arguments(args) -> None:
    for name in ("max_tokens", "batch_size", "max_context_tokens"):
        if getattr(args, name) < 1:
            raise InputError(f"--{name.replace('_', '-')}: expected at least 1, got {getattr(args, name)}")
    if args.backend == "transformers" and args.context_tokenizer:
        raise InputError(f"--context-tokenizer {args.context_tokenizer}: the transformers backend counts with the "
                         "model's own tokenizer; leave the flag out")
    if args.backend == "openai" and args.logprobs and args.ask_confidence and not args.context_tokenizer:
        raise InputError("--logprobs with --ask-confidence: the endpoint sends one log-probability per token of the "
                         "whole reply, the confidence line's included, and which of them are the answer's takes the "
                         "served model's tokenizer: add --context-tokenizer NAME_OR_PATH (or leave out one of the "
                         "two flags)")


def make_backend(args):
    from chimdqa_eval.generate import backends

    if args.backend == "transformers":
        return backends.TransformersBackend(args.model, max_new_tokens=args.max_tokens, batch_size=args.batch_size,
                                            device=args.device, logprobs=args.logprobs, download=args.allow_download,
                                            cache_path=args.llm_cache)
    from chimdqa_eval.llm import endpoint_from_args

    endpoint = endpoint_from_args(args, model_attr="model", needed_for="--backend openai")
    return backends.ApiBackend(endpoint.client(parse_retries=0), logprobs=args.logprobs)


def document_pages(rows, data_dir) -> tuple[dict, dict]:
    """({doc_id: [(page, text)]}, {doc_id: title}) for the documents the questions ask about."""
    from chimdqa_eval import release
    from chimdqa_eval.schema import where

    wanted = {r["doc_id"] for r in rows}
    pages, titles = {}, {}
    for page in release.read_documents(data_dir):
        if page["doc_id"] in wanted:
            pages.setdefault(page["doc_id"], []).append((page["page"], page["text"]))
            titles[page["doc_id"]] = page["title"]
    for r in rows:
        if r["doc_id"] not in pages:
            raise InputError(f"{where(record_id=r['id'])}: its document {r['doc_id']!r} is not in the release's "
                             f"documents ({release.release_dir(data_dir)}); pass the release folder as --data-dir")
    return pages, titles


def token_counter(args, backend):
    """(count, what the metadata calls it, its name in the signature)."""
    from chimdqa_eval.generate import packing

    if args.backend == "transformers":
        return packing.tokenizer_counter(backend.tokenizer), f"tokenizer of {args.model}", f"hf:{args.model}"
    if args.context_tokenizer:
        return (packing.tokenizer_counter(context_tokenizer(args)), f"tokenizer of {args.context_tokenizer}",
                f"hf:{args.context_tokenizer}")
    return packing.approx_tokens, packing.APPROX_COUNTER, "approx"


def context_tokenizer(args):
    """The tokenizer --context-tokenizer names, loaded once (InputError when it cannot be)."""
    return _load_tokenizer(args.context_tokenizer, args.allow_download)


@functools.lru_cache(maxsize=2)
def _load_tokenizer(name: str, download: bool):
    from chimdqa_eval.models import ModelUnavailable, load_tokenizer

    try:
        return load_tokenizer(name, "context tokenizer", download=download)
    except ModelUnavailable as err:
        raise InputError(str(err)) from None


def build_contexts(args, mode, rows, backend, template) -> tuple[list, list, dict, dict]:
    """(context text or None per question, retrieved chunks or None per question, metadata of the mode,
    {doc_id: title})."""
    from chimdqa_eval.generate import prompts
    from chimdqa_eval.generate.retrieval import Retriever, RetrievalSettings

    if mode == "closed-book":
        return [None] * len(rows), [None] * len(rows), {}, {}
    pages, titles = document_pages(rows, args.data_dir)
    if mode == "long":
        return _long_contexts(args, rows, pages, titles, backend, template)
    settings = RetrievalSettings(method=args.retrieval, top_k=args.top_k, chunk_size=args.chunk_size,
                                 chunk_overlap=args.chunk_overlap, embedding_model=args.embedding_model,
                                 reranker=args.reranker, rerank_candidates=args.rerank_candidates)
    retriever = Retriever(pages, settings, device=args.device, download=args.allow_download)
    retrieved = retriever.search_all([r["question"] for r in rows], [r["doc_id"] for r in rows])
    meta = {**settings.metadata(), "index_key": retriever.key, "documents_fingerprint": retriever.fingerprint,
            "n_chunks": retriever.n_chunks, "index_cached": dict(retriever.cached)}
    return [prompts.render_passages(template, chunks) for chunks in retrieved], retrieved, meta, titles


def _long_contexts(args, rows, pages, titles, backend, template) -> tuple[list, list, dict, dict]:
    """build_contexts for the long mode: each document packed within its budget by --truncation; the metadata
    records the policy, the budget, the counter, and per document and per question what was kept."""
    from chimdqa_eval import release
    from chimdqa_eval.generate import packing, prompts
    from chimdqa_eval.signature import make_signature

    count, counter_name, counter_id = token_counter(args, backend)
    budgets = {doc_id: args.max_context_tokens for doc_id in pages}
    if args.backend == "transformers":  # a local model's own limit caps the budget: the prompt must fit
        for doc_id in pages:
            empty = [prompts.render_messages(template, r["question"], r.get("category", "factual"), context="",
                                             title=titles[doc_id], ask_confidence=args.ask_confidence)
                     for r in rows if r["doc_id"] == doc_id]
            budgets[doc_id] = max(1, min(budgets[doc_id], backend.context_room(empty)))
    packed = {doc_id: packing.pack_pages(doc_pages, budgets[doc_id], count, args.truncation)
              for doc_id, doc_pages in pages.items()}
    truncated = {doc_id for doc_id, (_, info) in packed.items() if info["truncated"]}
    evidence = release.read_evidence(args.data_dir, files=args.data_files)
    questions = {}
    for r in rows:
        info = packed[r["doc_id"]][1]
        questions[r["id"]] = {"tokens": info["tokens"]}
        if r["id"] in evidence:  # an evidence page the document does not have (no text) counts as cut
            questions[r["id"]]["evidence"] = {str(page): packing.survival(info["page_shares"].get(page, 0.0))
                                              for page in evidence[r["id"]]}
    meta = {"truncation": args.truncation, "truncation_rule": packing.TRUNCATION_RULES[args.truncation],
            "max_context_tokens": args.max_context_tokens, "token_counter": counter_name,
            "signature": make_signature({"truncation": args.truncation, "budget": args.max_context_tokens,
                                         "tokens": counter_id.replace("|", "/")}),
            "documents": len(packed), "documents_truncated": len(truncated),
            "questions_truncated": sum(r["doc_id"] in truncated for r in rows),
            "pages": {doc_id: [info["pages_kept"], info["pages_total"]] for doc_id, (_, info) in packed.items()},
            "tokens": {doc_id: [info["tokens"], info["tokens_total"]] for doc_id, (_, info) in packed.items()},
            "evidence_pages": {state: sum(list(q.get("evidence", {}).values()).count(state) for q in questions.values())
                               for state in ("kept", "partly", "cut")},
            "questions": questions}
    if any(b < args.max_context_tokens for b in budgets.values()):
        meta["budgets"] = budgets  # per document, where the model's limit made it smaller
    return [packed[r["doc_id"]][0] for r in rows], [None] * len(rows), meta, titles


def retrieval_quality(args, rows, retrieved, top_k: int) -> dict | None:
    from chimdqa_eval import release
    from chimdqa_eval.generate.evidence import retrieval_quality as quality

    evidence = release.read_evidence(args.data_dir, files=args.data_files)
    return quality([[c.page for c in chunks] for chunks in retrieved], [evidence.get(r["id"]) for r in rows],
                   top_k, {"question_type": [r["question_type"] for r in rows],
                           "domain": [r["domain"] for r in rows]})


def generate(args, mode: str, out: Path) -> dict:
    """Answer every selected question in `mode` and write `out` and its metadata; returns
    {"complete": bool, "metadata": ..., "path": out}."""
    from chimdqa_eval.generate import backends, prompts
    from chimdqa_eval.evaluation import SIMPLEQA_CONFIG, load_questions
    from chimdqa_eval.report.results import items_jsonl, replace_file
    from chimdqa_eval.submission import metadata_path_for

    check_arguments(args)
    if mode == "rag" and args.embedding_model and args.retrieval == "bm25":
        raise InputError(f"--embedding-model {args.embedding_model}: only --retrieval dense or hybrid use an "
                         "encoder (the default is bm25); add one of them, or leave the encoder out")
    if args.config == SIMPLEQA_CONFIG and mode != "closed-book":
        raise InputError("--config chinese_simpleqa has no documents: use --mode closed-book")
    if out.suffix != ".jsonl":
        raise InputError(f"--out {out}: a predictions file must end in .jsonl")
    rows, _, dataset = load_questions(args.config, args.data_dir, args.data_files, args.split)
    template = prompts.load_template(args.prompt)
    backend = make_backend(args)
    try:
        answer_logprobs = logprobs_splitter(args, backend)  # loads the tokenizer it needs before anything is asked
        contexts, retrieved, mode_meta, titles = build_contexts(args, mode, rows, backend, template)
        batch = []
        for row, context in zip(rows, contexts):
            render = functools.partial(prompts.render_messages, template, row["question"],
                                       row.get("category", "factual"), title=titles.get(row.get("doc_id"), ""),
                                       ask_confidence=args.ask_confidence)
            messages = render(context=context)
            bare = tuple(render(context="")) if context is not None else None
            batch.append(backends.Prompt(tuple(messages), backends.prompt_cache_key(template.version, messages),
                                         bare, SHRINK.get(mode)))
        pending = backend.pending(batch)
        if args.dry_run:
            from chimdqa_eval.llm import format_plan

            print(format_plan({f"generate ({mode})": {"calls": pending, "exact": True,
                                                      "note": f"{len(batch) - pending} of {len(batch)} cached"}}))
            return {"complete": True, "dry_run": True, "metadata": None, "path": out}
        if pending and args.backend == "openai":
            backend.client.probe()  # a wrong URL or a server that is down stops here, not after minutes of retries
        answers = complete(backend, batch)
        backend_meta = backend.metadata()
        cap = _cap_message(backend)
    finally:
        backend.close()
    records, failed = prediction_records(rows, answers, retrieved, args.ask_confidence, args.logprobs,
                                         answer_logprobs)
    generation = {
        "mode": mode, "backend": args.backend, "model": args.model, **backend_meta,
        "temperature": args.temperature, "max_tokens": args.max_tokens,
        "template": template.metadata(), "ask_confidence": args.ask_confidence, "logprobs": args.logprobs,
        "dataset": {k: dataset[k] for k in ("name", "config", "split", "revision")},
        "n_questions": len(rows), "n_answered": len(records), "n_from_cache": sum(a.cached for a in answers),
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    if mode == "long":
        generation["context"] = mode_meta
    if mode == "rag":
        generation["retrieval"] = mode_meta
        quality = retrieval_quality(args, rows, retrieved, mode_meta["top_k"])
        if quality is not None:
            generation["retrieval_quality"] = quality
    metadata = {"model": args.name or args.model, "rag": mode == "rag",
                "date": datetime.date.today().isoformat(), **({"notes": args.notes} if args.notes else {}),
                "generation": generation}
    out.parent.mkdir(parents=True, exist_ok=True)
    replace_file(out, items_jsonl(records))  # readers see the old file or the new one, never half of one
    replace_file(metadata_path_for(out), metadata_text(metadata))
    print(f"wrote {len(records)} predictions to {out} ({generation['n_from_cache']} from the cache) "
          f"and {metadata_path_for(out)}")
    if mode == "long" and mode_meta["questions_truncated"]:
        pages = mode_meta["evidence_pages"]
        print(f"{mode_meta['questions_truncated']} of {len(rows)} questions' documents cut to "
              f"{args.max_context_tokens} tokens ({args.truncation}); evidence pages kept {pages['kept']}, "
              f"partly {pages['partly']}, cut {pages['cut']}")
    if "retrieval_quality" in generation:
        q = generation["retrieval_quality"]
        print(f"evidence pages: hit@{q['k']} {q['hit_at_k']:.1f}, recall@{q['k']} {q['recall_at_k']:.1f} "
              f"over {q['n']} annotated questions")
    if cap:
        print(f"chimdqa generate: {cap}", file=sys.stderr)
        return {"complete": False, "capped": True, "dry_run": False, "metadata": metadata, "path": out}
    elif failed:
        shown = "; ".join(f"{rows[i]['id']}: {answers[i].error}" for i in failed[:5])
        print(f"chimdqa generate: {len(failed)} of {len(rows)} questions got no answer (first: {shown}). The "
              "answers received are cached: run the same command again to ask only for the missing ones.",
              file=sys.stderr)
    return {"complete": not failed, "dry_run": False, "metadata": metadata, "path": out}


def metadata_text(metadata: dict) -> str:
    """The metadata as indented JSON, with the long mode's per-question map one question a line: about 70 bytes a
    question, so a release of 6,000 questions stays near 400 KB, under the 1 MiB that evaluate reads."""
    questions = metadata.get("generation", {}).get("context", {}).get("questions")
    if not questions:
        return json.dumps(metadata, ensure_ascii=False, indent=1) + "\n"
    placeholder = "\0questions\0"
    context = {**metadata["generation"]["context"], "questions": placeholder}
    text = json.dumps({**metadata, "generation": {**metadata["generation"], "context": context}},
                      ensure_ascii=False, indent=1)
    key = f'"questions": {json.dumps(placeholder)}'
    indent = text[text.index(key) - 1::-1].index("\n") * " "  # the key's own indentation
    lines = ",\n".join(f"{indent} {json.dumps(qid, ensure_ascii=False)}: {json.dumps(entry, ensure_ascii=False)}"
                        for qid, entry in questions.items())
    return text.replace(key, '"questions": {\n' + lines + f"\n{indent}}}") + "\n"


def complete(backend, batch) -> list:
    """The backend's answers; an endpoint that refuses every request (a bad key) or stopped answering midway is
    an InputError saying so and how many answers are cached for the re-run."""
    from chimdqa_eval.llm import ChatError

    try:
        return backend.complete(batch)
    except ChatError as err:
        raise InputError(str(err)) from None


def _cap_message(backend) -> str | None:
    """What to tell the user when --max-llm-calls stopped the run, else None."""
    from chimdqa_eval.llm import cap_message

    client = getattr(backend, "client", None)
    return cap_message(client, "the predictions file") if client is not None and client.cap_reached else None


def logprobs_splitter(args, backend):
    """With --logprobs and --ask-confidence, a function (answer, answer text) -> the log-probabilities of the
    answer's tokens, or a text saying why they cannot be told apart; else None. The confidence line (置信度：N)
    taken off a reply is not the answer: its tokens are found by decoding the reply's tokens (the generated ones,
    or the served model's tokenizer's reading of the reply) until they spell the answer, and the rest left out."""
    from chimdqa_eval.generate.prompts import answer_token_count

    if not (args.logprobs and args.ask_confidence):
        return None
    if args.backend == "transformers":
        def generated(answer, text):
            n = answer_token_count(answer.tokens, backend.decode, text)
            return answer.logprobs[:n] if n is not None else "its generated tokens do not spell the answer"
        return generated
    tokenizer = context_tokenizer(args)
    decode = functools.partial(tokenizer.decode, skip_special_tokens=True)

    def served(answer, text):
        ids = tokenizer(answer.text, add_special_tokens=False)["input_ids"]
        n = answer_token_count(ids, decode, text)
        # the endpoint may add the end-of-text token's; any other difference is another tokenizer's reading
        if n is None or len(answer.logprobs) not in (len(ids), len(ids) + 1):
            return (f"the endpoint sent {len(answer.logprobs)} log-probabilities for a reply of {len(ids)} tokens by "
                    f"--context-tokenizer {args.context_tokenizer}: is it the served model's tokenizer?")
        return answer.logprobs[:n]
    return served


def prediction_records(rows, answers, retrieved, ask_confidence: bool, logprobs: bool,
                       answer_logprobs=None) -> tuple[list, list]:
    """(submission lines of the answered questions, indices of the unanswered ones). `answer_logprobs` (from
    logprobs_splitter) takes the log-probabilities of a reply that had a confidence line down to its answer's."""
    from chimdqa_eval.generate.prompts import parse_reply

    records, failed = [], []
    for i, (row, answer) in enumerate(zip(rows, answers)):
        # An empty reply has no tokens, so an empty list of log-probabilities is a whole answer.
        if answer.error is None and logprobs and (answer.logprobs is None
                                                  or not answer.logprobs and answer.text.strip()):
            answer.error = "the endpoint returned no token log-probabilities (does it support logprobs?)"
        if answer.error is not None:
            failed.append(i)
            continue
        text, confidence = parse_reply(answer.text, ask_confidence)
        record = {"id": row["id"], "prediction": text}
        if retrieved[i] is not None:
            record["retrieved_contexts"] = [c.context() for c in retrieved[i]]
        if logprobs:
            kept = answer.logprobs if confidence is None or not answer_logprobs else answer_logprobs(answer, text)
            if isinstance(kept, str):
                answer.error = kept
                failed.append(i)
                continue
            record["logprobs"] = [min(0.0, float(x)) for x in kept]
        if ask_confidence:
            record["confidence"] = confidence
        records.append(record)
    return records, failed
