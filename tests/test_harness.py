"""The ChiMDQA tasks inside lm-evaluation-harness and lighteval (chimdqa_eval/harness/): each harness runs them
against the local chat server, its reported scores equal `chimdqa evaluate` on the answers `chimdqa
import-samples` takes from its log, and the prompts it sent are the ones `chimdqa generate --mode long` sends.

The two harness runs are made once for the module (about a minute together on two cores): lm-eval with the
`chimdqa` group, one domain task and `chinese_simpleqa`; lighteval with the same tasks. The server answers each
question with the sample submission's answer (data/sample/predictions.jsonl) or, for Chinese SimpleQA, with a
graded answer of data/judge_validation (a mix of right, wrong and refused), padded with spaces and a newline.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from chat_server import ChatServer

from chimdqa_eval import cli
from chimdqa_eval.aggregate import summarize
from chimdqa_eval.evaluation import EvalConfig, evaluate
from chimdqa_eval.harness import samples, task_path, version_problem
from chimdqa_eval.harness.tasks import FACTUAL_METRICS, GROUPS, OPEN_METRICS, TASKS
from chimdqa_eval.release import SAMPLE_DIR, read_qa
from chimdqa_eval.schema import InputError

pytest.importorskip("lm_eval", reason="the harness tests need the `test` extra (lm-eval)")
pytest.importorskip("lighteval", reason="the harness tests need the `test` extra (lighteval)")
# Both harnesses end to end, each in its own processes (about a minute): with the long loops under `slow`, which
# .ci/run runs after the README's test command.
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
VALIDATION = REPO / "data" / "judge_validation" / "validation.jsonl"
RUN_TASKS = ("chimdqa_factual", "chimdqa_open_ended", "chimdqa_finance", "chinese_simpleqa")
# task -> the `chimdqa evaluate` selection scoring the same questions
SELECTION = {"chimdqa_factual": ("all", ("factual",)), "chimdqa_open_ended": ("all", ("open_ended",)),
             "chimdqa_finance": ("finance", ("factual", "open_ended")),
             "chinese_simpleqa": ("chinese_simpleqa", ("factual",))}
# lighteval 0.13 builds every built-in task at start-up, and its tinyBenchmarks task downloads a pickle from GitHub
# then: offline that is a connection error before any task runs. The runner answers that one request "unavailable"
# (the file is only read by tinyBenchmarks' own metrics), and starts lighteval's command line as its script does.
LIGHTEVAL_OFFLINE = """
import sys
import requests
_get = requests.get
def get(url, *args, **kwargs):
    if "tinyBenchmarks" in str(url):
        response = requests.Response()
        response.status_code = 503
        return response
    return _get(url, *args, **kwargs)
requests.get = get
from lighteval.__main__ import app
sys.argv[0] = "lighteval"
app()
"""
# lighteval's API models reach a server through litellm, whose releases that lighteval 0.13 runs with pin
# huggingface-hub below 2 (the toolkit's other packages run on 2.x). The test drives `lighteval custom` with this
# model instead: lighteval's own prompt manager builds the chat messages exactly as for its API models (system
# prompt from the model, the task's query as the user message), and only the HTTP request is made here.
CHAT_MODEL = """
import json
import os
import urllib.request

from lighteval.models.abstract_model import LightevalModel
from lighteval.models.model_output import ModelResponse
from lighteval.tasks.prompt_manager import PromptManager
from lighteval.utils.cache_management import SampleCache


class ChatServerModel(LightevalModel):
    def __init__(self, config):
        self.config = config
        self.prompt_manager = PromptManager(use_chat_template=True, system_prompt=os.environ["TEST_SYSTEM_PROMPT"])
        config.cache_dir = os.environ["TEST_CACHE_DIR"]  # lighteval's sample cache (unused here), not in ~/.cache
        self._cache = SampleCache(config)

    tokenizer = None
    add_special_tokens = False
    max_length = 1_000_000

    def greedy_until(self, docs):
        responses = []
        for doc in docs:
            messages = self.prompt_manager.prepare_prompt_api(doc)
            body = {"model": self.config.model_name, "messages": messages, "max_tokens": doc.generation_size,
                    "temperature": 0.0, "stop": list(doc.stop_sequences or [])}
            request = urllib.request.Request(os.environ["TEST_API_BASE"] + "/chat/completions",
                                             data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request) as reply:
                text = json.loads(reply.read())["choices"][0]["message"]["content"]
            responses.append(ModelResponse(input=messages, text=[text]))
        return responses

    def loglikelihood(self, docs):
        raise NotImplementedError

    def loglikelihood_rolling(self, docs):
        raise NotImplementedError
