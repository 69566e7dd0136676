"""The one tokenizer of the lexical metrics, and its reference cache.

tokenize(text) is jieba's accurate mode computed with rjieba doing the dictionary work: the identity tests compare
it with jieba itself on the repository's own texts, on every short string over the characters where the two
libraries part ways, and (when the team's shared data is there) on over 100,000 Chinese SimpleQA texts."""
import itertools
import json
import logging
import pickle
import re
import subprocess
import sys
from pathlib import Path

import jieba
import pytest
import rjieba
from jieba import finalseg

from chimdqa_eval import text
from chimdqa_eval.schema import InputError
from chimdqa_eval.signature import package_version
from chimdqa_eval.text import tokenize, tokenize_many, tokenize_references, tokenizer_signature
from shared_data import CHINESE_SIMPLEQA

REPO = Path(__file__).resolve().parent.parent
jieba.setLogLevel(logging.WARNING)


def _jieba(sample: str) -> list[str]:
    """What jieba itself gives, as tokenize() keeps it (whitespace dropped)."""
    return " ".join(jieba.lcut(sample)).split()


def _assert_same_as_jieba(texts):
    assert not text._jieba_dictionary_changed()  # the rjieba path, not a fallback to jieba
    differing = [(t, tokenize(t), _jieba(t)) for t in texts if tokenize(t) != _jieba(t)]
    assert not differing, differing[:3]


def test_jieba_accurate_mode():
    # jieba's own README example for accurate mode (精确模式).
    assert tokenize("我来到北京清华大学") == ["我", "来到", "北京", "清华大学"]


def test_whitespace_never_becomes_a_token():
    sample = "经济 增长\t上海\u3000股票\n\n银行 \u00a0 利润  GDP 5.2%"
    for name in ("jieba", "char"):
        tokens = tokenize(sample, name)
        assert tokens and all(t and not any(c.isspace() for c in t) for t in tokens)
        assert " ".join(tokens).split() == tokens
    assert tokenize(" \n\t\u3000") == [] and tokenize("") == []


def test_char_tokenizer_splits_every_character():
    assert tokenize("北京 GDP。", "char") == ["北", "京", "G", "D", "P", "。"]


def test_unknown_tokenizer_is_an_input_error():
    with pytest.raises(InputError, match="tokenizer 'spacy'"):
        tokenize("北京", "spacy")


def test_signature_names_tokenizer_and_both_libraries():
    assert tokenizer_signature("jieba") == (f"jieba-{package_version('jieba')}-accurate"
                                            f"+rjieba-{package_version('rjieba')}")
    assert tokenizer_signature("char") == "char"


# ---- identity with jieba ----------------------------------------------------------------------------------------

