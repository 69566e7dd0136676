"""`chimdqa build screen WORK --judges M1@URL M2@URL M3@URL`: the paper's automated audit (§2.4), in order:

1. Multi-model confidence. Each judge sees the document context, the question and the generated answer and
   returns a confidence in [0, 1] that the answer is right, supported by the document and the question clear.
   A pair goes on when at least --min-votes judges (default 2) give more than --confidence-threshold (0.85).
2. Context-truncation consistency. Each judge answers the question (without seeing the generated answer) from
   the full context, then from three truncated readings that keep --truncation-keep (half) of the context's
   pages from its beginning, its middle or its end, always with the pair's evidence pages. A truncated answer
   agrees with the same judge's full-context answer when, for factual types, this toolkit's rule judge grades
   it correct against the full-context answer (chimdqa_eval.factual.grade_answer), and for open-ended types
   when their ROUGE-L F over jieba tokens is >= --open-agreement (0.5). A pair goes on when the share of
   agreeing truncated answers (judges x 3 readings) is >= --min-agreement (0.8). A context of one page has
   nothing to cut: its readings are the full context, asked once (the cache), and agree.
3. Difficulty balancing. Within each domain (or over all pairs: --balance-within all), when L1 pairs are more
   than --max-l1-share (0.6) of the pairs left,
   the L1 pairs with the lowest mean judge confidence (then lowest agreement, then the last ids) are dropped until the
   share is at most that; the decision is logged in the manifest.

Every non-duplicate pair is written to screened.jsonl with its scores, its status (kept, dropped, or error when a
judge could not answer; a re-run retries those) and the reason.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path

from chimdqa_eval.build import work as W
from chimdqa_eval.build.endpoints import (model_fields,
                                          parse_json_object, usage)
from chimdqa_eval.build.generate import context_text, load_yaml, page_block, to_screen
from chimdqa_eval.factual import grade_answer
from chimdqa_eval.factual.version import NORMALIZER_VERSION
from chimdqa_eval.lexical import rouge_l
from chimdqa_eval.llm import ChatRequest, prompt_key
from chimdqa_eval.schema import DOMAINS, FACTUAL_TYPES, InputError
from chimdqa_eval.signature import make_signature
from chimdqa_eval.text import tokenize, tokenizer_signature

VIEWS = ("beginning", "middle", "end")


@dataclass(frozen=True)
class ScreenSettings:
    confidence_threshold: float = 0.85
    min_votes: int = 2
    truncation_keep: float = 0.5
    min_agreement: float = 0.8
    open_agreement: float = 0.5
    max_l1_share: float = 0.6
    balance_within: str = "domain"
    max_context_chars: int = 24000
    tokenizer: str = "jieba"

    def __post_init__(self):
        shares = {"confidence_threshold": self.confidence_threshold, "min_agreement": self.min_agreement,
                  "open_agreement": self.open_agreement, "max_l1_share": self.max_l1_share}
        for name, value in shares.items():
            if not 0 <= value <= 1:
                raise InputError(f"--{name.replace('_', '-')} must be between 0 and 1, got {value}")
        if not 0 < self.truncation_keep <= 1:
            raise InputError(f"--truncation-keep must be above 0 and at most 1, got {self.truncation_keep}")
        if self.balance_within not in ("domain", "all"):
            raise InputError(f"--balance-within must be domain or all, got {self.balance_within!r}")
        if self.min_votes < 1 or self.max_context_chars < 1:
            raise InputError("--min-votes and --max-context-chars must be positive")


# ---- pure parts ------------------------------------------------------------------------------------------------

def context_pages(pages: dict, evidence, max_chars: int) -> list[int]:
    """The pages a judge reads: all of them when they fit in max_chars, else the evidence pages and then the
    pages nearest to them until the budget is spent."""
    numbers = sorted(pages)
    size = {n: len(page_block(n, pages[n])) + 2 for n in numbers}
    if sum(size.values()) <= max_chars:
        return numbers
    chosen = [n for n in evidence if n in pages]
    used = sum(size[n] for n in chosen)
    for n in sorted(set(numbers) - set(chosen), key=lambda n: (min(abs(n - e) for e in chosen or [1]), n)):
        if used + size[n] > max_chars:
            break
        chosen.append(n)
        used += size[n]
    return sorted(chosen)


def truncated_views(numbers: list[int], evidence, keep: float) -> dict:
    """view -> pages: `keep` of the pages (at least one) from the beginning, the middle and the end, each with the
    evidence pages added back."""
    k = min(len(numbers), max(1, round(len(numbers) * keep)))
    start = (len(numbers) - k) // 2
    windows = {"beginning": numbers[:k], "middle": numbers[start:start + k], "end": numbers[len(numbers) - k:]}
    return {view: sorted(set(window) | (set(evidence) & set(numbers))) for view, window in windows.items()}


def votes(confidences, threshold: float) -> int:
    return sum(c > threshold for c in confidences)


def answers_agree(question_type: str, question: str, full: str, truncated: str, *, open_threshold: float,
                  tokenizer: str) -> tuple[bool, float]:
    """(agree, score): the rule judge's verdict (1.0 for CO) for factual types, ROUGE-L F for open-ended ones."""
    if question_type in FACTUAL_TYPES:
        correct = grade_answer(truncated, full, question) == "CO"
        return correct, float(correct)
    [score] = rouge_l([tokenize(truncated, tokenizer)], [tokenize(full, tokenizer)])
    return score >= open_threshold, round(score, 4)


