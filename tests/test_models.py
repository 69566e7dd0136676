"""The model edge (chimdqa_eval.models) and the pure parts of the model-based metrics, tested without a model."""
import math
import re
from pathlib import Path

import numpy as np
import pytest

from chimdqa_eval import cli, release
from chimdqa_eval.models import token_budget_batches
from chimdqa_eval.neural import idf_weights, stitch_windows

PACKAGE = Path(__file__).resolve().parents[1] / "chimdqa_eval"


def test_only_the_model_edge_imports_torch_and_transformers():
    pattern = re.compile(r"^\s*(import (torch|transformers|sentence_transformers)\b|"
                         r"from (torch|transformers|sentence_transformers)\b)", re.MULTILINE)
    importers = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if pattern.search(p.read_text()))
    assert importers == ["models.py"]


def test_token_budget_batches_partition_longest_first():
    lengths = [5, 300, 7, 290, 6, 1000, 5, 295]
    batches = list(token_budget_batches(lengths, max_items=2, budget=700))
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    assert batches[0] == [5]  # 1000 tokens: alone (two would pad past the budget)
    assert all(len(b) <= 2 for b in batches)
    for b in batches:  # within a batch lengths are close: padding stays under 5% of the real tokens
        assert len(b) * max(lengths[i] for i in b) <= 1.05 * sum(lengths[i] for i in b)
    firsts = [lengths[b[0]] for b in batches]
    assert firsts == sorted(firsts, reverse=True)


def test_idf_weights_by_hand():
    table, unseen = idf_weights([[1, 2, 2], [2, 3], [4]])
    # N = 3 references; df(2) = 2, df(1) = df(3) = df(4) = 1
    assert table == pytest.approx({1: math.log(4 / 2), 2: math.log(4 / 3), 3: math.log(4 / 2), 4: math.log(4 / 2)})
    assert unseen == pytest.approx(math.log(4))


def test_stitch_windows_takes_each_token_from_its_most_central_window():
    """A text of 1 prefix + 10 content + 1 suffix tokens embedded in windows of 6 content tokens starting at
    0 and 4. Each window's rows say (window, position in the text's content) so the choice can be read off."""
    prefix, suffix, n = 1, 1, 10

    def window(k, start, width):
        rows = [[k, -1]] + [[k, start + i] for i in range(width)] + [[k, 99]]
        return start, np.array(rows, dtype=float)

    parts = [window(0, 0, 6), window(1, 4, 6)]
    stitched = stitch_windows(parts, prefix + n + suffix, prefix, suffix)
    assert stitched.shape == (12, 2)
    assert stitched[0].tolist() == [0, -1] and stitched[-1].tolist() == [1, 99]  # specials: first / last window
    content = stitched[1:-1]
    assert content[:, 1].tolist() == list(range(10))  # every token once, in order
    # tokens 0-4 sit farther from window 0's edges (or only in it); from 5 on window 1 is better
    # (token 4: margin 1 in window 0 vs 0 in window 1; token 5: margin 0 vs 1)
    assert content[:, 0].tolist() == [0, 0, 0, 0, 0, 1, 1, 1, 1, 1]


def test_evaluate_leaves_the_environment_alone(tmp_path, monkeypatch):
    """Offline by default without touching os.environ: models load with local_files_only."""
    import os

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    from chimdqa_eval import models

    asked = []
    monkeypatch.setattr(models, "_can_connect", lambda host, port: asked.append(host) or False)
    before = dict(os.environ)
    assert cli.main(["evaluate", "--predictions", str(release.SAMPLE_DIR / "predictions.jsonl"), "--out",
                     str(tmp_path), "--resamples", "0"]) == 0
    assert dict(os.environ) == before
    assert asked == []  # not even a reachability check: downloads are off
