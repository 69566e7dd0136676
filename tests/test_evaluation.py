"""`chimdqa_eval.evaluate(predictions, config) -> Run` from Python: the same numbers as `chimdqa evaluate`'s
results.json, the settings object's checks, and the README's Python example."""
import json
import re
from pathlib import Path

import pytest

from chat_server import ChatServer
from chimdqa_eval import EvalConfig, cli, evaluate, release
from chimdqa_eval.report.results import read_items, read_results
from chimdqa_eval.schema import InputError

SAMPLE = release.SAMPLE_DIR / "predictions.jsonl"
REPO = Path(__file__).resolve().parents[1]
PER_RUN = ("run_id", "created", "files", "_path")  # what differs between any two runs of the same thing


def comparable(results: dict) -> dict:
    doc = {k: v for k, v in results.items() if k not in PER_RUN}
    doc["settings"] = {k: v for k, v in doc["settings"].items() if k != "llm_usage"}  # the second run is cached
    return json.loads(json.dumps(doc))


def cli_run(tmp_path, predictions, *flags) -> tuple[dict, dict]:
    out = tmp_path / "cli"
    assert cli.main(["evaluate", "--predictions", str(predictions), "--out", str(out), *map(str, flags)]) == 0
    results = read_results(out)
    return results, read_items(results)


@pytest.mark.parametrize("selection", [{}, {"config": "finance"}, {"split": "open_ended"}])
def test_python_equals_the_cli_on_the_sample(tmp_path, selection, unrendered_plots):
    run = evaluate(SAMPLE, EvalConfig(resamples=30, seed=3, **selection))
    flags = [part for key, value in selection.items() for part in (f"--{key}", value)]
    results, items = cli_run(tmp_path, SAMPLE, "--resamples", 30, "--seed", 3, *flags)
    assert comparable(run.results) == comparable(results)
    assert {row["id"]: row for row in run.items} == items
    written = run.write(tmp_path / "py")  # the Run writes the same folder
    assert comparable(read_results(written)) == comparable(results)


def test_python_equals_the_cli_on_chinese_simpleqa_with_the_cascade(tmp_path):
    rows = [{"id": f"s{i}", "primary_category": cat, "secondary_category": "x", "question": q, "answer": a,
             "urls": []} for i, (cat, q, a) in enumerate([("自然", "中国的首都是哪里？", "北京"),
                                                          ("历史", "五四运动发生在哪一年？", "1919年"),
                                                          ("自然", "水的化学式是什么？", "H2O")])]
    data = tmp_path / "csqa.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    predictions = tmp_path / "p.jsonl"
    answers = ["北京", "可能是1921年吧，也可能是1919年", "我觉得答案和氢氧有关"]  # the rules are unsure of the last
    predictions.write_text("".join(json.dumps({"id": f"s{i}", "prediction": a}, ensure_ascii=False) + "\n"
                                   for i, a in enumerate(answers)), encoding="utf-8")
    with ChatServer(lambda body: "理由……\n结论：错误") as server:
        config = EvalConfig(config="chinese_simpleqa", data_files=[str(data)], judge="cascade", judge_model="j",
                            api_base=server.api_base, resamples=0)
        run = evaluate(predictions, config)
        asked = len(server.requests)
        results, items = cli_run(tmp_path, predictions, "--config", "chinese_simpleqa", "--data-files", data,
                                 "--judge", "cascade", "--judge-model", "j", "--api-base", server.api_base,
                                 "--resamples", 0)
    assert 0 < asked < len(rows)  # the cascade asked the LLM only where the rules were unsure
    assert comparable(run.results) == comparable(results)
    assert {row["id"]: row for row in run.items} == items


@pytest.mark.parametrize("keywords, message", [
    ({"judge": "oracle"}, "--judge: expected one of rule, llm, cascade"),
    ({"resamples": -1}, "--resamples: expected 0"),
    ({"resamples": 1}, "--resamples: expected 0 (no CIs) or a number from 2, got 1"),
    ({"resamples": "many"}, "--resamples: expected a whole number"),
    ({"allow_partial": "yes"}, "--allow-partial: expected true or false"),
    ({"concurrency": 0}, "--concurrency 0"),
    ({"judge_prompt": "x.yaml"}, "--judge-prompt is the LLM judge's template"),
    ({"price_per_mtok": ["a", 1]}, "--price-per-mtok: expected a list of numbers"),
    ({"seed": -1}, "--seed: expected a whole number from 0"),
])
def test_the_settings_are_checked_when_made(keywords, message):
    with pytest.raises(InputError, match=re.escape(message)):
        EvalConfig(**keywords)


def test_paths_are_accepted_where_files_are_named(tmp_path):
    config = EvalConfig(data_dir=release.SAMPLE_DIR, data_files=[tmp_path / "qa.jsonl"])
    assert config.data_dir == str(release.SAMPLE_DIR) and config.data_files == (str(tmp_path / "qa.jsonl"),)
    assert EvalConfig(api_base="http://h:1/v1").api_base == ("http://h:1/v1",)  # one text for a list of one


def test_the_readme_python_example_runs(tmp_path, monkeypatch):
    """The README's Python example, run as written (from a folder where it may write results/)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- python-api -->\n```python\n(.*?)```", readme, re.S)
    assert block, "the README has no <!-- python-api --> example"
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(block.group(1).replace("data/sample/", f"{release.SAMPLE_DIR}/"), "README.md", "exec"), namespace)
    written = read_results(tmp_path / "results")
    assert comparable(namespace["run"].results) == comparable(written)
    assert namespace["f1"] == written["metrics"]["factual"]["F1"]["value"]


def test_results_record_the_run_they_are_paired_with(tmp_path):
    """--rag-pair (rag_pair=): results.json names the other condition's run, as the report pairs them."""
    plain = evaluate(SAMPLE, EvalConfig(metrics=["factual"], resamples=0))
    plain_path = plain.write(tmp_path / "without")
    with_rag = tmp_path / "with-rag.jsonl"
    with_rag.write_bytes(SAMPLE.read_bytes())
    (tmp_path / "with-rag.meta.json").write_text(json.dumps({"model": "sample-system", "rag": True}),
                                                 encoding="utf-8")
    run = evaluate(with_rag, EvalConfig(metrics=["factual"], resamples=0, rag_pair=str(tmp_path / "without")))
    assert run.results["rag_pair"] == {"run_id": plain.results["run_id"], "model": "sample-system", "rag": False,
                                       "file": str(plain_path)}
    assert "rag_pair" not in plain.results
    assert read_results(run.write(tmp_path / "with"))["rag_pair"]["run_id"] == plain.results["run_id"]
    page = (tmp_path / "with" / "report.html").read_text(encoding="utf-8")
    assert f"sample-system without RAG (run {plain.results['run_id']})" in page
