"""`chimdqa build generate DOCS_DIR --out WORK`: QA pairs from an LLM, per document and question type.

DOCS_DIR holds a documents.jsonl (doc_id, domain, title, file) and the PDFs it names, as in a release. Page
text comes from the loader's PyMuPDF path (chimdqa_eval.release). For each document and each of the ten
question types one request goes out with the type's YAML template (templates/generate/<type>.yaml inside the
shared frame templates/generate/_frame.yaml), asking for --l1 L1 and --l2 L2 pairs as one JSON object.

A reply is used only when it is exactly that JSON object and every pair has a non-empty question and answer, a
level L1 or L2 and a non-empty list of evidence page numbers; otherwise it is asked again (the client's parse
retries). A pair citing a page the document does not have (with text) is kept in generated.jsonl with the
reason in `invalid` and goes no further. Extra pairs of a level beyond its target are cut (first ones kept); a
shortfall is counted in the manifest. A document longer than --max-context-chars is cut into page-aligned segments and the question types
take turns over them, so the types cover the whole document.

Near duplicates: within one document, a question whose character-bigram Jaccard similarity (over the
comparison key: NFKC, lower case, no punctuation or spaces) with an earlier question is >= --dedup-threshold
is marked `duplicate_of` that question and goes no further; it stays in generated.jsonl.
"""
from __future__ import annotations

import shutil
from functools import cache
from pathlib import Path

from chimdqa_eval import release
from chimdqa_eval.build import work as W
from chimdqa_eval.build.endpoints import (model_fields,
                                          parse_json_object)
from chimdqa_eval.factual import rules
from chimdqa_eval.generate.packing import page_block  # the page marker answering prompts use too
from chimdqa_eval.llm import ChatRequest, prompt_key
from chimdqa_eval.schema import LEVELS, QUESTION_TYPES, InputError, read_yaml_mapping, where
from chimdqa_eval.text import normalize_text

TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"
# Id codes of the question types, as in the sample release's ids (fin-ret-001).
TYPE_CODES = dict(zip(QUESTION_TYPES, ("ret", "fil", "sta", "cal", "cmp", "inf", "exp", "sum", "sug", "gen")))


@cache
def load_yaml(relative: str) -> dict:
    path = TEMPLATE_DIR / relative
    return read_yaml_mapping(path, str(path))[0]


def generation_template(question_type: str) -> dict:
    """system / user text of a question type's template and its version `frame-N/<type>-N`."""
    frame, typed = load_yaml("generate/_frame.yaml"), load_yaml(f"generate/{question_type}.yaml")
    return {"version": f"{frame['version']}/{typed['version']}", "system": frame["system"],
            "user": frame["user"], "type_zh": typed["type_zh"], "task": typed["task"]}


def segments(pages: dict, max_chars: int) -> list[list[int]]:
    """Consecutive page numbers grouped so each group's text is at most max_chars (a longer page stands alone)."""
    groups, current, size = [], [], 0
    for number in sorted(pages):
        length = len(page_block(number, pages[number]))
        if current and size + length > max_chars:
            groups.append(current)
            current, size = [], 0
        current.append(number)
        size += length
    return groups + [current] if current else groups


def context_text(pages: dict, numbers, max_chars: int | None = None) -> str:
    text = "\n\n".join(page_block(n, pages[n]) for n in numbers)
    return text[:max_chars] if max_chars else text


def comparison_key(text: str) -> str:
    return rules.key(normalize_text(text).lower())


def bigram_jaccard(a: str, b: str) -> float:
    """Jaccard similarity of two strings' character-bigram sets (a one-character string is its own bigram)."""
    sa = {a[i:i + 2] for i in range(max(1, len(a) - 1))}
    sb = {b[i:i + 2] for i in range(max(1, len(b) - 1))}
    return len(sa & sb) / len(sa | sb) if sa | sb else 1.0


def near_duplicates(questions, threshold: float) -> list[tuple[int, float] | None]:
    """For each question, (index of the earlier kept question it nearly repeats, similarity) or None."""
    keys = [comparison_key(q) for q in questions]
    kept, marks = [], []
    for i, key in enumerate(keys):
        best = max(((bigram_jaccard(key, keys[j]), j) for j in kept), default=(0.0, None))
        if best[1] is not None and best[0] >= threshold:
            marks.append((best[1], round(best[0], 4)))
        else:
            kept.append(i)
            marks.append(None)
    return marks


