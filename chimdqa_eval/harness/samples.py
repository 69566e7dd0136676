"""A harness's per-sample logs of the ChiMDQA tasks as a submission: a predictions jsonl and its metadata side
file, which `chimdqa evaluate` and `chimdqa queue submit` read like `chimdqa generate`'s.

    harvest = read_lm_eval("runs/lm-eval")          # lm_eval --output_path runs/lm-eval --log_samples
    harvest = read_lighteval("runs/lighteval")      # lighteval ... --output-dir runs/lighteval --save-details
    write_submission(harvest, "preds.jsonl")         # + preds.meta.json

Only the ChiMDQA tasks' samples are read (other tasks in the same folder are left alone), and only one run: a
folder holding several runs of a task is an error naming them (give one run's results file or folder instead).
The answer is taken from the reply as `chimdqa generate` takes it (harness.tasks.prediction_text); a question
several tasks asked (the `chimdqa` and `chimdqa_domains` groups overlap) must have the same answer in each.
"""
from __future__ import annotations

import ast
import datetime
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.parquet as pq

from chimdqa_eval import jsonio
from chimdqa_eval.generate.generation import metadata_text
from chimdqa_eval.harness import installed_version
from chimdqa_eval.harness.tasks import SIMPLEQA_TASK, TASKS, context_block, prediction_text
from chimdqa_eval.schema import InputError, shown, where
from chimdqa_eval.submission import metadata_path_for

BENCHMARKS = ("chimdqa", "chinese_simpleqa")
_LM_EVAL_SAMPLES = re.compile(r"^samples_(?P<task>.+)_(?P<run>\d{4}-\d{2}-\d{2}T[\d.\-]+)\.jsonl$")
_LM_EVAL_RESULTS = re.compile(r"^results_(?P<run>\d{4}-\d{2}-\d{2}T[\d.\-]+)\.json$")
_LIGHTEVAL_DETAILS = re.compile(r"^details_(?P<task>.+?)\|(?P<shots>\d+)_(?P<run>.+)\.parquet$")


@dataclass
class Answer:
    id: str
    task: str
    prediction: str
    doc: dict          # the task's document (harness.tasks.load_docs), "generation" as a mapping
    source: str        # file:line (or file:row) it was read from


@dataclass
class Harvest:
    """What one harness run left: the answers of the ChiMDQA tasks it ran, and the run's facts."""
    harness: str
    version: str | None
    model: str
    tasks: list[str]
    answers: list[Answer]
    run: dict = field(default_factory=dict)   # harness-specific facts for the metadata (model type, settings)
    date: str | None = None

    def benchmark(self, wanted: str | None = None) -> str:
        """The benchmark to write: `wanted`, else the one the run's tasks belong to (an error when both are)."""
        present = sorted({_benchmark_of(task) for task in self.tasks})
        if wanted is not None:
            if wanted not in BENCHMARKS:
                raise InputError(f"--benchmark: expected one of {', '.join(BENCHMARKS)}, got {shown(wanted)}")
            if wanted not in present:
                raise InputError(f"the run has no {wanted} task (its ChiMDQA tasks: {', '.join(self.tasks)})")
            return wanted
        if len(present) > 1:
            raise InputError(f"the run holds both ChiMDQA and Chinese SimpleQA answers ({', '.join(self.tasks)}), "
                             "which are scored as separate submissions: choose one with --benchmark "
                             f"{'|'.join(BENCHMARKS)}")
        return present[0]


def _benchmark_of(task: str) -> str:
    return "chinese_simpleqa" if task == SIMPLEQA_TASK else "chimdqa"


def _doc(raw, location: str) -> dict:
    if not isinstance(raw, dict) or not isinstance(raw.get("id"), str) or "generation" not in raw:
        raise InputError(f"{location}: the sample's document has no ChiMDQA id and generation record; was it "
                         "made by another version of the ChiMDQA tasks?")
    generation = raw["generation"]
    if isinstance(generation, str):
        try:
            generation = json.loads(generation)
        except json.JSONDecodeError as err:
            raise InputError(f"{location}: the document's generation record is not JSON ({err})") from None
    return {**raw, "generation": generation}


