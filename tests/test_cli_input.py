"""`chimdqa evaluate` on hostile or broken input: exit 2 with the line and id before anything is scored or
written, so the results of an earlier run in the same folder stay as they were."""
import json

import pytest

from chimdqa_eval import cli, release
from chimdqa_eval.neural import DEFAULT_PERPLEXITY_MODEL

SAMPLE_PREDICTIONS = release.SAMPLE_DIR / "predictions.jsonl"


@pytest.fixture
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def evaluate(*args) -> int:
    return cli.main(["evaluate", *map(str, args)])


def sample_rows() -> list[dict]:
    return [json.loads(line) for line in SAMPLE_PREDICTIONS.read_text(encoding="utf-8").splitlines()]


def write_rows(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")  # ASCII: "\ud800" stays escaped
    return path


def test_lone_surrogate_leaves_an_earlier_run_untouched(tmp_path, capsys, offline):
    out = tmp_path / "out"
    assert evaluate("--predictions", SAMPLE_PREDICTIONS, "--out", out, "--resamples", 0, "--metrics", "factual") == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    rows = sample_rows()
    rows[3]["prediction"] = "前\ud800后"
    preds = write_rows(tmp_path / "p.jsonl", rows)
    capsys.readouterr()
    assert evaluate("--predictions", preds, "--out", out, "--resamples", 0, "--metrics", "factual") == 2
    err = capsys.readouterr().err
    assert f"p.jsonl line 4 (id {rows[3]['id']}): prediction (character 2: '\\ud800') holds a lone UTF-16 " \
           "surrogate" in err
    assert "Traceback" not in err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_a_huge_model_name_is_refused_before_scoring(tmp_path, capsys, offline):
    assert evaluate("--predictions", SAMPLE_PREDICTIONS, "--out", tmp_path / "out",
                    "--model", "M" * 200_000) == 2
    assert "'model' is 200,000 characters long; at most 200 are allowed" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_perplexity_model_help_and_behaviour_agree(tmp_path, capsys, offline, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # argparse wraps help text at hyphens otherwise
    with pytest.raises(SystemExit):
        cli.main(["evaluate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"when the predictions carry no logprobs (default {DEFAULT_PERPLEXITY_MODEL})" in text
    # with logprobs the model would never be used: naming one is an error rather than silently ignored
    preds = write_rows(tmp_path / "p.jsonl", [{**r, "logprobs": [-1.0]} for r in sample_rows()])
    assert evaluate("--predictions", preds, "--out", tmp_path / "out", "--perplexity-model", "some/lm") == 2
    assert "--perplexity-model some/lm: the predictions carry logprobs" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_rag_pair_with_a_string_for_a_number_is_refused_before_scoring(tmp_path, capsys, offline):
    assert evaluate("--predictions", SAMPLE_PREDICTIONS, "--out", tmp_path / "a", "--resamples", 0,
                    "--metrics", "factual") == 0
    path = tmp_path / "a" / "results.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["model"]["rag"] = True
    doc["metrics"]["factual"]["F1"]["value"] = "99"
    path.write_text(json.dumps(doc), encoding="utf-8")
    capsys.readouterr()
    assert evaluate("--predictions", SAMPLE_PREDICTIONS, "--out", tmp_path / "b", "--rag-pair", path) == 2
    err = capsys.readouterr().err
    assert f"{path}: invalid results file: 1 problem" in err
    assert "metrics.factual.F1.value must be a finite number or null, got str '99'" in err
    assert not (tmp_path / "b").exists()
