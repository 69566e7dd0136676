"""The NLI checker's plumbing on a tiny random sequence classifier: label names from the config, batching,
windows for long premises, shapes. (Random weights: the labels mean nothing, the bookkeeping must be exact.)"""
import numpy as np
import pytest

from chimdqa_eval.rag import ModelUnavailable, NLIChecker, compute_rag
from chimdqa_eval.rag.checkers import CheckTask, label_map, nli_label
from tests.tiny_models import CHARS, tiny_bert

ID2LABEL = {0: "CONTRADICTION", 1: "neutral", 2: "Entailment"}


@pytest.fixture(scope="module")
def nli_dir(tmp_path_factory):
    return str(tiny_bert(tmp_path_factory.mktemp("nli"), num_labels=3, id2label=ID2LABEL, max_length=64))


@pytest.fixture(scope="module")
def checker(nli_dir):
    return NLIChecker(nli_dir, device="cpu", batch_size=4)


def test_label_names_are_read_from_the_config(checker):
    assert checker.labels == {0: "Contradiction", 1: "Neutral", 2: "Entailment"}
    assert [nli_label(n) for n in ("entails", "ENTAILMENT", "not_entailment", "Neutral", "contradictory")] == \
        ["Entailment", "Entailment", "Neutral", "Neutral", "Contradiction"]
    assert label_map({0: "entailment", 1: "not_entailment"}) == {0: "Entailment", 1: "Neutral"}
    with pytest.raises(ModelUnavailable, match="does not name NLI classes"):
        label_map({0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"})


def test_a_model_without_nli_labels_or_no_model_is_a_clear_error(tmp_path):
    generic = tiny_bert(tmp_path / "generic", num_labels=3)
    with pytest.raises(ModelUnavailable, match="LABEL_0"):
        NLIChecker(str(generic), device="cpu")
    with pytest.raises(ModelUnavailable, match=r"needs a model \(nli_model= in Python, --nli-model on the command line\)"):
        NLIChecker(None)
    with pytest.raises(ModelUnavailable, match="could not be loaded"):
        NLIChecker(str(tmp_path / "missing"))


PAIRS = [("甲公司成立于2001年，总部在北京。", "甲公司成立于2001年"), ("北京", "总部在上海的乙公司规模较小"),
         ("员工约500人", "员工"), ("医疗", "医疗新闻法律金融教育学术"), ("长" * 40, "短"), ("中国", "中国")]


def test_batched_logits_equal_one_by_one(nli_dir, checker):
    one_by_one = NLIChecker(nli_dir, device="cpu", batch_size=1)
    batched = checker.logits(PAIRS)
    assert batched.shape == (len(PAIRS), 3)
    np.testing.assert_allclose(batched, one_by_one.logits(PAIRS), atol=1e-5)


def test_labels_are_the_argmax_class_names_per_claim(checker):
    tasks = [CheckTask("问", premise, [claim], "q") for premise, claim in PAIRS]
    labels = checker.check(tasks)
    expected = [ID2LABEL[int(k)] for k in checker.logits(PAIRS).argmax(axis=1)]
    assert [row[0] for row in labels] == [nli_label(e) for e in expected]
    # Several claims of one premise are the same pairs checked together.
    grouped = checker.check([CheckTask("问", PAIRS[0][0], [c for _, c in PAIRS], "q")])
    assert grouped[0] == [row[0] for row in checker.check([CheckTask("问", PAIRS[0][0], [c], "q")
                                                           for _, c in PAIRS])]


def test_a_long_premise_is_read_in_windows_that_fit(checker):
    premise = CHARS[:240]  # 240 distinct characters, far beyond 64 positions
    windows = checker.windows(premise, "营业收入")
    assert len(windows) > 1 and premise.startswith(windows[0]) and premise.endswith(windows[-1])
    for window, after in zip(windows, windows[1:]):
        assert window[-10:] in after  # consecutive windows overlap, so together they cover the premise
    for window in windows:
        encoded = checker.tokenizer(window, "营业收入")
        assert len(encoded["input_ids"]) <= checker.max_length
    assert checker.windows("短前提", "营业收入") == ["短前提"]
    # A claim entailed by any window is entailed: here every window is the same text, so all must agree.
    label = checker.check([CheckTask("问", premise, ["营业收入"], "q")])[0][0]
    window_labels = {checker.check([CheckTask("问", w, ["营业收入"], "q")])[0][0] for w in windows}
    assert label == ("Entailment" if "Entailment" in window_labels else
                     "Contradiction" if "Contradiction" in window_labels else "Neutral")


def test_compute_rag_with_the_nli_checker_has_the_right_shapes(nli_dir):
    out = compute_rag(["甲公司成立于2001年。总部在上海。", ""], ["甲公司成立于2001年。总部在北京。", "员工约500人。"],
                      ["介绍甲公司", "员工多少"], [["甲公司成立于2001年。", "乙公司在上海。", "无关内容"], []],
                      nli_model=nli_dir, device="cpu")
    first, second = out["per_item"]
    assert len(first["response_claims"]) == 2 and len(first["gt_answer_claims"]) == 2
    assert np.array(first["retrieved2response"]).shape == (2, 3)
    assert np.array(first["retrieved2answer"]).shape == (2, 3)
    assert len(first["answer2response"]) == 2 and len(first["response2answer"]) == 2
    # An empty response has no claims; no chunks means empty rows, and every such metric is 0.
    assert second["response_claims"] == [] and second["retrieved2answer"] == [[]]
    assert second["metrics"]["faithfulness"] == 0.0 and second["metrics"]["precision"] == 0.0
    assert f"checker:nli:{nli_dir}:max_len=64" in out["signature"]
    assert "transformers:" in out["signature"]


def test_the_checker_name_follows_the_weights_not_the_path(tmp_path, checker):
    """The name signs the weights' hash: other weights differ, the same weights at another path agree."""
    retrained = tiny_bert(tmp_path / "other", num_labels=3, id2label=ID2LABEL, max_length=64, seed=1)
    other = NLIChecker(str(retrained), device="cpu")
    same_weights = tiny_bert(tmp_path / "copy", num_labels=3, id2label=ID2LABEL, max_length=64)
    weights = checker.name.rsplit("weights=", 1)[1]
    assert other.name.rsplit("weights=", 1)[1] != weights
    assert NLIChecker(str(same_weights), device="cpu").name.rsplit("weights=", 1)[1] == weights
