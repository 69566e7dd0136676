"""ROUGE-L, METEOR and CIDEr-D equal rouge_score, NLTK and pycocoevalcap fed the same tokens (|delta| <= 1e-9);
CIDEr equals Vedantam et al. 2015's formula written out below; the batched and one-pass paths equal the plain
ones exactly."""
import json
import math
import random
import re
from collections import Counter

import numpy as np
import pytest
from nltk.translate.meteor_score import meteor_score
from pycocoevalcap.cider.cider import Cider
from rouge_score import rouge_scorer

from chimdqa_eval import release
from chimdqa_eval import lexical
from chimdqa_eval.lexical import (_cider_similarities, _first_occurrence_ranks, _merged_keys, _ngram_groups,
                                  _renumber, _sorted_changes, _stable_sort, cider, cider_and_cider_d,
                                  cider_d, lcs_length, meteor, reference_digest, rouge_l)
from chimdqa_eval.text import TokenLists, tokenize

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
    preds, refs = _pairs(7, 100)
    direct = meteor(preds, refs)
    monkeypatch.setattr(lexical, "_KEY_LIMIT", 0)
    assert meteor(preds, refs) == direct
    assert direct == pytest.approx([meteor_score([r], p, wordnet=_NoWordNet()) for p, r in zip(preds, refs)],
                                   abs=1e-9)


@pytest.mark.parametrize("batch_tokens", [1, 7, 150])
def test_meteor_in_batches_equals_one_batch(monkeypatch, batch_tokens):
    # Items are aligned a batch at a time; a score depends on its own item only, to the last bit.
    table = {"经济": ["财经"], "run": ["sprint"]}
    preds, refs = _pairs(8, 200)
    whole = meteor(preds, refs), meteor(preds, refs, synonyms=lambda w: table.get(w, ()))
    monkeypatch.setattr(lexical, "_METEOR_BATCH_TOKENS", batch_tokens)
    assert len(list(lexical._batches(list(map(len, preds)), list(map(len, refs)), batch_tokens))) > 1
    assert (meteor(preds, refs), meteor(preds, refs, synonyms=lambda w: table.get(w, ()))) == whole
    _assert_close(whole[0], [meteor_score([r], p, wordnet=_NoWordNet()) for p, r in zip(preds, refs)])


def test_meteor_stems_and_lowercases_like_nltk():
    pred, ref = ["Running", "CATS", "经济"], ["run", "cat", "经济", "增长"]
    theirs = meteor_score([ref], pred, wordnet=_NoWordNet())
    assert meteor([pred], [ref]) == [pytest.approx(theirs, abs=1e-12)]
    assert theirs > meteor([pred], [["x", "y", "经济", "增长"]])[0]  # the stem matches count


def test_words_are_lowered_each_on_its_own():
    # lexical lowers a batch's words as one string: a final sigma stays final at a word's end and nowhere else,
    # and a word holding a newline (no tokenizer's, but a caller's list may) sends it word by word.
    words = ["ΟΔΟΣ", "Σ", "ΑΣ", "'Σ", "Σ'", "ΣΑ", "İSTANBUL", "CATS", "经济", "Straße", "a\nB"]
    assert lexical._lower_each(words) == [w.lower() for w in words]
    assert lexical._lower_each(words[:-1]) == [w.lower() for w in words[:-1]]


def test_meteor_with_a_stemmer_of_its_own_stems_every_word():
    calls = []
    lower_cased = meteor([["Running", "经济"]], [["run", "经济"]], stem=lambda w: calls.append(w) or w[:3])
    assert sorted(calls) == ["run", "running", "经济"] and lower_cased == meteor([["run", "经济"]], [["run", "经济"]])


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


# ---- CIDEr (Vedantam et al. 2015) ------------------------------------------------------------------------------

