"""The evaluate metric modules as installed files and as Hugging Face Spaces.

Each ``metrics/<name>/`` folder holds the module (``<name>.py``), its card (``README.md`` with the Space YAML
header), ``app.py`` and ``requirements.txt``: pushed as a Space it serves ``evaluate.load("<org>/<name>")``.
A wheel install ships the same folders under ``<prefix>/share/chimdqa/metrics`` (setup.cfg data_files), so
``load_metric`` works without a checkout; an editable install reads the checkout itself.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from chimdqa_eval.schema import InputError

METRIC_MODULES = ("chimdqa_factual", "chimdqa_open", "chimdqa_rag")
SPACE_FILES = ("README.md", "app.py", "requirements.txt")


def metric_folder(name: str) -> Path:
    """The folder of an installed metric module (source tree or wheel data), checked to be complete."""
    from chimdqa_eval.release import shipped_path

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


def write_spaces(out_dir, names=METRIC_MODULES) -> list[Path]:
    """Copy each metric module's Space files into ``out_dir/<name>/`` (ready for ``hf upload --repo-type
    space``); returns the folders written."""
    written = []
    for name in names:
        source = metric_folder(name)
        missing = [f for f in SPACE_FILES if not (source / f).is_file()]
        if missing:
            raise InputError(f"{source}: cannot make a Space, missing {', '.join(missing)}")
        target = Path(out_dir) / name
        target.mkdir(parents=True, exist_ok=True)
        for filename in (f"{name}.py", *SPACE_FILES):
            shutil.copy2(source / filename, target / filename)
        written.append(target)
    return written