"""


def simpleqa_file(path: Path) -> dict:
    """50 Chinese SimpleQA-shaped questions (the simpleqa-style ones of the judge validation set) written to
    `path`; returns {question: the graded answer the server gives}."""
    replies, lines = {}, []
    categories = ("人文与社会科学", "自然与自然科学", "工程、技术与应用科学", "生活、艺术与文化", "社会")
    for line in VALIDATION.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["source"] != "simpleqa-style" or row["question"] in replies:
            continue
        replies[row["question"]] = row["answer"]
        n = len(lines)
        lines.append(json.dumps({"id": f"csqa-{n:03d}", "primary_category": categories[n % 5],
                                 "secondary_category": "综合", "question": row["question"],
                                 "answer": row["reference"], "urls": []}, ensure_ascii=False))
        if len(lines) == 50:
            break
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return replies


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Both harnesses run against one chat server, and `chimdqa generate --mode long` against it too."""
    tmp = tmp_path_factory.mktemp("harness")
    simpleqa = tmp / "csqa.jsonl"
    replies = simpleqa_file(simpleqa)
    questions = {row["id"]: row["question"] for row in read_qa()}
    for line in (SAMPLE_DIR / "predictions.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        replies[questions[row["id"]]] = row["prediction"]

    def answer(body):
        question = re.search(r"问题：(.*)\n", body["messages"][-1]["content"]).group(1)
        return "  " + replies[question] + "\n"

    env = {**os.environ, "CHIMDQA_CACHE": str(tmp / "cache"), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "HF_HOME": str(tmp / "hf"), "CHIMDQA_SIMPLEQA": str(simpleqa)}
    for name in ("CHIMDQA_RELEASE", "CHIMDQA_JUDGE", "CHIMDQA_TRUNCATION", "CHIMDQA_MAX_CONTEXT_TOKENS",
                 "CHIMDQA_PROMPT", "CHIMDQA_CONTEXT_TOKENIZER"):
        env.pop(name, None)
    with ChatServer(answer) as server:
        lm_eval_out = tmp / "lm-eval"
        done = subprocess.run(
            [sys.executable, "-m", "lm_eval", "--model", "local-chat-completions", "--model_args",
             f"model=test-model,base_url={server.api_base}/chat/completions,tokenizer_backend=None",
             "--include_path", str(task_path("lm-eval")), "--tasks", "chimdqa,chimdqa_finance,chinese_simpleqa",
             "--metadata", json.dumps({"simpleqa": str(simpleqa)}),  # lm-eval's route; lighteval's is the variable
             "--apply_chat_template", "--output_path", str(lm_eval_out), "--log_samples"],
            cwd=tmp, env={k: v for k, v in env.items() if k != "CHIMDQA_SIMPLEQA"}, capture_output=True, text=True,
            timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        lm_eval_requests = list(server.requests)

        model = tmp / "chat_model.py"
        model.write_text(CHAT_MODEL, encoding="utf-8")
        lighteval_out = tmp / "lighteval"
        done = subprocess.run(
            [sys.executable, "-c", LIGHTEVAL_OFFLINE, "custom", "test-model", str(model),
             ",".join(f"{task}|0" for task in RUN_TASKS), "--custom-tasks", str(task_path("lighteval")),
             "--output-dir", str(lighteval_out), "--save-details"],
            cwd=tmp, env={**env, "TEST_API_BASE": server.api_base, "TEST_SYSTEM_PROMPT": _template_system(),
                          "TEST_CACHE_DIR": str(tmp / "lighteval-cache")},
            capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        lighteval_requests = server.requests[len(lm_eval_requests):]

        generated = tmp / "generated.jsonl"
        with pytest.MonkeyPatch.context() as patch:  # a cache of its own: every answer asked of the server
            patch.setenv("CHIMDQA_CACHE", str(tmp / "cache-generate"))
            assert cli.main(["generate", "--model", "test-model", "--api-base", server.api_base, "--mode", "long",
                             "--out", str(generated)]) == 0
        generate_requests = server.requests[len(lm_eval_requests) + len(lighteval_requests):]
    return {"tmp": tmp, "simpleqa": simpleqa, "lm-eval": lm_eval_out, "lighteval": lighteval_out,
            "requests": {"lm-eval": lm_eval_requests, "lighteval": lighteval_requests, "generate": generate_requests},
            "generated": generated}


def _template_system() -> str:
    from chimdqa_eval.generate.prompts import load_template

    return load_template().text("system")


def lm_eval_scores(folder: Path) -> dict:
    results = json.loads(Path(glob.glob(str(folder / "*" / "results_*.json"))[0]).read_text())["results"]
    return {task: {key.split(",")[0]: value for key, value in metrics.items() if key.endswith(",none")
                   and "_stderr" not in key} for task, metrics in results.items() if task in RUN_TASKS}


def lighteval_scores(folder: Path) -> dict:
    [results_file] = glob.glob(str(folder / "results" / "**" / "results_*.json"), recursive=True)
    results = json.loads(Path(results_file).read_text())
    return {task.split("|")[0]: metrics for task, metrics in results["results"].items()
            if task.split("|")[0] in RUN_TASKS}


def imported(runs, harness: str, benchmark: str) -> Path:
    out = runs["tmp"] / f"{harness}-{benchmark}.jsonl"
    if not out.exists():
        assert cli.main(["import-samples", harness, str(runs[harness]), "--out", str(out),
                         "--benchmark", benchmark]) == 0
    return out


def evaluated(predictions: Path, config: str, runs):
    files = (str(runs["simpleqa"]),) if config == "chinese_simpleqa" else None
    return evaluate(predictions, EvalConfig(config=config, data_files=files, resamples=0,
                                            metrics=("factual", "meteor", "rouge_l", "cider")))


def exact_scores(run, family: str, split: str) -> dict:
    """The unrounded scores results.json rounds: summarize() over the per-item values of items.jsonl."""
    rows = [row[family] for row in run.items if family in row]
    if family == "factual":
        return {m: s["value"] for m, s in summarize({"grade": [r["grade"] for r in rows]}, statistic="grades").items()}
    return {m: s["value"] for m, s in summarize({m: [r[m] for r in rows] for m in OPEN_METRICS}).items()}


@pytest.mark.parametrize("harness", ["lm-eval", "lighteval"])
def test_the_harness_scores_equal_chimdqa_evaluate_on_its_imported_answers(runs, harness):
    reported = (lm_eval_scores if harness == "lm-eval" else lighteval_scores)(runs[harness])
    assert set(reported) == set(RUN_TASKS)
    checked = 0
    for task, (config, categories) in SELECTION.items():
        benchmark = "chinese_simpleqa" if config == "chinese_simpleqa" else "chimdqa"
        run = evaluated(imported(runs, harness, benchmark), config, runs)
        for family, names in (("factual", FACTUAL_METRICS), ("open_ended", OPEN_METRICS)):
            if family not in categories:
                assert not set(names) & set(reported[task]), (task, reported[task])
                continue
            exact = exact_scores(run, family, config)
            for name in names:
                assert reported[task][name] == pytest.approx(exact[name], abs=1e-9), (harness, task, name)
                results_value = run.results["metrics"][family][name]["value"]
                assert round(reported[task][name], 4) == results_value, (harness, task, name)
                checked += 1
    assert checked == 5 + 3 + 5 + 3 + 5
    # the sample submission's own answers, so the README's sample numbers: F1 64.71, ROUGE-L 29.68
    assert round(reported["chimdqa_factual"]["F1"], 2) == 64.71
    assert round(reported["chimdqa_open_ended"]["rouge_l"], 2) == 29.68


@pytest.mark.parametrize("harness", ["lm-eval", "lighteval"])
def test_the_harness_sends_the_prompts_of_chimdqa_generate(runs, harness):
    def messages(requests):
        return sorted(tuple((m["role"], m["content"]) for m in body["messages"]) for body in requests)

    generated = messages(runs["requests"]["generate"])
    sent = messages(r for r in runs["requests"][harness] if "下面是文档" in r["messages"][-1]["content"])
    assert len(generated) == 66 and sorted(set(sent)) == generated  # chimdqa_finance asks its 11 questions again
    closed_book = [r for r in runs["requests"][harness] if "下面是文档" not in r["messages"][-1]["content"]]
    assert len(closed_book) == 50
    assert all([m["role"] for m in r["messages"]] == ["system", "user"] for r in closed_book)
    assert all(r["temperature"] == 0 and r["max_tokens"] == 512 for r in runs["requests"][harness])


@pytest.mark.parametrize("harness", ["lm-eval", "lighteval"])
def test_import_samples_round_trips_the_answers_and_the_prompt_settings(runs, harness):
    predictions = imported(runs, harness, "chimdqa")
    lines = [json.loads(line) for line in predictions.read_text(encoding="utf-8").splitlines()]
    sample = {json.loads(line)["id"]: json.loads(line)["prediction"]
              for line in (SAMPLE_DIR / "predictions.jsonl").read_text(encoding="utf-8").splitlines()}
    assert {line["id"]: line["prediction"] for line in lines} == sample  # the reply, stripped as generate does
    assert len(lines) == 66  # chimdqa_finance's questions once, though two tasks asked them
    meta = json.loads(predictions.with_name(predictions.name.replace(".jsonl", ".meta.json")).read_text())
    generate_meta = json.loads(runs["generated"].with_name("generated.meta.json").read_text())
    generation = meta["generation"]
    assert generation["harness"]["name"] == harness and generation["harness"]["version"] == metadata.version(harness)
    assert generation["harness"]["tasks"] == ["chimdqa_factual", "chimdqa_finance", "chimdqa_open_ended"]
    for key in ("mode", "template", "temperature", "max_tokens"):
        assert generation[key] == generate_meta["generation"][key], key
    for key in ("truncation", "max_context_tokens", "signature", "token_counter", "pages", "tokens",
                "evidence_pages", "questions"):
        assert generation["context"][key] == generate_meta["generation"]["context"][key], key
    assert meta["model"].endswith("test-model") and meta["rag"] is False

    simpleqa = imported(runs, harness, "chinese_simpleqa")
    csqa_meta = json.loads(simpleqa.with_name(simpleqa.name.replace(".jsonl", ".meta.json")).read_text())
    assert csqa_meta["generation"]["mode"] == "closed-book" and "context" not in csqa_meta["generation"]
    assert len(simpleqa.read_text(encoding="utf-8").splitlines()) == 50


def test_the_two_harnesses_give_the_same_submission(runs):
    for benchmark in ("chimdqa", "chinese_simpleqa"):
        assert imported(runs, "lm-eval", benchmark).read_text() == imported(runs, "lighteval", benchmark).read_text()


def test_import_samples_refuses_what_it_cannot_read_as_one_run(runs, tmp_path, capsys):
    with pytest.raises(InputError, match="both ChiMDQA and Chinese SimpleQA answers.*--benchmark"):
        samples.submission(samples.read_lm_eval(runs["lm-eval"]))
    # a second run beside the first: which one is meant?
    copy = tmp_path / "two-runs"
    shutil.copytree(runs["lm-eval"], copy)
    model_folder = next(p for p in copy.iterdir() if p.is_dir())
    for path in list(model_folder.iterdir()):
        shutil.copy(path, path.with_name(re.sub(r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}\.\d+", "2001-01-01T00-00-00.000001",
                                                path.name)))
    with pytest.raises(InputError, match="2 lm-eval runs.*results_2001-01-01T00-00-00.000001.json"):
        samples.read_lm_eval(copy)
    one_run = samples.read_lm_eval(model_folder / "results_2001-01-01T00-00-00.000001.json")
    assert len(samples.submission(one_run, "chimdqa")[0]) == 66
    # the same question answered differently by two tasks names both lines
    finance = next(model_folder.glob("samples_chimdqa_finance_2001-*.jsonl"))
    text = finance.read_text(encoding="utf-8").replace('"filtered_resps": ["', '"filtered_resps": ["另一个答案', 1)
    finance.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=r"samples_chimdqa_f\w+_2001-.*line \d+.*differs from.*samples_chimdqa_"):
        samples.submission(samples.read_lm_eval(model_folder / "results_2001-01-01T00-00-00.000001.json"), "chimdqa")
    assert cli.main(["import-samples", "lm-eval", str(tmp_path / "nothing"), "--out", str(tmp_path / "p.jsonl")]) == 2
    assert "no such file or folder" in capsys.readouterr().err
    assert cli.main(["import-samples", "lighteval", str(runs["lm-eval"]), "--out", str(tmp_path / "p.jsonl")]) == 2
    assert "no details of the ChiMDQA tasks" in capsys.readouterr().err


def test_harness_path_names_the_task_files_and_each_task_has_one(capsys):
    assert cli.main(["harness-path", "lm-eval"]) == 0
    folder = Path(capsys.readouterr().out.strip())
    assert folder == task_path("lm-eval") and folder.is_dir()
    assert {p.stem for p in folder.glob("chim*.yaml")} | {p.stem for p in folder.glob("chinese*.yaml")} == set(TASKS)
    assert {p.stem.strip("_").removesuffix("_group") for p in folder.glob("_*_group.yaml")} == set(GROUPS)
    assert cli.main(["harness-path", "lighteval"]) == 0
    tasks_file = Path(capsys.readouterr().out.strip())
    assert tasks_file.is_file() and tasks_file.name == "tasks.py"
    for group, members in GROUPS.items():  # lighteval's task-list files
        assert tasks_file.with_name(f"{group}.txt").read_text().split() == [f"{m}|0" for m in members]
    # the wheel carries them: setup.cfg's package data names every kind of task file
    package_data = (REPO / "setup.cfg").read_text()
    assert "chimdqa_eval.harness = lm_eval/*.yaml, lm_eval/*.py, lighteval/*.py, lighteval/*.txt" in package_data


def test_a_harness_outside_the_tested_range_is_one_clear_error(monkeypatch, capsys):
    problem = version_problem("lm-eval", "0.4.9")
    assert "lm-eval 0.4.9 is installed" in problem and "lm-eval>=0.4.13,<0.5" in problem
    assert "pip install 'chimdqa-eval[harness]'" in problem
    assert "lighteval 0.14.1 is installed" in version_problem("lighteval", "0.14.1")
    assert version_problem("lm-eval", "0.4.13") is None and version_problem("lighteval", "0.13.0") is None

    real = metadata.version
    monkeypatch.setattr(metadata, "version", lambda name: "0.3.0" if name == "lm-eval" else real(name))
    assert cli.main(["harness-path", "lm-eval"]) == 2
    assert "lm-eval 0.3.0 is installed, but the ChiMDQA tasks are written for lm-eval>=0.4.13,<0.5" in \
        capsys.readouterr().err
    # the task hooks check it too, before lm-eval reads any of them
    import importlib.util

    spec = importlib.util.spec_from_file_location("chimdqa_lm_eval_utils", task_path("lm-eval") / "utils.py")
    with pytest.raises(InputError, match="lm-eval 0.3.0 is installed"):
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    monkeypatch.setattr(metadata, "version", lambda name: "0.14.0" if name == "lighteval" else real(name))
    spec = importlib.util.spec_from_file_location("chimdqa_lighteval_tasks", task_path("lighteval"))
    with pytest.raises(InputError, match="lighteval 0.14.0 is installed, but .* lighteval>=0.13,<0.14"):
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


def test_the_llm_and_cascade_judges_come_from_the_environment_and_grade_as_evaluate(monkeypatch):
    """The hooks grade with the judge CHIMDQA_JUDGE names, through the same endpoint code as `chimdqa evaluate
    --judge`; no harness run is needed to check that (the hooks are the library's functions)."""
    from chimdqa_eval.harness import tasks

    predictions = {json.loads(line)["id"]: json.loads(line)["prediction"]
                   for line in (SAMPLE_DIR / "predictions.jsonl").read_text(encoding="utf-8").splitlines()}
    docs = tasks.load_docs("chimdqa_factual", tasks.PromptSettings())
    items = [tasks.scored_item(doc, predictions[doc["id"]]) for doc in docs]

    def grader(body):
        user = body["messages"][-1]["content"]
        return "结论：正确" if "3.15亿元" in user or "512字" in user else "结论：错误"

    for judge in ("llm", "cascade"):
        with ChatServer(grader) as server:
            monkeypatch.setenv("CHIMDQA_JUDGE", judge)
            monkeypatch.setenv("CHIMDQA_JUDGE_MODEL", "grader")
            monkeypatch.setenv("CHIMDQA_JUDGE_API_BASE", server.api_base)
            harness = tasks.factual_scores(items)
            asked = len(server.requests)
            run = evaluate(SAMPLE_DIR / "predictions.jsonl",
                           EvalConfig(judge=judge, judge_model="grader", api_base=(server.api_base,), resamples=0,
                                      metrics=("factual",)))
        assert 0 < asked <= len(items) and (judge == "cascade") == (asked < len(items))
        assert harness == pytest.approx(exact_scores(run, "factual", "all"), abs=1e-9)
    monkeypatch.setenv("CHIMDQA_JUDGE", "oracle")
    with pytest.raises(InputError, match="environment .*CHIMDQA_JUDGE.*--judge: expected one of rule, llm, cascade"):
        tasks.factual_scores(items[:3])


@pytest.mark.parametrize("budget, truncation", [(300, "middle"), (250, "head")])
def test_the_task_prompts_follow_the_context_settings_as_generate_does(monkeypatch, tmp_path, budget, truncation):
    """CHIMDQA_MAX_CONTEXT_TOKENS and CHIMDQA_TRUNCATION cut the documents as `chimdqa generate
    --max-context-tokens --truncation` does: the same messages and the same record of what was kept."""
    from chimdqa_eval.harness import tasks

    monkeypatch.setenv("CHIMDQA_MAX_CONTEXT_TOKENS", str(budget))
    monkeypatch.setenv("CHIMDQA_TRUNCATION", truncation)
    settings = tasks.PromptSettings.from_environment()
    docs = tasks.load_docs("chimdqa_factual", settings) + tasks.load_docs("chimdqa_open_ended", settings)
    with ChatServer(lambda body: "答案") as server:
        out = tmp_path / "p.jsonl"
        assert cli.main(["generate", "--model", "m", "--api-base", server.api_base, "--mode", "long", "--out",
                         str(out), "--max-context-tokens", str(budget), "--truncation", truncation]) == 0
        sent = sorted((body["messages"][0]["content"], body["messages"][1]["content"]) for body in server.requests)
    assert sorted((doc["system"], doc["user"]) for doc in docs) == sent
    context = json.loads(out.with_name("p.meta.json").read_text())["generation"]["context"]
    assert context["questions_truncated"] == 66  # every sample document is longer than the budget
    ours = tasks.context_block(docs)
    for key in ("truncation", "max_context_tokens", "signature", "documents_truncated", "questions_truncated",
                "pages", "tokens", "evidence_pages", "questions"):
        assert ours[key] == context[key], key
    monkeypatch.setenv("CHIMDQA_TRUNCATION", "sides")
    with pytest.raises(InputError, match="CHIMDQA_TRUNCATION: expected one of middle, head, tail, got 'sides'"):
        tasks.PromptSettings.from_environment()
