"""chimdqa.py through the real datasets API: configs, splits and their partitions, data_dir / data_files,
cache invalidation, and errors."""
import json
import os
import shutil
from collections import Counter

import datasets
import pytest

import chimdqa
from chimdqa_eval import release
from chimdqa_eval.schema import DOMAINS, FACTUAL_TYPES, OPEN_TYPES, QUESTION_TYPES, InputError

QA_SPLIT_NAMES = [*QUESTION_TYPES, "factual", "open_ended", "test"]


@pytest.fixture(autouse=True)
def datasets_cache(tmp_path, monkeypatch):
    """Each test builds into its own datasets cache, so nothing is served from an earlier run."""
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))


def ids(ds) -> list:
    return list(ds["id"])


def test_builder_configs_and_splits_on_the_datasets_api(tmp_path):
    names = [c.name for c in chimdqa.ChiMDQA.BUILDER_CONFIGS]
    assert names == ["all", *DOMAINS, "documents", "chinese_simpleqa"]
    builder = chimdqa.ChiMDQA(config_name="finance", cache_dir=str(tmp_path / "c"))
    builder.download_and_prepare()
    dd = builder.as_dataset()
    assert list(dd) == QA_SPLIT_NAMES
    assert dd["test"].features == chimdqa.QA_FEATURES
    assert set(dd["test"]["domain"]) == {"finance"}
    assert builder.as_dataset(split="retrieval")[0] == {
        "id": "fin-ret-001", "domain": "finance", "question_type": "retrieval", "category": "factual",
        "level": "L1", "question": "公司2023年研发投入是多少？", "answer": "3.15亿元", "doc_id": "finance-01",
        "evidence": [1]}