def l1_quota(n_l2: int, max_share: float) -> int | None:
    """The most L1 pairs that keep their share of (L1 + n_l2) at or below max_share; None for no limit."""
    if max_share >= 1:
        return None
    return int(max_share * n_l2 / (1 - max_share) + 1e-9)


def balance_levels(pairs: list[dict], max_share: float, within: str = "domain") -> tuple[set, list[dict]]:
    """(ids dropped, one log entry per group) for pairs that passed the other checks, each with id, domain,
    level and `rank` (higher is better: the L1 pairs with the lowest rank are dropped first). The share is held
    within each domain, or over all pairs together (within="all")."""
    dropped, log = set(), []
    for domain in (DOMAINS if within == "domain" else ("all",)):
        members = [p for p in pairs if domain in (p["domain"], "all")]
        if not members:
            continue
        by_id = sorted((p for p in members if p["level"] == "L1"), key=lambda p: p["id"])
        l1 = sorted(by_id, key=lambda p: p["rank"], reverse=True)  # stable: among equal ranks the first ids stay
        n_l2 = len(members) - len(l1)
        quota = l1_quota(n_l2, max_share)
        cut = [p["id"] for p in l1[quota:]] if quota is not None and len(l1) > quota else []
        dropped.update(cut)
        log.append({within: domain, "L1": len(l1), "L2": n_l2, "L1_share": round(len(l1) / len(members), 4),
                    "L1_kept": len(l1) - len(cut), "dropped": sorted(cut)})
    return dropped, log


# ---- requests ----------------------------------------------------------------------------------------------------

def _prompt(name: str) -> dict:
    return load_yaml("screen.yaml")[name]


def confidence_request(context: str, question: str, answer: str) -> ChatRequest:
    prompt = _prompt("confidence")
    user = prompt["user"].format(context=context, question=question, answer=answer)
    return ChatRequest(({"role": "system", "content": prompt["system"]}, {"role": "user", "content": user}),
                       prompt_key(prompt["version"], prompt["system"], user))


def answer_request(context: str, question: str) -> ChatRequest:
    prompt = _prompt("answer")
    user = prompt["user"].format(context=context, question=question)
    return ChatRequest(({"role": "system", "content": prompt["system"]}, {"role": "user", "content": user}),
                       prompt_key(prompt["version"], prompt["system"], user))


def parse_confidence(raw: str) -> dict:
    reply = parse_json_object(raw)
    value = reply.get("confidence")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValueError(f"confidence must be a number from 0 to 1, got {value!r}")
    reason = reply.get("reason", "")
    return {"confidence": float(value), "reason": reason if isinstance(reason, str) else str(reason)}


def parse_answer(raw: str) -> str:
    answer = parse_json_object(raw).get("answer")
    if not isinstance(answer, str) or not answer.strip():
        raise ValueError("the reply has no non-empty string 'answer'")
    return answer.strip()


# ---- the stage -----------------------------------------------------------------------------------------------------

def readings(pair: dict, pages: dict, settings: ScreenSettings) -> dict:
    """view -> page numbers: the full context a judge reads and its three truncated readings."""
    full = context_pages(pages, pair["evidence_pages"], settings.max_context_chars)
    return {"full": full, **truncated_views(full, pair["evidence_pages"], settings.truncation_keep)}


# Requests are built and asked this many items at a time: a full release's contexts (thousands of pairs, four
# readings each, tens of thousands of characters apiece) would not fit in memory at once.
CHUNK = 256


def confidence_item(pages: dict, views: dict, pair: dict) -> ChatRequest:
    return confidence_request(context_text(pages[pair["doc_id"]], views[pair["id"]]["full"]), pair["question"],
                              pair["answer"])


def truncation_items(pairs) -> list[tuple]:
    """(pair, view) for each pair's full context and each truncated reading."""
    return [(p, view) for p in pairs for view in ("full", *VIEWS)]


