"""The vocabulary of ChiMDQA (domains, question types, levels) and the checks every input goes through.

Every bad input in the project raises `InputError`, whose message names where the problem is (file, line,
record id or list index) and what is wrong, so a user can fix the record without guessing.
"""
from __future__ import annotations

import datetime
import functools
import math
import string
import sys
from pathlib import Path

DOMAINS = ("academic", "education", "finance", "law", "medical", "news")
# the loader's QA configs: every domain together, one domain, or Chinese SimpleQA from its own jsonl
SIMPLEQA_CONFIG = "chinese_simpleqa"
CONFIGS = ("all", *DOMAINS, SIMPLEQA_CONFIG)
FACTUAL_TYPES = ("retrieval", "filtering", "statistical", "computational", "comparison")
OPEN_TYPES = ("inference", "expansion", "summarization", "suggestion", "generation")
QUESTION_TYPES = FACTUAL_TYPES + OPEN_TYPES
CATEGORIES = ("factual", "open_ended")
LEVELS = ("L1", "L2")
# Split name -> the question types it holds, for the loader and for `chimdqa evaluate --split`; the ten type
# splits partition `test`.
QA_SPLITS = {**{t: (t,) for t in QUESTION_TYPES},
             "factual": FACTUAL_TYPES, "open_ended": OPEN_TYPES, "test": QUESTION_TYPES}

# Release files may name question types in Chinese, as the paper does.
TYPE_ALIASES = {
    "检索": "retrieval", "筛选": "filtering", "统计": "statistical", "计算": "computational", "比较": "comparison",
    "推理": "inference", "扩展": "expansion", "总结": "summarization", "建议": "suggestion", "生成": "generation",
}


class InputError(ValueError):
    """Bad input from a user: the message says where (file, line, id or index) and what is wrong."""


def where(file=None, line=None, record_id=None, index=None) -> str:
    """A short location such as ``qa.jsonl line 12 (id fin-003)`` for error messages."""
    parts = []
    if file is not None:
        parts.append(shown(str(file), 1000, quoted=False))
    if line is not None:
        parts.append(f"line {line}")
    if index is not None:
        parts.append(f"item {index}")
    text = " ".join(parts) or "input"
    if record_id is not None:
        text += f" (id {shown(record_id, quoted=False)})"
    return text


def shown(value, limit: int = 60, *, quoted: bool = True) -> str:
    """`value` as an error message quotes it: control, format and other non-printable characters (a newline, an
    escape sequence, a bidi override, a lone surrogate) escaped as in Python's repr, cut after `limit`
    characters with the rest counted. quoted=False leaves a string's quotes off (ids in locations)."""
    text = value if isinstance(value, str) else repr(value)
    cut = text[:limit]
    more = f"... ({len(text) - limit} more characters)" if len(text) > limit else ""
    if quoted and isinstance(value, str):
        return repr(cut) + more
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in cut) + more


# The longest metadata value accepted, per field: a submission's metadata ends up in tables, plot legends and
# file headers, where a huge value costs minutes and gigabytes (a 200,000-character model name once did).
METADATA_LIMITS = {"model": 200, "date": 10, "url": 2000, "notes": 5000}
ID_LIMIT = 200  # record ids (question and document ids) and other names taken from input files


MAX_LISTED = 25  # problems shown in one error; the rest are counted


def raise_problems(problems: list[str], head: str):
    """One InputError listing every problem under `head` (the first MAX_LISTED, then a count of the rest), so
    whoever fixes the input fixes everything in one round."""
    listed = problems[:MAX_LISTED]
    more = len(problems) - len(listed)
    text = f"{head}: {len(problems)} problem{'s' if len(problems) != 1 else ''}\n  " + "\n  ".join(listed)
    if more:
        text += f"\n  ... and {more} more"
    raise InputError(text)


def described(value) -> str:
    """What was found, as error messages describe it: the type and the value, e.g. ``str '61.2'``."""
    return f"{type(value).__name__} {shown(value, 40)}"


_TYPE_WORDS = {"string": "a string", "number": "a finite number", "integer": "an integer",
               "boolean": "true or false", "object": "an object", "array": "a list"}


