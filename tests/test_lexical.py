"""ROUGE-L, METEOR and CIDEr-D equal rouge_score, NLTK and pycocoevalcap fed the same tokens (|delta| <= 1e-9)."""
import random

import pytest
from nltk.translate.meteor_score import meteor_score
from pycocoevalcap.cider.cider import Cider
from rouge_score import rouge_scorer

from chimdqa_eval.lexical import cider_d, lcs_length, meteor, rouge_l
from chimdqa_eval.text import tokenize

# Chinese words, plus English forms that exercise METEOR's lower-casing and Porter stemming.
WORDS = ("经济 增长 北京 上海 中国 公司 利润 股票 银行 法院 患者 医疗 教育 学生 新闻 政策 的 了 在 是 和 与 及 。 ， "
         "2023 5.2% GDP Running runs run RUN Cats cat policies policy studies studied").split()


def _pairs(seed, n, lengths=(0, 1, 2, 3, 8, 30, 120)):
    """Reference/prediction token lists shaped like model answers: a noisy, partly reordered copy of the
    reference with unrelated words appended, some empty sides, some exact copies."""
    rng = random.Random(seed)
    preds, refs = [], []
    for _ in range(n):
        ref = [rng.choice(WORDS) for _ in range(rng.choice(lengths))]
        pred = [w for w in ref if rng.random() > 0.2] + [rng.choice(WORDS) for _ in range(rng.randint(0, 20))]
        roll = rng.random()
        if roll < 0.2:
            rng.shuffle(pred)
        elif roll < 0.25:
            pred = []
        elif roll < 0.3:
            pred = list(ref)
        preds.append(pred)
        refs.append(ref)
    return preds, refs


class _NoWordNet:
    """NLTK's METEOR with no synonyms: the offline configuration ours defaults to."""

    def synsets(self, word):
        return []


class _Lemma:
    def __init__(self, name):
        self._name = name

    def name(self):
        return self._name


class _Synset:
    def __init__(self, names):
        self._names = names

    def lemmas(self):
        return [_Lemma(n) for n in self._names]


class _TableWordNet:
    """A WordNet stand-in over a small synonym table, to check the synonym stage against NLTK's."""

    def __init__(self, table):
        self.table = table

    def synsets(self, word):
        return [_Synset(self.table[word])] if word in self.table else []


def _reference_rouge_l(preds, refs):
    texts = {}
    for i, (p, r) in enumerate(zip(preds, refs)):
        texts[f"p{i}"], texts[f"r{i}"] = p, r

    class Tokens:  # rouge_score asks its tokenizer for tokens; hand it ours
        def tokenize(self, key):
            return texts[key]

    scorer = rouge_scorer.RougeScorer(["rougeL"], tokenizer=Tokens())
    return [scorer.score(f"r{i}", f"p{i}")["rougeL"].fmeasure for i in range(len(preds))]


def _reference_cider(preds, refs):
    gts = {i: [" ".join(r)] for i, r in enumerate(refs)}
    res = {i: [" ".join(p)] for i, p in enumerate(preds)}
    return list(Cider().compute_score(gts, res)[1])


def _assert_close(ours, theirs):
    assert len(ours) == len(theirs)
    worst = max(abs(a - b) for a, b in zip(ours, theirs))
    assert worst <= 1e-9, worst


def _dp_lcs(a, b):
    row = [0] * (len(b) + 1)
    for x in a:
        diagonal = 0
        for j, y in enumerate(b, 1):
            diagonal, row[j] = row[j], diagonal + 1 if x == y else max(row[j], row[j - 1])
    return row[-1]


def test_lcs_length_matches_dynamic_programming():
    rng = random.Random(3)
    for _ in range(300):
        a = [rng.choice("abcd") for _ in range(rng.randint(0, 70))]
        b = [rng.choice("abcde") for _ in range(rng.randint(0, 70))]
        assert lcs_length(a, b) == _dp_lcs(a, b)


def test_rouge_l_equals_rouge_score():
    preds, refs = _pairs(1, 250)
    _assert_close(rouge_l(preds, refs), _reference_rouge_l(preds, refs))


