"""Submission reading and validation: every kind of bad input is reported, all at once, before any scoring."""
import json

import pytest

from chimdqa_eval.schema import InputError
from chimdqa_eval.submission import load_submission, metadata_path_for, read_metadata, read_predictions

QUESTIONS = [{"id": f"q{i}", "domain": "finance", "question_type": "retrieval", "category": "factual",
              "level": "L1", "question": f"问题{i}", "answer": f"答案{i}", "doc_id": "d"} for i in range(1, 5)]


def write(tmp_path, lines, name="preds.jsonl"):
    path = tmp_path / name
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line, ensure_ascii=False)
                              for line in lines) + "\n", encoding="utf-8")
    return path


def full(tmp_path, **extra):
    return write(tmp_path, [{"id": q["id"], "prediction": f"答{q['id']}", **extra} for q in QUESTIONS])


def error_of(fn, *args, **kwargs) -> str:
    with pytest.raises(InputError) as info:
        fn(*args, **kwargs)
    return str(info.value)


def test_valid_submission_joins_in_dataset_order(tmp_path):
    path = write(tmp_path, [{"id": "q3", "prediction": "c"}, {"id": "q1", "prediction": "a"},
                            {"id": "q2", "prediction": ""}, {"id": "q4", "prediction": "d"}])
    sub = load_submission(path, QUESTIONS)
    assert [i["id"] for i in sub.items] == ["q1", "q2", "q3", "q4"]
    assert [i["prediction"] for i in sub.items] == ["a", "", "c", "d"]
    assert sub.items[0]["answer"] == "答案1" and sub.items[0]["line"] == 2
    assert sub.coverage == 1.0 and sub.missing_ids == []
    assert sub.metadata == {"model": "preds", "rag": False}  # no side file: defaults


def test_all_problems_are_listed_in_one_error(tmp_path):
    path = write(tmp_path, [
        {"id": "q1", "prediction": "a"},
        '{"id": "q2", "prediction": "b"',            # line 2: bad JSON
        {"id": "q1", "prediction": "again"},         # line 3: duplicate
        {"id": 4, "prediction": "x"},                # line 4: id not a string
        {"id": "q3", "prediction": None},            # line 5: prediction not a string
        {"id": "zzz", "prediction": "y"},            # line 6: not in the dataset
        {"id": "q4", "answer": "typo"},              # line 7: unknown field, no prediction
        "[1, 2]",                                    # line 8: not an object
    ])
    message = error_of(load_submission, path, QUESTIONS)
    for expected in ("line 2 (id q2): not valid JSON (Expecting ',' delimiter at line 2, column 31)",
                     "line 3 (id q1): duplicate id (first on line 1)",
                     "line 4: 'id' must be a non-empty string", "line 5 (id q3): 'prediction' must be a string",
                     "line 6 (id zzz): id not in the dataset", "line 7 (id q4): unknown field(s) answer",
                     "line 7 (id q4): missing field 'prediction'", "line 8: expected a JSON object"):
        assert expected in message, (expected, message)
    # q2, q3 and q4 have lines, whose own problems are listed: none of them is reported as a missing prediction
    assert "have no prediction" not in message


def test_missing_ids_are_an_error_unless_partial(tmp_path):
    path = write(tmp_path, [{"id": "q1", "prediction": "a"}, {"id": "q4", "prediction": "d"}])
    message = error_of(load_submission, path, QUESTIONS)
    assert "2 of 4 questions have no prediction (coverage 50.0%): q2, q3" in message
    assert "--allow-partial" in message
    sub = load_submission(path, QUESTIONS, allow_partial=True)
    assert [i["id"] for i in sub.items] == ["q1", "q4"]
    assert sub.missing_ids == ["q2", "q3"] and sub.coverage == 0.5


def test_unknown_ids_are_an_error_even_when_partial(tmp_path):
    path = write(tmp_path, [{"id": "q1", "prediction": "a"}, {"id": "nope", "prediction": "b"}])
    assert "line 2 (id nope): id not in the dataset" in error_of(load_submission, path, QUESTIONS,
                                                                  allow_partial=True)


