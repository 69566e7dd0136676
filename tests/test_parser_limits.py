"""Limits on the parsers of files a user hands in, each tried through the command that reads the file: JSON nested
1,000 deep, an integer of 5,000 digits and text that is not UTF-8 (predictions, submission metadata, release files,
RAGChecker JSON), YAML anchors and aliases (a billion laughs) and YAML nested too deep, and submission metadata
whose numbers are not numbers. Each is exit 2 with a message naming the file (and line), never a traceback, and a
YAML bomb costs neither seconds nor gigabytes. (The build work files and review imports: test_build.py.)"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from chimdqa_eval import cli, release
from chimdqa_eval.schema import InputError, read_yaml_mapping

SAMPLE_PREDICTIONS = release.SAMPLE_DIR / "predictions.jsonl"
SAMPLE_LINES = SAMPLE_PREDICTIONS.read_text(encoding="utf-8").splitlines()
THIRD_ID = json.loads(SAMPLE_LINES[2])["id"]
DEEP = "[" * 1000 + "]" * 1000     # JSON nested 1,000 deep
HUGE = "7" * 5000                  # an integer of 5,000 digits
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def chimdqa(*args) -> int:
    return cli.main([*map(str, args)])


def refused(capsys, *args) -> str:
    """stderr of a command that must exit 2 without a traceback."""
    capsys.readouterr()
    assert chimdqa(*args) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


# ---- JSON ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("line, message", [
    ('{"id": "%s", "prediction": "x", "retrieved_contexts": %s}' % (THIRD_ID, DEEP),
     f"p.jsonl line 3 (id {THIRD_ID}): JSON nested more than 64 levels deep"),
    ('{"id": "%s", "prediction": "x", "confidence": %s}' % (THIRD_ID, HUGE),
     f"p.jsonl line 3 (id {THIRD_ID}): an integer of 5000 digits"),
    ('{"id": "%s", "prediction": "\udcff"}' % THIRD_ID, f"p.jsonl line 3 (id {THIRD_ID}): not UTF-8 text"),
])
def test_hostile_predictions_line(tmp_path, capsys, line, message):
    lines = SAMPLE_LINES[:2] + [line] + SAMPLE_LINES[3:]
    path = tmp_path / "p.jsonl"
    path.write_bytes("\n".join(lines).encode("utf-8", "surrogateescape") + b"\n")  # \udcff: the byte 0xff
    err = refused(capsys, "evaluate", "--predictions", path, "--out", tmp_path / "out", "--metrics", "factual")
    assert message in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("content, message", [
    (('{"model": "m",\n "notes": ' + DEEP + "}").encode(), "m.json: JSON nested more than 64 levels deep"),
    (('{"model": "m",\n "generation": {"mode": "rag",\n  "max_tokens": ' + HUGE + "}}").encode(),
     "m.json: line 3: an integer of 5000 digits"),
    ('{"model": "模型"}'.encode("gbk"), "m.json: not UTF-8 text"),
])
def test_hostile_metadata_file(tmp_path, capsys, content, message):
    (tmp_path / "m.json").write_bytes(content)
    err = refused(capsys, "evaluate", "--predictions", SAMPLE_PREDICTIONS, "--metadata", tmp_path / "m.json",
                  "--out", tmp_path / "out", "--metrics", "factual")
    assert message in err


RAG_RESULT = '{"query_id": "a", "query": "问题", "gt_answer": "答案", "response": "回答", "retrieved_context": []'


@pytest.mark.parametrize("content, message", [
    (('{"results": [' + RAG_RESULT + ', "extra": ' + DEEP + "}]}").encode(), "rc.json: JSON nested more than 64"),
    (('{"results": [\n' + RAG_RESULT + ',\n "answer2response": [' + HUGE + "]}]}").encode(),
     "rc.json: line 3: an integer of 5000 digits"),
    (('{"results": [' + RAG_RESULT + "}]}").encode("gbk"), "rc.json: not UTF-8 text"),
])
def test_hostile_ragchecker_file(tmp_path, capsys, content, message):
    (tmp_path / "rc.json").write_bytes(content)
    assert message in refused(capsys, "rag-metrics", tmp_path / "rc.json", "--checker", "precomputed")


def test_hostile_release_qa_line(tmp_path, capsys):
    lines = (release.SAMPLE_DIR / "qa" / "academic.jsonl").read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[1])
    lines[1] = lines[1][:-1] + ', "evidence": ' + DEEP + "}"
    (tmp_path / "qa.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    err = refused(capsys, "evaluate", "--predictions", SAMPLE_PREDICTIONS, "--data-files", tmp_path / "qa.jsonl",
                  "--out", tmp_path / "out")
    assert f"qa.jsonl line 2 (id {record['id']}): JSON nested more than 64 levels deep" in err


def test_hostile_documents_index_line(tmp_path, capsys):
    docs = tmp_path / "docs"
    shutil.copytree(release.SAMPLE_DIR, docs)
    lines = (docs / "documents.jsonl").read_text(encoding="utf-8").splitlines()
    doc_id = json.loads(lines[1])["doc_id"]
    lines[1] = lines[1][:-1] + ', "pages": ' + HUGE + "}"
    (docs / "documents.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    err = refused(capsys, "build", "generate", docs, "--out", tmp_path / "work", "--model", "m",
                  "--api-base", "http://127.0.0.1:9/v1", "--dry-run")
    assert f"documents.jsonl line 2 (id {doc_id}): an integer of 5000 digits" in err


# ---- YAML ---------------------------------------------------------------------------------------------------

LAUGHS = ", ".join(["*l7"] * 9)


def billion_laughs(anchors_key: str, last: str) -> str:
    """YAML with eight anchored lists of nine under `anchors_key`, each of the one before, and `last` holding nine
    aliases of the last: 9**9 (387 million) strings once expanded, from 600 bytes."""
    levels = ['&l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    levels += [f"&l{n} [{', '.join([f'*l{n - 1}'] * 9)}]" for n in range(1, 8)]
    return f"{anchors_key}: [{', '.join(levels)}]\n{last}\n"


# Starts `chimdqa ARGS` from a small process of its own: a child forked from pytest would count pytest's own
# resident memory (hundreds of MB once models are loaded) in its largest resident set. Capped at 2 GB of address
# space and 60 s of CPU, so that a bomb that does go off cannot take the machine with it.
LAUNCHER = """
import json, os, resource, subprocess, sys
resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30))
resource.setrlimit(resource.RLIMIT_CPU, (60, 60))
child = subprocess.Popen([sys.executable, "-m", "chimdqa_eval.cli", *sys.argv[1:]], stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(child.pid, 0)
print(json.dumps([os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024]))
"""


def run_child(args, tmp_path):
    """(exit status, stderr, CPU seconds, largest resident set in MB) of `chimdqa ARGS`."""
    done = subprocess.run([sys.executable, "-c", LAUNCHER, *map(str, args)], cwd=tmp_path, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300)
    status, cpu, rss = json.loads(done.stdout)
    return status, done.stderr, cpu, rss


@pytest.mark.parametrize("what", ["leaderboard", "grader"])
def test_a_billion_laughs_yaml_is_refused_at_once(tmp_path, what):
    if what == "leaderboard":  # the pinned settings are passed on as strings: str() would expand the aliases
        bomb = tmp_path / "leaderboard.yaml"
        bomb.write_text(billion_laughs("title", f"scoring: {{judge: [{LAUGHS}]}}"), encoding="utf-8")
        args = ["queue", "process", "--queue", tmp_path / "q", "--results", tmp_path / "r", "--board", tmp_path / "b",
                "--config", bomb]
    else:
        bomb = tmp_path / "grader.yaml"
        bomb.write_text(billion_laughs("system", f"verdicts: {{CO: [{LAUGHS}]}}"), encoding="utf-8")
        args = ["evaluate", "--predictions", SAMPLE_PREDICTIONS, "--out", tmp_path / "out", "--judge", "llm",
                "--judge-model", "m", "--api-base", "http://127.0.0.1:9/v1", "--judge-prompt", bomb]
    status, err, cpu, rss = run_child(args, tmp_path)
    assert status == 2, err[-2000:]
    assert f"{bomb}: line 1: YAML anchors and aliases (&name, *name) are not accepted" in err
    assert cpu < 2.0 and rss < 500, (cpu, rss)


def test_yaml_limits_name_the_file(tmp_path):
    path = tmp_path / "settings.yaml"
    path.write_text("title: board\nother: &a x\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"settings.yaml: line 2: YAML anchors and aliases \(&name, \*name\) are not "
                                         r"accepted; write the value out each time"):
        read_yaml_mapping(path, str(path))
    path.write_text("a: " + "[" * 1000 + "]" * 1000 + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"settings.yaml: line 1: YAML nested more than 64 levels deep"):
        read_yaml_mapping(path, str(path))
    path.write_text("a: '" + "x" * 2**20 + "'\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"settings.yaml: larger than 1,048,576 bytes, the most a YAML file may hold"):
        read_yaml_mapping(path, str(path))
    path.write_text("a: 1\nb: [x, y]\n", encoding="utf-8")
    assert read_yaml_mapping(path, str(path))[0] == {"a": 1, "b": ["x", "y"]}


def test_the_build_templates_and_the_card_header_refuse_aliases(tmp_path, monkeypatch):
    from chimdqa_eval.build import generate
    from chimdqa_eval.hub.dataset import CARD, card_with_configs

    shutil.copytree(generate.TEMPLATE_DIR, tmp_path / "templates")
    frame = tmp_path / "templates" / "generate" / "_frame.yaml"
    frame.write_text("version: &v frame-1\n" + frame.read_text(encoding="utf-8").split("\n", 1)[1],
                     encoding="utf-8")
    monkeypatch.setattr(generate, "TEMPLATE_DIR", tmp_path / "templates")
    generate.load_yaml.cache_clear()
    try:
        with pytest.raises(InputError, match=f"{frame}: line 1: YAML anchors and aliases"):
            generate.generation_template("retrieval")
    finally:
        generate.load_yaml.cache_clear()
    with pytest.raises(InputError, match=f"{CARD}: line 2: YAML anchors and aliases"):
        card_with_configs("---\nlicense: &l mit\nother: *l\n---\nbody\n", [], "rev")


# ---- metadata types -----------------------------------------------------------------------------------------

GENERATION = {  # what `chimdqa generate --mode rag` records, in short
    "mode": "rag", "backend": "openai", "model": "m", "api": ["127.0.0.1:8000"], "temperature": 0.0, "max_tokens": 256,
    "template": {"version": "answer-1", "sha256": "ab" * 32}, "n_questions": 10, "n_answered": 10,
    "retrieval": {"method": "bm25", "top_k": 5, "chunk_size": 400, "chunk_overlap": 50, "reranker": None},
    "retrieval_quality": {"k": 5, "hit_at_k": 80.0, "recall_at_k": 75.5, "n": 10, "n_without_evidence": 0,
                          "by": {"question_type": {"retrieval": {"hit_at_k": 80.0, "recall_at_k": 75.5, "n": 10}}}},
}


def metadata_file(tmp_path, generation) -> Path:
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"model": "m", "rag": True, "generation": generation}), encoding="utf-8")
    return path


def test_metadata_numbers_and_mappings_are_checked_by_type(tmp_path, capsys):
    generation = json.loads(json.dumps(GENERATION))
    generation["retrieval_quality"]["k"] = "<img src=x onerror=alert(1)>"
    generation["retrieval_quality"]["hit_at_k"] = "high"
    generation["retrieval_quality"]["by"]["question_type"]["retrieval"]["n"] = "10"
    generation["temperature"] = "hot"
    generation["template"] = "answer-1"
    generation["retrieval"]["top_k"] = True
    generation["context"] = {"max_context_tokens": "all", "questions_truncated": -1}
    err = refused(capsys, "evaluate", "--predictions", SAMPLE_PREDICTIONS, "--metadata",
                  metadata_file(tmp_path, generation), "--out", tmp_path / "out", "--metrics", "factual")
    assert f"{tmp_path / 'm.json'}: invalid submission metadata: 8 problems" in err
    for problem in ("generation.retrieval_quality.k must be an integer, got str '<img src=x onerror=alert(1)>'",
                    "generation.retrieval_quality.hit_at_k must be a finite number, got str 'high'",
                    "generation.retrieval_quality.by.question_type.retrieval.n must be an integer, got str '10'",
                    "generation.temperature must be a finite number or null, got str 'hot'",
                    "generation.template must be an object, got str 'answer-1'",
                    "generation.retrieval.top_k must be an integer, got bool True",
                    "generation.context.max_context_tokens must be an integer, got str 'all'",
                    "generation.context.questions_truncated must be at least 0, got -1"):
        assert problem in err, problem
    assert not (tmp_path / "out").exists()


def test_metadata_as_generate_writes_it_is_accepted_and_reported(tmp_path, capsys):
    assert chimdqa("evaluate", "--predictions", SAMPLE_PREDICTIONS, "--metadata", metadata_file(tmp_path, GENERATION),
                   "--out", tmp_path / "out", "--metrics", "factual", "--resamples", 0) == 0
    report = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "<th>hit@5</th>" in report and "<td>80.0</td>" in report
