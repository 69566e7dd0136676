"""The evaluate metric modules as installed files and as self-contained Hugging Face Spaces; the card of the
leaderboard's static Space.

Each ``metrics/<name>/`` folder holds the module (``<name>.py``), its card (``README.md`` with the Space YAML
header) and ``app.py``. A wheel install ships the same folders under ``<prefix>/share/chimdqa/metrics``
(setup.cfg data_files), so ``load_metric`` works without a checkout; an editable install reads the checkout.

``write_spaces`` (``chimdqa export-hub --spaces OUT``) turns each into a Space folder that works once pushed:

    <name>.py, README.md, app.py   the module, its card, the Gradio widget (app.py puts its folder on sys.path)
    chimdqa_eval/                   the toolkit itself, copied from wherever it is imported from: a checkout
                                    (editable install) and a wheel install give the same folder
    requirements.txt                the toolkit's dependencies as its installed metadata declares them, all on PyPI
    pyproject.toml                  installs that copy elsewhere: ``pip install git+https://huggingface.co/spaces/
                                    <org>/<name>``, then ``evaluate.load("<org>/<name>")`` on any machine

The toolkit is vendored, not a wheel that requirements.txt points to: the Space builder runs ``pip install -r
requirements.txt`` with only that file mounted, so a path to another file of the repo does not resolve there.
"""
from __future__ import annotations

import json
import re
import shutil
from importlib import metadata
from pathlib import Path

import yaml

import chimdqa_eval
from chimdqa_eval.families import MODULES
from chimdqa_eval.release import shipped_path
from chimdqa_eval.schema import InputError

METRIC_MODULES = MODULES  # one evaluate module per metric family
SPACE_FILES = ("README.md", "app.py")
DISTRIBUTION = "chimdqa-eval"
LIBRARY = "chimdqa_eval"


def metric_folder(name: str) -> Path:
    """The folder of an installed metric module (source tree or wheel data), checked to be complete."""
    if name not in METRIC_MODULES:
        raise InputError(f"unknown metric module {name!r}; expected one of {', '.join(METRIC_MODULES)}")
    folder = shipped_path(f"metrics/{name}")
    if not (folder / f"{name}.py").is_file():
        raise InputError(f"{folder}: the {name} module is not installed (reinstall chimdqa-eval)")
    return folder


def load_metric(name: str, **kwargs):
    """``evaluate.load`` on the installed module, e.g. ``load_metric("chimdqa_factual")``; kwargs go to
    evaluate.load (config_name, experiment_id, ...)."""
    import evaluate

    return evaluate.load(str(metric_folder(name)), **kwargs)


def library_requirements() -> tuple[list[str], str | None]:
    """The toolkit's dependencies without the extras, and its Requires-Python, from its installed metadata."""
    from packaging.requirements import Requirement

    try:
        info = metadata.metadata(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        raise InputError(f"{DISTRIBUTION} is not installed, so the Spaces' requirements are unknown: install it "
                         "(`pip install -e .` in a checkout, or the wheel) before exporting Spaces") from None
    declared = info.get_all("Requires-Dist") or []
    plain = [r for r in declared if Requirement(r).marker is None or "extra" not in str(Requirement(r).marker)]
    return plain, info.get("Requires-Python")


def pyproject_toml(library_dir: Path, requirements: list[str], python: str | None) -> str:
    """A pyproject.toml installing the vendored library (its data files too) with its dependencies. JSON
    strings and arrays are valid TOML."""
    data: dict[str, list[str]] = {}
    for path in sorted(library_dir.rglob("*")):
        if path.is_file() and path.suffix != ".py":
            data.setdefault(".".join(path.parent.relative_to(library_dir.parent).parts), []).append(path.name)
    lines = ["[build-system]", 'requires = ["setuptools>=61"]', 'build-backend = "setuptools.build_meta"', "",
             "[project]", f"name = {json.dumps(DISTRIBUTION)}", f"version = {json.dumps(chimdqa_eval.__version__)}",
             "description = \"The library of the ChiMDQA evaluation toolkit, as carried by this metric's Space\""]
    if python:
        lines.append(f"requires-python = {json.dumps(python)}")
    lines += [f"dependencies = {json.dumps(requirements)}", "", "[tool.setuptools.packages.find]",
              f"include = {json.dumps([LIBRARY, LIBRARY + '.*'])}", "", "[tool.setuptools.package-data]"]
    lines += [f"{json.dumps(package)} = {json.dumps(files)}" for package, files in data.items()]
    return "\n".join(lines) + "\n"


def card_with_install_note(card: str, name: str, source: Path) -> str:
    """The metric card with a note, under its "How to use" heading, on loading the metric from the Hub."""
    heading = re.search(r"^## How to use[^\n]*\n", card, re.IGNORECASE | re.MULTILINE)
    if heading is None:
        raise InputError(f"{source}: the card has no '## How to use' section to put the Hub instructions in")
    note = (f"\nThis Space carries the toolkit it runs on (`{LIBRARY}/`). On your own machine, install that copy,\n"
            f"then load the module from the Hub with `evaluate.load(\"<org>/{name}\")`:\n\n"
            f"```bash\npip install git+https://huggingface.co/spaces/<org>/{name}\n```\n")
    return card[:heading.end()] + note + card[heading.end():]


def write_spaces(out_dir, names=METRIC_MODULES) -> list[Path]:
    """Write a self-contained Space folder ``out_dir/<name>/`` per metric module (ready for ``hf upload
    --repo-type space``); returns the folders written."""
    library = Path(chimdqa_eval.__file__).resolve().parent
    if Path(out_dir).resolve().is_relative_to(library):
        raise InputError(f"{out_dir}: the Spaces cannot be written inside the toolkit they copy ({library})")
    requirements, python = library_requirements()
    written = []
    for name in names:
        source = metric_folder(name)
        missing = [f for f in SPACE_FILES if not (source / f).is_file()]
        if missing:
            raise InputError(f"{source}: cannot make a Space, missing {', '.join(missing)}")
        target = Path(out_dir) / name
        target.mkdir(parents=True, exist_ok=True)
        for filename in (f"{name}.py", "app.py"):
            shutil.copy2(source / filename, target / filename)
        card = card_with_install_note((source / "README.md").read_text(encoding="utf-8"), name, source)
        (target / "README.md").write_text(card, encoding="utf-8")
        shutil.rmtree(target / LIBRARY, ignore_errors=True)  # a module dropped since an earlier export must go
        shutil.copytree(library, target / LIBRARY, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        (target / "requirements.txt").write_text(
            f"# The toolkit's dependencies; the toolkit itself is the {LIBRARY}/ folder next to this file.\n"
            + "\n".join(requirements) + "\n", encoding="utf-8")
        (target / "pyproject.toml").write_text(pyproject_toml(target / LIBRARY, requirements, python),
                                               encoding="utf-8")
        written.append(target)
    return written


def static_space_card(title: str) -> str:
    """README.md of a static Hub Space that serves index.html as is (the leaderboard's board folder)."""
    header = {"title": title, "emoji": "📊", "colorFrom": "blue", "colorTo": "green", "sdk": "static",
              "app_file": "index.html", "pinned": False}
    return ("---\n" + yaml.safe_dump(header, allow_unicode=True, sort_keys=False) + "---\n\n"
            f"# {title}\n\nGenerated by `chimdqa leaderboard`; the table is also in leaderboard.csv and "
            "leaderboard.md.\n")