def _paper_cider(candidates, reference_sets, n=4):
    """CIDEr from the paper's equations, with plain dicts: g_k(s) = h_k(s) / sum_l h_l(s) * log(|I| / df_k),
    df_k the number of items whose reference set holds n-gram k (at least 1), |I| the number of items;
    CIDEr_n(c, S) = mean over the references s of S of the cosine of g^n(c) and g^n(s);
    CIDEr = sum over n of CIDEr_n / n_max."""
    def grams(tokens, k):
        return Counter(tuple(tokens[i:i + k]) for i in range(len(tokens) - k + 1))

    n_items = len(reference_sets)
    scores = [0.0] * len(candidates)
    for k in range(1, n + 1):
        ref_grams = [[grams(s, k) for s in refs] for refs in reference_sets]
        df = Counter()
        for refs in ref_grams:
            df.update(set().union(*refs))

        def vector(counts):
            total = sum(counts.values())
            return {g: c / total * math.log(n_items / max(1, df[g])) for g, c in counts.items()}

        def cosine(u, v):
            norm_u, norm_v = math.sqrt(sum(x * x for x in u.values())), math.sqrt(sum(x * x for x in v.values()))
            dot = sum(x * v.get(g, 0.0) for g, x in u.items())
            return dot / (norm_u * norm_v) if norm_u and norm_v else 0.0

        for i, candidate in enumerate(candidates):
            g_c = vector(grams(candidate, k))
            scores[i] += sum(cosine(g_c, vector(r)) for r in ref_grams[i]) / len(ref_grams[i]) / n
    return scores


def _sample_paragraphs():
    """The sample release's open-ended answers (multi-sentence Chinese paragraphs) and the sample system's
    answers to them, jieba-tokenized."""
    answers = {q["id"]: q["answer"] for q in release.read_qa() if q["category"] == "open_ended"}
    rows = [json.loads(line) for line in (release.SAMPLE_DIR / "predictions.jsonl").read_text(
        encoding="utf-8").splitlines()]
    pairs = [(r["prediction"], answers[r["id"]]) for r in rows if r["id"] in answers]
    assert len(pairs) == 30 and all(len(re.findall("[。；！？]", ref)) >= 2 for _, ref in pairs)
    return [tokenize(p) for p, _ in pairs], [tokenize(r) for _, r in pairs]


def test_cider_equals_the_papers_formula_on_chinese_paragraphs():
    preds, refs = _sample_paragraphs()
    ours = cider(preds, refs)
    _assert_close(ours, _paper_cider(preds, [[r] for r in refs]))
    # On paragraphs CIDEr is spread out where CIDEr-D's length penalty flattens every item to ~0.
    assert 0.05 < sum(ours) / len(ours) < 0.5 and max(ours) - min(ours) > 0.1
    assert max(cider_d(preds, refs)) < 1e-6


def test_cider_equals_the_papers_formula_on_mixed_pairs():
    preds, refs = _pairs(11, 300)
    refs = [r or ["的"] for r in refs]
    _assert_close(cider(preds, refs), _paper_cider(preds, [[r] for r in refs]))


def test_cider_d_is_the_cider_core_with_clipping_and_the_length_penalty():
    preds, refs = _sample_paragraphs()
    # Answers padded with their references' words to within 2 tokens of their lengths, so the length penalty is
    # not ~0, and repeating words, so clipping matters.
    preds = [(p + r)[:len(r) + i % 5 - 2] for i, (p, r) in enumerate(zip(preds, refs))]
    pycoco = _reference_cider(preds, refs)
    cosine, clipped, lengths = _cider_similarities(preds, refs, 4)
    bigrams = np.maximum(lengths - 1, 0)
    penalty = np.exp(-((bigrams[:len(preds)] - bigrams[len(preds):]) ** 2) / (2 * 6.0 ** 2))
    _assert_close(((clipped * penalty).mean(axis=0) * 10).tolist(), pycoco)
    assert min(pycoco) > 0.1  # a real comparison, not zeros against zeros
    assert cosine.mean(axis=0).tolist() == cider(preds, refs)
    for one in (clipped, cosine * penalty):  # each switch alone is neither metric
        assert max(abs(a - b) for a, b in zip((one.mean(axis=0) * 10).tolist(), pycoco)) > 1e-3


