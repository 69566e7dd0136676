"""Nothing heavy is imported before it is needed: the command line and an offline evaluate of the sample with the
rule judge never import torch, transformers, evaluate, NLTK or matplotlib (the report draws its plots as SVG text).
Each check runs in a fresh process, so nothing another test imported can hide or fake an import. A model that is
not there is told from the file system, with the reason transformers itself gives."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chimdqa_eval import models, release
from chimdqa_eval.models import ModelUnavailable

ROOT = Path(__file__).resolve().parent.parent
NEVER = ("torch", "transformers", "evaluate", "nltk")


def imported_by(code: str) -> set[str]:
    """The top-level packages in sys.modules after `code` ran in a new interpreter (offline, as the CLI is)."""
    probe = code + "\nimport json, sys\nprint('\\n' + json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return set(json.loads(done.stdout.rstrip().rsplit("\n", 1)[-1]))


def evaluate_code(*args) -> str:
    return ("from chimdqa_eval.cli import main\n"
            f"assert main({[str(a) for a in args]!r}) == 0\n")


def test_importing_the_command_line_imports_no_heavy_library():
    assert not imported_by("import chimdqa_eval.cli") & {*NEVER, "matplotlib"}


def test_evaluating_the_sample_with_the_rule_judge_imports_no_model_library(tmp_path, prebuilt_dictionary):
    out = tmp_path / "out"
    loaded = imported_by(evaluate_code("evaluate", "--predictions", release.SAMPLE_DIR / "predictions.jsonl",
                                       "--out", out, "--judge", "rule"))
    assert not loaded & set(NEVER)
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    skipped = {s["metric"] for s in results["skipped"] if s["family"] == "open_ended"}
    assert {"perplexity", "bertscore_f1"} <= skipped  # no model here: told without importing one
    assert results["metrics"]["open_ended"]["meteor"]["value"] > 0  # METEOR ran, stemming without NLTK
    # the sample's report has plots, drawn without matplotlib
    assert "data:image/svg+xml" in (out / "report.html").read_text(encoding="utf-8") and "matplotlib" not in loaded


def test_a_report_without_plots_imports_no_matplotlib(tmp_path, prebuilt_dictionary):
    data = tmp_path / "simpleqa.jsonl"
    data.write_text(json.dumps({"id": "s1", "primary_category": "中华文化", "secondary_category": "历史",
                                "question": "秦朝第一位皇帝是谁？", "answer": "秦始皇", "urls": []},
                               ensure_ascii=False) + "\n", encoding="utf-8")
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text('{"id": "s1", "prediction": "秦始皇"}\n', encoding="utf-8")
    out = tmp_path / "out"
    loaded = imported_by(evaluate_code("evaluate", "--predictions", predictions, "--out", out, "--config",
                                       "chinese_simpleqa", "--data-files", data, "--resamples", "0"))
    assert "data:image/" not in (out / "report.html").read_text(encoding="utf-8")
    assert not loaded & {*NEVER, "matplotlib"}


def cases(tmp_path: Path) -> list[str]:
    no_config = tmp_path / "no-config"
    no_config.mkdir()
    return ["no-such-org/no-such-model", "no-such-model", str(tmp_path / "no-such-folder"), "./no/such/folder",
            "a/b/c", str(no_config), ".hidden-name"]


@pytest.mark.parametrize("download", [False, None])
def test_a_missing_model_is_told_without_transformers_with_its_reason(tmp_path, monkeypatch, download):
    """Offline, a model that is not there fails before transformers is imported, with the message that trying
    to load it gives (ModelUnavailable's text goes into results.json's `skipped`)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(models.hf_constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    for name in cases(tmp_path):
        assert models._known_missing(name, download) is not None, name
        with pytest.raises(ModelUnavailable) as told:
            models.load_model("encoder", name, "BERTScore", download=download)
        with monkeypatch.context() as trying:
            trying.setattr(models, "_known_missing", lambda model, download: None)
            with pytest.raises(ModelUnavailable) as tried:
                models.load_model("encoder", name, "BERTScore", download=download)
        assert str(told.value) == str(tried.value)


def test_a_model_that_may_be_there_is_left_to_transformers(tmp_path, monkeypatch):
    monkeypatch.setattr(models.hf_constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    (tmp_path / "hub" / "models--some-org--cached-model").mkdir(parents=True)
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "config.json").write_text("{}", encoding="utf-8")
    for name in ("some-org/cached-model", str(tmp_path / "folder"), "bad name", "x--y", "name.git"):
        assert models._known_missing(name, False) is None, name  # cached, a model folder, or the Hub's own complaint
    monkeypatch.setattr(models, "hub_reachable", lambda: True)
    assert models._known_missing("no-such-org/no-such-model", None) is None  # the Hub may have it
