"""The package's imports flow one way, from the foundations up to the commands (README, "How the code is laid
out"): this test reads every `chimdqa_eval` module's imports — top level and inside functions — and fails on an
arrow against the order, on a cycle between modules, and on argparse outside the commands."""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "chimdqa_eval"

# Lower layers first; a module may import its own layer and those before it. The first matching prefix counts.
LAYERS = [
    ("foundations", ["schema", "text", "porter", "cache", "signature", "jsonio", "agreement"]),
    ("inputs", ["release", "submission", "llm", "models"]),
    ("metrics", ["grades", "lexical", "neural", "factual", "rag", "open_ended", "aggregate", "stats", "longdoc",
                 "calibration"]),
    ("orchestration", ["families"]),
    ("outputs", ["report", "hub"]),
    # evaluate() returns the run with its report, so the API sits above the renderers it calls
    ("api", ["evaluation"]),
    ("applications", ["generate", "build", "queue", "harness"]),
    ("commands", ["commands", "cli"]),
]
# The package's own __init__ only forwards names lazily (chimdqa_eval.evaluate, load_metric).
UNLAYERED = {"chimdqa_eval"}
# What may wait inside a function: a third-party library (torch, matplotlib, httpx, yaml ...), imported where it is
# needed so that a command pays only for what it uses. The package's own modules and the standard library are
# imported at the top, where the layer and cycle checks below can see them.
STDLIB = set(sys.stdlib_module_names)


# ... and these, named one by one with the reason: what a common run never needs, measured in its start-up.
MAY_WAIT_HERE = {
    ("chimdqa_eval.open_ended", "chimdqa_eval.neural"): "model metrics: a lexical-only run skips ~15 ms",
    ("chimdqa_eval.text", "multiprocessing"): "only where jieba itself forks workers: ~10 ms",
}


def may_wait(target: str, importer: str = "") -> bool:
    top = target.split(".")[0]
    return (top not in STDLIB and top != "chimdqa_eval") or (importer, target) in MAY_WAIT_HERE


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer_of(module: str) -> int | None:
    if module in UNLAYERED:
        return None
    rest = module.removeprefix("chimdqa_eval.")
    for index, (_, prefixes) in enumerate(LAYERS):
        if any(rest == p or rest.startswith(p + ".") for p in prefixes):
            return index
    raise AssertionError(f"{module} is in no layer: add it to LAYERS (and to the README's layout)")


def imports(path: Path, name: str) -> list[tuple[str, int, bool]]:
    """(imported chimdqa_eval module or library, line, inside a function) for every import of the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue  # names for type hints only: never imported at run time
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.Import):
                found.extend((alias.name, child.lineno, in_function) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - child.level + 1]
                                    + ([base] if base else []))
                for alias in child.names:  # `from chimdqa_eval.x import y`: y may itself be a module
                    full = f"{base}.{alias.name}"
                    found.append((full if full in ALL else base, child.lineno, in_function))
            visit(child, inner)

    visit(tree, False)
    return found


ALL = modules()


def internal(target: str) -> str | None:
    """The chimdqa_eval module an import names (the longest known prefix), or None for a library."""
    while target:
        if target in ALL:
            return target
        target = target.rpartition(".")[0]
    return None


def test_every_module_has_a_layer():
    for name in ALL:
        layer_of(name)


def test_imports_flow_one_way():
    wrong = []
    for name, path in ALL.items():
        mine = layer_of(name)
        for target, line, _ in imports(path, name):
            other = internal(target) if target.startswith("chimdqa_eval") else None
            if other is None or other == name:
                continue
            theirs = layer_of(other)
            if mine is not None and theirs is not None and theirs > mine:
                wrong.append(f"{path.relative_to(ROOT)}:{line}: {LAYERS[mine][0]} module {name} imports "
                             f"{LAYERS[theirs][0]} module {other}")
    assert not wrong, "imports against the layer order:\n" + "\n".join(wrong)


def with_packages(module: str, importer: str) -> set[str]:
    """`module` and the packages above it that Python runs first (their __init__), except the importer's own."""
    parts = module.split(".")
    found = {".".join(parts[:i]) for i in range(2, len(parts) + 1)} & set(ALL)
    return {m for m in found if not (importer == m or importer.startswith(m + "."))} | {module}


def test_no_import_cycles():
    graph = {}
    for name, path in ALL.items():
        targets = {internal(t) for t, _, _ in imports(path, name) if t.startswith("chimdqa_eval")} - {None, name}
        graph[name] = set().union(*(with_packages(t, name) for t in targets)) - {name} if targets else set()
    # a package's __init__ importing its own submodules is how packages work; not a cycle worth naming
    graph = {name: {t for t in targets if not (t.startswith(name + ".") and ALL[name].name == "__init__.py")}
             for name, targets in graph.items()}
    cycles, state = [], {}

    def walk(node, stack):
        state[node] = "open"
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == "open":
                cycles.append(" -> ".join(stack[stack.index(target):] + [target]))
            elif target not in state:
                walk(target, stack)
        stack.pop()
        state[node] = "done"

    for name in sorted(graph):
        if name not in state:
            walk(name, [])
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def local_imports(name: str, path: Path) -> list[str]:
    return [f"{path.relative_to(ROOT)}:{line}: {target}" for target, line, in_function in imports(path, name)
            if in_function and not may_wait(target, name)]


def test_function_local_imports_are_only_third_party_libraries():
    found = [line for name, path in ALL.items() if name not in UNLAYERED for line in local_imports(name, path)]
    assert not found, ("imports of the package's own modules or the standard library inside functions (only "
                       "third-party libraries wait until they are needed):\n" + "\n".join(found))


def test_argparse_only_in_the_commands():
    found = []
    for name, path in ALL.items():
        if layer_of(name) == len(LAYERS) - 1:
            continue
        text = path.read_text(encoding="utf-8")
        if re.search(r"^\s*(import argparse|from argparse )", text, re.M) or ".add_argument(" in text:
            found.append(str(path.relative_to(ROOT)))
    assert not found, "command-line parsing outside chimdqa_eval/commands: " + ", ".join(found)


@pytest.mark.parametrize("bad, expected", [
    ("from chimdqa_eval.report import html\n", "report"),
    ("def f():\n    from chimdqa_eval.commands.evaluate import run\n", "commands"),
])
def test_the_checker_sees_upward_imports(tmp_path, bad, expected):
    """The reader finds top-level and function-local imports alike (so the tests above can fail)."""
    path = tmp_path / "probe.py"
    path.write_text(bad, encoding="utf-8")
    targets = [internal(t) for t, _, _ in imports(path, "chimdqa_eval.text")]
    assert targets and layer_of(targets[0]) == [n for n, _ in LAYERS].index(
        {"report": "outputs", "commands": "commands"}[expected])


def test_the_readme_layout_names_every_module_in_its_layer():
    """README "How the code is laid out" lists each top-level module and package under its layer's heading, in
    the order of LAYERS."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("## How the code is laid out", 1)[1].split("```", 2)[1]
    listed, heading = {}, None
    for line in block.splitlines():
        if re.match(r"^ \S", line):
            heading = line.strip()
        elif re.match(r"^  \S", line):
            listed[line.split()[0].rstrip("/").removesuffix(".py")] = heading
    top = {name.split(".")[1] for name in ALL if name.count(".") >= 1} - {"__init__"}
    expected = {name: next(layer for layer, prefixes in LAYERS if name in prefixes) for name in top}
    assert {n: listed.get(n) for n in top} == expected
    assert not set(listed) - top, f"the README names modules that do not exist: {sorted(set(listed) - top)}"