def truncation_item(pages: dict, views: dict, item: tuple) -> ChatRequest:
    pair, view = item
    return answer_request(context_text(pages[pair["doc_id"]], views[pair["id"]][view]), pair["question"])


def chunks(items, make_request):
    for start in range(0, len(items), CHUNK):
        yield [make_request(item) for item in items[start:start + CHUNK]]


def ask_judges(judges: dict, items, make_request, parse, stage: str) -> dict:
    """name -> one outcome per item from every judge (the same requests); the judges, each its own endpoint, in
    parallel."""
    results = {name: [] for name in judges}
    for requests in chunks(items, make_request):
        with ThreadPoolExecutor(max_workers=len(judges)) as pool:
            futures = {name: pool.submit(client.complete_all, requests, parse, desc=f"{stage} {name}", stage=stage)
                       for name, client in judges.items()}
            for name, future in futures.items():
                results[name].extend(future.result())
    return results


def screened_pairs(work: Path) -> list[dict]:
    """The screen's pairs; InputError while some have no result yet (a judge failed or the call cap was hit):
    they could still change which L1 pairs the balancing keeps, so review and release wait for them."""
    pairs = W.read_rows(work, W.SCREENED)
    unfinished = [p["id"] for p in pairs if p["screen"]["status"] == "error"]
    if unfinished:
        raise InputError(f"{Path(work) / W.SCREENED}: {len(unfinished)} pairs have no screening result yet (e.g. "
                         f"{unfinished[0]}); run `chimdqa build screen` again to finish it first")
    return pairs


def screen_signature(settings: ScreenSettings, judges: dict) -> str:
    """What makes two screens' scores comparable: prompts, thresholds, agreement rules and judges."""
    return make_signature({
        "stage": "build-screen", "confidence_prompt": _prompt("confidence")["version"],
        "answer_prompt": _prompt("answer")["version"], "threshold": settings.confidence_threshold,
        "votes": settings.min_votes, "keep": settings.truncation_keep, "agreement": settings.min_agreement,
        "factual_rules": NORMALIZER_VERSION, "open_rouge_l": settings.open_agreement,
        "tok": tokenizer_signature(settings.tokenizer), "l1_share": f"{settings.max_l1_share}/{settings.balance_within}",
        "judges": ",".join(f"{f['model']}@{f['api']}:t{f['temperature']}"
                           for f in (model_fields(c) for c in judges.values()))})


def check_judges(judges: dict, settings: ScreenSettings) -> None:
    if len(judges) < settings.min_votes:
        raise InputError(f"--judges: {len(judges)} judge(s) given but --min-votes is {settings.min_votes}")


def screen_inputs(work: Path, settings: ScreenSettings) -> tuple[list, dict, dict]:
    """(pairs to screen, {doc_id: pages}, {pair id: readings})."""
    pages = W.pages_by_document(work)
    pairs = [p for p in W.read_rows(work, W.GENERATED) if to_screen(p)]
    return pairs, pages, {p["id"]: readings(p, pages[p["doc_id"]], settings) for p in pairs}


def screen_plan(work: Path, judges: dict, settings: ScreenSettings) -> dict:
    """{stage: {calls, exact, note}} for a dry run: the confidence calls exactly; the truncation calls as if every
    pair passed the confidence check (an upper bound)."""
    pairs, pages, views = screen_inputs(work, settings)
    plan = {}
    for stage, items, make_request in (("build-confidence", pairs, partial(confidence_item, pages, views)),
                                       ("build-truncation", truncation_items(pairs),
                                        partial(truncation_item, pages, views))):
        for name, client in judges.items():
            # summed per chunk: a request repeated in two chunks (one question on one context twice) counts twice
            plan[f"{stage} {name}"] = {"calls": sum(client.pending(r) for r in chunks(items, make_request)),
                                       "exact": stage == "build-confidence"}
            if stage == "build-truncation":
                plan[f"{stage} {name}"]["note"] = "at most: pairs the confidence check drops are not asked"
    return plan


