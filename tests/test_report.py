"""results.json against its JSON Schema, the Hub exports parsed back, compare, the leaderboard and the report."""
import base64
import csv
import io
import json
import math
import re

import jsonschema
import pytest
import yaml
from xml.etree import ElementTree

from chimdqa_eval import cli, release
from chimdqa_eval.hub import exports
from chimdqa_eval.report import compare, leaderboard, svg
from chimdqa_eval.families import METRIC_LABELS
from chimdqa_eval.report.results import SCHEMA_PATH, read_items, read_results
from chimdqa_eval.schema import InputError

SAMPLE_PREDICTIONS = release.SAMPLE_DIR / "predictions.jsonl"
# Model B fixes four of model A's wrong factual answers.
FIXES = {"aca-ret-002": "60.2", "law-ret-002": "16周岁", "law-cal-001": "50倍", "edu-cal-001": "54.1%"}


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    rows = [json.loads(line) for line in SAMPLE_PREDICTIONS.read_text(encoding="utf-8").splitlines()]
    better = root / "better.jsonl"
    better.write_text("".join(json.dumps({**r, "prediction": FIXES.get(r["id"], r["prediction"])},
                                         ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    try:
        for name, preds in (("a", SAMPLE_PREDICTIONS), ("b", better)):
            assert cli.main(["evaluate", "--predictions", str(preds), "--out", str(root / name),
                             "--resamples", "100", "--model", f"model-{name}"]) == 0
    finally:
        mp.undo()
    return root, read_results(root / "a"), read_results(root / "b")


def test_results_match_the_json_schema(two_runs):
    root, _, _ = two_runs
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    document = json.loads((root / "a" / "results.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate(document)
    broken = dict(document, metrics={"factual": {"F1": {"value": 1.0, "n": 3}}})  # no ci95 / signature
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate(broken)
    assert document["metrics"]["open_ended"]["cider_d"]["note"] == "no variation"  # validated above
    open_ended = schema["properties"]["metrics"]["properties"]["open_ended"]
    assert open_ended["propertyNames"]["enum"] == list(METRIC_LABELS["open_ended"])
    cider_d = dict(document["metrics"]["open_ended"]["cider_d"], ci95=[0.0, 0.0])  # a note and an interval
    for bad in ({"cider_d": cider_d}, {"cidr": document["metrics"]["open_ended"]["cider"]}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.Draft202012Validator(schema).validate(
                dict(document, metrics=dict(document["metrics"], open_ended=bad)))


def test_the_schemas_length_limits_are_the_constants():
    """results.schema.json writes out schema.METADATA_LIMITS and ID_LIMIT (a JSON Schema cannot import them):
    they must not drift apart."""
    from chimdqa_eval.schema import ID_LIMIT, METADATA_LIMITS

    defs = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))["$defs"]

    def resolved(rule: dict) -> dict:
        return defs[rule["$ref"].removeprefix("#/$defs/")] if "$ref" in rule else rule

    model = defs["model"]["properties"]
    assert {name: resolved(model[name])["maxLength"] for name in METADATA_LIMITS} == METADATA_LIMITS
    assert defs["id"]["maxLength"] == defs["id_or_null"]["maxLength"] == ID_LIMIT
    assert defs["shown"]["properties"]["metrics"]["additionalProperties"]["propertyNames"]["maxLength"] == ID_LIMIT
    assert defs["shown"]["properties"]["dataset"]["properties"]["revision"] == {"$ref": "#/$defs/id"}


def test_read_results_rejects_what_it_cannot_read(tmp_path, two_runs):
    root, _, _ = two_runs
    with pytest.raises(InputError, match="no results file"):
        read_results(tmp_path)
    document = json.loads((root / "a" / "results.json").read_text(encoding="utf-8"))
    (tmp_path / "results.json").write_text(json.dumps(dict(document, schema_version="3.0")), encoding="utf-8")
    with pytest.raises(InputError, match="schema 3.0 is not readable"):
        read_results(tmp_path)
    (tmp_path / "results.json").write_text(json.dumps(dict(document, schema_version="1.0")), encoding="utf-8")
    with pytest.raises(InputError, match="schema 1.0 records no checksum of its items.jsonl.*evaluate"):
        read_results(tmp_path)  # written before results.json recorded its items' sha256: re-run to rewrite
    (tmp_path / "results.json").write_text("[]", encoding="utf-8")
    with pytest.raises(InputError, match="not a chimdqa results file"):
        read_results(tmp_path)


def test_model_index_parses_back(two_runs, capsys):
    root, a, _ = two_runs
    assert cli.main(["export", "--format", "model-index", str(root / "a"), "--dataset-id", "org/chimdqa"]) == 0
    card = yaml.safe_load(capsys.readouterr().out)
    entry = card["model-index"][0]
    assert entry["name"] == "model-a"
    result = entry["results"][0]
    assert result["dataset"] == {"name": "ChiMDQA", "type": "org/chimdqa", "config": "all",
                                 "split": "test", "revision": a["dataset"]["revision"]}
    values = {(m["type"], m["config"]): m["value"] for m in result["metrics"]}
    assert values[("chimdqa_factual", "F1")] == a["metrics"]["factual"]["F1"]["value"]
    assert values[("chimdqa_open", "rouge_l")] == a["metrics"]["open_ended"]["rouge_l"]["value"]
    assert values[("chimdqa_open", "cider")] == a["metrics"]["open_ended"]["cider"]["value"]
    assert len(values) == 5 + 4  # CO NA IN CGA F1; METEOR ROUGE-L CIDEr CIDEr-D
    assert result["task"]["name"] == "Chinese long-document question answering"
    csqa = dict(a, dataset=dict(a["dataset"], name="Chinese SimpleQA", config="chinese_simpleqa"))
    task = exports.model_index(csqa, "org/csqa")["model-index"][0]["results"][0]["task"]
    assert task["name"] == "Chinese short-form factual question answering"


def test_eval_results_file_parses_back(two_runs, tmp_path):
    root, a, _ = two_runs
    assert cli.main(["export", "--format", "eval-results", str(root / "a"), "--out", str(tmp_path),
                     "--dataset-id", "org/chimdqa"]) == 0
    entries = yaml.safe_load((tmp_path / ".eval_results" / "chimdqa.yaml").read_text(encoding="utf-8"))
    by_task = {e["dataset"]["task_id"]: e for e in entries}
    assert by_task["factual_f1"]["value"] == a["metrics"]["factual"]["F1"]["value"]
    assert by_task["factual_f1"]["dataset"]["id"] == "org/chimdqa"
    assert by_task["factual_f1"]["date"] == "2025-06-01"
    assert a["dataset"]["revision"] in by_task["open_ended_meteor"]["notes"]
    rag = dict(a, model=dict(a["model"], rag=True))
    assert exports.eval_results_filename(rag) == "chimdqa_with_rag.yaml"
    one_split = dict(a, dataset=dict(a["dataset"], config="finance", split="factual"))
    assert exports.eval_results_filename(one_split) == "chimdqa_finance_factual.yaml"
    assert exports.eval_results(rag, "org/chimdqa")[0]["notes"].startswith("With RAG")


def test_compare_uses_paired_items(two_runs, capsys):
    root, a, b = two_runs
    rows = {(r["family"], r["metric"]): r for r in compare.compare(a, b, n_resamples=300)}
    items_a, items_b = read_items(a), read_items(b)
    changed = [i for i in items_a if "factual" in items_a[i]
               and items_a[i]["factual"]["grade"] != items_b[i]["factual"]["grade"]]
    assert sorted(changed) == sorted(FIXES)  # each fixed answer is now graded CO, nothing else moved
    co = rows[("factual", "CO")]
    assert co["diff"] == pytest.approx(100 * len(FIXES) / 36)
    assert co["a"] == pytest.approx(a["metrics"]["factual"]["CO"]["value"], abs=1e-4)
    assert 0 < co["p_value"] <= 0.2 and co["comparable"] and co["n"] == 36
    # No item's NA changed: like METEOR below, a difference no resample can move has no p-value.
    na = rows[("factual", "NA")]
    assert na["diff"] == 0 and na["p_value"] is None and na["note"] == "no variation"
    meteor = rows[("open_ended", "meteor")]  # open-ended answers are identical: nothing to test
    assert meteor["diff"] == 0 and meteor["p_value"] is None and meteor["note"] == "no variation"
    assert "note" not in co
    assert cli.main(["compare", str(root / "a"), str(root / "b"), "--resamples", "100"]) == 0
    out = capsys.readouterr().out
    assert "model-a" in out and "model-b" in out and re.search(r"factual\s+CO\s+.*\+11\.11\s+0\.\d{3}\s", out)
    assert re.search(r"open_ended\s+METEOR\s+.*\+0\.00\s+no variation\s+30", out)


def test_compare_says_no_variation_for_cider_d_on_paragraphs(two_runs, tmp_path, capsys, monkeypatch):
    """Other open-ended answers: CIDEr-D is ~0 per item in both runs, so no p-value; CIDEr moves and gets one."""
    root, a, _ = two_runs
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    rows = [json.loads(line) for line in SAMPLE_PREDICTIONS.read_text(encoding="utf-8").splitlines()]
    shorter = tmp_path / "shorter.jsonl"
    shorter.write_text("".join(json.dumps({**r, "prediction": r["prediction"].split("。")[0] + "。"},
                                          ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    assert cli.main(["evaluate", "--predictions", str(shorter), "--out", str(tmp_path / "c"), "--resamples", "0",
                     "--metrics", "open_ended"]) == 0
    capsys.readouterr()
    c = read_results(tmp_path / "c")
    rows = {r["metric"]: r for r in compare.compare(a, c, n_resamples=300)}
    assert rows["cider_d"]["p_value"] is None and rows["cider_d"]["note"] == "no variation"
    assert abs(rows["cider_d"]["diff"]) < 1e-4
    assert rows["cider"]["p_value"] is not None and "note" not in rows["cider"] and rows["cider"]["diff"] != 0
    assert cli.main(["compare", str(root / "a"), str(tmp_path / "c"), "--resamples", "300"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"open_ended\s+CIDEr-D\s+0\.00\s+0\.00\s+[+-]0\.00\s+no variation\s+30\n", out)
    assert re.search(r"open_ended\s+CIDEr\s+[\d.]+\s+[\d.]+\s+[+-][\d.]+\s+\d\.\d{3}\s+30\n", out)


def test_compare_needs_resamples(two_runs, capsys):
    root, _, _ = two_runs
    for resamples in ("0", "-5"):
        assert cli.main(["compare", str(root / "a"), str(root / "b"), "--resamples", resamples]) == 2
        assert "--resamples" in capsys.readouterr().err


def test_compare_refuses_different_revisions(two_runs):
    _, a, b = two_runs
    other = dict(b, dataset=dict(b["dataset"], revision="something-else"))
    with pytest.raises(InputError, match="different dataset revisions"):
        compare.compare(a, other)


def test_leaderboard_files(two_runs, tmp_path, unrendered_plots):
    root, a, b = two_runs
    assert cli.main(["leaderboard", str(root / "a"), str(root / "b" / "results.json"), "--out", str(tmp_path),
                     "--with-paper-rows"]) == 0
    rows = list(csv.DictReader(io.StringIO((tmp_path / "leaderboard.csv").read_text(encoding="utf-8"))))
    assert len(rows) == 2 + 8 + 8  # two scored, the paper's 8 models without and with RAG
    scored = {r["model"]: r for r in rows if r["source"] == "scored"}
    assert [(r["rank"], r["model"]) for r in rows[:2]] == [("1", "model-b"), ("2", "model-a")]
    assert {(r["benchmark"], r["config"], r["split"], r["revision"]) for r in rows[:2]} == {
        ("ChiMDQA", "all", "test", a["dataset"]["revision"])}
    paper = rows[2:]  # their own group, after the measured one: not ranked, on the paper's full release
    assert {(r["source"], r["rank"], r["revision"]) for r in paper} == {("reported in the paper", "", "paper")}
    assert scored["model-a"]["judge"] == "rule"
    assert scored["model-a"]["coverage_%"] == "100.0"  # a percentage, as the summary prints it
    assert float(scored["model-b"]["F1"]) == pytest.approx(b["metrics"]["factual"]["F1"]["value"], abs=0.01)
    assert float(scored["model-a"]["F1_finance"]) == pytest.approx(
        a["metrics"]["factual"]["F1"]["by"]["domain"]["finance"]["value"], abs=0.01)
    gpt4o = next(r for r in rows if r["model"] == "GPT-4o" and r["rag"] == "no")
    assert (gpt4o["source"], gpt4o["F1"], gpt4o["F1_news"], gpt4o["BERTScore-F1"]) == (
        "reported in the paper", "76.5", "77.8", "81.2")  # the paper's Tables 4 and 5
    md = (tmp_path / "leaderboard.md").read_text(encoding="utf-8").split("\n\n")
    assert md[0] == f"### ChiMDQA · config all · split test · revision {a['dataset']['revision']}"
    assert md[1].startswith("| rank | model |") and len(md[1].splitlines()) == 2 + 2
    assert md[2] == "### ChiMDQA · config all · split test · reported in the paper"
    assert len(md[3].splitlines()) == 2 + 16
    assert "reported in the paper" in (tmp_path / "index.html").read_text(encoding="utf-8")
    space = yaml.safe_load((tmp_path / "README.md").read_text(encoding="utf-8").split("---\n")[1])
    assert space["sdk"] == "static" and space["app_file"] == "index.html"


def test_an_output_path_that_is_a_file_is_a_clear_error(two_runs, tmp_path, capsys):
    root, _, _ = two_runs
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    assert cli.main(["leaderboard", str(root / "a"), "--out", str(blocker)]) == 1
    assert cli.main(["compare", str(root / "a"), str(root / "b"), "--json", str(blocker / "diff.json")]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == [f"chimdqa leaderboard: error: {blocker}: File exists",
                   f"chimdqa compare: error: {blocker / 'diff.json'}: Not a directory"]


def test_leaderboard_ranks_within_each_dataset(two_runs):
    _, a, b = two_runs
    csqa = dict(b, model=dict(b["model"], model="csqa-model"), run_id="c" * 32,  # a higher F1 on another dataset
                dataset=dict(b["dataset"], name="Chinese SimpleQA", config="chinese_simpleqa"),
                metrics={"factual": {**b["metrics"]["factual"], "F1": dict(b["metrics"]["factual"]["F1"], value=99.0)}})
    partial = dict(b, model=dict(b["model"], model="partial-model"), run_id="d" * 32,
                   submission=dict(b["submission"], coverage=0.9),
                   metrics={"factual": {"F1": dict(b["metrics"]["factual"]["F1"], value=99.0)}})
    rows = leaderboard.leaderboard_rows([csqa, partial, a, b])
    assert [(r["rank"], r["model"]) for r in rows] == [
        (1, "model-b"), (2, "model-a"), (3, "partial-model"), (1, "csqa-model")]


def test_report_embeds_svg_plots_and_paper_tables(two_runs):
    from xml.etree import ElementTree

    root, _, _ = two_runs
    page = (root / "a" / "report.html").read_text(encoding="utf-8")
    images = re.findall(r'src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(images) >= 2  # factual F1 per domain, question-type radar
    svgs = [ElementTree.fromstring(base64.b64decode(data)) for data in images]  # well-formed XML
    assert all(s.tag == "{http://www.w3.org/2000/svg}svg" and float(s.get("width")) > 0 for s in svgs)
    for heading in ("Factual questions (Table 4)", "Open-ended questions (Table 5)", "Skipped", "Signatures"):
        assert heading in page
    assert "bert-base-chinese" in page  # the skip reason is shown
    assert not re.search(r'(src|href)="(https?:)?//', page)  # self-contained: nothing fetched from elsewhere


def test_with_and_without_rag_plot(two_runs):
    _, a, b = two_runs
    name = r"cheap$\zz$model <&>"  # '$...$' was matplotlib's math mode; markup characters are text
    a = dict(a, model=dict(a["model"], model=name))
    with_rag = dict(b, model=dict(b["model"], model=name, rag=True))
    from chimdqa_eval.report import html

    assert html.paired_runs([a, with_rag]) == [{"long": a, "rag": with_rag}]
    figures = dict(html.plots([a, with_rag]))
    assert "Without vs with RAG (Figures 3-4)" in figures
    from xml.etree import ElementTree

    drawn = ElementTree.fromstring(base64.b64decode(figures["Without vs with RAG (Figures 3-4)"].split(",", 1)[1]))
    texts = [t.text for t in drawn.iter("{http://www.w3.org/2000/svg}text")]
    assert name in texts and "without RAG" in texts and "with RAG" in texts  # the model's bars, the legend
    # one model: each condition's bars are one run, drawn in that run's colour in the other plots
    colours = _colours_by_model(figures.values())
    assert colours["without RAG"] == colours[name] != colours["with RAG"] == colours[f"{name} (RAG)"]
    assert "Without vs with RAG (Figures 3-4)" not in [c for c, _ in html.plots([a, b])]


def test_table_6_has_no_rows_for_runs_without_retrieval(two_runs):
    from chimdqa_eval.report import html

    _, a, _ = two_runs  # no retrieved contexts: its RAG family is skipped
    paper = [r for r in leaderboard.paper_rows({"ChiMDQA"}) if r["model"]["rag"]]
    table = html.paper_table([a, *paper], "rag", per_domain_metric=None)
    assert "model-a" not in table and table.count("<tr") == 1 + len(paper)


def test_paper_rows_follow_the_datasets():
    chimdqa_rows = leaderboard.paper_rows({"ChiMDQA"})
    assert len(chimdqa_rows) == 16 and all(r["reported"] == "paper" for r in chimdqa_rows)
    csqa = leaderboard.paper_rows({"Chinese SimpleQA"})
    assert [(r["model"]["model"], r["metrics"]["factual"]["F1"]["value"]) for r in csqa][:2] == [
        ("o1-preview", 67.9), ("Doubao-pro-32k", 65.3)]  # the Chinese SimpleQA paper's F-scores
    assert {r["dataset"]["config"] for r in csqa} == {"chinese_simpleqa"}


def test_table_5_and_the_board_show_cider_beside_cider_d(two_runs):
    """The paper's "C" column is Vedantam's CIDEr; CIDEr-D (~0 on paragraphs) sits beside it, marked."""
    from chimdqa_eval.report import html

    root, a, _ = two_runs
    row = leaderboard.leaderboard_rows([a])[0]
    assert row["CIDEr"] == a["metrics"]["open_ended"]["cider"]["value"] and "CIDEr-D" not in row
    table = html.paper_table([a, *leaderboard.paper_rows({"ChiMDQA"})], "open_ended", per_domain_metric=None,
                             with_ci=True)
    head = re.findall(r"<th>([^<]+)</th>", table)
    assert head[:4] == ["METEOR", "ROUGE-L", "CIDEr", "CIDEr-D"]
    cider = a["metrics"]["open_ended"]["cider"]
    assert f'<td>{cider["value"]:.1f} <span class="ci">[{cider["ci95"][0]:.1f}, {cider["ci95"][1]:.1f}]' in table
    assert '<td>0.0 <span class="ci note">(no variation: every item scores about 0' in table
    assert "<td>37.0</td>" in table  # GPT-4o's CIDEr in the paper's Table 5


# ---- leaderboard groups: never mix runs that must not be compared ---------------------------------------------

@pytest.fixture(scope="module")
def finance_rag_run(tmp_path_factory):
    """model-a again, with retrieved contexts, on the finance config: another group than the `all` runs."""
    root = tmp_path_factory.mktemp("finance")
    rows = [json.loads(line) for line in SAMPLE_PREDICTIONS.read_text(encoding="utf-8").splitlines()]
    preds = root / "fin.jsonl"
    preds.write_text("".join(json.dumps({**r, "retrieved_contexts": ["公司2023年研发投入3.15亿元。"]},
                                        ensure_ascii=False) + "\n" for r in rows if r["id"].startswith("fin-")),
                     encoding="utf-8")
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    try:
        assert cli.main(["evaluate", "--predictions", str(preds), "--out", str(root / "run"), "--config", "finance",
                         "--resamples", "0", "--model", "model-a"]) == 0
    finally:
        mp.undo()
    return root / "run", read_results(root / "run")


def _csv_rows(folder):
    return list(csv.DictReader(io.StringIO((folder / "leaderboard.csv").read_text(encoding="utf-8"))))


def test_leaderboard_has_one_group_per_benchmark_config_split_and_revision(two_runs, finance_rag_run, tmp_path,
                                                                          unrendered_plots):
    root, a, b = two_runs
    fin_dir, fin = finance_rag_run
    assert cli.main(["leaderboard", str(root / "a"), str(fin_dir), str(root / "b"), "--out", str(tmp_path)]) == 0
    rows = _csv_rows(tmp_path)
    revision = a["dataset"]["revision"]
    columns = ("benchmark", "config", "split", "revision", "rank", "model", "rag")
    assert [tuple(r[c] for c in columns) for r in rows] == [
        ("ChiMDQA", "all", "test", revision, "1", "model-b", "no"),
        ("ChiMDQA", "all", "test", revision, "2", "model-a", "no"),
        ("ChiMDQA", "finance", "test", revision, "1", "model-a", "yes")]  # ranks restart in each group
    other_revision = dict(b, dataset=dict(b["dataset"], revision="0123456789ab"))
    rows = leaderboard.leaderboard_rows([a, other_revision])
    assert [(r["revision"], r["rank"]) for r in rows] == [("0123456789ab", 1), (revision, 1)]
    page = (tmp_path / "index.html").read_text(encoding="utf-8")
    assert page.count('<section class="group') == 2 and page.count("<table id=\"leaderboard") == 2
    assert f"<h2>ChiMDQA · config finance · split test · revision {revision}</h2>" in page
    md = (tmp_path / "leaderboard.md").read_text(encoding="utf-8")
    assert md.count("\n### ") + md.startswith("### ") == 2


def test_paper_rows_only_beside_the_papers_config_and_split(two_runs, finance_rag_run, tmp_path, capsys,
                                                           unrendered_plots):
    root, a, _ = two_runs
    fin_dir, fin = finance_rag_run
    assert cli.main(["leaderboard", str(fin_dir), "--out", str(tmp_path / "fin"), "--with-paper-rows"]) == 0
    assert "no paper rows are shown" in capsys.readouterr().out
    assert [r["source"] for r in _csv_rows(tmp_path / "fin")] == ["scored"]  # a finance run: no paper rows
    assert cli.main(["leaderboard", str(fin_dir), str(root / "a"), "--out", str(tmp_path / "all"),
                     "--with-paper-rows"]) == 0
    rows = _csv_rows(tmp_path / "all")
    groups = [(r["config"], r["revision"]) for r in rows]
    # the paper's group comes right after the measured `all` group it matches, before the finance one
    assert groups == [("all", a["dataset"]["revision"])] + [("all", "paper")] * 16 + [
        ("finance", a["dataset"]["revision"])]
    assert all(r["rank"] == "" and r["source"] == "reported in the paper" for r in rows[1:17])
    page = (tmp_path / "all" / "index.html").read_text(encoding="utf-8")
    assert "<h2>ChiMDQA · config all · split test · reported in the paper</h2>" in page
    # the papers' rows are not results of this page's runs: counted apart
    assert "2 results (and 16 rows reported in the papers) in 3 groups" in page
    csqa = dict(a, dataset=dict(a["dataset"], name="Chinese SimpleQA", config="chinese_simpleqa", n_questions=3000))
    assert {r["dataset"]["name"] for r in leaderboard.matching_paper_rows([csqa])} == {"Chinese SimpleQA"}
    subset = dict(csqa, dataset=dict(csqa["dataset"], n_questions=300))  # a 300-question data file: not the paper's
    assert leaderboard.matching_paper_rows([subset]) == []
    with pytest.raises(InputError, match="shown only beside results on that benchmark, config and split"):
        leaderboard.leaderboard_rows([fin, *leaderboard.paper_rows({"ChiMDQA"})])


def test_the_same_model_name_twice_in_a_group_is_told_apart(two_runs, tmp_path):
    root, a, b = two_runs
    minute = "2026-01-02T03:04:05+00:00"
    same = [dict(r, model=dict(r["model"], model="same-model"), created=minute) for r in (a, b)]
    names = [r["model"] for r in leaderboard.leaderboard_rows(same)]
    # made in the same minute: the predictions' sha256 prefix tells them apart
    assert names == [f"same-model · 2026-01-02 03:04 · preds {b['submission']['sha256'][:7]}",
                     f"same-model · 2026-01-02 03:04 · preds {a['submission']['sha256'][:7]}"]
    apart = [dict(r, created=t) for r, t in zip(same, (minute, "2026-01-02T03:05:00+00:00"))]
    assert {r["model"] for r in leaderboard.leaderboard_rows(apart)} == {"same-model · 2026-01-02 03:04",
                                                                        "same-model · 2026-01-02 03:05"}
    assert cli.main(["leaderboard", str(root / "a"), str(root / "a" / "results.json"), "--out", str(tmp_path)]) == 2


def test_rag_pairs_match_model_and_group(two_runs, finance_rag_run):
    from chimdqa_eval.report import html

    _, a, _ = two_runs
    _, fin = finance_rag_run  # model-a with RAG, on the finance config
    assert html.paired_runs([a, fin]) == []  # same name, other group: not a pair
    fin_without = dict(fin, model=dict(fin["model"], rag=False))
    assert html.paired_runs([a, fin_without, fin]) == [{"long": fin_without, "rag": fin}]


def test_a_missing_value_is_a_gap_never_a_zero(two_runs):
    import numpy as np

    from chimdqa_eval.report import html

    _, a, _ = two_runs
    factual_only = dict(a, metrics={"factual": a["metrics"]["factual"]})
    radar = html.type_radar([factual_only], "rouge_l")
    (line,) = radar.panels[0].series
    values = np.array([np.nan if v is None else v for v in line.values], dtype=float)
    assert len(values) == 10 and np.isnan(values[5:]).all() and not np.isnan(values[:5]).any()  # open-ended: gaps
    drawn = svg.svg(radar)
    assert drawn.count("<polyline") == 1  # one line through the five factual types, none across the gaps
    assert "<polygon" not in drawn  # no area is shaded over a gap
    table = html.paper_table([factual_only, a], "open_ended", per_domain_metric="rouge_l")
    first_row = table.split("<tr")[2]
    # METEOR, ROUGE-L, CIDEr, CIDEr-D and the six domains are empty (PPL and BERTScore say "skipped")
    assert first_row.count("<td></td>") == 4 + 6 and "0.0" not in first_row and "–" not in first_row


def test_a_panel_without_data_is_not_drawn(two_runs):
    from chimdqa_eval.report import html

    _, a, b = two_runs
    without = dict(a, model=dict(a["model"], model="m"), metrics={"factual": a["metrics"]["factual"]})
    with_rag = dict(b, model=dict(b["model"], model="m", rag=True), metrics={"factual": b["metrics"]["factual"]})
    figure = html.paired_plot(html.paired_runs([without, with_rag]), "bertscore_f1")
    assert [panel.title for panel in figure.panels] == ["F1 (factual questions)"]
    finance = dict(a, metrics={"factual": {"F1": dict(a["metrics"]["factual"]["F1"], by={
        "domain": {"finance": a["metrics"]["factual"]["F1"]["by"]["domain"]["finance"]}})}})
    bars = html.domain_bars([finance], "factual", "F1")
    assert bars.panels[0].categories == ["finance"]


def test_board_folds_the_per_domain_columns(two_runs, tmp_path, unrendered_plots):
    _, a, b = two_runs
    leaderboard.write_leaderboard(tmp_path, [a, b])
    page = (tmp_path / "index.html").read_text(encoding="utf-8")
    head = re.search(r'<table id="leaderboard"><thead>(.*?)</thead>', page).group(1)
    assert "academic" not in head and "<th>F1</th>" in head and head.endswith("<th>per domain</th></tr>")
    body = re.search(r'<table id="leaderboard">.*?<tbody>(.*?)</tbody>', page).group(1)
    assert body.count("<details><summary>6 domains</summary>") == 2


# ---- results folders are never torn ---------------------------------------------------------------------------

def test_a_torn_folder_is_refused_naming_the_file(two_runs, tmp_path, capsys):
    import shutil

    root, _, _ = two_runs
    torn = tmp_path / "torn"
    shutil.copytree(root / "a", torn)
    shutil.copy(root / "b" / "items.jsonl", torn / "items.jsonl")  # e.g. run b killed after its items.jsonl
    with pytest.raises(InputError, match=re.escape(f"{torn / 'items.jsonl'} does not match results.json")):
        read_results(torn)
    for command in (["compare", str(root / "b"), str(torn)],
                    ["export", "--format", "model-index", str(torn), "--dataset-id", "org/chimdqa"],
                    ["leaderboard", str(root / "a"), str(torn), "--out", str(tmp_path / "board")]):
        assert cli.main(command) == 2
        assert f"{torn / 'items.jsonl'} does not match" in capsys.readouterr().err
    assert not (tmp_path / "board").exists()
    (torn / "items.jsonl").unlink()
    with pytest.raises(InputError, match="per-item file not found"):
        read_results(torn)
    document = json.loads((torn / "results.json").read_text(encoding="utf-8"))
    document["files"]["items"] = "../b/items.jsonl"
    (torn / "results.json").write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(InputError, match="files.items must be a file name next to it"):
        read_results(torn)


def test_compare_of_runs_on_disjoint_questions_is_a_clear_error(finance_rag_run, tmp_path, capsys, monkeypatch):
    """Same release, configs finance and law: no question was scored by both, so there is nothing to pair
    (not "no metric in common": the metrics are the same)."""
    rows = [json.loads(line) for line in SAMPLE_PREDICTIONS.read_text(encoding="utf-8").splitlines()]
    preds = tmp_path / "law.jsonl"
    preds.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows if r["id"].startswith("law-")),
                     encoding="utf-8")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert cli.main(["evaluate", "--predictions", str(preds), "--out", str(tmp_path / "law"), "--config", "law",
                     "--resamples", "0", "--model", "model-law", "--metrics", "factual"]) == 0
    capsys.readouterr()
    assert cli.main(["compare", str(finance_rag_run[0]), str(tmp_path / "law")]) == 2
    err = capsys.readouterr().err
    assert "no question scored in both" in err and str(tmp_path / "law" / "results.json") in err, err


def test_a_zero_with_no_variation_says_why_beside_it(two_runs):
    """CIDEr-D is ~0 on every paragraph answer of the sample: the page says why it has no interval; a metric with
    an interval says nothing of the kind."""
    root, _, _ = two_runs
    page = (root / "a" / "report.html").read_text(encoding="utf-8")
    document = json.loads((root / "a" / "results.json").read_text(encoding="utf-8"))
    assert document["metrics"]["open_ended"]["cider_d"]["note"] == "no variation"
    assert page.count("no variation: every item scores about 0") >= 1
    assert document["metrics"]["open_ended"]["cider"]["ci95"][0] is not None


def test_svg_charts_are_well_formed_whatever_the_labels():
    """Characters XML cannot hold (control characters, a lone surrogate from a JSON escape) become U+FFFD and
    markup characters stay text: every chart kind decodes, with the labels and values it was given."""
    from xml.etree import ElementTree

    label = 'm\x00\x1b\ud800 <b>&"\'</b>'
    shown = 'm\ufffd\ufffd\ufffd <b>&"\'</b>'
    series = [svg.Series(label, [12.5, None, 80.0], hatch=True, fill=True), svg.Series("b", [1.0, 2.0, 3.0])]
    for kind in ("bars", "lines", "radar"):
        chart = svg.Chart([svg.Panel(kind, label, [label, "y", "z"], series, y_label=label, x_label=label,
                                     legend="right", rotate=kind == "bars")])
        drawn = ElementTree.fromstring(svg.svg(chart))
        texts = ["".join(t.itertext()) for t in drawn.iter("{http://www.w3.org/2000/svg}text")]
        assert texts.count(shown) >= 3, kind  # title, axis or category label, legend
    bars = ElementTree.fromstring(svg.svg(svg.Chart([svg.Panel("bars", "t", ["x", "y", "z"], series[:1])])))
    assert [t.text for t in bars.iter("{http://www.w3.org/2000/svg}title")] == [f"{shown}: 12.5", f"{shown}: 80"]
    reliability = svg.Chart([svg.Panel("reliability", "r", bins=[(0, 50, 40.0, 3), (50, 100, 0.0, 0)])])
    assert [t.text for t in ElementTree.fromstring(svg.svg(reliability)).iter("{http://www.w3.org/2000/svg}text")
            if t.text.startswith("n=")] == ["n=3"]  # an empty bin has no bar


def test_nice_ticks_cover_the_range_in_round_steps():
    assert svg.nice_ticks(0, 83.3) == [0, 20, 40, 60, 80, 100]
    assert svg.nice_ticks(0, 7) == [0, 2, 4, 6, 8]
    assert svg.nice_ticks(28.4, 31.2) == [28.0, 28.5, 29.0, 29.5, 30.0, 30.5, 31.0, 31.5]
    assert svg.nice_ticks(5, 5) == [5, 5.2, 5.4, 5.6, 5.8, 6.0]


@pytest.mark.parametrize("values", [[1e17], [1e308, -1e308], [0.5, 0.5 + 1e-12], [float("nan"), 3.0], [float("inf")],
                                    [1e17, 1e17 + 16], [None, -0.0]])
@pytest.mark.parametrize("kind", ["bars", "lines", "radar"])
def test_charts_of_values_no_axis_can_show_still_draw(kind, values):
    """Any finite value is a legal metric value in a results file (a submitted one on the leaderboard too): huge,
    equal to the 12th digit, or (from Python callers) NaN and infinity. The chart still draws: a few round ticks,
    no mark for what is not finite, no 'nan' or 'inf' in the SVG."""
    chart = svg.svg(svg.Chart([svg.Panel(kind, "t", [str(i) for i in range(len(values))],
                                         [svg.Series("m", values)])]))
    drawn = ElementTree.fromstring(chart)
    assert "nan" not in chart and "inf" not in chart
    if kind != "radar":
        ticks = svg.nice_ticks(*svg._value_range(svg.Panel(kind, "t", ["a"], [svg.Series("m", values)])))
        assert 2 <= len(ticks) <= 14 and ticks == sorted(set(ticks))
        assert len(list(drawn.iter("{http://www.w3.org/2000/svg}rect" if kind == "bars" else
                                   "{http://www.w3.org/2000/svg}circle"))) >= sum(
            v is not None and math.isfinite(v) for v in values)


def test_a_reliability_bin_without_an_accuracy_has_no_bar():
    chart = svg.Chart([svg.Panel("reliability", "r", bins=[(0, 50, None, 3), (50, 100, 40.0, 2)])])
    texts = [t.text for t in ElementTree.fromstring(svg.svg(chart)).iter("{http://www.w3.org/2000/svg}text")]
    assert [t for t in texts if t.startswith("n=")] == ["n=2"]


SVG = "{http://www.w3.org/2000/svg}"


def _marks(data_uri: str) -> list[tuple[str, str, float, float]]:
    """(tooltip, fill, x, y) of every mark of a plot that has a tooltip (bars, line and radar markers)."""
    drawn = ElementTree.fromstring(base64.b64decode(data_uri.split(",", 1)[1]))
    out = []
    for mark in drawn.iter():
        title = mark.find(SVG + "title")
        if title is not None:
            x = float(mark.get("x") or mark.get("cx") or mark.get("points").split()[0].split(",")[0])
            y = float(mark.get("y") or mark.get("cy") or mark.get("points").split()[1].split(",")[1])
            out.append((title.text, mark.get("fill"), x, y))
    return out


def _colours_by_model(figures) -> dict[str, set]:
    """Each model's colours over all the plots (a tooltip is "model: value" or "model, label: value")."""
    colours: dict = {}
    for uri in figures:
        for tooltip, fill, _, _ in _marks(uri):
            colours.setdefault(tooltip.rsplit(": ", 1)[0].split(", ")[0], set()).add(fill)
    return colours


def test_a_result_keeps_its_colour_in_every_plot_of_a_page(two_runs):
    """model-c has no factual scores: the factual plots leave it out, and model-b is their second series but the
    page's third result; it keeps the third colour there as in the open-ended plots."""
    from chimdqa_eval.report import html

    _, a, b = two_runs
    c = dict(b, model=dict(b["model"], model="model-c"), metrics={"open_ended": b["metrics"]["open_ended"]})
    figures = html.plots([a, c, b])
    captions = [caption for caption, _ in figures]
    assert captions[0] == "Factual F1 per domain (Table 4)" and len(figures) == 4
    assert {t.split(":")[0] for t, *_ in _marks(figures[0][1])} == {"model-a", "model-b"}  # c left out
    assert _colours_by_model(uri for _, uri in figures) == {
        "model-a": {svg.COLOURS[0]}, "model-c": {svg.COLOURS[1]}, "model-b": {svg.COLOURS[2]}}


def test_a_model_keeps_its_colour_across_the_boards_groups(two_runs, finance_rag_run):
    """model-a is second in the `all` group (model-b ranks first) and alone in the finance group: the same
    colour in both groups' plots."""
    _, a, b = two_runs
    _, fin = finance_rag_run
    fin = dict(fin, model=dict(fin["model"], rag=False))  # labelled "model-a", as in the other group
    page = leaderboard.to_html([a, b, fin], "board")
    figures = ["data:," + uri for uri in re.findall(r'src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"', page)]
    assert _colours_by_model(figures) == {"model-b": {svg.COLOURS[0]}, "model-a": {svg.COLOURS[1]}}


def test_the_papers_rows_take_no_colour_from_the_measured_results(two_runs, finance_rag_run):
    """With the papers' reported rows on the board, the measured results still take the palette's first colours
    (plain bars), the one alone in its finance group too; the papers' rows come after them."""
    _, a, b = two_runs
    _, fin = finance_rag_run
    fin = dict(fin, model=dict(fin["model"], model="model-f", rag=False))
    results = [a, b, fin]
    page = leaderboard.to_html(results + leaderboard.matching_paper_rows(results), "board")
    figures = ["data:," + uri for uri in re.findall(r'src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"', page)]
    colours = _colours_by_model(figures)
    assert {m: colours[m] for m in ("model-a", "model-b", "model-f")} == {
        "model-b": {svg.COLOURS[0]}, "model-a": {svg.COLOURS[1]}, "model-f": {svg.COLOURS[2]}}
    assert "GPT-4o" in colours and colours["GPT-4o"] == {svg.COLOURS[3]}


def test_equal_scores_stay_visible_in_the_length_and_position_plot(two_runs):
    """A second run with the same scores as model-a: its markers sit beside model-a's, at the same heights and
    with the same values in their tooltips, never on top of them."""
    from chimdqa_eval.report import html

    _, a, _ = two_runs
    twin = dict(a, model=dict(a["model"], model="twin"))
    marks = _marks(html.image_data_uri(html.document_plot([a, twin], None)))
    mine = [(t.removeprefix("model-a"), x, y) for t, _, x, y in marks if t.startswith("model-a,")]
    theirs = [(t.removeprefix("twin"), x, y) for t, _, x, y in marks if t.startswith("twin,")]
    assert len(mine) == len(theirs) >= 3  # the sample has values in a length bucket and two position bins
    for (tip, x, y), (twin_tip, twin_x, twin_y) in zip(mine, theirs):
        assert tip == twin_tip and y == twin_y  # the same value, drawn at the same height
        assert 5 <= twin_x - x <= 7  # beside it, one marker's width apart
    lone = _marks(html.image_data_uri(html.document_plot([a], None)))
    assert [(t, y) for t, _, _, y in lone] == [("model-a" + t, y) for t, _, y in mine]  # values as alone


def test_colours_repeat_with_other_marks_past_the_palette():
    """The 11th series takes the 1st colour again, but a dashed line and square markers (bars: a dotted
    pattern), so that the two are not read as one; so does its legend entry."""
    series = [svg.Series(f"m{k}", [float(k), float(k)]) for k in range(11)]
    lines = ElementTree.fromstring(svg.svg(svg.Chart([svg.Panel("lines", "t", ["x", "y"], series,
                                                                legend="right")])))
    first = [e for e in lines.iter() if e.get("fill") == svg.COLOURS[0] or e.get("stroke") == svg.COLOURS[0]]
    assert {(e.tag.removeprefix(SVG), e.get("stroke-dasharray")) for e in first} == {
        ("circle", None), ("line", None), ("line", "6,3"), ("polyline", None), ("polyline", "6,3"), ("rect", None)}
    assert len([e for e in first if e.tag == SVG + "rect"]) == 3  # two markers and the legend's
    bars = svg.svg(svg.Chart([svg.Panel("bars", "t", ["x", "y"], series, legend="right")]))
    assert bars.count('fill="url(#dots)"') == 3  # the 11th series' two bars and its legend entry
    assert [svg.mark(s, k)[0] for k, s in enumerate([svg.Series("p", [], style=12), svg.Series("q", [])])] == [
        svg.COLOURS[2], svg.COLOURS[1]]  # a given style wins over the place in the panel


def test_compiled_templates_are_cached_and_a_broken_cache_is_no_cache(two_runs, private_cache, monkeypatch):
    """The report's templates compile once into $CHIMDQA_CACHE/templates; a later process (a new Environment)
    renders from there the same page, and from files torn or filled with garbage too (compiled again)."""
    from chimdqa_eval.report import html

    _, a, b = two_runs
    monkeypatch.setattr(html, "TEMPLATES", html.environment())
    page = html.report_html(a, [b])
    files = sorted((private_cache / "templates").glob("*.cache"))
    assert len(files) >= 3  # report.html, page.html, parts.html at least
    cached = {f: f.read_bytes() for f in files}
    monkeypatch.setattr(html, "TEMPLATES", html.environment())
    assert html.report_html(a, [b]) == page
    for damage in (lambda data: data[:len(data) // 2], lambda data: b"not a jinja2 cache" * 10, lambda data: b""):
        for f, data in cached.items():
            f.write_bytes(damage(data))
        monkeypatch.setattr(html, "TEMPLATES", html.environment())
        assert html.report_html(a, [b]) == page
    assert all(f.read_bytes() == data for f, data in cached.items())  # written again, whole
