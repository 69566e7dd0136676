"""The one tokenizer of the lexical metrics, and its reference cache."""
import pytest

from chimdqa_eval import text
from chimdqa_eval.schema import InputError
from chimdqa_eval.signature import package_version
from chimdqa_eval.text import tokenize, tokenize_references, tokenizer_signature


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


def test_signature_names_tokenizer_and_jieba_version():
    assert package_version("jieba") in tokenizer_signature("jieba")
    assert tokenizer_signature("char") == "char"


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
    monkeypatch.setattr(text, "tokenize", lambda *a, **k: pytest.fail("tokenized a cached reference"))
    assert tokenize_references(refs) == first


def test_reference_cache_follows_the_jieba_version(fresh_cache, monkeypatch):
    refs = ["教育政策的调整影响了学生。"]
    tokenize_references(refs)
    calls = []
    real_tokenize = text.tokenize
    monkeypatch.setattr(text, "_memory_cache", {})
    monkeypatch.setattr(text, "package_version", lambda name: "99.0")
    monkeypatch.setattr(text, "tokenize", lambda t, name: calls.append(t) or real_tokenize(t, name))
    assert tokenize_references(refs) == [real_tokenize(refs[0], "jieba")]
    assert calls == refs


def test_char_references_are_not_cached(fresh_cache):
    assert tokenize_references(["北 京"], "char") == [["北", "京"]]
    assert not list(fresh_cache.joinpath("tokens").glob("*.sqlite"))


def test_tokenize_many_in_worker_processes_equals_one_by_one(monkeypatch):
    texts = ["经济增长带动了上海的股票市场。", "", "法院认为 患者的医疗费用应由公司承担。", "GDP增长5.2%"] * 5
    monkeypatch.setattr(text, "_PARALLEL_MIN_CHARS", 0)
    monkeypatch.setattr(text, "_cpus", lambda: 2)
    assert text.tokenize_many(texts) == [tokenize(t) for t in texts]
    assert text.tokenize_many(texts, "char") == [tokenize(t, "char") for t in texts]
