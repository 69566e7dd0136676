"""From RAG outputs to RAGChecker's metrics: claims -> checked labels -> boolean structures -> scores.

Only the structures the requested metrics need are built, and only for the queries that do not already carry
them (labels supplied by the caller, or read from a RAGChecker file). Scores are per query first; every
aggregate (overall, groups, breakdowns) is a mean over per-query scores, times 100, at full precision.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from chimdqa_eval.aggregate import breakdown_values, summarize
from chimdqa_eval.llm import endpoint_from_keywords, open_client
from chimdqa_eval.models import MODEL_PACKAGES
from chimdqa_eval.rag import metrics as M
from chimdqa_eval.rag.checkers import CheckTask, LLMChecker, nli_checker
from chimdqa_eval.rag.claims import LLMExtractor, SentenceExtractor, parse_claim_list, sentence_claims
from chimdqa_eval.schema import (
    LABEL_ORDER,
    InputError,
    breakdown_columns,
    check_answer_pairs,
    check_breakdowns,
    check_same_length,
    check_texts,
)
from chimdqa_eval.signature import make_signature

EXTRACTORS = ("sentence", "llm")
CHECKERS = ("nli", "llm", "precomputed")
CLAIM_FIELDS = {"response": "response_claims", "reference": "gt_answer_claims"}


@dataclass
class RagItem:
    """One query. `given` holds what the caller already has: claims and/or label structures by RAGChecker name."""
    name: str  # "query 3" or "query_id abc": used in every error message
    question: str
    reference: str
    response: str
    chunks: list
    given: dict = field(default_factory=dict)


def claim_text(claim, where: str) -> str:
    """A claim as text: a string, or RAGChecker's [subject, relation, object] triplet joined by spaces."""
    if isinstance(claim, str):
        return claim
    if isinstance(claim, (list, tuple)) and all(isinstance(part, str) for part in claim):
        return " ".join(claim)
    raise InputError(f"{where}: a claim must be a string or a list of strings, got {claim!r:.80}")


def _given_claims(item: RagItem, whose: str):
    key = CLAIM_FIELDS[whose]
    claims = item.given.get(key)
    if claims is None:
        return None
    if not isinstance(claims, (list, tuple)):
        raise InputError(f"{item.name}: {key} must be a list of claims, got {type(claims).__name__}")
    return [claim_text(c, f"{item.name}: {key}[{k}]") for k, c in enumerate(claims)]


class _Tools:
    """Extractor, checker and LLM client, each built on first use so unused models are never loaded."""

    def __init__(self, extractor, checker, nli_model, endpoint, device, download=None):
        """`endpoint`: an LLMEndpoint, an open ChatClient (shared: not closed here), a dict of the keyword
        arguments judge_model, api_base, api_key_env, concurrency, cache_path, or None. `download`: whether the
        NLI model may come from the Hub (see compute_rag)."""
        self.spec = dict(extractor=extractor, checker=checker, nli_model=nli_model, endpoint=endpoint, device=device,
                         download=download)
        for kind, value, allowed in (("extractor", extractor, EXTRACTORS), ("checker", checker, CHECKERS)):
            if isinstance(value, str) and value not in allowed:
                raise InputError(f"unknown {kind} {value!r}; expected one of {', '.join(allowed)} "
                                 f"or an object with a {'extract' if kind == 'extractor' else 'check'}() method")
        self._client, self._owned = None, False
        self.built = {}  # role -> the extractor / checker object, once something needed it

    def client(self):
        if self._client is None:
            endpoint = self.spec["endpoint"]
            if endpoint is None or isinstance(endpoint, dict):
                endpoint = endpoint_from_keywords(**(endpoint or {"judge_model": None, "api_base": None}),
                                                  needed_for="the LLM extractor/checker")
            self._client, self._owned = open_client(endpoint)
        return self._client

    def extractor(self):
        if "extractor" not in self.built:
            spec = self.spec["extractor"]
            self.built["extractor"] = (SentenceExtractor() if spec == "sentence" else
                                       LLMExtractor(self.client()) if spec == "llm" else spec)
        return self.built["extractor"]

    def checker(self):
        if "checker" not in self.built:
            spec = self.spec["checker"]  # never "precomputed": evaluate_items stops before asking for a checker
            if spec == "nli":
                self.built["checker"] = nli_checker(self.spec["nli_model"], self.spec["device"], self.spec["download"])
            else:
                self.built["checker"] = LLMChecker(self.client()) if spec == "llm" else spec
        return self.built["checker"]

    def judge_fields(self) -> dict:
        """The LLM judge's signature fields (model, API host, temperature) when a tool asked one."""
        return self._client.signature_fields if self._client is not None else {}

    def close(self) -> None:
        if self._client is not None and self._owned:
            self._client.close()

    def describe(self, role: str, any_given: bool) -> str:
        """'given', the tool's name, or 'given+<name>' when some queries came with results and others did not."""
        names = (["given"] if any_given else []) + (
            [getattr(self.built[role], "name", type(self.built[role]).__name__)] if role in self.built else [])
        return "+".join(names) or "none"