# -- lm-evaluation-harness -----------------------------------------------------------------------------------
def read_lm_eval(path) -> Harvest:
    """The ChiMDQA answers of one lm-eval run: `path` is its --output_path folder (or a folder below it) holding
    one run, or that run's results_<time>.json."""
    path = Path(path)
    if path.is_file():
        match = _LM_EVAL_RESULTS.match(path.name)
        if not match:
            raise InputError(f"{path}: expected an lm-eval output folder or its results_<time>.json")
        results_files, runs = [path], {match["run"]}
        samples = [p for p in path.parent.glob("samples_*.jsonl") if _sample_match(p, runs)]
    elif path.is_dir():
        samples = [p for p in sorted(path.rglob("samples_*.jsonl")) if _sample_match(p)]
        runs = {_sample_match(p)["run"] for p in samples}
        folders = {p.parent for p in samples}
        if len(runs) > 1 or len(folders) > 1:
            listed = ", ".join(sorted(str(f / f"results_{r}.json") for f in folders for r in runs
                                      if (f / f"results_{r}.json").exists()))
            raise InputError(f"{path}: holds {len(runs)} lm-eval runs of the ChiMDQA tasks; import one at a time by "
                             f"giving its results file: {listed or ', '.join(sorted(runs))}")
        results_files = [p.parent / f"results_{r}.json" for p in samples[:1] for r in runs]
    else:
        raise InputError(f"{path}: no such file or folder")
    if not samples:
        raise InputError(f"{path}: no samples of the ChiMDQA tasks (samples_<task>_<time>.jsonl for {SIMPLEQA_TASK} "
                         "or chimdqa_*); run lm_eval with --log_samples and --output_path")
    results = _read_json(results_files[0]) if results_files and results_files[0].is_file() else {}
    answers = []
    for sample_file in sorted(samples):
        answers += _lm_eval_answers(sample_file, _sample_match(sample_file)["task"])
    config = results.get("config") or {}
    task_configs = results.get("configs") or {}
    tasks = sorted({_sample_match(p)["task"] for p in samples})
    generation_kwargs = (task_configs.get(tasks[0]) or {}).get("generation_kwargs") or {}
    model_args = config.get("model_args") if isinstance(config.get("model_args"), dict) else {}
    run = {"model_type": config.get("model"), "apply_chat_template": results.get("chat_template") is not None,
           "system_instruction": results.get("system_instruction"),
           "temperature": generation_kwargs.get("temperature"), "max_tokens": generation_kwargs.get("max_gen_toks")}
    model = results.get("model_name") or model_args.get("model") or model_args.get("pretrained") or "lm-eval-model"
    date = None
    if isinstance(results.get("date"), (int, float)):
        date = datetime.datetime.fromtimestamp(results["date"], datetime.timezone.utc).date().isoformat()
    return Harvest("lm-eval", results.get("lm_eval_version"), str(model), tasks, answers, run, date)


def _sample_match(path: Path, runs=None):
    match = _LM_EVAL_SAMPLES.match(path.name)
    if match and match["task"] in TASKS and (runs is None or match["run"] in runs):
        return match
    return None


def _read_json(path: Path):
    return jsonio.read_json(path, what="harness results file")


def _lm_eval_answers(path: Path, task: str) -> list[Answer]:
    answers = []
    for number, record, problem in jsonio.iter_jsonl(path, what="lm-eval samples file"):
        location = where(path, number)
        if problem:
            raise InputError(f"{location}: {problem}")
        if not isinstance(record, dict) or "filtered_resps" not in record:
            raise InputError(f"{location}: not an lm-eval sample (no filtered_resps)")
        if record.get("filter", "none") != "none":
            continue  # the ChiMDQA tasks define no filter; another filter's copy of a sample is not the answer
        doc = _doc(record.get("doc"), location)
        replies = record["filtered_resps"]
        reply = replies[0] if isinstance(replies, list) and replies else replies
        if reply is not None and not isinstance(reply, str):
            raise InputError(f"{where(path, number, record_id=doc['id'])}: the reply is not text: {shown(reply)}")
        answers.append(Answer(doc["id"], task, prediction_text(reply), doc, location))
    return answers


