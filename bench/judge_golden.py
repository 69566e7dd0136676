"""The rule judge's golden snapshot: its verdict (grade, certain, reason) on every labelled answer we hold, written
once and committed, so that a change to the rules shows exactly which verdicts it changes (a maintainer script;
tests/test_judge_golden.py checks validation.jsonl against its snapshot on every run).

    python bench/judge_golden.py --check    # regrade; print the differences grouped by reason; exit 1 if any
    python bench/judge_golden.py --write    # (re)write the snapshots, after a change whose differences you mean
    ... [--simpleqa PATH]                    # the Chinese SimpleQA file the held-out answers name by simpleqa_id

The snapshots lie beside their sets in data/judge_validation/: golden_validation.jsonl (validation.jsonl) and
golden_simpleqa_heldout.jsonl (simpleqa_heldout.jsonl, all splits; its questions and references come from the
Chinese SimpleQA file, found as the tests find shared data, else skipped with a note). A snapshot records what
the judge says, not whether it is right: labels play no part. Its first line names the set, the rules that wrote
it and a hash of the graded inputs (id, question, reference, answer), so an edited set is told from a changed judge.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

from judge_accuracy import HELDOUT_SET, VALIDATION_SET, load_validation_set  # noqa: E402
from shared_data import CHINESE_SIMPLEQA  # noqa: E402

from chimdqa_eval import jsonio  # noqa: E402
from chimdqa_eval.factual import GRADES, judge_answers  # noqa: E402
from chimdqa_eval.factual.version import NORMALIZER_VERSION  # noqa: E402
from chimdqa_eval.schema import InputError  # noqa: E402

SNAPSHOTS = {VALIDATION_SET: VALIDATION_SET.with_name("golden_validation.jsonl"),
             HELDOUT_SET: HELDOUT_SET.with_name("golden_simpleqa_heldout.jsonl")}
EXAMPLES = 5  # ids shown per group of differences


class Golden(NamedTuple):
    grade: str
    certain: bool
    reason: str

    def __str__(self) -> str:
        return f"{self.reason} {self.grade} {'certain' if self.certain else 'uncertain'}"


class Snapshot(NamedTuple):
    header: dict               # set, rules, inputs_sha256, answers
    verdicts: dict             # id -> Golden, in the set's order


def inputs_sha256(records) -> str:
    """What the judge reads, in order: a snapshot of other inputs is no snapshot of this set."""
    digest = hashlib.sha256()
    for r in records:
        digest.update(json.dumps([r["id"], r["question"], r["reference"], r["answer"]], ensure_ascii=False).encode())
        digest.update(b"\n")
    return digest.hexdigest()


def grade_set(records) -> dict:
    """{id: Golden} of the rule judge on the records, as `evaluate` calls it (with the question)."""
    verdicts = judge_answers([r["answer"] for r in records], [r["reference"] for r in records],
                             [r["question"] for r in records])
    return {r["id"]: Golden(*v) for r, v in zip(records, verdicts)}


def snapshot_of(records, set_name: str) -> Snapshot:
    verdicts = grade_set(records)
    header = {"set": set_name, "rules": NORMALIZER_VERSION, "inputs_sha256": inputs_sha256(records),
              "answers": len(verdicts)}
    return Snapshot(header, verdicts)


def write_snapshot(snapshot: Snapshot, path) -> None:
    lines = [json.dumps({"golden": snapshot.header}, ensure_ascii=False)]
    lines += [json.dumps({"id": i, **v._asdict()}, ensure_ascii=False) for i, v in snapshot.verdicts.items()]
    jsonio.write_atomic(path, "\n".join(lines) + "\n")


def read_snapshot(path) -> Snapshot:
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])["golden"]
    verdicts = {}
    for line in lines[1:]:
        row = json.loads(line)
        if row["grade"] not in GRADES or not isinstance(row["certain"], bool) or not row["reason"]:
            raise InputError(f"{path}: bad snapshot row {line!r}")
        verdicts[row["id"]] = Golden(row["grade"], row["certain"], row["reason"])
    if len(verdicts) != header["answers"]:
        raise InputError(f"{path}: {len(verdicts)} rows, the header says {header['answers']}")
    return Snapshot(header, verdicts)


def differences(old: Snapshot, new: Snapshot) -> list[str]:
    """The report of what differs between two snapshots of one set, grouped by (old verdict -> new verdict),
    largest group first, with a few example ids; [] when they are equal."""
    lines = []
    if old.header["inputs_sha256"] != new.header["inputs_sha256"]:
        lines.append(f"the set's inputs changed since the snapshot was written ({old.header['answers']} answers "
                     f"then, {new.header['answers']} now): rewrite it with --write once the differences are meant")
    gone = [i for i in old.verdicts if i not in new.verdicts]
    added = [i for i in new.verdicts if i not in old.verdicts]
    for ids, what in ((gone, "in the snapshot, not in the set"), (added, "in the set, not in the snapshot")):
        if ids:
            lines.append(f"{len(ids)} ids {what}: {', '.join(ids[:EXAMPLES])}{' …' if len(ids) > EXAMPLES else ''}")
    groups = defaultdict(list)
    for i, was in old.verdicts.items():
        now = new.verdicts.get(i)
        if now is not None and now != was:
            groups[(was, now)].append(i)
    if groups:
        changed = sum(len(ids) for ids in groups.values())
        lines.append(f"{changed} of {len(old.verdicts)} verdicts differ, in {len(groups)} groups "
                     "(count, old reason grade certainty -> new, example ids):")
        width = max(len(str(was)) for was, _ in groups)
        for (was, now), ids in sorted(groups.items(), key=lambda g: (-len(g[1]), str(g[0][0]), str(g[0][1]))):
            lines.append(f"{len(ids):>6}  {str(was):<{width}} -> {now}   "
                         f"{', '.join(ids[:EXAMPLES])}{' …' if len(ids) > EXAMPLES else ''}")
        moved = Counter()
        for (was, now), ids in groups.items():
            moved[(was.reason, now.reason)] += len(ids)
        lines.append("by reason (old -> new: count): " + "; ".join(
            f"{a} -> {b}: {n}" for (a, b), n in sorted(moved.items(), key=lambda m: (-m[1], m[0]))))
    return lines


def reason_counts(snapshot: Snapshot) -> list[str]:
    """Per reason: how often it decided, its grades and how many of them were certain."""
    table = defaultdict(Counter)
    for v in snapshot.verdicts.values():
        table[v.reason][v.grade] += 1
        table[v.reason]["certain"] += v.certain
    lines = [f"{'reason':<32}{'n':>7}{'CO':>7}{'NA':>7}{'IN':>7}{'certain':>9}"]
    for reason, c in sorted(table.items(), key=lambda t: (-sum(t[1][g] for g in GRADES), t[0])):
        lines.append(f"{reason:<32}{sum(c[g] for g in GRADES):>7}" + "".join(f"{c[g]:>7}" for g in GRADES)
                     + f"{c['certain']:>9}")
    return lines


def _records(set_path: Path, simpleqa: Path):
    """The set's records, or None with the reason they cannot be graded here."""
    if set_path == HELDOUT_SET and not simpleqa.is_file():
        return None, f"the Chinese SimpleQA file is not at {simpleqa} (--simpleqa PATH)"
    return load_validation_set(set_path, simpleqa), ""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="(re)write the snapshots from the judge as it is now")
    mode.add_argument("--check", action="store_true", help="compare the judge with the snapshots; exit 1 on any "
                      "difference")
    parser.add_argument("--simpleqa", type=Path, default=CHINESE_SIMPLEQA,
                        help=f"the Chinese SimpleQA jsonl the held-out answers name (default {CHINESE_SIMPLEQA})")
    args = parser.parse_args(argv)

    failed = False
    for set_path, snapshot_path in SNAPSHOTS.items():
        name = set_path.name
        try:
            records, why_not = _records(set_path, args.simpleqa)
            if records is None:
                print(f"{name}: skipped, {why_not}")
                continue
            start = time.perf_counter()
            now = snapshot_of(records, name)
            seconds = time.perf_counter() - start
            print(f"{name}: {len(records)} answers graded in {seconds:.1f} s, "
                  f"{len({v.reason for v in now.verdicts.values()})} distinct reasons ({NORMALIZER_VERSION})")
            if args.write:
                write_snapshot(now, snapshot_path)
                print(f"wrote {snapshot_path.relative_to(ROOT)} ({snapshot_path.stat().st_size:,} bytes)")
                print("\n".join(reason_counts(now)) + "\n")
                continue
            if not snapshot_path.exists():
                print(f"{name}: no snapshot at {snapshot_path.relative_to(ROOT)}; write it with --write")
                failed = True
                continue
            report = differences(read_snapshot(snapshot_path), now)
            print("\n".join(report) if report else f"{name}: all {len(records)} verdicts equal the snapshot")
            failed |= bool(report)
        except InputError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