def _extraction_todo(items, needed):
    """({whose: [given claims or None per item]}, [(whose, item index) whose claims must be extracted]): only
    for items that must check claims they were not given."""
    out, todo = {}, []
    for whose in ("response", "reference"):
        structures = [s for s in needed if M.CLAIMS_OF[s] == whose]
        if structures:
            out[whose] = [_given_claims(item, whose) for item in items]
            todo += [(whose, i) for i, item in enumerate(items)
                     if out[whose][i] is None and any(item.given.get(s) is None for s in structures)]
    texts = [items[i].response if whose == "response" else items[i].reference for whose, i in todo]
    return out, todo, texts, [items[i].question for _, i in todo]


def _claims(items, needed, tools):
    """{whose: [claims or None per item]}; extracted (in one batch) only for items that must check claims they
    were not given."""
    out, todo, texts, questions = _extraction_todo(items, needed)
    if todo:
        extracted = tools.extractor().extract(texts, questions, [f"{items[i].name} ({whose})" for whose, i in todo])
        for (whose, i), found in zip(todo, extracted):
            out[whose][i] = list(found)
    return out


def _tasks(item: RagItem, structure: str, claims: list) -> list[CheckTask]:
    """The premises one structure checks `claims` against: the other answer, or each chunk in turn."""
    where = f"{item.name} ({structure})"
    if structure == "answer2response":
        return [CheckTask(item.question, item.reference, claims, where)]
    if structure == "response2answer":
        return [CheckTask(item.question, item.response, claims, where)]
    return [CheckTask(item.question, chunk, claims, f"{where}, chunk {j}") for j, chunk in enumerate(item.chunks)]


def _check_todo(items, needed, claims):
    """(labels given per item, [(item index, structure)] to check, their CheckTasks, (start, count) spans)."""
    labels = [{s: item.given[s] for s in needed if item.given.get(s) is not None} for item in items]
    todo = [(i, s) for i, item in enumerate(items) for s in needed if s not in labels[i]]
    tasks, spans = [], []
    for i, s in todo:
        new = _tasks(items[i], s, claims[M.CLAIMS_OF[s]][i])
        spans.append((len(tasks), len(new)))
        tasks.extend(new)
    return labels, todo, tasks, spans


def _labels(items, needed, claims, tools) -> list[dict]:
    """Per item {structure: RAGChecker labels}: given ones kept, the rest checked in one batch."""
    labels, todo, tasks, spans = _check_todo(items, needed, claims)
    answers = tools.checker().check(tasks) if tasks else []
    for (i, s), (start, count) in zip(todo, spans):
        part = answers[start:start + count]
        if s in ("answer2response", "response2answer"):
            labels[i][s] = part[0]
        else:  # one list per chunk -> RAGChecker's rows of claims, one label per chunk
            n_claims = len(claims[M.CLAIMS_OF[s]][i])
            labels[i][s] = [[part[j][k] for j in range(count)] for k in range(n_claims)]
    return labels


def item_structures(item: RagItem, labels: dict, claims: dict) -> dict:
    """Boolean structures of one item, each checked against its claim and chunk counts. `claims` maps
    response/reference to the item's claims, or None when only labels were given: then the first structure
    over those claims fixes how many there are."""
    out, counts = {}, {whose: len(c) for whose, c in claims.items() if c is not None}
    for s, value in labels.items():
        flags = M.entailed(value, f"{item.name}: {s}")
        n_claims = counts.setdefault(M.CLAIMS_OF[s], flags.shape[0])
        out[s] = M.check_structure(s, flags, n_claims, len(item.chunks), item.name)
    return out