# -- lighteval -----------------------------------------------------------------------------------------------
def read_lighteval(path) -> Harvest:
    """The ChiMDQA answers of one lighteval run: `path` is its --output-dir (or the details folder of one run
    below it) as written with --save-details."""
    path = Path(path)
    if not path.is_dir():
        raise InputError(f"{path}: no such folder (expected lighteval's --output-dir or a details folder in it)")
    details = [p for p in sorted(path.rglob("details_*.parquet")) if _details_match(p)]
    if not details:
        raise InputError(f"{path}: no details of the ChiMDQA tasks (details_<task>|0_<time>.parquet); run lighteval "
                         "with --save-details and --output-dir")
    folders = sorted({p.parent for p in details})
    if len(folders) > 1:
        raise InputError(f"{path}: holds {len(folders)} lighteval runs of the ChiMDQA tasks; import one at a time by "
                         f"giving its details folder: {', '.join(map(str, folders))}")
    answers = []
    for file in details:
        answers += _lighteval_answers(file, _details_match(file)["task"])
    tasks = sorted({_details_match(p)["task"] for p in details})
    results = _lighteval_results(path, folders[0])
    general = results.get("config_general") or {}
    model_config = general.get("model_config") if isinstance(general.get("model_config"), dict) else {}
    generation = model_config.get("generation_parameters") if isinstance(model_config, dict) else None
    generation = generation if isinstance(generation, dict) else {}
    run = {"model_type": model_config.get("provider") or general.get("model_class") or None,
           "system_prompt": model_config.get("system_prompt"),
           "temperature": generation.get("temperature"), "max_tokens": generation.get("max_new_tokens")}
    model = general.get("model_name") or folders[0].parent.name
    return Harvest("lighteval", general.get("lighteval_version") or installed_version("lighteval"), str(model), tasks,
                   answers, run, None)


def _details_match(path: Path):
    match = _LIGHTEVAL_DETAILS.match(path.name)
    task = match["task"].split("|")[-1] if match else None  # older releases prefix the suite: custom|task
    return {"task": task, "run": match["run"]} if match and task in TASKS else None


def _lighteval_results(root: Path, details_folder: Path) -> dict:
    """The run's results JSON (results/<model>/results_<time>.json beside details/<model>/<time>/), or {}."""
    found = sorted(root.rglob(f"results_{details_folder.name}.json"))
    return _read_json(found[0]) if found else {}


def _lighteval_answers(path: Path, task: str) -> list[Answer]:
    try:
        rows = pq.read_table(path).to_pylist()
    except Exception as err:  # pyarrow's own errors: a truncated or foreign file
        raise InputError(f"{path}: not a readable parquet file ({err})") from None
    answers = []
    for number, row in enumerate(rows, start=1):
        location = f"{path}:row {number}"
        doc = _logged(row.get("doc") if isinstance(row, dict) else None, location)
        specific = _logged(doc.get("specific") if isinstance(doc, dict) else None, location)
        text = specific.get("chimdqa") if isinstance(specific, dict) else None
        try:
            question = json.loads(text) if isinstance(text, str) else None
        except json.JSONDecodeError as err:
            raise InputError(f"{location}: the ChiMDQA record in doc.specific is not JSON ({err})") from None
        question = _doc(question, location)
        response = _logged(row.get("model_response"), location) or {}
        texts = _logged(response.get("text"), location) if isinstance(response, dict) else None
        reply = texts[0] if isinstance(texts, list) and texts else texts
        if reply is not None and not isinstance(reply, str):
            raise InputError(f"{location} (id {question['id']}): the reply is not text: {shown(reply)}")
        answers.append(Answer(question["id"], task, prediction_text(reply), question, location))
    return answers


