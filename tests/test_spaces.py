"""The metric modules as evaluate Spaces: the folders in metrics/, load_metric, and the self-contained Space
folders of `chimdqa export-hub --spaces`, run where the toolkit is not installed."""
import json
import os
import runpy
import site
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import chimdqa_eval
from chimdqa_eval import cli, release
from chimdqa_eval.hub.spaces import METRIC_MODULES, metric_folder, write_spaces
from chimdqa_eval.schema import InputError

# The documented example of each module (docs/metrics.md's factual and open-ended sections, the RAG card's labels).
EXAMPLES = {
    "chimdqa_factual": {"predictions": ["3518", "大约3500", "3520", "不知道"], "references": ["3518.17"] * 4,
                        "domains": ["finance", "finance", "law", "law"], "question_types": ["计算"] * 4},
    "chimdqa_open": {"predictions": ["北京是中国的首都。"], "references": ["中国的首都是北京。"],
                     "metrics": ["meteor", "rouge_l"]},
    "chimdqa_rag": {"predictions": ["北京是中国的首都。"], "references": ["中国的首都是北京。"],
                    "questions": ["中国的首都是哪里？"], "retrieved_contexts": [["北京是中华人民共和国的首都。"]],
                    "checker": "precomputed",
                    "labels": [{"answer2response": ["Entailment"], "response2answer": ["Entailment"],
                                "retrieved2response": [["Entailment"]], "retrieved2answer": [["Neutral"]]}]},
}

# Run with `python -I -S`: no PYTHONPATH, no current folder and no .pth files (an editable install of the toolkit
# is one), so the interpreter sees the standard library, then the site-packages folders (the Space's
# requirements) appended below, and nothing of ours unless a Space brings it.
SPACE_RUNTIME = r"""
import json, runpy, sys

mode, spaces, examples = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
sys.path.extend(json.loads(sys.argv[4]))
try:
    import chimdqa_eval
    sys.exit(f"chimdqa_eval is importable without a Space, from {chimdqa_eval.__file__}")
except ModuleNotFoundError:
    pass


def summary(result):
    library = sys.modules["chimdqa_eval"].__file__
    return {"library": library, "result": {k: v for k, v in result.items() if k not in ("per_item", "signature")}}


out = {}
if mode == "space":  # each Space as the Space runs it: app.py from its folder, the module it loads
    for name, kwargs in examples.items():
        folder = f"{spaces}/{name}"
        module = runpy.run_path(f"{folder}/app.py", run_name="space")["module"]
        out[name] = summary(module.compute(**kwargs))
        # forget this Space's copy of the toolkit, so that the next Space must bring its own
        sys.path.remove(folder)
        for loaded in [m for m in sys.modules if m == "chimdqa_eval" or m.startswith("chimdqa_eval.")]:
            del sys.modules[loaded]
else:  # another machine: the toolkit pip-installed from a Space, the module loaded by evaluate alone
    import evaluate

    sys.path.insert(0, mode)
    for name, kwargs in examples.items():
        out[name] = summary(evaluate.load(f"{spaces}/{name}").compute(**kwargs))
print(json.dumps(out))
"""


def run_isolated(tmp_path, mode, spaces):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "HF_"))}
    env.update(HF_HOME=str(tmp_path / "hf"), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", HF_EVALUATE_OFFLINE="1",
               CHIMDQA_CACHE=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, "-I", "-S", "-c", SPACE_RUNTIME, mode, str(spaces), json.dumps(EXAMPLES),
                           json.dumps(site.getsitepackages())],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def check_readme_examples(out, library_of):
    """The README's numbers, each computed on the copy of the toolkit that library_of(name) holds."""
    for name in METRIC_MODULES:
        assert Path(out[name]["library"]).is_relative_to(library_of(name)), (name, out[name]["library"])
    factual = out["chimdqa_factual"]["result"]
    assert [factual[k] for k in ("CO", "NA", "IN", "CGA")] == [25.0, 50.0, 25.0, 50.0]
    assert round(factual["F1"], 1) == 33.3 and factual["grades"] == ["CO", "NA", "IN", "NA"]
    open_ended = out["chimdqa_open"]["result"]
    assert (round(open_ended["meteor"], 2), round(open_ended["rouge_l"], 2)) == (85.19, 66.67)
    rag = out["chimdqa_rag"]["result"]
    assert (rag["precision"], rag["faithfulness"], rag["claim_recall"]) == (100.0, 100.0, 0.0)


