"""`chimdqa build release WORK --out RELEASE` and `chimdqa build funnel WORK`.

release writes the pairs the screen kept and the review accepted (with reviewers' edits applied) in the
loader's release layout:

    RELEASE/qa/<domain>.jsonl     id, domain, question_type, level, question, answer, doc_id, and evidence (the
                                  pages the generator cited, for retrieval hit@k / recall@k and the loader)
    RELEASE/documents.jsonl       every document of the work folder; RELEASE/pdf/ its PDFs
    RELEASE/provenance.jsonl      per pair: generator model and template version, evidence pages, screening
                                  scores, reviewers' verdicts and notes, the original text of an edited pair
    RELEASE/build.json            the work folder's manifest with this release recorded (stages.release: its
                                  folder, counts, ids and fingerprint): every stage's settings, versions, counts,
                                  dates

The loader reads only qa/ and documents.jsonl, so chimdqa.load(data_dir=RELEASE), `chimdqa stats` and
`chimdqa export-hub` work on it unchanged. It refuses while any pair is pending review or disputed without an
arbiter's verdict (--skip-review releases the screened pairs without human review, and says so in build.json).
"""
from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

from chimdqa_eval import release as release_files
from chimdqa_eval.build import review
from chimdqa_eval.build import work as W
from chimdqa_eval.build.generate import to_screen
from chimdqa_eval.build.screen import screened_pairs
from chimdqa_eval.schema import DOMAINS, QUESTION_TYPES, InputError
from chimdqa_eval.stats import format_table

PROVENANCE = "provenance.jsonl"
BUILD_RECORD = "build.json"


def released_pairs(screened: list[dict], decided: dict | None) -> list[tuple[dict, dict | None]]:
    """(pair with the reviewers' edits applied, its decision) for each kept and accepted pair, in work order.
    decided None means no human review."""
    out = []
    for pair in screened:
        if pair["screen"]["status"] != "kept":
            continue
        decision = decided.get(pair["id"]) if decided is not None else None
        if decision is not None and decision["verdict"] not in ("accept", "edit"):
            continue
        final = dict(pair)
        if decision is not None and decision["verdict"] == "edit":
            final["question"] = decision["edited_question"] or pair["question"]
            final["answer"] = decision["edited_answer"] or pair["answer"]
        out.append((final, decision))
    return out


def provenance(pair: dict, original: dict, decision: dict | None, verdicts: dict) -> dict:
    screen = pair["screen"]
    record = {"id": pair["id"], "generator": pair["generator"], "evidence_pages": pair["evidence_pages"],
              "screen": {"confidence": screen["confidence"], "votes": screen["votes"],
                         "mean_confidence": screen["mean_confidence"],
                         "truncation_agreement": screen["truncation"]["agreement"],
                         "full_context_answers": screen["truncation"]["full_answers"],
                         "full_answer_matches_pair": screen["truncation"]["full_answer_matches_pair"]},
              "review": None}
    if decision is not None:
        record["review"] = {"decision": decision["verdict"], "decided_by": decision["decided_by"],
                            "verdicts": {r: {"verdict": v["verdict"], "note": v["note"]} for r, v in verdicts.items()}}
        if decision["verdict"] == "edit":
            record["review"]["original"] = {"question": original["question"], "answer": original["answer"]}
    return record


def _check_target(out: Path) -> None:
    if out.exists() and any(out.iterdir()) and not (out / BUILD_RECORD).is_file():
        raise InputError(f"{out}: exists and is not a release written by `chimdqa build release`; choose an empty "
                         "or new folder")


def _stale_note(open_decisions) -> str:
    stale = sum(len(d.get("stale", ())) for d in open_decisions)
    return (f"; {stale} of their verdicts were given on an earlier text of the pair (it was generated again since): "
            "export the sheets again (`chimdqa build review-export --force`) and review those pairs") if stale else ""


