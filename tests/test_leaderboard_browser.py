"""The static leaderboard page in headless Chromium (Debian's `chromium`, installed by .ci/run): it loads, its
table has one row per result, and every embedded plot decodes (the page records naturalWidth > 0 per image)."""
import json
import os
import re
import shutil
import subprocess

import pytest

from chimdqa_eval import cli, release
from chimdqa_eval.report.leaderboard import write_leaderboard
from chimdqa_eval.report.results import read_results

CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
                  "--virtual-time-budget=10000", "--dump-dom")


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        pytest.fail("Debian's chromium is not installed: the leaderboard page cannot be checked in a browser "
                    "(`apt-get install -y chromium`, as .ci/run does)")
    return found


def dump_dom(page, profile) -> str:
    run = subprocess.run([chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", page.resolve().as_uri()],
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "HOME": str(profile)})
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout


def test_leaderboard_page_renders_in_chromium(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    rows = [json.loads(line) for line in
            (release.SAMPLE_DIR / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    variants = {"first": {}, "second": {"law-ret-002": "16周岁"}, "third": {"aca-ret-001": "不知道"}}
    results = []
    for name, changes in variants.items():
        preds = tmp_path / f"{name}.jsonl"
        preds.write_text("".join(json.dumps({**r, "prediction": changes.get(r["id"], r["prediction"])},
                                            ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        assert cli.main(["evaluate", "--predictions", str(preds), "--out", str(tmp_path / name), "--model", name,
                         "--resamples", "0", "--metrics", "factual", "open_ended"]) == 0
        results.append(read_results(tmp_path / name))
    board = tmp_path / "board"
    write_leaderboard(board, results)

    dom = dump_dom(board / "index.html", tmp_path / "profile")
    assert "<title>ChiMDQA leaderboard</title>" in dom
    table = re.search(r'<table id="leaderboard">.*?<tbody>(.*?)</tbody>', dom, re.S)
    assert table, "the leaderboard table is missing from the rendered page"
    models = re.findall(r"<tr[^>]*><td>\d+</td><td class=\"?name\"?>([^<]+)</td>", table.group(1))
    assert models == ["second", "first", "third"]  # one row per result, best factual F1 first
    images = re.findall(r"<img [^>]*>", dom)
    assert len(images) >= 3
    assert all('data-rendered="yes"' in img for img in images), images
    status = re.search(r'id="image-status"[^>]*data-ok="(\d+)"[^>]*data-total="(\d+)"', dom)
    assert status and status.group(1) == status.group(2) == str(len(images))


def test_leaderboard_fits_1400_px_with_every_column(tmp_path, monkeypatch):
    """A group with every headline column (open-ended and RAG ones included) and the paper's rows beside it:
    one section per group, and nothing scrolls sideways in a 1,400-px window (the page records its width)."""
    from chimdqa_eval.report.leaderboard import OPEN_COLUMNS, RAG_COLUMNS, matching_paper_rows

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert cli.main(["evaluate", "--predictions", str(release.SAMPLE_DIR / "predictions.jsonl"), "--out",
                     str(tmp_path / "run"), "--resamples", "0", "--model",
                     "a-rather-long-model-name-with-its-fine-tune-and-date-2025-06-01"]) == 0
    run = read_results(tmp_path / "run")
    entry = run["metrics"]["open_ended"]["rouge_l"]  # stands in for the metrics an offline run skips
    full = dict(run, model=dict(run["model"], rag=True), run_id="f" * 32, metrics={
        "factual": run["metrics"]["factual"], "open_ended": {m: entry for m in OPEN_COLUMNS},
        "rag": {m: entry for m in RAG_COLUMNS}})
    board = tmp_path / "board"
    write_leaderboard(board, [run, full, *matching_paper_rows([run])])
    page = board / "index.html"
    run_ = subprocess.run([chromium(), *CHROMIUM_FLAGS, "--window-size=1400,3000",
                           f"--user-data-dir={tmp_path / 'profile'}", page.resolve().as_uri()],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": str(tmp_path)})
    assert run_.returncode == 0, run_.stderr[-2000:]
    dom = run_.stdout
    assert len(re.findall(r'<section class="group', dom)) == 2
    width, viewport = map(int, re.search(r'data-width="(\d+)/(\d+)"', dom).groups())
    assert width <= viewport <= 1400
