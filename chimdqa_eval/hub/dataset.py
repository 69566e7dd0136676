"""`chimdqa export-hub OUT [--data-dir D] [--spaces DIR]`: a script-free Hugging Face Hub dataset folder (and,
with --spaces, the metric modules as Space folders: chimdqa_eval.hub.spaces).

    OUT/README.md                         dataset_card.md with a `configs:` block generated from chimdqa.py
    OUT/data/<domain>/<question_type>.parquet   the QA pairs, one file per domain and question type
    OUT/data/documents/<domain>.parquet   the document pages

Empty cells of a partial release are not written (datasets cannot load an empty split).

`datasets.load_dataset(OUT, "finance", split="retrieval")` then works without remote code. Chinese SimpleQA is
not exported: it has its own Hub dataset.
"""
from __future__ import annotations

from pathlib import Path

import yaml

import chimdqa
from chimdqa_eval import release
from chimdqa_eval.schema import DOMAINS, QUESTION_TYPES, InputError, yaml_document

CARD = release.shipped_path("dataset_card.md")


def qa_path(domain: str, question_type: str) -> str:
    return f"data/{domain}/{question_type}.parquet"


def documents_path(domain: str) -> str:
    return f"data/documents/{domain}.parquet"


def hub_configs(written) -> list[dict]:
    """The `configs:` entries of the card, one per exported builder config, listing each split's files among
    those written. datasets cannot load a split with no rows, so a split whose files were all empty (a
    partial release) is left out."""
    configs = []
    for config in chimdqa.ChiMDQA.BUILDER_CONFIGS:
        if config.kind == "qa":
            files = {split: [qa_path(d, t) for d in config.domains for t in types]
                     for split, types in config.splits.items()}
        elif config.kind == "documents":
            files = {split: [documents_path(d) for d in DOMAINS] for split in config.splits}
        else:
            continue
        data_files = [{"split": split, "path": [p for p in paths if p in written]} for split, paths in files.items()]
        entry = {"config_name": config.name, "data_files": [e for e in data_files if e["path"]]}
        if config.name == chimdqa.ChiMDQA.DEFAULT_CONFIG_NAME:
            entry["default"] = True
        if entry["data_files"]:
            configs.append(entry)
    return configs


def card_with_configs(card_text: str, configs: list[dict], revision: str) -> str:
    """The card with `configs:` set in its YAML front matter and the release fingerprint in the body."""
    if not card_text.startswith("---\n") or "\n---\n" not in card_text[4:]:
        raise InputError(f"{CARD}: the card must start with a YAML front matter block between '---' lines")
    header, body = card_text[4:].split("\n---\n", 1)
    metadata = yaml_document("---\n" + header, str(CARD)) or {}  # with its opening line: lines as in the card
    metadata["configs"] = configs
    front = yaml.safe_dump(metadata, allow_unicode=True, sort_keys=False, default_flow_style=None, width=120)
    return f"---\n{front}---\n{body.rstrip()}\n\nRelease fingerprint of these files: `{revision}`.\n"


def export_hub(out, data_dir=None) -> Path:
    """Write the Hub folder for the release in data_dir (default: the bundled sample); returns OUT."""
    out = Path(out)
    qa = release.read_qa(data_dir, evidence=True)
    pages = release.read_documents(data_dir)
    tables = {documents_path(d): ([p for p in pages if p["domain"] == d], chimdqa.PAGE_FEATURES) for d in DOMAINS}
    for d in DOMAINS:
        for t in QUESTION_TYPES:
            rows = [r for r in qa if r["domain"] == d and r["question_type"] == t]
            tables[qa_path(d, t)] = (rows, chimdqa.QA_FEATURES)
    with chimdqa.quiet_progress():
        written = _write_tables(out, tables)
    card = card_with_configs(CARD.read_text(encoding="utf-8"), hub_configs(written), release.fingerprint(data_dir))
    (out / "README.md").write_text(card, encoding="utf-8")
    return out


def _write_tables(out: Path, tables: dict) -> set:
    """Write each non-empty table as parquet; returns the paths written."""
    written = set()
    for path, (rows, features) in tables.items():
        if rows:
            (out / path).parent.mkdir(parents=True, exist_ok=True)
            chimdqa.rows_to_dataset(rows, features).to_parquet(str(out / path))
            written.add(path)
        else:  # a cell left from an earlier export into the same folder would be uploaded but unlisted
            (out / path).unlink(missing_ok=True)
    return written
