"""GenerateConfig: the typed settings of a generation run, built from the command's flags or from Python."""
import dataclasses

import pytest

from chimdqa_eval import cli
from chimdqa_eval.commands.generate import config_of
from chimdqa_eval.generate.config import GenerateConfig
from chimdqa_eval.schema import InputError


def parsed(*argv):
    return cli.build_parser(["generate"]).parse_args(["generate", "--mode", "long", "--out", "p.jsonl", *argv])


def test_the_flags_defaults_are_the_configs_defaults():
    from_flags = config_of(parsed("--model", "m"))
    assert from_flags == GenerateConfig(model="m")
    # every field is a flag of the command (no setting reachable from Python only, or the other way round)
    flags = vars(parsed("--model", "m"))
    assert {f.name for f in dataclasses.fields(GenerateConfig)} <= set(flags)


def test_flags_become_typed_values():
    config = config_of(parsed("--model", "m", "--api-base", "http://a/v1", "http://b/v1", "--top-k", "3",
                              "--data-files", "x.jsonl", "--truncation", "head"))
    assert config.api_base == ("http://a/v1", "http://b/v1") and config.data_files == ("x.jsonl",)
    assert config.top_k == 3 and config.truncation == "head"
    assert GenerateConfig(model="m", api_base="http://a/v1").api_base == ("http://a/v1",)


@pytest.mark.parametrize("changes, message", [
    ({"max_tokens": 0}, "--max-tokens: expected at least 1, got 0"),
    ({"truncation": "middle-out"}, "--truncation middle-out: expected one of"),
    ({"backend": "transformers", "context_tokenizer": "tok"}, "--context-tokenizer tok: the transformers backend"),
    ({"logprobs": True, "ask_confidence": True}, "--logprobs with --ask-confidence"),
])
def test_a_value_no_run_could_use_is_refused_by_its_flag(changes, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        GenerateConfig(model="m", **changes)
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        GenerateConfig(model="m").replace(**changes)