def raw_qa_records(folder=release.SAMPLE_DIR) -> list[dict]:
    """The QA lines of a release as written, read with nothing but json."""
    return [json.loads(line) for path in sorted((folder / "qa").glob("*.jsonl"))
            for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_all_config_matches_the_release_files_row_for_row():
    test = chimdqa.load("all", split="test")
    assert isinstance(test, datasets.Dataset)
    assert [{k: v for k, v in row.items() if k != "evidence"} for row in test.to_list()] == release.read_qa()
    assert [row["evidence"] for row in test] == [record["evidence"] for record in raw_qa_records()]


def test_evidence_is_a_list_of_page_numbers_in_the_all_and_domain_configs(tmp_path):
    evidence = datasets.Sequence(datasets.Value("int32")) if not hasattr(datasets, "List") else \
        datasets.List(datasets.Value("int32"))
    root = tmp_path / "release"
    shutil.copytree(release.SAMPLE_DIR, root)
    law = root / "qa" / "law.jsonl"
    records = [json.loads(line) for line in law.read_text("utf-8").splitlines()]
    del records[0]["evidence"]               # a question without evidence pages
    records[1]["evidence"] = [2, 1, 2]       # listed unsorted, with a repeat
    write_jsonl(law, records)

    for config in ("all", "law"):
        builder = chimdqa.ChiMDQA(config_name=config, data_dir=str(root), cache_dir=str(tmp_path / config))
        builder.download_and_prepare()
        test = builder.as_dataset(split="test")
        assert test.features["evidence"] == evidence, config
        by_id = {row["id"]: row["evidence"] for row in test}
        assert by_id[records[0]["id"]] == [] and by_id[records[1]["id"]] == [1, 2]
        assert by_id[records[2]["id"]] == records[2]["evidence"]
    loaded = chimdqa.load("law", split="test", data_dir=root)
    assert loaded.features == chimdqa.QA_FEATURES and loaded["evidence"][:2] == [[], [1, 2]]
    assert {r["id"]: r["evidence"] for r in chimdqa.load("all", split="test", data_files=str(law))} == \
        {r["id"]: r["evidence"] for r in loaded}
    assert "evidence" not in chimdqa.load("documents", split="test", data_dir=root).features


def test_bad_evidence_stops_loading_naming_file_line_and_id(tmp_path):
    records = raw_qa_records()[:2]
    records[1]["evidence"] = [0, 2]
    path = write_jsonl(tmp_path / "qa.jsonl", records)
    with pytest.raises(InputError, match=rf"qa.jsonl line 2 \(id {records[1]['id']}\): field evidence must be a "
                                         r"non-empty list of page numbers"):
        chimdqa.load(data_files=str(path))


def test_type_splits_partition_test_and_domains_partition_all():
    everything = chimdqa.load()
    assert isinstance(everything, datasets.DatasetDict) and list(everything) == QA_SPLIT_NAMES
    test_ids = ids(everything["test"])
    assert len(set(test_ids)) == len(test_ids)
    by_type = [i for t in QUESTION_TYPES for i in ids(everything[t])]
    assert Counter(by_type) == Counter(test_ids)
    for t in QUESTION_TYPES:
        assert set(everything[t]["question_type"]) == {t}
    assert Counter(ids(everything["factual"])) == Counter(i for t in FACTUAL_TYPES for i in ids(everything[t]))
    assert Counter(ids(everything["open_ended"])) == Counter(i for t in OPEN_TYPES for i in ids(everything[t]))
    assert set(everything["factual"]["category"]) == {"factual"}
    assert set(everything["open_ended"]["category"]) == {"open_ended"}

    by_domain = {d: chimdqa.load(d) for d in DOMAINS}
    for split in QA_SPLIT_NAMES:
        parts = [i for d in DOMAINS for i in ids(by_domain[d][split])]
        assert Counter(parts) == Counter(ids(everything[split])), split
    for d in DOMAINS:
        assert set(by_domain[d]["test"]["domain"]) == {d}


def test_documents_config_has_one_row_per_page():
    pages = chimdqa.load("documents", split="test")
    assert pages.features == chimdqa.PAGE_FEATURES
    assert pages.to_list() == release.read_documents()
    assert set(pages["domain"]) == set(DOMAINS)


def write_jsonl(path, records):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def test_chinese_simpleqa_from_data_files(tmp_path):
    records = [{"id": f"q{i}", "primary_category": "社会", "secondary_category": "法律", "question": f"问题{i}？",
                "answer": f"答案{i}", "urls": [f"https://example.org/{i}"] * i} for i in range(3)]
    path = write_jsonl(tmp_path / "csqa.jsonl", records)
    dd = chimdqa.load("chinese_simpleqa", data_files=str(path))
    assert list(dd) == ["test"]
    assert dd["test"].to_list() == records
    with pytest.raises(InputError, match="pass the Chinese SimpleQA jsonl as data_files"):
        chimdqa.load("chinese_simpleqa")


def test_data_dir_release_is_read_and_rebuilt_after_an_edit(tmp_path):
    root = tmp_path / "release"
    shutil.copytree(release.SAMPLE_DIR, root)
    assert ids(chimdqa.load("news", split="test", data_dir=root)) == ids(chimdqa.load("news", split="test"))
    news = root / "qa" / "news.jsonl"
    rows = [json.loads(line) for line in news.read_text("utf-8").splitlines()]
    rows[0]["answer"] = "2小时08分37秒"
    write_jsonl(news, rows[:3])
    edited = chimdqa.load("news", split="test", data_dir=root)
    assert len(edited) == 3 and edited[0]["answer"] == "2小时08分37秒"


def test_qa_data_files_without_a_release_folder(tmp_path):
    source = release.SAMPLE_DIR / "qa"
    files = [str(shutil.copy(source / f"{d}.jsonl", tmp_path)) for d in ("law", "medical")]
    dd = chimdqa.load("all", data_files=files)
    assert Counter(dd["test"]["domain"]) == Counter(law=11, medical=11)
    assert len(chimdqa.load("finance", split="test", data_files=files)) == 0
    assert ids(chimdqa.load("law", split="test", data_files={"any": files})) == ids(dd["test"])[:11]


def test_bad_release_raises_input_error_through_load(tmp_path):
    path = write_jsonl(tmp_path / "qa.jsonl", [{"id": "x-1", "domain": "finance", "question_type": "retrieval",
                                               "level": "L1", "question": "问？", "answer": "", "doc_id": "d"}])
    with pytest.raises(InputError, match=r"qa.jsonl line 1 \(id x-1\): field answer is empty"):
        chimdqa.load(data_files=str(path))


def test_unknown_split_and_config():
    with pytest.raises(InputError, match="config law has no split 'train'"):
        chimdqa.load("law", split="train")
    with pytest.raises(InputError, match="unknown config 'sports'; expected one of all, academic"):
        chimdqa.load("sports")


def _same_size_edit(path, old: str, new: str) -> None:
    """Replace `old` by `new` (same UTF-8 length) and put the modification time back as it was."""
    stat = path.stat()
    text = path.read_text("utf-8")
    assert old in text and len(old.encode()) == len(new.encode())
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size and path.stat().st_mtime_ns == stat.st_mtime_ns


def test_cache_follows_content_even_when_size_and_mtime_are_kept(tmp_path):
    root = tmp_path / "release"
    shutil.copytree(release.SAMPLE_DIR, root)
    first = chimdqa.load("finance", split="retrieval", data_dir=root)
    assert first[0]["answer"] == "3.15亿元"
    _same_size_edit(root / "qa" / "finance.jsonl", "3.15亿元", "9.99亿元")
    assert chimdqa.load("finance", split="retrieval", data_dir=root)[0]["answer"] == "9.99亿元"

    pages = chimdqa.load("documents", split="test", data_dir=root)
    title = pages.filter(lambda r: r["doc_id"] == "finance-01")[0]["title"]
    _same_size_edit(root / "documents.jsonl", title, title.replace("瑞丰", "丰瑞"))
    edited = chimdqa.load("documents", split="test", data_dir=root).filter(lambda r: r["doc_id"] == "finance-01")
    assert edited[0]["title"] == title.replace("瑞丰", "丰瑞")


def test_a_folder_given_as_data_files_is_an_input_error(tmp_path):
    (tmp_path / "qa.jsonl").mkdir()
    with pytest.raises(InputError, match=r"data_files: .*qa.jsonl is a folder; expected a jsonl file"):
        chimdqa.load(data_files=str(tmp_path / "qa.jsonl"))