def field_name(path) -> str:
    """A field's path as messages name it: ``metrics.factual.F1.ci95[1]`` (keys shown as schema.shown shows ids)."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else ("." if text else "") + shown(str(part), quoted=False)
    return text


def _expected(schema: dict, types) -> str:
    types = [types] if isinstance(types, str) else list(types)
    words = [_TYPE_WORDS.get(t, t) for t in types if t != "null"]
    if "string" in types and schema.get("minLength", 0) >= 1:
        words[words.index("a string")] = "a non-empty string"
    what = schema.get("title") or " or ".join(words)
    return "null" if not what else what + (" or null" if "null" in types else "")


def _schema_messages(error, root: tuple = (), whole: str = "the document") -> list[tuple[str, str]]:
    """[(field, problem)] for one jsonschema.ValidationError, in this project's words; `root` names the document
    (``("generation",)`` words a field as ``generation.top_k``), `whole` the document itself."""
    schema, value, kind, rule = error.schema, error.instance, error.validator, error.validator_value
    field = field_name([*root, *error.absolute_path])
    within = f"{field}." if field else ""
    if len(error.schema_path) > 1 and list(error.schema_path)[-2] == "propertyNames":  # `value` is a key
        noun, key = schema.get("title", "field"), within + shown(value, quoted=False)
        if kind == "maxLength":
            return [(key, too_long(f"{field}: a {noun} name", value, rule))]
        if kind == "enum":
            return [(key, f"{field}: unknown {noun} {shown(value)}; expected one of {', '.join(map(str, rule))}")]
        return [(key, f"{field}: a {noun} name {shown(value)}: {shown(error.message, 200, quoted=False)}")]
    if kind == "required":
        return [(within + name, f"{within}{name} missing") for name in rule if name not in value]
    if kind == "dependentRequired":
        return [(within + name, f"{within}{name} missing (required where {within}{key} is given)")
                for key, needed in rule.items() if key in value for name in needed if name not in value]
    if kind == "additionalProperties" and rule is False:
        known = schema.get("properties", {})
        return [(within + shown(str(key), quoted=False), f"{within}{shown(str(key), quoted=False)}: unknown field; "
                                                         f"expected {', '.join(known) or 'none'}")
                for key in value if key not in known]
    if kind == "type":
        problem = f"must be {_expected(schema, rule)}"
    elif kind == "minLength" and rule == 1:
        problem = "must be a non-empty string"
    elif kind == "maxLength":
        return [(field, too_long(field, value, rule))]
    elif kind in ("minimum", "maximum") and "minimum" in schema and "maximum" in schema:
        return [(field, f"{field} must be between {schema['minimum']} and {schema['maximum']}, got {value}")]
    elif kind == "minimum":
        return [(field, f"{field} must be at least {rule}, got {value}")]
    elif kind == "maximum":
        return [(field, f"{field} must be at most {rule}, got {value}")]
    elif kind == "enum":
        problem = f"must be one of {', '.join(map(str, rule))}"
    elif kind == "const":
        problem = f"must be {rule}"
    elif kind == "pattern":
        return [(field, f"{field} must be {schema.get('title') or 'text matching ' + rule}, got {shown(value)}")]
    elif kind in ("minItems", "maxItems", "minLength") and "title" in schema:
        problem = f"must be {schema['title']}"
    else:
        return [(field, f"{field or whole}: {shown(error.message, 200, quoted=False)}")]
    return [(field, f"{field or whole} {problem}, got {described(value)}")]


def schema_problems(errors, root: tuple = (), whole: str = "the document") -> list[str]:
    """Problems (in the style of raise_problems) from jsonschema ValidationErrors: one per field, the first
    error found for it (where a field breaks two rules, say a type and a range, the first is enough to fix it),
    each naming the field by its path, ``metrics.factual.F1.ci95[1] must be a finite number or null, got str
    'x'``. A schema can word a rule for these messages with a ``title`` (``an http:// or https:// address``, or
    the noun for the keys that ``propertyNames`` checks: ``unknown family 'evil'``)."""
    problems: dict[str, str] = {}
    for error in errors:
        for field, problem in _schema_messages(error, root, whole):
            problems.setdefault(field, problem)
    return list(problems.values())


def too_long(name: str, value: str, limit: int) -> str | None:
    """The problem "<name> is N characters long; at most L are allowed (starts '...')", or None."""
    if len(value) <= limit:
        return None
    return f"{name} is {len(value):,} characters long; at most {limit:,} are allowed (starts {shown(value, 40)})"


def url_problem(name: str, value: str) -> str | None:
    """The problem with a link taken from input (it becomes a link on the Hub and in reports), or None: only
    http(s) addresses, so a ``javascript:`` or ``data:`` link never does."""
    if value.lower().startswith(("http://", "https://")) and value.isprintable() and " " not in value:
        return None
    return f"{name} must be an http:// or https:// address without spaces, got {shown(value)}"


def date_problem(name: str, value: str) -> str | None:
    """The problem with a date taken from input (the Hub's eval results carry it), or None: an ISO date."""
    try:
        datetime.date.fromisoformat(value)
        return None
    except ValueError:
        return f"{name} must be an ISO date such as 2025-01-31, got {shown(value)}"


def lone_surrogate(value, path: str = "") -> str | None:
    """Where the first string in a parsed JSON value (keys included) holds a lone UTF-16 surrogate, such as
    ``prediction`` or ``retrieved_contexts[2]``, or None. JSON's ``"\\ud800"`` escape parses to one, and no
    file can then be written with it (UTF-8 has no encoding for it)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as err:
            return f"{path or 'value'} (character {err.start + 1}: {shown(value[err.start])})"
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            found = lone_surrogate(key, f"a field name in {path}" if path else "a field name") or lone_surrogate(
                item, f"{path}.{key}" if path else str(key))
            if found:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found = lone_surrogate(item, f"{path}[{i}]")
            if found:
                return found
    return None


def surrogate_problem(value, path: str = "") -> str | None:
    """The error text for a lone surrogate in a parsed JSON value (named `path`), or None when there is none."""
    found = lone_surrogate(value, path)
    return None if found is None else (f"{found} holds a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff "
                                       "escape), which is not text; fix the encoding of that value")


def canonical_question_type(value, location: str = "input") -> str:
    """English question-type name for an English or Chinese name; InputError for anything else."""
    if isinstance(value, str):
        name = value.strip()
        name = TYPE_ALIASES.get(name, name.lower())
        if name in QUESTION_TYPES:
            return name
    raise InputError(f"{location}: unknown question type {shown(value)}; expected one of "
                     f"{', '.join(QUESTION_TYPES)} or the Chinese names {' '.join(TYPE_ALIASES)}")


def canonical_domain(value, location: str = "input") -> str:
    if isinstance(value, str) and value.strip().lower() in DOMAINS:
        return value.strip().lower()
    raise InputError(f"{location}: unknown domain {shown(value)}; expected one of {', '.join(DOMAINS)}")


def category_of(question_type: str) -> str:
    """'factual' or 'open_ended' for an English question-type name."""
    return "factual" if question_type in FACTUAL_TYPES else "open_ended"


def check_texts(name: str, values, *, allow_empty: bool = True) -> list[str]:
    """A list of strings, or InputError naming the first bad item (None, not a string, empty)."""
    if values is None or isinstance(values, (str, bytes)):
        raise InputError(f"{name}: expected a list of strings, got {type(values).__name__}")
    values = list(values)
    for i, v in enumerate(values):
        if not isinstance(v, str):
            raise InputError(f"{name}[{i}]: expected a string, got {type(v).__name__} ({shown(v)})")
        if not allow_empty and not v.strip():
            raise InputError(f"{name}[{i}]: empty string")
        if problem := surrogate_problem(v, f"{name}[{i}]"):
            raise InputError(problem)
    return values


def logprobs_problem(logprobs, prediction: str | None = None) -> str | None:
    """Why `logprobs` is not one answer's token log-probabilities, or None. The rule, everywhere logprobs come in:
    a list of finite numbers <= 0 (natural-log probabilities), one per token of the answer; an empty list only
    for an answer without tokens (then it has no perplexity). The text starts with the offending index, if any:
    "[2]: ..." or ": ...", to follow the field's name."""
    if logprobs is None or isinstance(logprobs, (str, bytes, dict)) or not hasattr(logprobs, "__len__"):
        return f": expected a list of numbers (natural-log token probabilities), got {type(logprobs).__name__}"
    if len(logprobs) == 0 and prediction is not None and prediction.strip():
        return ": empty, but the answer has tokens: give one log-probability per token"
    for j, value in enumerate(logprobs):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return f"[{j}]: expected a finite number, got {shown(value)}"
        if value > 0:
            return f"[{j}]: a log-probability cannot be positive, got {value!r}"
    if len(logprobs) and -math.fsum(logprobs) / len(logprobs) > _LARGEST_LOG:
        return (f": mean log-probability {math.fsum(logprobs) / len(logprobs):.6g}, whose perplexity exp(-mean) is "
                "beyond floating point (placeholders such as -9999 for tokens an API did not score?)")
    return None


_LARGEST_LOG = math.log(sys.float_info.max)  # 709.78...: exp() of more overflows


def check_logprobs(logprobs, predictions=None) -> list[list[float]]:
    """Per-item token log-probabilities under logprobs_problem's rule, or InputError naming the first bad one."""
    if logprobs is None or isinstance(logprobs, (str, bytes)):
        raise InputError(f"logprobs: expected a list of lists of numbers, got {type(logprobs).__name__}")
    logprobs = list(logprobs)
    for i, item in enumerate(logprobs):
        problem = logprobs_problem(item, None if predictions is None else predictions[i])
        if problem:
            raise InputError(f"logprobs[{i}]{problem}")
    return [list(item) for item in logprobs]


def check_answer_pairs(predictions, references) -> tuple[list[str], list[str]]:
    """Predictions (strings, empty allowed) and references (non-empty strings) of the same length, or InputError
    naming the first bad item: the check every answer-scoring metric starts with."""
    predictions = check_texts("predictions", predictions)
    references = check_texts("references", references, allow_empty=False)  # a blank reference is a data error
    check_same_length(predictions=predictions, references=references)
    return predictions, references


def check_same_length(**columns) -> int:
    """The common length of the given columns (None ones are ignored), or InputError naming the mismatch."""
    lengths = {k: len(v) for k, v in columns.items() if v is not None}
    if not lengths:
        raise InputError("no input columns given")
    if len(set(lengths.values())) > 1:
        raise InputError("columns differ in length: " + ", ".join(f"{k}={n}" for k, n in lengths.items()))
    n = next(iter(lengths.values()))
    if n == 0:
        raise InputError("empty input: " + ", ".join(lengths) + " have no items")
    return n


def check_labels(name: str, values, allowed, canonical=None) -> list[str]:
    """Validate a breakdown column (domains, levels, ...) item by item; returns canonical values."""
    out = []
    for i, v in enumerate(values):
        if canonical is not None:
            out.append(canonical(v, f"{name}[{i}]"))
        elif v in allowed:
            out.append(v)
        else:
            raise InputError(f"{name}[{i}]: unknown value {shown(v)}; expected one of {', '.join(allowed)}")
    return out


# The breakdown columns every metric accepts: argument -> (column name in results, vocabulary in table order,
# canonicalizer or None).
BREAKDOWNS = {
    "domains": ("domain", DOMAINS, canonical_domain),
    "question_types": ("question_type", QUESTION_TYPES, canonical_question_type),
    "levels": ("level", LEVELS, None),
    "categories": ("category", CATEGORIES, None),
}


# Row order of each breakdown column in tables, plots and breakdowns (labels not listed follow in first-seen order).
LABEL_ORDER = {column: vocabulary for column, vocabulary, _ in BREAKDOWNS.values()}


def breakdown_columns(checked: dict) -> dict:
    """{column: labels} (domain, question_type, ...) from check_breakdowns' {argument: labels}."""
    return {BREAKDOWNS[argument][0]: values for argument, values in checked.items()}


def check_breakdowns(**columns) -> dict:
    """{argument: canonical labels} for the breakdown columns given (domains=, question_types=, levels=,
    categories=; None ones are left out), or InputError naming the first bad item. Lengths are the caller's
    check_same_length."""
    out = {}
    for argument, values in columns.items():
        if values is None:
            continue
        if isinstance(values, (str, bytes)):
            raise InputError(f"{argument}: expected a list with one label per item, got a string")
        _, vocabulary, canonical = BREAKDOWNS[argument]
        out[argument] = check_labels(argument, list(values), vocabulary, canonical)
    return out


MAX_YAML_BYTES = 2**20  # templates and a board's settings are a few KB
MAX_YAML_DEPTH = 64


@functools.cache
def _yaml_loader():
    """yaml's SafeLoader without anchors and aliases and with nesting capped: a few hundred bytes of aliases expand
    to billions of values wherever the document is walked or printed (a billion laughs), and deep nesting runs the
    composer out of stack. Nobody needs either in a template or a board's settings."""
    import yaml

    class PlainLoader(yaml.SafeLoader):
        depth = 0

        def compose_node(self, parent, index):
            event = self.peek_event()
            line = event.start_mark.line + 1
            if event.anchor is not None:  # an alias event's anchor is the name it refers to
                raise _YamlRefused(f"line {line}: YAML anchors and aliases (&name, *name) are not accepted; write "
                                   "the value out each time")
            if self.depth >= MAX_YAML_DEPTH:
                raise _YamlRefused(f"line {line}: YAML nested more than {MAX_YAML_DEPTH} levels deep")
            self.depth += 1
            try:
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

    return PlainLoader


class _YamlRefused(Exception):
    pass


def yaml_document(text: str, label: str):
    """The value of the YAML document `text` (one a user or the toolkit wrote), read by yaml's safe rules without
    anchors, aliases or deep nesting; InputError starting with `label` otherwise."""
    import yaml

    loader = _yaml_loader()(text)
    try:
        return loader.get_single_data()
    except _YamlRefused as err:
        raise InputError(f"{label}: {err}") from None
    except yaml.YAMLError as err:
        raise InputError(f"{label}: not a UTF-8 YAML file ({err})") from None
    finally:
        loader.dispose()


def read_yaml_mapping(path, label: str, *, expected: str = "a mapping", empty: dict | None = None,
                      missing_hint: str = "") -> tuple[dict, bytes]:
    """(the mapping in the YAML file at `path`, the file's bytes) for the files users write (a grader template,
    a prompt template, a board's settings). Every problem is an InputError that starts with `label` (the file,
    or the flag that named it): a missing file (plus `missing_hint`), a folder, a file over MAX_YAML_BYTES, text
    that is not UTF-8 YAML or uses anchors and aliases (yaml_document), YAML that is not a mapping (`expected` says
    what belongs there). An empty file is `empty` when that is given."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{label}: not a file (a folder)")
    try:
        with path.open("rb") as f:
            data = f.read(MAX_YAML_BYTES + 1)
    except FileNotFoundError:
        raise InputError(f"{label}: no such file{missing_hint}") from None
    if len(data) > MAX_YAML_BYTES:
        raise InputError(f"{label}: larger than {MAX_YAML_BYTES:,} bytes, the most a YAML file may hold")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"{label}: not a UTF-8 YAML file ({err})") from None
    doc = yaml_document(text, label)
    if doc is None and empty is not None:
        doc = dict(empty)
    if not isinstance(doc, dict):
        raise InputError(f"{label}: expected {expected}, got {type(doc).__name__}")
    return doc, data


def format_fields(text: str, location: str) -> set[str]:
    """The {field} names a str.format text uses; InputError naming `location` when it is no valid format text or
    a field is more than a plain {name}: a format spec, a conversion, an attribute, an index or a position would
    let a template reach into the values it is given (or fail on them at run time), so none is accepted."""
    try:
        parsed = [(field, spec, conversion) for _, field, spec, conversion in string.Formatter().parse(text)
                  if field is not None]
    except ValueError as err:
        raise InputError(f"{location} is not a valid format text ({err}; write a literal brace as {{{{ or }}}})") \
            from None
    for field, spec, conversion in parsed:
        if spec or conversion or not field.isidentifier():
            written = "{" + field + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
            raise InputError(f"{location} uses the field {written}: only plain {{name}} fields are accepted (no "
                             "format spec, conversion, attribute, index or position; write a literal brace as "
                             "{{ or }})")
    return {field for field, _, _ in parsed}