def _repo_texts() -> list[str]:
    """The repository's Chinese: every question, answer, prediction and source line of the sample release, every
    judge-validation question, reference, answer and reason, and every fourth held-out answer and reason (all
    of them are 32,640 texts; the SimpleQA test below covers volume)."""
    texts = []
    for path in sorted((REPO / "data" / "sample" / "qa").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            texts += [row["question"], row["answer"]]
    texts += [json.loads(line)["prediction"]
              for line in (REPO / "data" / "sample" / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    for path in sorted((REPO / "data" / "sample" / "sources").glob("*.txt")):
        texts += path.read_text(encoding="utf-8").splitlines()
    fields = {"validation.jsonl": ("question", "reference", "answer", "reason"),
              "simpleqa_heldout.jsonl": ("answer", "reason")}
    for name, keys in fields.items():
        lines = (REPO / "data" / "judge_validation" / name).read_text(encoding="utf-8").splitlines()
        for line in lines[::4] if name == "simpleqa_heldout.jsonl" else lines:
            row = json.loads(line)
            texts += [row[k] for k in keys]
    return texts


def test_same_tokens_as_jieba_on_the_repositorys_texts():
    texts = _repo_texts()
    assert len(texts) > 10_000
    # The texts reach every path: blocks with letters and digits, runs the HMM cuts, runs that are words.
    assert sum(bool(re.search(r"[\u4e00-\u9fd5][a-zA-Z0-9]|[a-zA-Z0-9][\u4e00-\u9fd5]", t)) for t in texts) > 1000
    text._HMM_MEMO.clear()
    _assert_same_as_jieba(texts)
    assert len(text._HMM_MEMO) > 1000


@pytest.mark.slow
@pytest.mark.skipif(not CHINESE_SIMPLEQA.exists(), reason=f"{CHINESE_SIMPLEQA} is absent")
def test_same_tokens_as_jieba_on_100k_chinese_simpleqa_texts():
    """Questions, answers, answers as models phrase them, and every tail of "question，答案是answer。" (the sentence
    the shared workload generator builds): each tail starts jieba's blocks, routes and HMM runs somewhere else."""
    texts = []
    for line in CHINESE_SIMPLEQA.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        question, answer = row["question"], row["answer"]
        sentence = question.rstrip("？?") + "，答案是" + answer + "。"
        texts += [question, answer, f"答案：{answer}", f"我认为是{answer}。", question + answer]
        texts += [sentence[i:] for i in range(len(sentence) - 1)]
    texts = list(dict.fromkeys(texts))
    assert len(texts) >= 100_000
    _assert_same_as_jieba(texts)


def test_same_tokens_as_jieba_on_every_short_string_where_the_libraries_differ():
    # Letters, digits and jieba's in-block punctuation next to Han characters, with dictionary words made of
    # them (C++, c#, AT&T, B超): where jieba-rs's own HMM joins runs jieba cuts (XQ-58, 1.5kg, F.H).
    alphabet = "aC1T5.-+#&%_超中"
    samples = ["年" + "".join(chars) + "了" for size in range(1, 5) for chars in itertools.product(alphabet, repeat=size)]
    assert sum(rjieba.cut(s) != _jieba(s) for s in samples) > 100  # rjieba alone would not do
    _assert_same_as_jieba(samples)


def test_same_tokens_as_jieba_where_rjiebas_hmm_breaks_a_tie_differently():
    # jieba-rs rounds the HMM's emission log-probabilities to 6 decimals: on a run of one repeated character the
    # paths tie and the two libraries pick different ones.
    samples = ["人国国国国了", "他说：哈哈哈哈哈哈。", "的的的的的的", "嗯嗯嗯嗯，好好好好"]
    assert any(rjieba.cut(s) != _jieba(s) for s in samples)
    _assert_same_as_jieba(samples)


def test_same_tokens_as_jieba_at_the_edges():
    # Whitespace of every kind, lone surrogates, characters jieba-rs counts as Han and jieba does not (CJK
    # extension A, U+9FD6 and up, compatibility ideographs), which never reach rjieba inside a block.
    _assert_same_as_jieba(["", " \n\t\u3000", "a\r\nb c", "\ud800中国\udfff", "㐀国家\u9fd6人民", "\uf900中文\U00020000字",
                           "γ射线", "AT&T公司的C++11", "（2023年）第3-5页，增长5.2%。"])


def test_rjieba_cuts_a_whole_text_into_jiebas_blocks():
    # _segment_many hands rjieba a whole text unless it holds a character of text._RJIEBA_WIDER: with any other
    # character (every one of the BMP, a sample of the planes above), rjieba's steps are those of jieba's blocks
    # cut one by one, every other character a step of its own.
    segmenter = text._rjieba()
    chars = [chr(c) for c in [*range(0xD800), *range(0xE000, 0x10000), *range(0x10000, 0x110000, 97)]]
    chars = [c for c in chars if not text._RJIEBA_WIDER.search(c)]
    assert len(chars) > 50_000 and "、" in chars and "\u3000" in chars and "\u9fd5" in chars
    for c in chars:
        sample = f"中国{c}a1{c}{c}人民"
        blocks = []
        for i, part in enumerate(text._JIEBA_BLOCK.split(sample)):
            blocks += segmenter.cut(part, False) if i % 2 else part
        assert segmenter.cut(sample, False) == blocks, repr(c)


def test_hmm_replay_equals_jieba_finalseg():
    runs = ["人国国国国", "哈哈哈哈哈哈哈", "小明硕士毕业于中国科学院计算所", "1.5kg重", "XQ-58A型", "中"]
    # Characters jieba's HMM has no emission for score MIN_FLOAT in every state: their paths tie exactly.
    unknown = [chr(c) for c in range(0x4E00, 0x9FD6) if all(chr(c) not in e for e in finalseg.emit_P.values())]
    runs += ["".join(unknown[i:i + 1 + i % 6]) for i in range(0, 600, 5)]
    runs += ["国" + "".join(unknown[i:i + 1 + i % 4]) + "家了" for i in range(0, 600, 7)]
    joined = "".join(text._JIEBA_BLOCK.findall("".join(_repo_texts()[:3000])))  # runs are of a block's characters
    runs += [joined[i:i + 2 + i % 9] for i in range(0, len(joined) - 12, 7)]
    assert [text._hmm_cut(r) for r in runs] == [tuple(finalseg.cut(r)) for r in runs]
    assert text._hmm_cut_many(set(runs)) == {r: " ".join(finalseg.cut(r)) for r in runs}  # all at once


def test_rjieba_holds_jiebas_dictionary():
    """The premises of the rjieba path, checked on the installed jieba: the same words, none of them made of
    letters and digits only, no zero frequency, and jieba's total exceeding the sum of its words' frequencies
    by text._TOTAL_EXCESS (its dict.txt repeats a line)."""
    frequencies, total = {}, 0
    with jieba.Tokenizer().get_dict_file() as lines:
        for line in lines:
            word, frequency = line.decode("utf-8").split(" ")[:2]
            frequencies[word] = int(frequency)
            total += int(frequency)
    segmenter = rjieba.Jieba()
    assert all(segmenter.has_word(w) for w in frequencies)
    prefixes = {w[:i] for w in frequencies for i in range(1, len(w))} - frequencies.keys()
    assert not any(segmenter.has_word(p) for p in prefixes)
    assert not [w for w in frequencies if re.fullmatch("[a-zA-Z0-9]+", w)]
    assert min(frequencies.values()) > 0
    assert total - sum(frequencies.values()) == text._TOTAL_EXCESS[1]
    assert total == text._default_total()
    assert not text._JIEBA_BLOCK.search(text._TOTAL_EXCESS[0])


def _run_python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    return done.stdout


def test_tokenize_does_not_load_jiebas_dictionary():
    out = _run_python("import jieba; from chimdqa_eval.text import tokenize\n"
                      "print(tokenize('2023年GDP增长5.2%，XQ-58A型无人机试飞。'), jieba.dt.initialized)")
    assert out.split("] ")[1].strip() == "False"


def test_a_changed_jieba_dictionary_is_honoured_by_jieba_itself():
    # Global state: in a fresh process. A word added to jieba, then one deleted (finalseg's forced splits).
    out = _run_python("""
import json, jieba
from chimdqa_eval import text
sample = "我爱北京天安门广场，新词霸天虎来了"
default = text.tokenizer_signature("jieba")
jieba.add_word("霸天虎")
added = text.tokenizer_signature("jieba"), text.tokenize(sample), jieba.lcut(sample)
jieba.del_word("天安门")
deleted = text.tokenizer_signature("jieba"), text.tokenize(sample), jieba.lcut(sample)
text._PARALLEL_MIN_CHARS, text._cpus = 0, lambda: 2
pooled = text.tokenize_many([sample] * 20) == [text.tokenize(sample)] * 20
print(json.dumps([default, added, deleted, pooled], ensure_ascii=False))
""")
    default, (added_signature, added, added_jieba), (deleted_signature, deleted, deleted_jieba), pooled = (
        json.loads(out))
    assert "+rjieba-" in default
    assert added == [t for t in added_jieba if t.strip()] and "霸天虎" in added
    assert deleted == [t for t in deleted_jieba if t.strip()] and "天安门" not in deleted
    assert len({default, added_signature, deleted_signature}) == 3 and "+dict-" in added_signature
    assert pooled


def test_token_lists_share_one_string_per_token():
    first, second = tokenize_many(["经济增长带动了上海的股票市场。", "上海的股票市场"])
    assert first[4] == second[0] == "上海" and first[4] is second[0]


def test_token_lists_are_ids_into_one_vocabulary():
    texts = ["经济增长带动了上海的股票市场。", "", "上海的股票市场"]
    lists = tokenize_many(texts)
    assert len(lists) == 3 and list(lists.offsets) == [0, 8, 8, 11] and lists.ids.itemsize == 4
    assert lists == [tokenize(t) for t in texts] and lists[-1] == lists[2] == ["上海", "的", "股票市场"]
    assert lists.ids[4] == lists.ids[8] and lists.words[lists.ids[8]] == "上海"
    assert tokenize_references(texts) == lists  # the same ids, from the cache's arrays
    assert lists[1:] == [[], ["上海", "的", "股票市场"]] and lists != [["上海"]] * 3
    with pytest.raises(IndexError):
        lists[3]
    assert pickle.loads(pickle.dumps(lists)) == lists  # travels as strings, re-read into this vocabulary


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CHIMDQA_CACHE", str(tmp_path))
    monkeypatch.setattr(text, "_memory_cache", {})
    return tmp_path


def test_reference_cache_hits_on_disk_in_a_new_process(fresh_cache, monkeypatch):
    refs = ["经济增长带动了上海的股票市场。", "法院认为患者的医疗费用应由公司承担。", "经济增长带动了上海的股票市场。"]
    first = tokenize_references(refs)
    assert first == [tokenize(r) for r in refs]
    assert list(fresh_cache.joinpath("tokens").glob("*.sqlite"))
    # A new process has an empty memory cache; the disk must answer without tokenizing again.
    monkeypatch.setattr(text, "_memory_cache", {})
    monkeypatch.setattr(text, "_segment_many", lambda *a, **k: pytest.fail("tokenized a cached reference"))
    assert tokenize_references(refs) == first


def test_reference_cache_follows_the_jieba_version(fresh_cache, monkeypatch):
    refs = ["教育政策的调整影响了学生。"]
    tokenize_references(refs)
    calls = []
    real_segment = text._segment_many
    monkeypatch.setattr(text, "_memory_cache", {})
    monkeypatch.setattr(text, "package_version", lambda name: "99.0")
    monkeypatch.setattr(text, "_segment_many", lambda texts: calls.extend(texts) or real_segment(texts))
    assert tokenize_references(refs) == real_segment(refs)
    assert calls == refs


def test_char_references_are_not_cached(fresh_cache):
    assert tokenize_references(["北 京"], "char") == [["北", "京"]]
    assert not list(fresh_cache.joinpath("tokens").glob("*.sqlite"))


def test_tokenize_many_equals_one_by_one():
    texts = ["经济增长带动了上海的股票市场。", "", "法院认为 患者的医疗费用应由公司承担。", "GDP增长5.2%"] * 5
    assert tokenize_many(texts) == [tokenize(t) for t in texts]
    assert tokenize_many(texts, "char") == [tokenize(t, "char") for t in texts]
