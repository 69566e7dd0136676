"""lighteval custom tasks of ChiMDQA and Chinese SimpleQA (--custom-tasks "$(chimdqa harness-path lighteval)").

The same tasks as the lm-eval ones (chimdqa_eval.harness.tasks.TASKS), with the same prompts and scores. Task
lists to pass as lighteval's tasks argument sit beside this file: chimdqa.txt (the headline tasks),
chimdqa_domains.txt, chimdqa_types.txt. A question's user prompt is the query; the system message is the model
configuration's `system_prompt` (lighteval sends no per-task system message), which must be the template's
system text for the request to equal `chimdqa generate`'s (`chimdqa import-samples` records whether it was).

CO / NA / IN / CGA / F1 and METEOR / ROUGE-L / CIDEr are corpus-level metrics: each sample contributes its
answer, and the corpus function scores the whole list with `chimdqa evaluate`'s code, returning all of a
family's scores at once (lighteval then keeps them as they are, with no bootstrap of a judge).
"""
import hashlib
import json

from chimdqa_eval.harness import check_version

check_version("lighteval")  # before lighteval reads a config of an API this file was not written for

from lighteval.metrics.metrics_sample import SampleLevelComputation  # noqa: E402
from lighteval.metrics.utils.metric_utils import CorpusLevelMetricGrouping  # noqa: E402
from lighteval.tasks.lighteval_task import LightevalTaskConfig  # noqa: E402
from lighteval.tasks.requests import Doc, SamplingMethod  # noqa: E402

from chimdqa_eval.cache import cache_dir  # noqa: E402
from chimdqa_eval.evaluation import SIMPLEQA_CONFIG, load_questions  # noqa: E402
from chimdqa_eval.harness import tasks  # noqa: E402
from chimdqa_eval.schema import InputError  # noqa: E402


class _Answer(SampleLevelComputation):
    """A sample's answer for the corpus functions of one category's metrics (None for the other category's)."""

    def __init__(self, category: str, names):
        self.category = category
        self.names = tuple(names)

    def compute(self, doc: Doc, model_response, **kwargs):
        question = json.loads(doc.specific["chimdqa"])
        texts = model_response.text
        item = tasks.scored_item(question, texts[0] if texts else None) if question["category"] == self.category \
            else None
        return dict.fromkeys(self.names, item)


def _factual(items):
    answered = [item for item in items if item is not None]
    return tasks.factual_scores(answered) if answered else {}


def _open(items):
    answered = [item for item in items if item is not None]
    return tasks.open_scores(answered) if answered else {}


FACTUAL = CorpusLevelMetricGrouping(
    metric_name=list(tasks.FACTUAL_METRICS), higher_is_better={"CO": True, "NA": False, "IN": False, "CGA": True,
                                                               "F1": True},
    category=SamplingMethod.GENERATIVE, sample_level_fn=_Answer("factual", tasks.FACTUAL_METRICS),
    corpus_level_fn=dict.fromkeys(tasks.FACTUAL_METRICS, _factual))
OPEN_ENDED = CorpusLevelMetricGrouping(
    metric_name=list(tasks.OPEN_METRICS), higher_is_better=dict.fromkeys(tasks.OPEN_METRICS, True),
    category=SamplingMethod.GENERATIVE, sample_level_fn=_Answer("open_ended", tasks.OPEN_METRICS),
    corpus_level_fn=dict.fromkeys(tasks.OPEN_METRICS, _open))


def prompt(line, task_name):
    """lighteval's prompt function: the dataset row names the question; its prompt and labels come from the
    task's documents (harness.tasks.load_docs), the answer-bearing fields kept in `specific` for the details."""
    settings = tasks.PromptSettings.from_json(line["settings"])
    question = _documents(task_name, settings)[line["id"]]
    slim = {k: v for k, v in question.items() if k not in ("system", "user")}
    return Doc(query=question["user"], choices=[question["answer"]], gold_index=0, id=question["id"],
               task_name=task_name, specific={"chimdqa": json.dumps(slim, ensure_ascii=False)})


_DOCUMENTS: dict = {}


def _documents(task: str, settings) -> dict:
    key = (task, settings)
    if key not in _DOCUMENTS:
        _DOCUMENTS[key] = {doc["id"]: doc for doc in tasks.load_docs(task, settings)}
    return _DOCUMENTS[key]


def _question_ids(task: str, settings) -> list[dict]:
    """The rows of the task's dataset file: the question ids, each naming the settings it is prompted with.
    Read from the QA files alone (no document is packed here). A task that cannot load (Chinese SimpleQA without
    its file) gets one row whose prompt raises the error, so only choosing that task fails, saying why."""
    config, split = tasks.task_selection(task)
    simpleqa = config == SIMPLEQA_CONFIG
    try:
        if simpleqa and not settings.simpleqa:
            raise InputError(f"the {task} task needs its jsonl: set {tasks.ENVIRONMENT['simpleqa']}=PATH")
        rows, _, _ = load_questions(config, None if simpleqa else settings.release,
                                    (settings.simpleqa,) if simpleqa else None, split)
        ids = [row["id"] for row in rows]
    except InputError as err:
        ids = [f"\0{err}"]
    return [{"id": question_id, "settings": settings.to_json()} for question_id in ids]


def _config(task: str, settings) -> LightevalTaskConfig:
    rows = _question_ids(task, settings)
    digest = hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()[:12]
    folder = cache_dir(f"harness/lighteval/{task}-{digest}")  # a datasets folder: test.jsonl is the test split
    data = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    target = folder / "test.jsonl"
    if not target.is_file() or target.read_text(encoding="utf-8") != data:
        target.write_text(data, encoding="utf-8")
    categories = tasks.task_categories(task)
    metrics = [FACTUAL] * ("factual" in categories) + [OPEN_ENDED] * ("open_ended" in categories)
    return LightevalTaskConfig(
        name=task, prompt_function=_checked_prompt, hf_repo=str(folder), hf_subset="default", metrics=metrics,
        hf_avail_splits=["test"], evaluation_splits=["test"], generation_size=tasks.MAX_TOKENS, stop_sequence=[],
        version=1)


def _checked_prompt(line, task_name):
    if line["id"].startswith("\0"):
        raise InputError(line["id"][1:])
    return prompt(line, task_name)


TASKS_TABLE = [_config(task, tasks.PromptSettings.from_environment()) for task in tasks.TASKS]