def llm_calls_planned(items, metrics, client, extractor: str = "llm", checker: str = "llm") -> dict:
    """What the LLM extractor and checker would still ask for these items (a dry run; asks nothing). With
    extractor="sentence" the claims are split here (offline); with another checker than "llm" nothing is checked
    by the LLM.

    {"rag_extract": {"calls", "exact"}, "rag_check": {"calls", "exact"[, "note"]}}. Extraction is exact. The
    checking requests depend on the claims: exact where they are given or their extraction is cached;
    otherwise each premise is counted as one request (a claim list longer than the checker's batch needs more,
    an empty one none), and "exact" is False."""
    needed = M.required_structures(M.resolve_metrics(metrics))
    claims, todo, texts, questions = _extraction_todo(items, needed)
    asked, requests = LLMExtractor.requests(texts, questions) if extractor == "llm" else ([], [])
    for (whose, i), text in zip(todo, texts):
        claims[whose][i] = [] if extractor == "llm" else sentence_claims(text)  # LLM: empty text, nothing asked
    unknown = set()
    for k, outcome in zip(asked, client.cached(requests, parse_claim_list)):
        whose, i = todo[k]
        if outcome is None:
            claims[whose][i] = ["?"]  # one stand-in claim: one request per premise
            unknown.add((whose, i))
        else:
            claims[whose][i] = outcome.value
    _, check_todo, tasks, spans = _check_todo(items, needed, claims)
    if checker != "llm":
        check_todo, tasks, spans, unknown = [], [], [], set()
    checker = LLMChecker(client)
    exact_tasks = [task for (i, s), (start, count) in zip(check_todo, spans)
                   if (M.CLAIMS_OF[s], i) not in unknown for task in tasks[start:start + count]]
    check = {"calls": client.pending(checker.requests(exact_tasks)[0]), "exact": not unknown}
    if unknown:
        estimated = sum(count for (i, s), (_, count) in zip(check_todo, spans) if (M.CLAIMS_OF[s], i) in unknown)
        check["calls"] += estimated
        check["note"] = (f"{len(unknown)} claim lists are not extracted yet: their {estimated} premises are counted "
                         f"as one request each (the real number is one per {checker.claims_per_request} claims "
                         "per premise, none for an answer without claims)")
    return {"rag_extract": {"calls": client.pending(requests), "exact": True}, "rag_check": check}


def evaluate_items(items, *, metrics=M.ALL_METRICS, extractor="sentence", checker="nli", nli_model=None,
                   judge_model=None, api_base=None, api_key_env="OPENAI_API_KEY", concurrency=16, cache_path=None,
                   breakdowns=None, device=None, endpoint=None, download=None) -> dict:
    """The library result for validated RagItems (see compute_rag); `breakdowns` as check_inputs returns them."""
    metrics = M.resolve_metrics(metrics)
    needed = M.required_structures(metrics)
    if endpoint is None:
        endpoint = dict(judge_model=judge_model, api_base=api_base, api_key_env=api_key_env,
                        concurrency=concurrency, cache_path=cache_path)
    tools = _Tools(extractor, checker, nli_model, endpoint, device, download)
    unlabelled = [(item, s) for item in items for s in needed if item.given.get(s) is None]
    if unlabelled and checker == "precomputed":
        item, s = unlabelled[0]
        raise InputError(f"{item.name}: no {s} labels given, and checker='precomputed' computes none; supply "
                         "them in labels=, or choose checker='nli' or 'llm'")
    try:
        if unlabelled:
            tools.checker()  # fail on a missing model before any (possibly paid) claim extraction
        claims = _claims(items, needed, tools)
        labels = _labels(items, needed, claims, tools)
    finally:
        tools.close()
    per_query = [M.query_scores(item_structures(item, labels[i], {w: c[i] for w, c in claims.items()}), metrics)
                 for i, item in enumerate(items)]

    columns = breakdown_columns(breakdowns or {})
    summary = summarize({m: [100.0 * q[m] for q in per_query] for m in metrics}, columns, label_order=LABEL_ORDER)
    result = {m: summary[m]["value"] for m in metrics}
    for group, names in M.GROUPS.items():
        result[group] = {m: result[m] for m in names if m in metrics}
    result["n"] = len(items)
    for column, column_labels in columns.items():
        result[f"by_{column}"] = breakdown_values(summary, column, column_labels)
    result["per_item"] = [
        {**{field_: claims[whose][i] for whose, field_ in CLAIM_FIELDS.items() if whose in claims},
         **labels[i], "metrics": {m: 100.0 * v for m, v in per_query[i].items()}}
        for i in range(len(items))]
    any_claims_given = any(item.given.get(f) is not None for item in items for f in CLAIM_FIELDS.values())
    any_labels_given = any(item.given.get(s) is not None for item in items for s in needed)
    packages = ("numpy",) + (MODEL_PACKAGES if tools.spec["checker"] == "nli" and "checker" in tools.built else ())
    result["signature"] = make_signature({
        "metric": "chimdqa_rag", "metrics": "all" if metrics == M.ALL_METRICS else ",".join(metrics),
        "extractor": tools.describe("extractor", any_claims_given),
        "checker": tools.describe("checker", any_labels_given), **tools.judge_fields(),
        "mean": "per-query", "scale": "100"}, packages)
    return result