def parse_pairs(raw: str) -> list[dict]:
    """The pairs of a generator reply, each checked; ValueError (the client asks again) on any fault. Whether
    the evidence pages exist in the document is checked per pair afterwards (check_evidence)."""
    reply = parse_json_object(raw)
    pairs = reply.get("pairs")
    if not isinstance(pairs, list) or not pairs:
        raise ValueError("the reply has no non-empty list 'pairs'")
    out = []
    for i, pair in enumerate(pairs):
        if not isinstance(pair, dict):
            raise ValueError(f"pairs[{i}] is not an object")
        for field in ("question", "answer"):
            if not isinstance(pair.get(field), str) or not pair[field].strip():
                raise ValueError(f"pairs[{i}].{field} is missing or empty")
        level = pair.get("level")
        if not isinstance(level, str) or level.strip().upper() not in LEVELS:
            raise ValueError(f"pairs[{i}].level is {level!r}, not one of {', '.join(LEVELS)}")
        pages = pair.get("evidence_pages")
        if (not isinstance(pages, list) or not pages
                or not all(isinstance(p, int) and not isinstance(p, bool) and p > 0 for p in pages)):
            raise ValueError(f"pairs[{i}].evidence_pages must be a non-empty list of page numbers")
        out.append({"question": pair["question"].strip(), "answer": pair["answer"].strip(),
                    "level": level.strip().upper(), "evidence_pages": sorted(set(pages))})
    return out


def check_evidence(pair: dict, page_numbers) -> str | None:
    """Why a pair cannot be screened (it cites pages the document does not have, or pages without text), or None."""
    unknown = sorted(set(pair["evidence_pages"]) - set(page_numbers))
    return f"evidence page(s) {unknown} not among the document's pages with text" if unknown else None


def to_screen(pair: dict) -> bool:
    """Whether a generated pair goes on to the screen: its evidence checks out and it is not a near duplicate."""
    return pair["invalid"] is None and pair["duplicate_of"] is None


def fit_to_targets(pairs: list[dict], targets: dict) -> tuple[list[dict], dict]:
    """The first `targets[level]` pairs of each level, in reply order, and {level: shortfall} for levels short."""
    taken = {level: 0 for level in targets}
    kept = []
    for pair in pairs:
        if taken[pair["level"]] < targets[pair["level"]]:
            taken[pair["level"]] += 1
            kept.append(pair)
    return kept, {level: targets[level] - n for level, n in taken.items() if n < targets[level]}


def generation_request(document: dict, question_type: str, context: str, targets: dict) -> ChatRequest:
    template = generation_template(question_type)
    user = template["user"].format(type_zh=template["type_zh"], question_type=question_type,
                                   task=template["task"], n_l1=targets["L1"], n_l2=targets["L2"],
                                   n_total=targets["L1"] + targets["L2"], title=document["title"], context=context)
    return ChatRequest(({"role": "system", "content": template["system"]}, {"role": "user", "content": user}),
                       prompt_key(template["version"], template["system"], user))


def generation_requests(documents, pages, targets: dict, max_context_chars: int) -> list[ChatRequest]:
    """One request per document and question type (document by document, types in `targets` order); the types
    take turns over a long document's segments."""
    requests = []
    for doc in documents:
        groups = segments(pages[doc["doc_id"]], max_context_chars)
        requests += [generation_request(doc, t, context_text(pages[doc["doc_id"]], groups[i % len(groups)],
                                                             max_context_chars), targets[t])
                     for i, t in enumerate(targets)]
    return requests


def check_doc_ids(docs_dir) -> None:
    """InputError naming the line of documents.jsonl whose doc_id is not a plain file name: it names the document's
    copy WORK/pdf/<doc_id>.pdf, which must stay inside that folder."""
    path = release.release_dir(docs_dir) / release.DOCUMENT_INDEX
    for number, record in release.read_jsonl(path):
        doc_id = record["doc_id"]
        if Path(doc_id).name != doc_id or doc_id in (".", "..") or "\\" in doc_id:
            raise InputError(f"{where(path, number, doc_id)}: doc_id {doc_id!r} names a file of the work folder "
                             "(pdf/<doc_id>.pdf); use one without / or \\ (e.g. fin-2023-01)")


