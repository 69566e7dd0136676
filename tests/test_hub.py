"""`chimdqa export-hub`: a script-free folder that the real datasets.load_dataset reads without remote code."""
import json
import shutil

import datasets
import pytest
import yaml

import chimdqa
from chimdqa_eval import release
from chimdqa_eval.cli import main
from chimdqa_eval.hub import dataset as hub_dataset
from chimdqa_eval.schema import DOMAINS, QUESTION_TYPES, InputError


@pytest.fixture(autouse=True)
def datasets_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))


def front_matter(path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8").split("---\n")[1])


def test_export_hub_loads_with_datasets_load_dataset(tmp_path, capsys):
    out = tmp_path / "hub"
    assert main(["export-hub", str(out)]) == 0
    assert str(out) in capsys.readouterr().out

    retrieval = datasets.load_dataset(str(out), "finance", split="retrieval")
    assert retrieval.to_list() == chimdqa.load("finance", split="retrieval").to_list()
    assert retrieval.features == chimdqa.QA_FEATURES
    assert retrieval["evidence"] == [[1], [2]]   # fin-ret-001 and fin-ret-002 in data/sample/qa/finance.jsonl

    exported = datasets.load_dataset(str(out), "all")
    local = chimdqa.load("all")
    assert list(exported) == list(local)
    for split in local:  # same rows; the hub files are grouped by domain, so compare as sets of rows
        key = lambda row: row["id"]
        assert sorted(exported[split].to_list(), key=key) == sorted(local[split].to_list(), key=key), split

    pages = datasets.load_dataset(str(out), "documents", split="test")
    assert sorted(pages.to_list(), key=lambda p: (p["doc_id"], p["page"])) == \
        sorted(release.read_documents(), key=lambda p: (p["doc_id"], p["page"]))


def test_card_configs_come_from_the_builder(tmp_path):
    out = hub_dataset.export_hub(tmp_path / "hub")
    card = front_matter(out / "README.md")
    assert card["pretty_name"] == front_matter(hub_dataset.CARD)["pretty_name"]
    assert "configs" not in front_matter(hub_dataset.CARD)  # never written by hand
    configs = {c["config_name"]: c for c in card["configs"]}
    builder_configs = [c for c in chimdqa.ChiMDQA.BUILDER_CONFIGS if c.kind != "simpleqa"]
    assert list(configs) == [c.name for c in builder_configs]
    assert [n for n, c in configs.items() if c.get("default")] == ["all"]
    for config in builder_configs:
        entries = configs[config.name]["data_files"]
        assert [e["split"] for e in entries] == list(config.splits)
        for entry in entries:
            assert all((out / path).is_file() for path in entry["path"])
    finance_factual = next(e for e in configs["finance"]["data_files"] if e["split"] == "factual")
    assert finance_factual["path"] == [f"data/finance/{t}.parquet" for t in
                                       ("retrieval", "filtering", "statistical", "computational", "comparison")]
    assert f"`{release.fingerprint()}`" in (out / "README.md").read_text(encoding="utf-8")
    assert len(list((out / "data").rglob("*.parquet"))) == len(DOMAINS) * (len(QUESTION_TYPES) + 1)


def test_partial_release_leaves_out_empty_cells(tmp_path):
    root = tmp_path / "release"
    shutil.copytree(release.SAMPLE_DIR, root)
    law = root / "qa" / "law.jsonl"
    kept = [line for line in law.read_text("utf-8").splitlines() if json.loads(line)["id"] != "law-cal-001"]
    law.write_text("\n".join(kept) + "\n", encoding="utf-8")
    out = hub_dataset.export_hub(tmp_path / "hub")  # a full export first: re-exporting must drop the stale cell
    out = hub_dataset.export_hub(out, root)
    assert not (out / "data" / "law" / "computational.parquet").exists()
    law_splits = datasets.load_dataset(str(out), "law")
    assert "computational" not in law_splits and len(law_splits["test"]) == 10
    assert law_splits["test"].features == chimdqa.QA_FEATURES
    assert len(datasets.load_dataset(str(out), "all", split="computational")) == 5


def test_a_question_without_evidence_pages_exports_an_empty_list(tmp_path):
    root = tmp_path / "release"
    shutil.copytree(release.SAMPLE_DIR, root)
    news = root / "qa" / "news.jsonl"
    records = [json.loads(line) for line in news.read_text("utf-8").splitlines()]
    del records[0]["evidence"]
    news.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    out = hub_dataset.export_hub(tmp_path / "hub", root)
    exported = {r["id"]: r["evidence"] for r in datasets.load_dataset(str(out), "news", split="test")}
    assert exported == {r["id"]: r.get("evidence", []) for r in records} and exported[records[0]["id"]] == []


def test_the_card_documents_every_qa_feature(tmp_path):
    card = hub_dataset.CARD.read_text(encoding="utf-8")
    table = card.split("QA configs:", 1)[1].split("\n\n", 2)[1]
    documented = {}
    for line in table.splitlines()[2:]:   # after the header and its rule
        name, kind = (cell.strip(" `") for cell in line.strip("|").split("|")[:2])
        documented[name] = kind
    features = chimdqa.QA_FEATURES
    assert list(documented) == list(features)
    assert documented["evidence"] == "list of int32"
    assert all(documented[c] == "string" for c in features if c != "evidence")


def test_card_without_front_matter_is_an_error():
    with pytest.raises(InputError, match="YAML front matter"):
        hub_dataset.card_with_configs("# no front matter\n", [], "abc")
