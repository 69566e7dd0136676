import pytest

from chimdqa_eval.schema import (InputError, canonical_domain, canonical_question_type, category_of, check_answer_pairs,
                                 check_breakdowns, check_labels, check_same_length, check_texts, where)
from chimdqa_eval.signature import make_signature, package_version, parse_signature


def test_chinese_type_names_are_aliases():
    assert canonical_question_type("计算") == "computational"
    assert canonical_question_type(" Summarization ") == "summarization"
    assert category_of(canonical_question_type("比较")) == "factual"
    assert category_of(canonical_question_type("生成")) == "open_ended"


def test_unknown_type_and_domain_name_the_location():
    with pytest.raises(InputError, match=r"qa.jsonl line 3 \(id x-1\): unknown question type 'guess'"):
        canonical_question_type("guess", where("qa.jsonl", 3, "x-1"))
    with pytest.raises(InputError, match=r"domains\[2\]: unknown domain 'sports'"):
        check_labels("domains", ["law", "news", "sports"], (), canonical_domain)


def test_check_texts_names_the_bad_index():
    assert check_texts("predictions", ("a", "")) == ["a", ""]
    with pytest.raises(InputError, match=r"predictions\[1\]: expected a string, got NoneType"):
        check_texts("predictions", ["a", None])
    with pytest.raises(InputError, match=r"predictions\[0\]: expected a string, got int"):
        check_texts("predictions", [3])
    with pytest.raises(InputError, match=r"references\[1\]: empty string"):
        check_texts("references", ["a", "  "], allow_empty=False)
    with pytest.raises(InputError, match="expected a list of strings"):
        check_texts("predictions", "a single string")


def test_check_same_length():
    assert check_same_length(predictions=[1, 2], references=[3, 4], questions=None) == 2
    with pytest.raises(InputError, match="predictions=2, references=3"):
        check_same_length(predictions=[1, 2], references=[3, 4, 5])
    with pytest.raises(InputError, match="empty input"):
        check_same_length(predictions=[], references=[])


def test_signature_round_trip_and_versions():
    sig = make_signature({"judge": "rule", "prompt": "none"}, packages=("numpy",))
    fields = parse_signature(sig)
    assert list(fields)[:3] == ["judge", "prompt", "chimdqa_eval"]
    assert fields["numpy"] == package_version("numpy") != "none"
    assert package_version("surely-not-installed-package") == "none"
    with pytest.raises(ValueError):
        make_signature({"judge": "a|b"})


def test_breakdown_columns_are_canonical_lists_and_bad_ones_are_named():
    assert check_breakdowns(domains=("Finance", "law"), question_types=["计算", "summarization"], levels=None) == {
        "domains": ["finance", "law"], "question_types": ["computational", "summarization"]}
    with pytest.raises(InputError, match="domains: expected a list with one label per item, got a string"):
        check_breakdowns(domains="finance")
    with pytest.raises(InputError, match=r"levels\[1\]: unknown value 'L3'"):
        check_breakdowns(levels=["L1", "L3"])
    with pytest.raises(InputError, match=r"categories\[0\]: unknown value 'open'"):
        check_breakdowns(categories=["open"])


def test_answer_pairs_allow_empty_predictions_only():
    assert check_answer_pairs(("", "b"), ["a", "b"]) == (["", "b"], ["a", "b"])
    with pytest.raises(InputError, match=r"references\[0\]: empty string"):
        check_answer_pairs(["a"], [" "])
    with pytest.raises(InputError, match="predictions=1, references=2"):
        check_answer_pairs(["a"], ["a", "b"])


def test_schema_problems_word_each_rule_and_name_each_field():
    """schema_problems turns jsonschema's errors into this project's messages, one per field, named by path."""
    import jsonschema

    from chimdqa_eval.schema import schema_problems

    schema = {"type": "object", "required": ["a", "gone"], "additionalProperties": False,
              "properties": {"a": {"type": "array", "items": {"type": "object", "properties": {
                  "n": {"type": ["integer", "null"], "minimum": 0},
                  "p": {"type": "number", "minimum": 0, "maximum": 1},
                  "s": {"type": "string", "minLength": 1, "maxLength": 3},
                  "e": {"enum": ["x", "y"]},
                  "u": {"type": "string", "pattern": "^https://", "title": "an https:// address"},
                  "k": {"type": "object", "propertyNames": {"title": "family", "enum": ["f"]}}}}},
                  "gone": {}}}
    doc = {"a": [{"n": -1, "p": 2, "s": "", "e": "z", "u": "ftp://", "k": {"g": 1}},
                 {"n": 1.5, "s": "long", "k": []}], "extra": 1}
    assert sorted(schema_problems(jsonschema.Draft202012Validator(schema).iter_errors(doc))) == sorted([
        "extra: unknown field; expected a, gone",
        "a[0].n must be at least 0, got -1",
        "a[0].p must be between 0 and 1, got 2",
        "a[0].s must be a non-empty string, got str ''",
        "a[0].e must be one of x, y, got str 'z'",
        "a[0].u must be an https:// address, got 'ftp://'",
        "a[0].k: unknown family 'g'; expected one of f",
        "a[1].n must be an integer or null, got float 1.5",
        "a[1].s is 4 characters long; at most 3 are allowed (starts 'long')",
        "a[1].k must be an object, got list []",
        "gone missing",
    ])