def _logged(value, location: str):
    """A value of a lighteval details row: lighteval 0.13 stores each field of a Doc and a ModelResponse as the
    text of its Python literal (str(value)); read back as the literal, never evaluated as code."""
    if not isinstance(value, str) or value[:1] not in ("[", "{", "(", "'", '"'):
        return value
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise InputError(f"{location}: a details field is not a Python literal: {shown(value)}") from None


# -- the submission ------------------------------------------------------------------------------------------
def submission(harvest: Harvest, benchmark: str | None = None, model: str | None = None) -> tuple[list, dict]:
    """(prediction lines, metadata) for one benchmark of a harvest."""
    benchmark = harvest.benchmark(benchmark)
    chosen = [a for a in harvest.answers if _benchmark_of(a.task) == benchmark]
    first: dict[str, Answer] = {}
    for answer in chosen:
        seen = first.setdefault(answer.id, answer)
        if seen.prediction != answer.prediction:
            raise InputError(f"{answer.source} (id {answer.id}): answer {shown(answer.prediction)} differs from "
                             f"{shown(seen.prediction)} at {seen.source} for the same question; import runs one at "
                             "a time")
    answers = list(first.values())
    settings = {json.dumps({k: v for k, v in a.doc["generation"].items() if k not in ("prompt", "dataset")},
                           sort_keys=True) for a in answers}
    if len(settings) > 1:
        raise InputError(f"the run's tasks were prompted with different settings ({len(settings)} kinds: template, "
                         "truncation or context budget); import the runs made with one setting at a time")
    revisions = {a.doc["generation"]["dataset"]["revision"] for a in answers}
    if len(revisions) > 1:
        raise InputError(f"the run's tasks read different releases (revisions {', '.join(sorted(revisions))})")
    # in id order: each harness logs its tasks and samples in an order of its own
    lines = [{"id": a.id, "prediction": a.prediction} for a in sorted(answers, key=lambda a: a.id)]
    tasks = sorted({a.task for a in chosen})
    return lines, _metadata(harvest, tasks, answers, benchmark, model)


def _metadata(harvest: Harvest, tasks: list[str], answers: list[Answer], benchmark: str, model: str | None) -> dict:
    record = answers[0].doc["generation"]
    dataset = dict(record["dataset"])
    dataset.update(config=benchmark if benchmark == "chinese_simpleqa" else "all", split="test")
    generation = {"mode": record["mode"], "backend": harvest.harness, "model": harvest.model,
                  "temperature": harvest.run.get("temperature", record["temperature"]),
                  "max_tokens": harvest.run.get("max_tokens") or record["max_tokens"],
                  "template": record["template"], "dataset": dataset,
                  "n_questions": len(answers), "n_answered": len(answers),
                  "harness": {"name": harvest.harness, "version": harvest.version, "tasks": tasks,
                              **{k: v for k, v in harvest.run.items() if k not in ("temperature", "max_tokens")}}}
    if record["mode"] == "long":
        generation["context"] = context_block([a.doc for a in answers])
    return {"model": model or harvest.model, "rag": False, "date": harvest.date or datetime.date.today().isoformat(),
            "notes": f"generated with {harvest.harness} {harvest.version or ''}".rstrip() +
                     f" (tasks {', '.join(tasks)}), imported by chimdqa import-samples",
            "generation": generation}


def write_submission(harvest: Harvest, out, benchmark: str | None = None, model: str | None = None) -> dict:
    """Write the predictions file `out` (.jsonl) and its <stem>.meta.json; returns {"path", "metadata", "n"}."""
    out = Path(out)
    if out.suffix != ".jsonl":
        raise InputError(f"--out {out}: a predictions file must end in .jsonl")
    lines, metadata = submission(harvest, benchmark, model)
    out.parent.mkdir(parents=True, exist_ok=True)
    jsonio.write_atomic(out, "".join(jsonio.dumps(line, indent=None) for line in lines))
    jsonio.write_atomic(metadata_path_for(out), metadata_text(metadata))
    return {"path": out, "metadata_path": metadata_path_for(out), "metadata": metadata, "n": len(lines)}