def test_one_pass_gives_both_variants_exactly():
    for preds, refs in (_pairs(12, 300), _sample_paragraphs()):
        assert cider_and_cider_d(preds, refs) == (cider(preds, refs), cider_d(preds, refs))
        assert cider_and_cider_d(preds, refs, n=2, sigma=3.0) == (cider(preds, refs, n=2),
                                                                  cider_d(preds, refs, n=2, sigma=3.0))


def test_ngram_groups_equal_counting_with_tuples():
    # Every k-gram inside a text, counted per text, ordered by the k-gram's tokens numbered by first occurrence
    # (then by text), with dense ids: what the one pass over the n-grams must produce, spelled out with dicts.
    rng = np.random.default_rng(0)
    texts = [list(rng.integers(0, 9, rng.integers(0, 12))) for _ in range(40)] + [[5, 5, 5, 5, 5], [], [3]]
    ids = np.array([t for tokens in texts for t in tokens], dtype=np.intc) * 7 + 3  # any numbering will do
    first = {t: i for i, t in enumerate(dict.fromkeys(ids.tolist()))}
    rank, vocabulary = _first_occurrence_ranks([ids[:30], ids[30:]], chunk=7)  # across columns and chunks
    assert vocabulary == len(first) and all(rank[t] == r for t, r in first.items())
    lengths = np.array([len(t) for t in texts])
    both = zip(_ngram_groups(rank[ids], lengths, 4, vocabulary), _ngram_groups(ids, lengths, 4))  # numbered here
    for k, (ranked, (gram, text, tf, width, df)) in enumerate(both, 1):
        assert df is None and all(np.array_equal(a, b) for a, b in zip(ranked[:3], (gram, text, tf)))
        counts = {}
        for i, tokens in enumerate(texts):
            local = [first[t * 7 + 3] for t in tokens]
            for j in range(len(local) - k + 1):
                key = (tuple(local[j:j + k]), i)
                counts[key] = counts.get(key, 0) + 1
        expected = sorted(counts)
        assert [i for _, i in expected] == text.tolist() and [counts[e] for e in expected] == tf.tolist()
        grams = [g for g, _ in expected]
        assert all((a < b) == (x < y) and (a == b) == (x == y)
                   for (a, x), (b, y) in zip(zip(gram.tolist(), grams), zip(gram.tolist()[1:], grams[1:])))
        assert width > gram.max()


def test_cider_in_blocks_equals_one_block_to_the_last_bit():
    # Blocks of a few items count the references' document frequencies block by block, then score each block:
    # every value must be the very float of the one-block pass (each text sums its k-grams in the same order).
    rng = np.random.default_rng(2)
    words = [f"w{i}" for i in range(30)]
    preds = [[words[j] for j in rng.integers(0, 30, rng.integers(0, 15))] for _ in range(61)]
    refs = [[words[j] for j in rng.integers(0, 12, rng.integers(0, 9))] for _ in range(61)]
    refs[5], preds[6] = [], ["w29"] * 4  # an empty reference; a prediction of words no reference holds
    whole = _cider_similarities(preds, refs, 4, block=len(preds))
    assert whole[0].max() > 0.3 and whole[1].max() > 0.3  # real overlaps, not zeros against zeros
    for block in (1, 2, 5, 60):
        for one, blocked in zip(whole, _cider_similarities(preds, refs, 4, block=block)):
            assert one.tobytes() == blocked.tobytes()