def test_empty_and_missing_files(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n", encoding="utf-8")
    assert "empty predictions file" in error_of(read_predictions, empty)
    assert "no such predictions file" in error_of(read_predictions, tmp_path / "absent.jsonl")


def test_optional_fields_types_and_all_or_none(tmp_path):
    path = write(tmp_path, [
        {"id": "q1", "prediction": "a", "retrieved_contexts": ["c1", "c2"], "logprobs": [-0.5, -1.0]},
        {"id": "q2", "prediction": "b", "retrieved_contexts": "c1", "logprobs": [-0.1]},   # not a list
        {"id": "q3", "prediction": "c", "retrieved_contexts": ["c"], "logprobs": [0.5]},   # positive logprob
        {"id": "q4", "prediction": "d", "retrieved_contexts": [1], "logprobs": []},        # non-str, empty
        {"id": "q5", "prediction": "e"},
    ])
    message = error_of(read_predictions, path)
    assert "line 2 (id q2): 'retrieved_contexts' must be a list of strings" in message
    assert "line 3 (id q3): 'logprobs'[0]: a log-probability cannot be positive, got 0.5" in message
    assert "line 4 (id q4): 'retrieved_contexts' must be a list of strings" in message
    assert "line 4 (id q4): 'logprobs': empty, but the answer has tokens" in message
    assert "'retrieved_contexts' is given on 1 line(s) but missing on 1 (lines 5)" in message


def test_contexts_and_logprobs_reach_the_items(tmp_path):
    path = full(tmp_path, retrieved_contexts=["片段"], logprobs=[-0.25, -0.75])
    sub = load_submission(path, QUESTIONS)
    assert sub.items[2]["retrieved_contexts"] == ["片段"] and sub.items[2]["logprobs"] == [-0.25, -0.75]
    assert sub.metadata["rag"] is True  # inferred from the contexts


def test_metadata_side_file_and_overrides(tmp_path):
    path = full(tmp_path)
    assert metadata_path_for(path).name == "preds.meta.json"
    metadata_path_for(path).write_text(json.dumps({"model": "m1", "date": "2025-02-03", "notes": "n"}),
                                       encoding="utf-8")
    sub = load_submission(path, QUESTIONS, metadata_overrides={"model": "m2"})
    assert sub.metadata == {"model": "m2", "rag": False, "date": "2025-02-03", "notes": "n"}


def test_bad_metadata_lists_every_problem(tmp_path):
    meta = tmp_path / "m.meta.json"
    meta.write_text(json.dumps({"model": 3, "rag": "yes", "date": "03/02/2025", "team": "x"}), encoding="utf-8")
    message = error_of(read_metadata, meta, has_contexts=True)
    for expected in ("unknown field(s) team", "'model' must be a string", "'rag' must be true or false",
                     "'date' must be an ISO date"):
        assert expected in message
    meta.write_text(json.dumps({"model": "m", "rag": False}), encoding="utf-8")
    assert "'rag' is false but the predictions carry retrieved_contexts" in error_of(
        read_metadata, meta, has_contexts=True)
    meta.write_text("{not json", encoding="utf-8")
    assert "not valid JSON" in error_of(read_metadata, meta)


def test_long_lists_are_cut_with_a_count(tmp_path):
    path = write(tmp_path, [{"id": f"x{i}", "prediction": "p"} for i in range(40)])
    message = error_of(load_submission, path, QUESTIONS)
    assert "41 problems" in message  # 40 unknown ids + the missing-coverage line
    assert "... and 16 more" in message


def test_predictions_outside_the_selected_config_are_counted_not_scored(tmp_path):
    path = write(tmp_path, [{"id": "q1", "prediction": "a"}, {"id": "other-domain", "prediction": "b"}])
    sub = load_submission(path, QUESTIONS[:1], outside_ids=frozenset({"other-domain"}))
    assert [i["id"] for i in sub.items] == ["q1"] and sub.n_outside == 1
    assert "(id other-domain): id not in the dataset" in error_of(load_submission, path, QUESTIONS[:1])


def test_byte_order_mark_is_fine_and_bad_encoding_is_reported(tmp_path):
    path = tmp_path / "bom.jsonl"
    path.write_bytes("\ufeff".encode() + b'{"id": "q1", "prediction": "a"}\n' + '{"id": "q2", "prediction": "乙"}\n'
                     .encode("gbk") + b'{"id": "q3", "prediction": "c"}\n')
    message = error_of(read_predictions, path)
    # the id is read off the line's text all the same
    assert "bom.jsonl line 2 (id q2): not UTF-8 text" in message and "line 1" not in message
    path.write_bytes("\ufeff".encode() + b'{"id": "q1", "prediction": "a"}\n')
    assert read_predictions(path) == [{"id": "q1", "prediction": "a", "line": 1}]


def test_metadata_and_prediction_problems_come_together(tmp_path):
    path = write(tmp_path, [{"id": "q1", "prediction": 1}])
    metadata_path_for(path).write_text(json.dumps({"rag": "no"}), encoding="utf-8")
    message = error_of(load_submission, path, QUESTIONS, allow_partial=True)
    assert "'prediction' must be a string" in message and "'rag' must be true or false" in message


def test_json_error_column_is_the_column_on_the_line(tmp_path):
    path = write(tmp_path, ['{"id": "q1", "prediction": "a"', '{"id": "q2", "prediction": "b",}'])
    message = error_of(read_predictions, path)
    # the first line ends without its brace: the error is just past its last character, not "column 1"
    assert "line 1 (id q1): not valid JSON (Expecting ',' delimiter at line 1, column 31)" in message
    assert "line 2 (id q2): not valid JSON (Expecting property name enclosed in double quotes at line 2, column 32)" \
        in message


def test_missing_predictions_are_only_the_ids_no_line_names(tmp_path):
    path = write(tmp_path, [{"id": "q1", "prediction": "fine", "logprobs": [0.5]},  # fine prediction, bad logprobs
                            {"id": "q2", "prediction": "b", "logprobs": [-0.5]}, {"id": "q3", "prediction": "c",
                                                                                  "logprobs": [-0.5]}])
    message = error_of(load_submission, path, QUESTIONS)
    assert "line 1 (id q1): 'logprobs'[0]: a log-probability cannot be positive" in message
    assert "1 of 4 questions have no prediction (coverage 75.0%): q4;" in message


def test_unknown_field_gets_a_suggestion(tmp_path):
    path = write(tmp_path, [{"id": "q1", "predicton": "a"}])
    message = error_of(read_predictions, path)
    assert "line 1 (id q1): unknown field(s) predicton (did you mean prediction?); allowed:" in message
    meta = tmp_path / "m.meta.json"
    meta.write_text(json.dumps({"modle": "m", "team": "x"}), encoding="utf-8")
    assert "unknown field(s) modle (did you mean model?), team; allowed" in error_of(read_metadata, meta)


# JSON's "\ud800" escape parses to a lone surrogate, which no UTF-8 file can hold: caught before any scoring.
SURROGATE = '"a\\ud800b"'


@pytest.mark.parametrize("line, where_", [
    ('{"id": "q1", "prediction": %s}' % SURROGATE, "line 1 (id q1): prediction (character 2: '\\ud800')"),
    ('{"id": %s, "prediction": "x"}' % SURROGATE, "line 1 (id a\\ud800b): id (character 2: '\\ud800')"),
    ('{"id": "q1", "prediction": "x", "retrieved_contexts": ["ok", %s]}' % SURROGATE,
     "line 1 (id q1): retrieved_contexts[1] (character 2: '\\ud800')"),
])
def test_lone_surrogates_are_named_with_line_and_id(tmp_path, line, where_):
    path = write(tmp_path, [line])
    message = error_of(read_predictions, path)
    assert where_ + " holds a lone UTF-16 surrogate" in message, message


def test_lone_surrogate_in_metadata_and_overrides(tmp_path):
    meta = tmp_path / "m.meta.json"
    meta.write_text('{"model": "m", "notes": %s}' % SURROGATE, encoding="utf-8")
    assert "notes (character 2: '\\ud800') holds a lone UTF-16 surrogate" in error_of(read_metadata, meta)
    # a command-line --model with bytes that are not UTF-8 arrives as a surrogate escape
    assert "model (character 1: '\\udcff') holds a lone" in error_of(read_metadata, tmp_path / "none.meta.json",
                                                                      overrides={"model": "\udcff"})


def test_metadata_lengths_are_capped(tmp_path):
    meta = tmp_path / "m.meta.json"
    meta.write_text(json.dumps({"model": "M" * 200_000, "notes": "n" * 5000, "url": "u" * 2001}), encoding="utf-8")
    message = error_of(read_metadata, meta)
    assert "'model' is 200,000 characters long; at most 200 are allowed (starts 'MMMM" in message
    assert "'url' is 2,001 characters long; at most 2,000 are allowed" in message
    assert "'notes'" not in message  # 5,000 is the limit itself
    path = write(tmp_path, [{"id": "q" * 201, "prediction": "a"}])
    assert "'id' is 201 characters long; at most 200 are allowed" in error_of(read_predictions, path)


def test_control_characters_in_ids_and_fields_are_escaped(tmp_path):
    path = write(tmp_path, [{"id": "q1\n\x1b[31mred", "prediction": "a"}, {"id": "q2", "bad\u202efield": 1,
                                                                             "prediction": "b"}])
    message = error_of(load_submission, path, QUESTIONS, allow_partial=True)
    assert "line 1 (id q1\\n\\x1b[31mred): id not in the dataset" in message
    assert "unknown field(s) bad\\u202efield" in message
    assert "\x1b" not in message and "\u202e" not in message and message.count("\n") == message.count("\n  ")


def test_folders_where_files_belong(tmp_path):
    (tmp_path / "preds.jsonl").mkdir()
    assert "is a folder; expected a predictions file" in error_of(read_predictions, tmp_path / "preds.jsonl")
    path = write(tmp_path, [{"id": "q1", "prediction": "a"}], name="p.jsonl")
    metadata_path_for(path).mkdir()
    assert "p.meta.json: is a folder" in error_of(load_submission, path, QUESTIONS, allow_partial=True)


def test_metadata_url_must_be_a_web_address(tmp_path):
    meta = tmp_path / "m.meta.json"
    for url in ("javascript:alert(1)", "data:text/html,<b>x</b>", "https://a b", "https://x\n"):
        meta.write_text(json.dumps({"model": "m", "url": url}), encoding="utf-8")
        assert f"'url' must be an http:// or https:// address without spaces, got {url!r}" in error_of(read_metadata,
                                                                                                       meta)
    meta.write_text(json.dumps({"model": "m", "url": "HTTPS://example.org/model?x=1"}), encoding="utf-8")
    assert read_metadata(meta)["url"] == "HTTPS://example.org/model?x=1"


def test_metadata_file_size_is_capped(tmp_path):
    meta = tmp_path / "m.meta.json"
    meta.write_text(json.dumps({"model": "m", "generation": {"mode": "rag", "backend": "x" * 2**20}}),
                    encoding="utf-8")
    assert "m.meta.json: larger than 1,048,576 bytes, the most a submission metadata file may hold" in \
        error_of(read_metadata, meta)


def test_answers_and_contexts_far_beyond_any_real_one_are_refused(tmp_path):
    """A 20,000-character answer is the most; one more is an error naming the line and id (scoring time grows
    faster than the length, so a 2-million-character answer would hold a run for hours). Contexts likewise."""
    from chimdqa_eval.submission import CONTEXT_LIMIT, CONTEXTS_LIMIT, PREDICTION_LIMIT

    ok = [{"id": q["id"], "prediction": "答" * PREDICTION_LIMIT} for q in QUESTIONS]
    assert len(load_submission(write(tmp_path, ok), QUESTIONS).items) == 4
    long = [{**row, "prediction": row["prediction"] + ("答" if row["id"] == "q2" else "")} for row in ok]
    message = error_of(load_submission, write(tmp_path, long), QUESTIONS)
    assert "line 2 (id q2): 'prediction' has 20,001 characters, more than the 20,000" in message
    contexts = [{"id": q["id"], "prediction": "答", "retrieved_contexts": ["文"] * 2} for q in QUESTIONS]
    contexts[0]["retrieved_contexts"] = ["文"] * (CONTEXTS_LIMIT + 1)
    contexts[2]["retrieved_contexts"] = [{"text": "文" * (CONTEXT_LIMIT + 1), "doc_id": "d", "page": 1}]
    message = error_of(load_submission, write(tmp_path, contexts), QUESTIONS)
    assert f"line 1 (id q1): 'retrieved_contexts' has {CONTEXTS_LIMIT + 1} contexts" in message
    assert f"line 3 (id q3): 'retrieved_contexts' [0] has {CONTEXT_LIMIT + 1:,} characters" in message


def test_an_empty_model_name_or_note_is_refused_before_scoring(tmp_path):
    """results.schema.json takes no empty model name or note, so a run with one could not be written: refused
    with the metadata, before anything is scored."""
    meta = tmp_path / "m.meta.json"
    meta.write_text(json.dumps({"model": "m", "notes": ""}), encoding="utf-8")
    assert "'notes' must be a non-empty string" in error_of(read_metadata, meta)
    assert "'model' must be a non-empty string" in error_of(read_metadata, tmp_path / "none.meta.json",
                                                               overrides={"model": ""})
