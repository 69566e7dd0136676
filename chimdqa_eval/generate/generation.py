"""Answering the release's questions with a model into a predictions file `chimdqa evaluate` reads, with its
metadata side file: `generate(config, mode, out)` for a GenerateConfig (the command is
chimdqa_eval.commands.generate).

Modes: ``long`` packs the question's document into the prompt (packing.py), ``rag`` retrieves chunks of it
(retrieval.py), ``closed-book`` gives no document (Chinese SimpleQA always). Answers are cached by the full
request as they arrive, so a re-run asks nothing again and a killed run resumes where it stopped; questions
left unanswered (a request that kept failing) are listed and the run is incomplete (exit 1 from the command);
a run stopped by --max-llm-calls writes what it has and exits 2, as evaluate does at the cap. An endpoint that
stops accepting connections stops the run within seconds (chimdqa_eval.llm's circuit breaker): an error names
it and says how many answers are cached for the re-run.
"""
from __future__ import annotations

import datetime
import functools
import json
import sys
from pathlib import Path

from chimdqa_eval import release
from chimdqa_eval.evaluation import SIMPLEQA_CONFIG, load_questions
from chimdqa_eval.generate import backends, packing, prompts
from chimdqa_eval.generate.config import MODES, GenerateConfig  # noqa: F401 (MODES: the modes, for callers)
from chimdqa_eval.generate.evidence import retrieval_quality as quality
from chimdqa_eval.generate.prompts import answer_token_count, parse_reply
from chimdqa_eval.generate.retrieval import RetrievalSettings, Retriever
from chimdqa_eval.jsonio import write_atomic
from chimdqa_eval.llm import ChatError, cap_message, endpoint_from_args, format_plan
from chimdqa_eval.models import ModelUnavailable, load_tokenizer
from chimdqa_eval.report.results import items_jsonl
from chimdqa_eval.schema import InputError, where
from chimdqa_eval.signature import make_signature
from chimdqa_eval.submission import metadata_path_for

SHRINK = {"long": "--max-context-tokens", "rag": "--top-k or --chunk-size"}  # what shortens each mode's context


def exit_code(result: dict) -> int:
    """2 when --max-llm-calls stopped the run (as evaluate at its cap), 1 when questions are left unanswered."""
    return 2 if result.get("capped") else 0 if result["complete"] else 1


def make_backend(config):
    if config.backend == "transformers":
        return backends.TransformersBackend(config.model, max_new_tokens=config.max_tokens,
                                            batch_size=config.batch_size, device=config.device,
                                            logprobs=config.logprobs, download=config.allow_download,
                                            cache_path=config.llm_cache)

    endpoint = endpoint_from_args(config, model_attr="model", needed_for="--backend openai")
    return backends.ApiBackend(endpoint.client(parse_retries=0), logprobs=config.logprobs)


def document_pages(rows, data_dir) -> tuple[dict, dict]:
    """({doc_id: [(page, text)]}, {doc_id: title}) for the documents the questions ask about."""
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


def token_counter(config, backend):
    """(count, what the metadata calls it, its name in the signature)."""
    if config.backend == "transformers":
        return packing.tokenizer_counter(backend.tokenizer), f"tokenizer of {config.model}", f"hf:{config.model}"
    if config.context_tokenizer:
        return (packing.tokenizer_counter(context_tokenizer(config)), f"tokenizer of {config.context_tokenizer}",
                f"hf:{config.context_tokenizer}")
    return packing.approx_tokens, packing.APPROX_COUNTER, "approx"


def context_tokenizer(config):
    """The tokenizer --context-tokenizer names, loaded once (InputError when it cannot be)."""
    return _load_tokenizer(config.context_tokenizer, config.allow_download)


@functools.lru_cache(maxsize=2)
def _load_tokenizer(name: str, download: bool):
    try:
        return load_tokenizer(name, "context tokenizer", download=download)
    except ModelUnavailable as err:
        raise InputError(str(err)) from None


def build_contexts(config, mode, rows, backend, template) -> tuple[list, list, dict, dict]:
    """(context text or None per question, retrieved chunks or None per question, metadata of the mode,
    {doc_id: title})."""
    if mode == "closed-book":
        return [None] * len(rows), [None] * len(rows), {}, {}
    pages, titles = document_pages(rows, config.data_dir)
    if mode == "long":
        return _long_contexts(config, rows, pages, titles, backend, template)
    settings = RetrievalSettings(method=config.retrieval, top_k=config.top_k, chunk_size=config.chunk_size,
                                 chunk_overlap=config.chunk_overlap, embedding_model=config.embedding_model,
                                 reranker=config.reranker, rerank_candidates=config.rerank_candidates)
    retriever = Retriever(pages, settings, device=config.device, download=config.allow_download)
    retrieved = retriever.search_all([r["question"] for r in rows], [r["doc_id"] for r in rows])
    meta = {**settings.metadata(), "index_key": retriever.key, "documents_fingerprint": retriever.fingerprint,
            "n_chunks": retriever.n_chunks, "index_cached": dict(retriever.cached)}
    return [prompts.render_passages(template, chunks) for chunks in retrieved], retrieved, meta, titles