def test_rouge_l_long_answers():
    # Long enough that the bit vectors span many machine words (answers reach 4,726 characters).
    preds, refs = _pairs(2, 3, lengths=(900,))
    _assert_close(rouge_l(preds, refs), _reference_rouge_l(preds, refs))


def test_meteor_equals_nltk_without_synonyms():
    preds, refs = _pairs(4, 300)
    theirs = [meteor_score([r], p, wordnet=_NoWordNet()) for p, r in zip(preds, refs)]
    _assert_close(meteor(preds, refs), theirs)
    assert any(0 < s < 1 for s in theirs)  # the fragmentation penalty is exercised, not only 0 and 1


def test_meteor_alignment_with_renumbered_keys(monkeypatch):
    # Corpora too large for direct composite keys take another path; force it on a small one.
    import chimdqa_eval.lexical as lexical

    preds, refs = _pairs(7, 100)
    direct = meteor(preds, refs)
    monkeypatch.setattr(lexical, "_KEY_LIMIT", 0)
    assert meteor(preds, refs) == direct
    assert direct == pytest.approx([meteor_score([r], p, wordnet=_NoWordNet()) for p, r in zip(preds, refs)],
                                   abs=1e-9)


def test_meteor_stems_and_lowercases_like_nltk():
    pred, ref = ["Running", "CATS", "经济"], ["run", "cat", "经济", "增长"]
    theirs = meteor_score([ref], pred, wordnet=_NoWordNet())
    assert meteor([pred], [ref]) == [pytest.approx(theirs, abs=1e-12)]
    assert theirs > meteor([pred], [["x", "y", "经济", "增长"]])[0]  # the stem matches count


def test_meteor_synonym_stage_equals_nltk():
    table = {"经济": ["财经", "经贸"], "增长": ["上升", "提高"], "公司": ["企业"], "run": ["sprint"]}
    words = ["经济", "增长", "公司", "财经", "经贸", "上升", "提高", "企业", "的", "run", "sprint", "Running"]
    rng = random.Random(5)
    preds = [[rng.choice(words) for _ in range(rng.randint(0, 25))] for _ in range(200)]
    refs = [[rng.choice(words) for _ in range(rng.randint(0, 25))] for _ in range(200)]
    theirs = [meteor_score([r], p, wordnet=_TableWordNet(table)) for p, r in zip(preds, refs)]
    ours = meteor(preds, refs, synonyms=lambda w: table.get(w, ()))
    _assert_close(ours, theirs)
    assert ours != meteor(preds, refs)  # the synonyms changed some scores


def test_cider_d_equals_pycocoevalcap():
    preds, refs = _pairs(6, 300)
    refs = [r or ["的"] for r in refs]  # pycocoevalcap cannot take a corpus whose references are all empty
    _assert_close(cider_d(preds, refs), _reference_cider(preds, refs))


def test_parity_on_jieba_tokens_of_chinese_text():
    texts = ["经济增长带动了上海的股票市场，银行利润上升。", "法院认为患者的医疗费用应由公司承担。",
             "教育政策的调整影响了学生和家长。", "新闻报道称，2023年GDP增长5.2%，高于预期。"]
    refs = [tokenize(t) for t in texts]
    preds = [tokenize(texts[1][:12] + texts[0]), tokenize(texts[1]), tokenize("学生"), tokenize("")]
    _assert_close(rouge_l(preds, refs), _reference_rouge_l(preds, refs))
    _assert_close(meteor(preds, refs), [meteor_score([r], p, wordnet=_NoWordNet()) for p, r in zip(preds, refs)])
    _assert_close(cider_d(preds, refs), _reference_cider(preds, refs))


def test_empty_sides_score_zero_and_identical_texts_score_one():
    assert rouge_l([[], ["a"]], [["a"], []]) == [0.0, 0.0]
    assert meteor([[], ["a"]], [["a"], []]) == [0.0, 0.0]
    assert rouge_l([["北京", "天安门"]], [["北京", "天安门"]]) == [1.0]
    # one chunk of two matches: (1 - 0.5 * (1/2)^3) * 1
    assert meteor([["北京", "天安门"]], [["北京", "天安门"]]) == [pytest.approx(0.9375)]


def test_mismatched_lengths_are_rejected():
    with pytest.raises(ValueError):
        rouge_l([["a"]], [])
