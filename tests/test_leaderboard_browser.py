"""The static leaderboard page in a headless browser (see browser.py for which one, and when a missing one
skips or fails): it loads, its table has one row per result, and every embedded plot decodes (the page records
naturalWidth > 0 per image)."""
import json
import os
import re
import stat

from browser import browser_or_outcome, chromium, dump_dom, find_browser
from chimdqa_eval import cli, release
from chimdqa_eval.report.leaderboard import write_leaderboard
from chimdqa_eval.report.results import read_results


def test_leaderboard_page_renders_in_chromium(tmp_path, monkeypatch):
    browser = chromium()  # first: skipping (or failing) costs no scoring
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

    dom = dump_dom(browser, board / "index.html", tmp_path / "profile")
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


def _fake_executable(folder, name):
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_the_browser_is_found_on_path_in_order(tmp_path):
    bin_a, bin_b, empty = tmp_path / "a", tmp_path / "b", tmp_path / "empty"
    empty.mkdir()
    chrome = _fake_executable(bin_a, "google-chrome")
    chromium_browser = _fake_executable(bin_b, "chromium-browser")
    assert find_browser({"PATH": str(bin_a)}) == (chrome, "")
    # chromium-browser comes before google-chrome, whichever folder holds it
    assert find_browser({"PATH": os.pathsep.join([str(bin_a), str(bin_b)])}) == (chromium_browser, "")
    (bin_a / "chromium").write_text("", encoding="utf-8")  # a file that cannot run does not count
    assert find_browser({"PATH": str(bin_a)}) == (chrome, "")
    assert browser_or_outcome({"PATH": str(bin_a), "CHIMDQA_REQUIRE_BROWSER": "1"}) == ("run", chrome)


def test_chimdqa_browser_wins_and_must_exist(tmp_path):
    mine = _fake_executable(tmp_path / "elsewhere", "my-browser")
    _fake_executable(tmp_path / "bin", "chromium")
    assert find_browser({"PATH": str(tmp_path / "bin"), "CHIMDQA_BROWSER": mine}) == (mine, "")
    assert find_browser({"PATH": str(tmp_path / "elsewhere"), "CHIMDQA_BROWSER": "my-browser"}) == (mine, "")
    found, reason = find_browser({"PATH": str(tmp_path / "bin"), "CHIMDQA_BROWSER": str(tmp_path / "nope")})
    assert found is None and "CHIMDQA_BROWSER=" in reason and "nope" in reason  # not replaced by bin/chromium


def test_no_browser_skips_unless_one_is_required(tmp_path):
    empty = {"PATH": str(tmp_path)}
    outcome, reason = browser_or_outcome(empty)
    assert outcome == "skip" and "chromium, chromium-browser, google-chrome" in reason
    assert "apt-get install -y chromium" in reason
    assert browser_or_outcome({**empty, "CHIMDQA_REQUIRE_BROWSER": "1"}) == ("fail", reason)
    assert browser_or_outcome({**empty, "CHIMDQA_REQUIRE_BROWSER": "0"})[0] == "skip"


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
    dom = dump_dom(chromium(), board / "index.html", tmp_path / "profile", "--window-size=1400,3000")
    assert len(re.findall(r'<section class="group', dom)) == 2
    width, viewport = map(int, re.search(r'data-width="(\d+)/(\d+)"', dom).groups())
    assert width <= viewport <= 1400