def _long_contexts(config, rows, pages, titles, backend, template) -> tuple[list, list, dict, dict]:
    """build_contexts for the long mode: each document packed within its budget by --truncation; the metadata
    records the policy, the budget, the counter, and per document and per question what was kept."""
    count, counter_name, counter_id = token_counter(config, backend)
    budgets = {doc_id: config.max_context_tokens for doc_id in pages}
    if config.backend == "transformers":  # a local model's own limit caps the budget: the prompt must fit
        for doc_id in pages:
            empty = [prompts.render_messages(template, r["question"], r.get("category", "factual"), context="",
                                             title=titles[doc_id], ask_confidence=config.ask_confidence)
                     for r in rows if r["doc_id"] == doc_id]
            budgets[doc_id] = max(1, min(budgets[doc_id], backend.context_room(empty)))
    packed = {doc_id: packing.pack_pages(doc_pages, budgets[doc_id], count, config.truncation)
              for doc_id, doc_pages in pages.items()}
    truncated = {doc_id for doc_id, (_, info) in packed.items() if info["truncated"]}
    evidence = release.read_evidence(config.data_dir, files=config.data_files)
    questions = {}
    for r in rows:
        info = packed[r["doc_id"]][1]
        questions[r["id"]] = {"tokens": info["tokens"]}
        if r["id"] in evidence:  # an evidence page the document does not have (no text) counts as cut
            questions[r["id"]]["evidence"] = {str(page): packing.survival(info["page_shares"].get(page, 0.0))
                                              for page in evidence[r["id"]]}
    meta = {"truncation": config.truncation, "truncation_rule": packing.TRUNCATION_RULES[config.truncation],
            "max_context_tokens": config.max_context_tokens, "token_counter": counter_name,
            "signature": make_signature({"truncation": config.truncation, "budget": config.max_context_tokens,
                                         "tokens": counter_id.replace("|", "/")}),
            "documents": len(packed), "documents_truncated": len(truncated),
            "questions_truncated": sum(r["doc_id"] in truncated for r in rows),
            "pages": {doc_id: [info["pages_kept"], info["pages_total"]] for doc_id, (_, info) in packed.items()},
            "tokens": {doc_id: [info["tokens"], info["tokens_total"]] for doc_id, (_, info) in packed.items()},
            "evidence_pages": {state: sum(list(q.get("evidence", {}).values()).count(state) for q in questions.values())
                               for state in ("kept", "partly", "cut")},
            "questions": questions}
    if any(b < config.max_context_tokens for b in budgets.values()):
        meta["budgets"] = budgets  # per document, where the model's limit made it smaller
    return [packed[r["doc_id"]][0] for r in rows], [None] * len(rows), meta, titles


def retrieval_quality(config, rows, retrieved, top_k: int) -> dict | None:
    evidence = release.read_evidence(config.data_dir, files=config.data_files)
    return quality([[c.page for c in chunks] for chunks in retrieved], [evidence.get(r["id"]) for r in rows],
                   top_k, {"question_type": [r["question_type"] for r in rows],
                           "domain": [r["domain"] for r in rows]})


