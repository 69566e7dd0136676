"""lm-evaluation-harness hooks of the ChiMDQA tasks (the *.yaml beside this file): questions and prompts from
chimdqa_eval.harness.tasks, scores from `chimdqa evaluate`'s own code. Each answered question contributes its
answer to the metrics of its category, and each metric's aggregation scores the whole list at once, so CGA and
F1 are ratios of the task's aggregates and CIDEr takes its document frequencies from the task's references.
"""
import json

from chimdqa_eval.harness import check_version

check_version("lm-eval")  # before lm-eval reads a hook of an API these files were not written for

from chimdqa_eval.harness import tasks  # noqa: E402


def load_questions(task=None, release=None, simpleqa=None, **_task_metadata):
    """custom_dataset: lm-eval passes the task's dataset_kwargs (its name) and its metadata (version, and
    `release` / `simpleqa` when given with --metadata). The documents stay small in the sample log: the user
    prompt (the packed document) is made again from the task and settings they name (doc_to_text)."""
    import datasets

    settings = tasks.PromptSettings.from_environment(release=release, simpleqa=simpleqa)
    docs = [{**{k: v for k, v in doc.items() if k != "user"}, "task": task, "settings": settings.to_json(),
             # as JSON text: an Arrow column of mappings would give every row the keys of all the others
             "generation": json.dumps(doc["generation"], ensure_ascii=False)}
            for doc in tasks.load_docs(task, settings)]
    return {"test": datasets.Dataset.from_list(docs)}


def doc_to_text(doc):
    return tasks.user_prompt(doc["task"], tasks.PromptSettings.from_json(doc["settings"]), doc["id"])


def process_results(doc, results):
    item = tasks.scored_item(doc, results[0])
    names = tasks.FACTUAL_METRICS if doc["category"] == "factual" else tasks.OPEN_METRICS
    return {name: item for name in names}


def co(items):
    return tasks.factual_scores(items)["CO"]


def na(items):
    return tasks.factual_scores(items)["NA"]


def in_(items):
    return tasks.factual_scores(items)["IN"]


def cga(items):
    return tasks.factual_scores(items)["CGA"]


def f1(items):
    return tasks.factual_scores(items)["F1"]


def meteor(items):
    return tasks.open_scores(items)["meteor"]


def rouge_l(items):
    return tasks.open_scores(items)["rouge_l"]


def cider(items):
    return tasks.open_scores(items)["cider"]