@pytest.mark.slow  # a Python per Space, twice, and a pip install of each: a long run, in .ci/run's `-m slow`
def test_exported_spaces_compute_the_readme_examples_without_the_toolkit_installed(tmp_path):
    spaces = tmp_path / "spaces"
    assert cli.main(["export-hub", str(tmp_path / "hub"), "--spaces", str(spaces)]) == 0
    for name in METRIC_MODULES:
        folder = spaces / name
        assert sorted(p.name for p in folder.iterdir()) == sorted(
            ["README.md", "app.py", f"{name}.py", "requirements.txt", "pyproject.toml", "chimdqa_eval"])
        assert not list(folder.rglob("__pycache__"))
        requirements = (folder / "requirements.txt").read_text(encoding="utf-8").splitlines()
        assert "evaluate>=0.4.6" in requirements  # from the installed metadata, extras left out
        assert not [r for r in requirements if "chimdqa" in r.split("#")[0] or "extra" in r]
        card = (folder / "README.md").read_text(encoding="utf-8")
        assert f"pip install git+https://huggingface.co/spaces/<org>/{name}" in card
        assert yaml.safe_load(card.split("---\n")[1])["python_version"] == "3.11"

    # The Space runtime: its folder first on sys.path, its requirements installed, nothing else of ours.
    check_readme_examples(run_isolated(tmp_path, "space", spaces), lambda name: spaces / name / "chimdqa_eval")

    # Another machine: `pip install <Space>`, then evaluate.load on the module alone.
    installed = tmp_path / "installed"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                    "--target", str(installed), str(spaces / "chimdqa_factual")], check=True, timeout=300)
    assert sorted(p.name for p in (installed / "chimdqa_eval" / "report").glob("*.json")) == [
        "paper_results.json", "results.schema.json"]
    check_readme_examples(run_isolated(tmp_path, str(installed), spaces), lambda name: installed / "chimdqa_eval")


def test_write_spaces_replaces_a_stale_library_copy_and_export_hub_keeps_metric_spaces(tmp_path):
    args = cli.build_parser(["export-hub"]).parse_args(["export-hub", "out", "--metric-spaces", "sp"])
    assert args.spaces == "sp"
    stale = tmp_path / "chimdqa_factual" / "chimdqa_eval" / "removed_since.py"
    stale.parent.mkdir(parents=True)
    stale.write_text("raise ImportError\n", encoding="utf-8")
    write_spaces(tmp_path, ["chimdqa_factual"])
    assert not stale.exists()
    with pytest.raises(InputError, match="inside the toolkit they copy"):
        write_spaces(Path(chimdqa_eval.__file__).parent / "spaces")
    library = Path(chimdqa_eval.__file__).parent
    assert sorted(p.relative_to(tmp_path / "chimdqa_factual" / "chimdqa_eval").as_posix()
                  for p in (tmp_path / "chimdqa_factual" / "chimdqa_eval").rglob("*.py")) == sorted(
        p.relative_to(library).as_posix() for p in library.rglob("*.py"))


@pytest.mark.parametrize("name", METRIC_MODULES)
def test_metric_folders_are_evaluate_spaces(name, monkeypatch):
    folder = metric_folder(name)
    readme = (folder / "README.md").read_text(encoding="utf-8")
    assert readme.startswith("---\n")
    header = yaml.safe_load(readme.split("---\n")[1])
    assert header["sdk"] == "gradio" and header["app_file"] == "app.py"
    assert {"evaluate", "metric"} <= set(header["tags"])
    monkeypatch.setattr(sys, "path", list(sys.path))  # app.py puts its folder first
    space = runpy.run_path(str(folder / "app.py"), run_name="space")  # what the Space runs, minus the UI
    assert space["module"].name == name


def test_load_metric_and_evaluate_load_from_metrics(monkeypatch):
    import evaluate

    factual = chimdqa_eval.load_metric("chimdqa_factual")
    result = factual.compute(predictions=["3.15亿元", "不知道"], references=["3.15亿元", "412人"])
    assert result["grades"] == ["CO", "NA"] and result["CO"] == 50.0
    monkeypatch.chdir(release.SAMPLE_DIR.parent.parent / "metrics")
    assert evaluate.load("chimdqa_factual").name == "chimdqa_factual"
    with pytest.raises(InputError, match="unknown metric module"):
        chimdqa_eval.load_metric("rouge")


def test_spaces_need_the_toolkit_installed_to_know_its_requirements(tmp_path, monkeypatch):
    from chimdqa_eval.hub import spaces

    monkeypatch.setattr(spaces, "DISTRIBUTION", "chimdqa-eval-not-installed")
    with pytest.raises(InputError, match="chimdqa-eval-not-installed is not installed.*pip install -e"):
        write_spaces(tmp_path)
    assert not list(tmp_path.iterdir())  # nothing half-written