def screen(work, judges: dict, settings: ScreenSettings = ScreenSettings()) -> dict:
    """judges: name -> client. Writes screened.jsonl; returns the stage's manifest record."""
    work = W.work_dir(work)
    check_judges(judges, settings)
    pairs, pages, views = screen_inputs(work, settings)
    for pair in pairs:
        pair["screen"] = {"context_pages": views[pair["id"]]["full"], "confidence": {}, "status": None, "reason": None}

    # 1. confidence
    asked = ask_judges(judges, pairs, partial(confidence_item, pages, views), parse_confidence, "build-confidence")
    for name, outcomes in asked.items():
        for pair, outcome in zip(pairs, outcomes):
            pair["screen"]["confidence"][name] = outcome.value if outcome.ok else {"error": outcome.error}
    passed = []
    for pair in pairs:
        record = pair["screen"]
        failed = {n: c["error"] for n, c in record["confidence"].items() if "error" in c}
        if failed:
            name, error = next(iter(failed.items()))
            record.update(status="error", reason=f"judge {name} gave no confidence: {error}")
            continue
        scores = [c["confidence"] for c in record["confidence"].values()]
        record["votes"] = votes(scores, settings.confidence_threshold)
        record["mean_confidence"] = round(sum(scores) / len(scores), 4)
        if record["votes"] < settings.min_votes:
            record.update(status="dropped", reason=f"confidence: {record['votes']} of {len(scores)} judges above "
                                                   f"{settings.confidence_threshold} (need {settings.min_votes})")
        else:
            passed.append(pair)

    # 2. truncation consistency
    keys = truncation_items(passed)
    answers = {p["id"]: {} for p in passed}
    asked = ask_judges(judges, keys, partial(truncation_item, pages, views), parse_answer, "build-truncation")
    for name, outcomes in asked.items():
        for (pair, view), outcome in zip(keys, outcomes):
            answers[pair["id"]][(name, view)] = outcome
    consistent = []
    for pair in passed:
        record, got = pair["screen"], answers[pair["id"]]
        errors = [(n, v, o.error) for (n, v), o in got.items() if not o.ok]
        if errors:
            record.update(status="error", reason=f"judge {errors[0][0]} gave no {errors[0][1]} answer: {errors[0][2]}")
            continue
        checks = []
        for name in judges:
            full = got[(name, "full")].value
            for view in VIEWS:
                agree, score = answers_agree(pair["question_type"], pair["question"], full, got[(name, view)].value,
                                             open_threshold=settings.open_agreement, tokenizer=settings.tokenizer)
                checks.append({"judge": name, "view": view, "pages": views[pair["id"]][view],
                               "answer": got[(name, view)].value, "agree": agree, "score": score})
        rate = sum(c["agree"] for c in checks) / len(checks)
        # Not a check of the paper's, only a hint for reviewers: does each judge's own answer match the pair's?
        matches = {n: answers_agree(pair["question_type"], pair["question"], pair["answer"], got[(n, "full")].value,
                                    open_threshold=settings.open_agreement, tokenizer=settings.tokenizer)[0]
                   for n in judges}
        record["truncation"] = {"agreement": round(rate, 4),
                                "full_answers": {n: got[(n, "full")].value for n in judges},
                                "full_answer_matches_pair": matches, "readings": checks}
        if rate < settings.min_agreement:
            record.update(status="dropped", reason=f"truncation: {sum(c['agree'] for c in checks)} of {len(checks)} "
                                                   f"truncated answers agree with the full-context answer "
                                                   f"({rate:.0%} < {settings.min_agreement:.0%})")
        else:
            consistent.append(pair)

    # 3. difficulty balancing
    ranked = [{"id": p["id"], "domain": p["domain"], "level": p["level"],
               "rank": (p["screen"]["mean_confidence"], p["screen"]["truncation"]["agreement"])} for p in consistent]
    cut, balancing = balance_levels(ranked, settings.max_l1_share, settings.balance_within)
    for pair in consistent:
        if pair["id"] in cut:
            group = pair["domain"] if settings.balance_within == "domain" else "all pairs"
            pair["screen"].update(status="dropped", reason=f"balance: L1 share of {group} above "
                                                           f"{settings.max_l1_share:.0%}; lowest-ranked L1 pairs cut")
        else:
            pair["screen"].update(status="kept", reason="passed confidence, truncation and balance checks")

    W.write_jsonl(work / W.SCREENED, pairs)
    statuses = [p["screen"]["status"] for p in pairs]
    counts = {"screened": len(pairs), "kept": statuses.count("kept"), "dropped": statuses.count("dropped"),
              "errors": statuses.count("error"),
              "dropped_confidence": sum(p["screen"]["reason"].startswith("confidence") for p in pairs),
              "dropped_truncation": sum(p["screen"]["reason"].startswith("truncation") for p in pairs),
              "dropped_balance": len(cut)}
    prompts = {name: _prompt(name)["version"] for name in ("confidence", "answer")}
    return W.record_stage(work, "screen", asdict(settings), counts, inputs=(W.GENERATED, W.PAGES),
                          balancing=balancing, prompts=prompts, signature=screen_signature(settings, judges),
                          judges={name: model_fields(client) for name, client in judges.items()},
                          llm_usage=usage(judges))
