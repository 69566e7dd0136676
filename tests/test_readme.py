"""The README's claims that code can check: its two marked commands, the commands table against the CLI, every
link to a file of the repository, and the loader's datasets-version statement in docs/loader.md. (The demo's
printed table and the Python example are run in test_pipeline.py and test_evaluation.py.)"""
import re
from pathlib import Path

import datasets
import pytest

from chimdqa_eval.cli import COMMANDS

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def marked_command(marker: str) -> str:
    found = re.search(rf"<!-- {marker} -->\n```bash\n(.+?)\n```", README)
    assert found, f"the README has no {marker} block"
    return found.group(1)


def test_the_two_commands_come_first_and_set_up_from_nothing():
    demo, tests = marked_command("demo-command"), marked_command("test-command")
    for command in (demo, tests):
        assert command.startswith("python3 -m venv .venv && . .venv/bin/activate && pip install torch==2.13.0 && ")
    assert "chimdqa evaluate --predictions data/sample/predictions.jsonl" in demo
    assert tests.endswith("python -m pytest -q")
    first_screen = "\n".join(README.splitlines()[:40])
    assert "<!-- demo-command -->" in first_screen and "<!-- test-command -->" in first_screen
    assert len(README.splitlines()) < 250, "reference material belongs in docs/"


def test_the_commands_table_names_every_subcommand():
    table = README.split("## Commands", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`chimdqa ([a-z-]+)`", table)) | set(re.findall(r", `([a-z-]+)`", table))
    assert named == set(COMMANDS), (sorted(set(COMMANDS) - named), sorted(named - set(COMMANDS)))


@pytest.mark.parametrize("page", ["README.md", *sorted(p.relative_to(ROOT).as_posix()
                                                       for p in (ROOT / "docs").glob("*.md"))])
def test_every_link_to_a_repository_file_resolves(page):
    text = (ROOT / page).read_text(encoding="utf-8")
    links = [target.split("#")[0] for target in re.findall(r"\]\(([^)\s]+)\)", text)
             if not re.match(r"[a-z]+:", target) and not target.startswith("#")]
    missing = [link for link in links if not ((ROOT / page).parent / link).exists()]
    assert not missing, f"{page} links to files that do not exist: {missing}"


def test_the_loader_page_says_what_load_dataset_does_on_this_datasets_version():
    text = (ROOT / "docs" / "loader.md").read_text(encoding="utf-8")
    assert "datasets 4 and later refuse loading scripts" in text
    if int(datasets.__version__.split(".")[0]) >= 4:
        with pytest.raises(RuntimeError):
            datasets.load_dataset(str(ROOT / "chimdqa.py"), "finance")


def test_the_sample_has_what_the_readme_says():
    from chimdqa_eval import release

    pages = {}
    for page in release.read_documents():
        pages.setdefault(page["doc_id"], set()).add(page["page"])
    qa = release.read_qa()
    assert "66 hand-written questions over six two-page fictional documents" in " ".join(README.split())
    assert len(qa) == 66 and len(pages) == 6 and all(len(p) == 2 for p in pages.values())
