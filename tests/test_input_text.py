"""The helpers every error message and every input check share: quoting a value, finding a lone surrogate,
length caps, listing all problems at once."""
import pytest

from chimdqa_eval.schema import (InputError, lone_surrogate, raise_problems, shown, surrogate_problem, too_long,
                                 where)


@pytest.mark.parametrize("value, quoted, bare", [
    ("fin-001", "'fin-001'", "fin-001"),
    ("a\nb", "'a\\nb'", "a\\nb"),
    ("\x1b[31mred", "'\\x1b[31mred'", "\\x1b[31mred"),
    ("x\u202ey", "'x\\u202ey'", "x\\u202ey"),          # a bidi override would reorder the rest of the line
    ("\ud800", "'\\ud800'", "\\ud800"),
    ("中文 id", "'中文 id'", "中文 id"),
    (7, "7", "7"),
    (None, "None", "None"),
])
def test_shown_escapes_what_a_terminal_would_act_on(value, quoted, bare):
    assert shown(value) == quoted
    assert shown(value, quoted=False) == bare


def test_shown_cuts_long_values_and_counts_the_rest():
    assert shown("x" * 100, 10) == "'xxxxxxxxxx'... (90 more characters)"
    assert shown(list(range(50)), 8, quoted=False) == "[0, 1, 2... (182 more characters)"


def test_where_escapes_file_and_id():
    assert where("q.jsonl", 3, "a\r\nb") == "q.jsonl line 3 (id a\\r\\nb)"
    assert where(index=2) == "item 2"


def test_lone_surrogate_paths():
    assert lone_surrogate({"id": "ok", "prediction": "fine"}) is None
    assert lone_surrogate({"a": [{"b": ["ok", "x\udfff"]}]}) == "a[0].b[1] (character 2: '\\udfff')"
    assert lone_surrogate({"k\ud800": 1}) == "a field name (character 2: '\\ud800')"
    assert lone_surrogate("\U0001f600 paired surrogates are fine") is None
    assert surrogate_problem(["\ud83d"]).startswith("[0] (character 1: '\\ud83d') holds a lone UTF-16 surrogate")


def test_too_long():
    assert too_long("'model'", "m" * 200, 200) is None
    assert too_long("'model'", "m" * 1234, 200) == ("'model' is 1,234 characters long; at most 200 are allowed "
                                                    f"(starts {shown('m' * 40)}... (1194 more characters))")


def test_raise_problems_lists_all_and_counts_the_rest():
    with pytest.raises(InputError) as err:
        raise_problems([f"p{i}" for i in range(30)], "f.jsonl: invalid")
    lines = str(err.value).splitlines()
    assert lines[0] == "f.jsonl: invalid: 30 problems" and lines[1:3] == ["  p0", "  p1"]
    assert lines[-1] == "  ... and 5 more" and len(lines) == 1 + 25 + 1