def generate(config: GenerateConfig, mode: str, out) -> dict:
    """Answer every selected question in `mode` and write `out` and its metadata; returns {"complete": bool,
    "dry_run": bool, "metadata": ..., "path": out} and "capped": True when --max-llm-calls stopped it."""
    out = Path(out)
    if mode == "rag" and config.embedding_model and config.retrieval == "bm25":
        raise InputError(f"--embedding-model {config.embedding_model}: only --retrieval dense or hybrid use an "
                         "encoder (the default is bm25); add one of them, or leave the encoder out")
    if config.config == SIMPLEQA_CONFIG and mode != "closed-book":
        raise InputError("--config chinese_simpleqa has no documents: use --mode closed-book")
    if out.suffix != ".jsonl":
        raise InputError(f"--out {out}: a predictions file must end in .jsonl")
    rows, _, dataset = load_questions(config.config, config.data_dir, config.data_files, config.split)
    template = prompts.load_template(config.prompt)
    backend = make_backend(config)
    try:
        answer_logprobs = logprobs_splitter(config, backend)  # loads the tokenizer it needs before anything is asked
        contexts, retrieved, mode_meta, titles = build_contexts(config, mode, rows, backend, template)
        batch = []
        for row, context in zip(rows, contexts):
            render = functools.partial(prompts.render_messages, template, row["question"],
                                       row.get("category", "factual"), title=titles.get(row.get("doc_id"), ""),
                                       ask_confidence=config.ask_confidence)
            messages = render(context=context)
            bare = tuple(render(context="")) if context is not None else None
            batch.append(backends.Prompt(tuple(messages), backends.prompt_cache_key(template.version, messages),
                                         bare, SHRINK.get(mode)))
        pending = backend.pending(batch)
        if config.dry_run:
            print(format_plan({f"generate ({mode})": {"calls": pending, "exact": True,
                                                      "note": f"{len(batch) - pending} of {len(batch)} cached"}}))
            return {"complete": True, "dry_run": True, "metadata": None, "path": out}
        if pending and config.backend == "openai":
            backend.client.probe()  # a wrong URL or a server that is down stops here, not after minutes of retries
        answers = complete(backend, batch)
        backend_meta = backend.metadata()
        cap = _cap_message(backend)
    finally:
        backend.close()
    records, failed = prediction_records(rows, answers, retrieved, config.ask_confidence, config.logprobs,
                                         answer_logprobs)
    generation = {
        "mode": mode, "backend": config.backend, "model": config.model, **backend_meta,
        "temperature": config.temperature, "max_tokens": config.max_tokens,
        "template": template.metadata(), "ask_confidence": config.ask_confidence, "logprobs": config.logprobs,
        "dataset": {k: dataset[k] for k in ("name", "config", "split", "revision")},
        "n_questions": len(rows), "n_answered": len(records), "n_from_cache": sum(a.cached for a in answers),
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    if mode == "long":
        generation["context"] = mode_meta
    if mode == "rag":
        generation["retrieval"] = mode_meta
        quality = retrieval_quality(config, rows, retrieved, mode_meta["top_k"])
        if quality is not None:
            generation["retrieval_quality"] = quality
    metadata = {"model": config.name or config.model, "rag": mode == "rag",
                "date": datetime.date.today().isoformat(), **({"notes": config.notes} if config.notes else {}),
                "generation": generation}
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, items_jsonl(records))  # readers see the old file or the new one, never half of one
    write_atomic(metadata_path_for(out), metadata_text(metadata))
    print(f"wrote {len(records)} predictions to {out} ({generation['n_from_cache']} from the cache) "
          f"and {metadata_path_for(out)}")
    if mode == "long" and mode_meta["questions_truncated"]:
        pages = mode_meta["evidence_pages"]
        print(f"{mode_meta['questions_truncated']} of {len(rows)} questions' documents cut to "
              f"{config.max_context_tokens} tokens ({config.truncation}); evidence pages kept {pages['kept']}, "
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
    try:
        return backend.complete(batch)
    except ChatError as err:
        raise InputError(str(err)) from None


def _cap_message(backend) -> str | None:
    """What to tell the user when --max-llm-calls stopped the run, else None."""
    client = getattr(backend, "client", None)
    return cap_message(client, "the predictions file") if client is not None and client.cap_reached else None


def logprobs_splitter(config, backend):
    """With --logprobs and --ask-confidence, a function (answer, answer text) -> the log-probabilities of the
    answer's tokens, or a text saying why they cannot be told apart; else None. The confidence line (置信度：N)
    taken off a reply is not the answer: its tokens are found by decoding the reply's tokens (the generated ones,
    or the served model's tokenizer's reading of the reply) until they spell the answer, and the rest left out."""
    if not (config.logprobs and config.ask_confidence):
        return None
    if config.backend == "transformers":
        def generated(answer, text):
            n = answer_token_count(answer.tokens, backend.decode, text)
            return answer.logprobs[:n] if n is not None else "its generated tokens do not spell the answer"
        return generated
    tokenizer = context_tokenizer(config)
    decode = functools.partial(tokenizer.decode, skip_special_tokens=True)

    def served(answer, text):
        ids = tokenizer(answer.text, add_special_tokens=False)["input_ids"]
        n = answer_token_count(ids, decode, text)
        # the endpoint may add the end-of-text token's; any other difference is another tokenizer's reading
        if n is None or len(answer.logprobs) not in (len(ids), len(ids) + 1):
            return (f"the endpoint sent {len(answer.logprobs)} log-probabilities for a reply of {len(ids)} tokens by "
                    f"--context-tokenizer {config.context_tokenizer}: is it the served model's tokenizer?")
        return answer.logprobs[:n]
    return served


def prediction_records(rows, answers, retrieved, ask_confidence: bool, logprobs: bool,
                       answer_logprobs=None) -> tuple[list, list]:
    """(submission lines of the answered questions, indices of the unanswered ones). `answer_logprobs` (from
    logprobs_splitter) takes the log-probabilities of a reply that had a confidence line down to its answer's."""
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
