"""ChiMDQA and Chinese SimpleQA inside lm-evaluation-harness and lighteval.

    lm_eval --include_path "$(chimdqa harness-path lm-eval)" --tasks chimdqa ...
    lighteval endpoint litellm ... "chimdqa_factual|0" --custom-tasks "$(chimdqa harness-path lighteval)"

The task files (lm_eval/*.yaml + utils.py, lighteval/tasks.py) ship inside the package and are thin: questions,
prompts and scores come from chimdqa_eval.harness.tasks, which builds prompts with `chimdqa generate --mode
long`'s code and scores with `chimdqa evaluate`'s families; chimdqa_eval.harness.samples turns either harness's
per-sample logs into a submission. Each harness's API changes between releases, so the task files check the
installed version against the range they were tested with (SUPPORTED) before they define anything.
"""
from __future__ import annotations

from importlib import metadata
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from chimdqa_eval.schema import InputError

HARNESSES = ("lm-eval", "lighteval")
# harness -> the versions the task files were written and tested against
SUPPORTED = {"lm-eval": ">=0.4.13,<0.5", "lighteval": ">=0.13,<0.14"}
_FOLDER = Path(__file__).resolve().parent


def task_path(harness: str) -> Path:
    """What the harness is given: lm-eval's --include_path folder, lighteval's --custom-tasks file."""
    if harness not in HARNESSES:
        raise InputError(f"unknown harness {harness!r}; expected one of {', '.join(HARNESSES)}")
    return _FOLDER / "lm_eval" if harness == "lm-eval" else _FOLDER / "lighteval" / "tasks.py"


def installed_version(harness: str) -> str | None:
    try:
        return metadata.version(harness)
    except metadata.PackageNotFoundError:
        return None


def version_problem(harness: str, version: str | None = None) -> str | None:
    """Why the installed (or the given) version of `harness` cannot run the ChiMDQA tasks, or None."""
    version = version if version is not None else installed_version(harness)
    wanted = SUPPORTED[harness]
    advice = f"install the tested range with: pip install 'chimdqa-eval[harness]' (or '{harness}{wanted}')"
    if version is None:
        return f"{harness} is not installed; {advice}"
    try:
        ok = Version(version) in SpecifierSet(wanted)
    except InvalidVersion:
        ok = False
    if not ok:
        return (f"{harness} {version} is installed, but the ChiMDQA tasks are written for {harness}{wanted} (its "
                f"task API changes between releases); {advice}")
    return None


def check_version(harness: str) -> None:
    """InputError naming the installed version and the supported range when they do not match."""
    problem = version_problem(harness)
    if problem:
        raise InputError(problem)