def prepare_documents(docs_dir, work: Path) -> tuple[list[dict], dict]:
    """Copy the documents into WORK (index + PDFs) and extract their pages; (documents, {doc_id: pages})."""
    documents = release.read_document_index(docs_dir)
    check_doc_ids(docs_dir)
    pages = {}
    for row in release.read_documents(docs_dir):
        pages.setdefault(row["doc_id"], {})[row["page"]] = row["text"]
    (work / "pdf").mkdir(parents=True, exist_ok=True)
    index = []
    for doc in documents:
        target = work / "pdf" / f"{doc['doc_id']}{doc['file'].suffix}"
        if W.file_digest(target) != W.file_digest(doc["file"]):  # a changed PDF may keep its size
            shutil.copyfile(doc["file"], target)
        index.append({"doc_id": doc["doc_id"], "domain": doc["domain"], "title": doc["title"],
                      "file": str(target.relative_to(work))})
    W.write_jsonl(work / W.DOCUMENTS, index)
    W.write_jsonl(work / W.PAGES, [{"doc_id": d, "page": n, "text": t}
                                   for d, doc_pages in pages.items() for n, t in sorted(doc_pages.items())])
    return index, pages


def level_targets(types, l1: int, l2: int, overrides=()) -> dict:
    """question type -> {"L1": n, "L2": m} per document: l1 / l2 for each of `types`, overridden per type by
    TYPE=L1,L2 items (any of the ten types; 0,0 leaves a type out)."""
    targets = {t: {"L1": l1, "L2": l2} for t in types}
    for item in overrides:
        name, _, counts = item.partition("=")
        parts = counts.split(",")
        if name not in QUESTION_TYPES or len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
            raise InputError(f"--type-targets: {item!r} is not TYPE=L1,L2 with a question type "
                             f"({', '.join(QUESTION_TYPES)}) and two counts, e.g. summarization=1,1")
        targets[name] = {"L1": int(parts[0]), "L2": int(parts[1])}
    targets = {t: n for t, n in targets.items() if n["L1"] + n["L2"] > 0}
    if not targets:
        raise InputError("no pairs requested: every question type has target 0 L1 and 0 L2")
    return {t: targets[t] for t in QUESTION_TYPES if t in targets}


def generate(work, documents, pages, client, *, targets: dict, max_context_chars: int = 24000,
             dedup_threshold: float = 0.8, source=None) -> dict:
    """Run the stage over prepared documents (prepare_documents) for targets {question type: {"L1": n, "L2": m}}
    per document; returns its manifest record. Requests that failed are listed there, never dropped."""
    work = Path(work)
    types = tuple(targets)
    requests = generation_requests(documents, pages, targets, max_context_chars)
    outcomes = iter(client.complete_all(requests, parse_pairs, desc="generate", stage="build-generate"))
    pairs, failed, short = [], [], []
    for doc in documents:
        doc_pairs = []
        for question_type, outcome in zip(types, outcomes):
            if not outcome.ok:
                failed.append({"doc_id": doc["doc_id"], "question_type": question_type, "error": outcome.error})
                continue
            kept, shortfall = fit_to_targets(outcome.value, targets[question_type])
            if shortfall:
                short.append({"doc_id": doc["doc_id"], "question_type": question_type, "missing": shortfall})
            template = generation_template(question_type)["version"]
            for k, pair in enumerate(kept, start=1):
                doc_pairs.append({"id": f"{doc['doc_id']}-{TYPE_CODES[question_type]}-{k:03d}",
                                  "doc_id": doc["doc_id"], "domain": doc["domain"], "question_type": question_type,
                                  **pair, "generator": {**model_fields(client), "template": template},
                                  "invalid": check_evidence(pair, pages[doc["doc_id"]]), "duplicate_of": None,
                                  "duplicate_similarity": None})
        valid = [p for p in doc_pairs if p["invalid"] is None]
        for pair, mark in zip(valid, near_duplicates([p["question"] for p in valid], dedup_threshold)):
            if mark:
                pair["duplicate_of"], pair["duplicate_similarity"] = valid[mark[0]]["id"], mark[1]
        pairs.extend(doc_pairs)
    W.write_jsonl(work / W.GENERATED, pairs)
    counts = {"documents": len(documents), "requests": len(requests), "failed_requests": len(failed),
              "generated": len(pairs), "invalid": sum(p["invalid"] is not None for p in pairs),
              "near_duplicates": sum(p["duplicate_of"] is not None for p in pairs)}
    settings = {"docs_dir": str(Path(source).resolve()) if source else None, "targets": targets,
                "max_context_chars": max_context_chars, "dedup_threshold": dedup_threshold,
                "dedup_rule": "character-bigram Jaccard of question comparison keys, per document",
                "generator": model_fields(client),
                "templates": {t: generation_template(t)["version"] for t in types}}
    return W.record_stage(work, "generate", settings, counts, failed=failed, shortfalls=short,
                          llm_usage=client.usage_report())