def write_release(work, out, skip_review: bool = False) -> dict:
    work, out = W.work_dir(work), Path(out)
    W.check_fresh(work, ["screen"] if skip_review else ["screen", "review-export"])
    screened = screened_pairs(work)
    decided = None
    if not skip_review:
        decided = review.decisions(work)
        open_ids = [i for i, d in decided.items() if d["verdict"] in ("pending", "disagreement")]
        if open_ids:
            raise InputError(f"{work}: {len(open_ids)} pairs have no final review decision yet (pending or disputed "
                             f"without an arbiter's verdict), e.g. {', '.join(open_ids[:3])}; import the remaining "
                             "verdicts (`chimdqa build review-import`) or pass --skip-review"
                             + _stale_note([decided[i] for i in open_ids]))
    chosen = released_pairs(screened, decided)
    if not chosen:
        raise InputError(f"{work}: no pair survived screening and review; nothing to release")
    _check_target(out)
    verdicts = review.live_verdicts(work) if decided is not None else {}
    originals = {p["id"]: p for p in screened}
    documents = W.read_rows(work, W.DOCUMENTS)

    (out / "pdf").mkdir(parents=True, exist_ok=True)
    for doc in documents:
        shutil.copyfile(work / doc["file"], out / "pdf" / Path(doc["file"]).name)
    W.write_jsonl(out / release_files.DOCUMENT_INDEX,
                  [{**doc, "file": f"pdf/{Path(doc['file']).name}"} for doc in documents])
    for stale in (out / release_files.QA_DIR).glob("*.jsonl"):
        stale.unlink()
    for domain in DOMAINS:
        rows = [{**{field: pair[field] for field in release_files.QA_FIELDS}, "evidence": pair["evidence_pages"]}
                for pair, _ in chosen if pair["domain"] == domain]
        if rows:
            W.write_jsonl(out / release_files.QA_DIR / f"{domain}.jsonl", rows)
    W.write_jsonl(out / PROVENANCE, [provenance(pair, originals[pair["id"]], decision, verdicts.get(pair["id"], {}))
                                     for pair, decision in chosen])
    qa = release_files.read_qa(out)  # the loader's own checks, so a release that would not load is never reported done
    counts = {"released": len(qa), "documents": len(documents), "edited": sum(
        d is not None and d["verdict"] == "edit" for _, d in chosen)}
    # build.json is the manifest with this release recorded, so it describes the release it sits in; it is
    # written before the work folder's manifest, so a work folder never names a release left without one
    manifest, entry = W.manifest_with_stage(work, "release", {"out": str(out.resolve()), "skip_review": skip_review},
                                            counts, ids=[pair["id"] for pair, _ in chosen],
                                            fingerprint=release_files.fingerprint(out))
    W.write_json(out / BUILD_RECORD, {"work": str(work.resolve()), "human_review": not skip_review, **manifest})
    W.write_json(work / W.MANIFEST, manifest)
    return entry


# ---- funnel ---------------------------------------------------------------------------------------------------------

FUNNEL_STEPS = ("generated", "unique", "screened", "reviewed", "released")


def funnel_counts(generated, screened, decided, released_ids, key) -> dict:
    """group -> Counter of FUNNEL_STEPS: all generated pairs, those valid and not near duplicates, those the screen kept,
    those the review accepted or edited (None: no review yet), those in the release."""
    table: dict = {}
    status = {p["id"]: p["screen"]["status"] for p in screened}
    for pair in generated:
        cell = table.setdefault(key(pair), Counter())
        cell["generated"] += 1
        cell["unique"] += to_screen(pair)
        cell["screened"] += status.get(pair["id"]) == "kept"
        if decided is not None:
            cell["reviewed"] += decided.get(pair["id"], {}).get("verdict") in ("accept", "edit")
        cell["released"] += pair["id"] in released_ids
    return table


def render_funnel(work, cells: bool = False) -> str:
    work = W.work_dir(work)
    generated = W.read_rows(work, W.GENERATED)
    stages = W.read_manifest(work)["stages"]
    screened = screened_pairs(work) if "screen" in stages else []
    decided = review.decisions(work) if "review-export" in stages else None
    released = set(stages.get("release", {}).get("ids", []))
    sections = []
    groupings = [("domain", lambda p: p["domain"], DOMAINS),
                 ("question type", lambda p: p["question_type"], QUESTION_TYPES)]
    if cells:
        groupings.append(("domain/type", lambda p: f"{p['domain']}/{p['question_type']}",
                          [f"{d}/{t}" for d in DOMAINS for t in QUESTION_TYPES]))
    for title, key, order in groupings:
        table = funnel_counts(generated, screened, decided, released, key)
        total = sum(table.values(), Counter())
        rows = [[group, *(table[group][s] for s in FUNNEL_STEPS)] for group in order if group in table]
        rows.append(["all", *(total[s] for s in FUNNEL_STEPS)])
        if decided is None:
            for row in rows:
                row[4] = "-"
        sections.append(f"Funnel by {title}\n" + format_table([title, *FUNNEL_STEPS], rows))
    reasons = Counter(p["screen"]["reason"].split(":")[0] for p in screened if p["screen"]["status"] != "kept")
    if reasons:
        sections.append("Dropped by the screen: " + ", ".join(f"{r} {n}" for r, n in sorted(reasons.items())))
    return "\n\n".join(sections)