def test_cider_in_blocks_when_no_reference_has_an_order_a_prediction_has():
    # one-word references have no 2-, 3- or 4-grams at all: a block's prediction k-grams find nothing in an empty
    # table (this raised IndexError on the blocked path, which runs beyond _CIDER_BLOCK_ITEMS items)
    preds, refs = [["a", "b", "c", "d"], ["a"], ["b", "a"]], [["a"], ["b"], ["a"]]
    whole = _cider_similarities(preds, refs, 4, block=len(preds))
    assert whole[0].max() > 0  # the unigram 'a' / 'b' overlaps count
    for block in (1, 2):
        for one, blocked in zip(whole, _cider_similarities(preds, refs, 4, block=block)):
            assert one.tobytes() == blocked.tobytes()



def test_merged_keys_are_numpy_unique_with_inverse():
    # the references' per-block distinct k-gram keys merge into one sorted table: the same keys and indices as
    # np.unique(..., return_inverse=True), the indices in the narrower type asked for
    rng = np.random.default_rng(3)
    parts = [np.unique(rng.integers(-5, 4000, rng.integers(0, 900))) for _ in range(7)] + [np.empty(0, np.int64)]
    keys, inverse = _merged_keys(parts, np.int32)
    expected_keys, expected_inverse = np.unique(np.concatenate(parts), return_inverse=True)
    assert keys.tolist() == expected_keys.tolist() and inverse.tolist() == expected_inverse.tolist()
    assert inverse.dtype == np.int32
    assert [a.tolist() for a in _merged_keys([], np.int32)] == [[], []]


def test_renumber_maps_places_in_chunks_and_keeps_minus_one():
    index = np.array([-1, 0, 3, -1, 2, 1, 0], dtype=np.int32)
    _renumber(index, np.array([50, 60, 70, 80]), chunk=3)
    assert index.tolist() == [-1, 50, 80, -1, 70, 60, 50] and index.dtype == np.int32

def test_sorted_changes_in_chunks_equal_a_sorted_copy():
    rng = np.random.default_rng(1)
    for size in (0, 1, 5, 3000):
        values = rng.integers(0, 20, size)
        order = np.argsort(values, kind="stable")
        ordered = values[order]
        expected = np.r_[True, ordered[1:] != ordered[:-1]][:size]
        for chunk in (1, 2, 7, 1 << 20):
            assert np.array_equal(_sorted_changes(values, order, chunk), expected)


def test_stable_sort_equals_a_stable_argsort():
    # Packed (value, position) keys where they fit in an int64, a stable argsort where they do not.
    rng = np.random.default_rng(2)
    for values in (rng.integers(0, 30, 5000), rng.integers(0, 2 ** 62, 50) // 2 ** 55 * 2 ** 55, np.array([4]),
                   np.empty(0, dtype=np.int64)):
        order, changes = _stable_sort(values, np.int32)
        expected = np.argsort(values, kind="stable")
        assert np.array_equal(order, expected) and order.dtype == np.int32
        assert np.array_equal(changes, _sorted_changes(values, expected))


def test_cider_edge_cases():
    other = [["上海", "的", "银行"], ["法院", "认为"]]
    text = ["北京", "是", "中国", "的", "首都"]
    # A copy of its reference scores 1 among other references; a single-item corpus has every idf at 0.
    assert cider([text, *other], [text, *other[::-1]])[0] == pytest.approx(1.0)
    assert cider([text], [text]) == [0.0]
    assert cider([[], ["北京"]], [text, ["北京", "首都"]])[0] == 0.0


def test_reference_digest_names_the_tokens():
    refs = [["北京", "首都"], ["上海"]]
    assert reference_digest(refs) == reference_digest([list(r) for r in refs])
    assert len(reference_digest(refs)) == 12
    assert reference_digest(refs) != reference_digest([["北京首都"], ["上海"]])
    assert reference_digest(refs) != reference_digest(refs[::-1])
    # Token lists kept as ids give the same digest as the same lists of strings (the signature must not move).
    assert reference_digest(TokenLists.from_lists(refs + [[]])) == reference_digest(refs + [[]])