def _chunk_lists(retrieved_contexts) -> list[list[str]]:
    out = []
    for i, chunks in enumerate(retrieved_contexts):
        if isinstance(chunks, (str, bytes)) or not isinstance(chunks, (list, tuple)):
            raise InputError(f"retrieved_contexts[{i}] (query {i}): expected a list of chunk strings, "
                             f"got {type(chunks).__name__}")
        for j, chunk in enumerate(chunks):
            if not isinstance(chunk, str):
                raise InputError(f"retrieved_contexts[{i}][{j}] (query {i}): chunk is {type(chunk).__name__}, "
                                 "not a string")
        out.append(list(chunks))
    return out


def check_inputs(predictions, references, questions, retrieved_contexts, labels=None, **breakdowns):
    """(RagItems, {argument: canonical labels} of the breakdowns given: domains=, question_types=, levels=,
    categories=), or InputError naming the first bad query."""
    predictions, references = check_answer_pairs(predictions, references)  # one rule: a reference is never empty
    questions = check_texts("questions", questions)
    if retrieved_contexts is None or isinstance(retrieved_contexts, (str, bytes)):
        raise InputError("retrieved_contexts: expected one list of chunk strings per query")
    retrieved_contexts = list(retrieved_contexts)
    labels = None if labels is None else list(labels)
    breakdowns = check_breakdowns(**breakdowns)
    n = check_same_length(predictions=predictions, references=references, questions=questions,
                          retrieved_contexts=retrieved_contexts, labels=labels, **breakdowns)
    chunks = _chunk_lists(retrieved_contexts)
    items = []
    for i in range(n):
        given = labels[i] if labels is not None else None
        if given is not None and not isinstance(given, dict):
            raise InputError(f"labels[{i}] (query {i}): expected a dict of claims/labels or None, "
                             f"got {type(given).__name__}")
        items.append(RagItem(f"query {i}", questions[i], references[i], predictions[i], chunks[i], given or {}))
    return items, breakdowns


def compute_rag(predictions, references, questions, retrieved_contexts, *, metrics=M.ALL_METRICS,
                extractor="sentence", checker="nli", nli_model=None, judge_model=None, api_base=None,
                api_key_env="OPENAI_API_KEY", concurrency=16, cache_path=None, labels=None, domains=None,
                question_types=None, levels=None, categories=None, device=None, endpoint=None,
                download=None) -> dict:
    """RAGChecker's metrics (0-100, mean over queries) for RAG responses.

    predictions / references / questions: one string per query; retrieved_contexts: one list of chunk strings
    per query. metrics: names or groups (overall, retriever, generator, all). extractor: "sentence" (offline),
    "llm", or an object with extract(texts, questions, names). checker: "nli" (needs nli_model=), "llm" (needs
    endpoint=, a chimdqa_eval.llm.LLMEndpoint or an open ChatClient, or judge_model= and api_base=),
    "precomputed" (everything from labels=), or an object with check(tasks).
    labels: optional, one dict (or None) per query with any of response_claims, gt_answer_claims and the four
    structures in RAGChecker's format; what is given is used as is, the rest is extracted and checked.
    domains, question_types, levels, categories: optional labels per query for the by_<column> breakdowns
    ({label: {metric: value, ..., "n"}}).
    download: whether the NLI model may come from the Hugging Face Hub (False: local folders and the HF cache
    only; None: when the Hub is reachable and HF_HUB_OFFLINE is not set).
    """
    items, breakdowns = check_inputs(predictions, references, questions, retrieved_contexts, labels,
                                     domains=domains, question_types=question_types, levels=levels,
                                     categories=categories)
    return evaluate_items(items, metrics=metrics, extractor=extractor, checker=checker, nli_model=nli_model,
                          judge_model=judge_model, api_base=api_base, api_key_env=api_key_env,
                          concurrency=concurrency, cache_path=cache_path, breakdowns=breakdowns, device=device,
                          endpoint=endpoint, download=download)
