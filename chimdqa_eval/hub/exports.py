"""`chimdqa export --format model-index|eval-results DIR`: a results directory as Hub metadata.

model-index   the ``model-index:`` block of a model card's YAML header (task, dataset with config, split and
              revision, one entry per metric)
eval-results  a file for the model repo's ``.eval_results/`` folder: one entry per task id, as the Hub's
              benchmark leaderboards read them (task ids: ``<family>_<metric>``, e.g. factual_f1)
"""
from __future__ import annotations


import yaml

from chimdqa_eval.families import FAMILIES
from chimdqa_eval.schema import CONFIGS, QA_SPLITS, InputError, shown


def to_yaml(data) -> str:
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False)


def _metrics(results):
    """(family, metric, entry) for each scored metric with a value, in table order (see without_value)."""
    for family, metrics in results["metrics"].items():
        for metric, entry in metrics.items():
            if entry.get("value") is not None:
                yield family, metric, entry


def without_value(results) -> list[tuple[str, str]]:
    """(family, metric) of the metrics whose value is null: the Hub's metadata needs a number, so they are not
    exported."""
    return [(family, metric) for family, metrics in results["metrics"].items()
            for metric, entry in metrics.items() if entry.get("value") is None]


TASK_NAMES = {"ChiMDQA": "Chinese long-document question answering",
              "Chinese SimpleQA": "Chinese short-form factual question answering"}


def model_index(results: dict, dataset_id: str) -> dict:
    ds = results["dataset"]
    rag = " with RAG" if results["model"].get("rag") else ""
    metrics = [{"name": f"{FAMILIES[f].short} {FAMILIES[f].labels.get(m, m)}{rag}", "type": FAMILIES[f].module,
                "config": m, "value": e["value"], "verified": False}
               for f, m, e in _metrics(results)]
    return {"model-index": [{
        "name": results["model"]["model"],
        "results": [{
            "task": {"type": "question-answering", "name": TASK_NAMES[ds["name"]]},
            "dataset": {"name": ds["name"], "type": dataset_id, "config": ds["config"], "split": ds["split"],
                        "revision": ds["revision"]},
            "metrics": metrics,
            "source": {"name": f"chimdqa_eval {results['toolkit']['version']}"},
        }],
    }]}


def check_dataset_names(results: dict) -> dict:
    """The document itself when its dataset name, config and split are ones this toolkit knows (file names
    and the Hub metadata are made of them), else InputError naming the file and the field."""
    ds = results["dataset"]
    for field, value, known in (("name", ds.get("name"), TASK_NAMES), ("config", ds.get("config"), CONFIGS),
                                ("split", ds.get("split", "test"), QA_SPLITS)):
        if not isinstance(value, str) or value not in known:
            raise InputError(f"{results.get('_path', 'results')}: dataset.{field} {shown(value)} is not one "
                             f"this toolkit writes; expected one of {', '.join(known)}")
    return results


def eval_results_filename(results: dict) -> str:
    """chimdqa.yaml, or chimdqa_with_rag.yaml, chimdqa_finance_factual.yaml: variants of one benchmark (config,
    split, RAG) go to separate files, so exporting one never overwrites another. The name is made of known
    configs and splits only: a results file cannot steer it out of the folder."""
    check_dataset_names(results)
    config, split = results["dataset"]["config"], results["dataset"].get("split", "test")
    stem = "chimdqa" if config == "all" else f"chimdqa_{config}"
    stem += "" if split == "test" else f"_{split}"
    return stem + ("_with_rag" if results["model"].get("rag") else "") + ".yaml"


def eval_results(results: dict, dataset_id: str) -> list[dict]:
    ds = results["dataset"]
    notes = ["With RAG"] if results["model"].get("rag") else []
    notes.append(f"config {ds['config']}, split {ds['split']}, dataset fingerprint {ds['revision']}")
    entries = []
    for family, metric, entry in _metrics(results):
        item = {"dataset": {"id": dataset_id, "task_id": f"{family}_{metric}".lower()}, "value": entry["value"]}
        if results["model"].get("date"):
            item["date"] = results["model"]["date"]
        if results["model"].get("url"):
            item["source"] = {"url": results["model"]["url"], "name": results["model"]["model"]}
        item["notes"] = "; ".join(notes + [f"signature {entry['signature']}"])
        entries.append(item)
    return entries
