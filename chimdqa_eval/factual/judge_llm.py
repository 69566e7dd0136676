"""The LLM judge: an OpenAI-compatible chat model grades each answer with a grader template.

A template is a YAML file, or the name of one the toolkit ships (templates/<name>.yaml): zh-judge-1 (the default,
our own Chinese grader prompt), chinese-simpleqa-official (Chinese SimpleQA's grader: A / B / C) and
simpleqa-official (SimpleQA's grader: A / B / C), the last two restating the official graders' rules in our own
words. Keys: `version`, optional `system`, `user` (a str.format text with {prediction}, {reference} and optionally
{question}), `verdict_regex` (one capture group, matched line by line), `verdicts` (captured text -> CO / IN /
NA), and optionally `parse` and `repair`.

`parse` says how a reply is read (after any <think> block):
- strict (ours, the default): every match of verdict_regex must map to one grade. A reply with no match, or with
  matches that disagree, is unparseable: it is asked once more with the `repair` instruction appended after the
  model's own reply (a default one when the template has none), and if that reply is unparseable too, or the
  request failed, the item is graded "UNGRADED" with its reason: never turned into NA.
- official (the official graders' rule): the first verdict text found anywhere in the reply decides (for the
  A / B / C templates, the first capital A, B or C, as `re.search(r"(A|B|C)")` reads it), and a reply with none
  counts as NA (their C). Nothing is asked again.

Cached verdicts are keyed by the template's text as well as its version; scores carry the version and the file's
sha256 in their signature (and prompt_parse:official under the official rule), so a run graded with another
team's protocol says so.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import re
from contextlib import nullcontext
from dataclasses import dataclass
from importlib import resources

from chimdqa_eval.grades import GRADES, UNGRADED
from chimdqa_eval.llm import ChatClient, ChatRequest, prompt_key, without_reasoning
from chimdqa_eval.schema import InputError, format_fields, read_yaml_mapping

DEFAULT_TEMPLATE = "zh-judge-1.yaml"
TEMPLATE_KEYS = ("version", "system", "user", "verdict_regex", "verdicts", "parse", "repair")
USER_FIELDS = {"question", "reference", "prediction"}
PARSE_MODES = ("strict", "official")
OFFICIAL_FALLBACK = "NA"  # the grade of a reply with no verdict under the official rule (their C)
# Appended after an unparseable reply when the template names no repair instruction of its own.
DEFAULT_REPAIR = ("你上一条回复没有按说明要求的格式给出结论。请不要解释，只按那个格式重新给出结论。\n"
                  "(Your last reply did not state the verdict in the format the instructions ask for. Do not "
                  "explain; state only the verdict, in exactly that format.)")


@dataclass(frozen=True)
class JudgeTemplate:
    version: str
    system: str | None
    user: str
    verdict_regex: re.Pattern
    verdicts: dict          # captured text -> CO | IN | NA
    sha256: str             # of the template file's bytes
    source: str
    parse_mode: str = "strict"
    repair: str = DEFAULT_REPAIR

    def request(self, prediction: str, reference: str, question: str) -> ChatRequest:
        user = self.user.format(question=question or "（未提供）", reference=reference, prediction=prediction)
        messages = ([{"role": "system", "content": self.system}] if self.system else []) + \
            [{"role": "user", "content": user}]
        # Under the official rule every reply has a grade, so there is nothing to repair.
        return ChatRequest(tuple(messages), prompt_key(self.version, self.system or "", self.user, question,
                                                       reference, prediction),
                           repair=self.repair if self.parse_mode == "strict" else None)

    def parse(self, reply: str) -> str:
        """The grade of a reply under the template's parse mode. Strict: ValueError when no line matches or the
        matches disagree. Official: the first verdict text anywhere decides, none is NA. A reasoning model's
        <think> block is not searched: its drafts are not the verdict."""
        text = without_reasoning(reply)
        if self.parse_mode == "official":
            first = _first_of(tuple(self.verdicts)).search(text)
            return self.verdicts[first.group(0)] if first else OFFICIAL_FALLBACK
        found = self.verdict_regex.findall(text)
        if not found:
            raise ValueError(f"no verdict matching {self.verdict_regex.pattern!r} in {reply[-200:]!r}")
        grades = {self.verdicts.get(text.strip()) for text in found}
        if None in grades:
            unknown = [t for t in found if t.strip() not in self.verdicts]
            raise ValueError(f"verdict {unknown[0]!r} is not one of the template's verdicts "
                             f"{', '.join(self.verdicts)}")
        if len(grades) > 1:
            raise ValueError(f"the reply gives conflicting verdicts {', '.join(found)}")
        return grades.pop()

    def with_parse(self, mode: str) -> "JudgeTemplate":
        """The same template read under another parse mode (the signature then says which)."""
        if mode not in PARSE_MODES:
            raise InputError(f"{self.source}: parse mode {mode!r} is not one of {', '.join(PARSE_MODES)}")
        return self if mode == self.parse_mode else dataclasses.replace(self, parse_mode=mode,
                                                                         source=f"{self.source}:{mode}")

    @property
    def signature_fields(self) -> dict:
        fields = {"prompt": self.version.replace("|", "/"), "prompt_sha": self.sha256[:12]}
        if self.parse_mode != "strict":  # absent: strict, as every signature before parse modes existed
            fields["prompt_parse"] = self.parse_mode
        return fields


@functools.lru_cache(maxsize=32)
def _first_of(texts: tuple) -> re.Pattern:
    """A pattern finding the first of `texts` anywhere (the longer first where one starts another)."""
    return re.compile("|".join(re.escape(t) for t in sorted(texts, key=len, reverse=True)))


def template_names() -> list[str]:
    """The names of the grader templates the toolkit ships (what --judge-prompt accepts besides a file)."""
    folder = resources.files("chimdqa_eval.factual").joinpath("templates")
    return sorted(f.name[:-len(".yaml")] for f in folder.iterdir() if f.name.endswith(".yaml"))


def load_template(spec=None) -> JudgeTemplate:
    """The grader template `spec` names: None (the built-in zh-judge-1), the name of a shipped template
    (template_names(): chinese-simpleqa-official, simpleqa-official, zh-judge-1), optionally with the parse mode
    to read it under ("chinese-simpleqa-official:strict"), a YAML file's path (a name wins over a file of that
    name: write ./NAME for the file), or a JudgeTemplate (returned as it is). InputError naming the file and key
    otherwise."""
    if isinstance(spec, JudgeTemplate):
        return spec
    base, _, mode = str(spec).rpartition(":")
    if spec is not None and base in template_names():
        if mode not in PARSE_MODES:
            raise InputError(f"{spec}: the parse mode after ':' must be one of {', '.join(PARSE_MODES)}")
        return load_template(base).with_parse(mode)
    shipped = DEFAULT_TEMPLATE if spec is None else f"{spec}.yaml" if str(spec) in template_names() else None
    if shipped is not None:
        built_in = resources.files("chimdqa_eval.factual").joinpath("templates", shipped)
        name = f"built-in {shipped}" if spec is None else str(spec)
        with resources.as_file(built_in) as file:
            doc, data = read_yaml_mapping(file, name, expected=f"a mapping with {', '.join(TEMPLATE_KEYS)}")
    else:
        name = str(spec)
        hint = f" (nor the name of a shipped template: {', '.join(template_names())})"
        with nullcontext(spec) as file:
            doc, data = read_yaml_mapping(file, name, expected=f"a mapping with {', '.join(TEMPLATE_KEYS)}",
                                          missing_hint=hint)
    return _template(doc, data, name)


def _template(doc: dict, data: bytes, name: str) -> JudgeTemplate:
    unknown = sorted(set(doc) - set(TEMPLATE_KEYS), key=str)
    if unknown:
        raise InputError(f"{name}: unknown key(s) {', '.join(map(str, unknown))}; expected {', '.join(TEMPLATE_KEYS)}")
    for key in ("version", "user", "verdict_regex", "verdicts"):
        if not doc.get(key):
            raise InputError(f"{name}: '{key}' is missing or empty")
    for key in ("version", "user", "verdict_regex", "system", "parse", "repair"):
        if key in ("version", "user", "verdict_regex") or doc.get(key) is not None:
            if not isinstance(doc[key], str):
                raise InputError(f"{name}: '{key}' must be text, got {type(doc[key]).__name__}")
    fields = format_fields(doc["user"], f"{name}: 'user'")
    if fields - USER_FIELDS or not {"prediction", "reference"} <= fields:
        raise InputError(f"{name}: 'user' must use {{prediction}} and {{reference}} (and may use {{question}}); "
                         f"it uses {', '.join(sorted(fields)) or 'no field'}")
    try:
        regex = re.compile(doc["verdict_regex"], re.MULTILINE)
    except re.error as err:
        raise InputError(f"{name}: 'verdict_regex' does not compile ({err})") from None
    if regex.groups != 1:
        raise InputError(f"{name}: 'verdict_regex' must have exactly one capture group, it has {regex.groups}")
    verdicts = doc["verdicts"]
    if not isinstance(verdicts, dict) or not all(g in GRADES for g in verdicts.values()):
        raise InputError(f"{name}: 'verdicts' must map each captured text to one of {', '.join(GRADES)}")
    for text in verdicts:
        if isinstance(text, bool) or text is None:  # YAML reads yes / no / on / off / ~ unquoted as these
            raise InputError(f"{name}: 'verdicts' key {text} is not text (YAML reads an unquoted yes, no, on, off or "
                             f"~ as {text}): quote it")
    verdicts = {str(k).strip(): v for k, v in verdicts.items()}
    if "" in verdicts:
        raise InputError(f"{name}: 'verdicts' has an empty key: no reply could be read by it")
    parse = doc.get("parse") or "strict"
    if parse not in PARSE_MODES:
        raise InputError(f"{name}: 'parse' must be one of {', '.join(PARSE_MODES)} (strict: a reply without one "
                         f"clear verdict is asked again, then UNGRADED; official: the first verdict found decides, "
                         f"none is NA), got {parse!r}")
    repair = doc.get("repair")
    if repair is not None and not repair.strip():
        raise InputError(f"{name}: 'repair' is empty; leave it out for the default repair instruction")
    return JudgeTemplate(str(doc["version"]), doc.get("system"), doc["user"], regex, verdicts,
                         hashlib.sha256(data).hexdigest(), name, parse, repair or DEFAULT_REPAIR)


def judge_requests(predictions, references, questions, template: JudgeTemplate | None = None) -> list[ChatRequest]:
    """One judge request per item (also what a dry run counts against the cache)."""
    template = template or load_template()
    return [template.request(p, r, q) for p, r, q in zip(predictions, references, questions)]


def grade_answers_llm(predictions, references, questions, client: ChatClient, template: JudgeTemplate | None = None):
    """(grades, errors): one grade per item, "UNGRADED" where the judge gave none; errors = [{index, error}]."""
    template = template or load_template()
    outcomes = client.complete_all(judge_requests(predictions, references, questions, template), template.parse,
                                   desc="chimdqa_factual judge", stage="judge")
    grades = [o.value if o.ok else UNGRADED for o in outcomes]
    errors = [{"index": i, "error": o.error} for i, o in enumerate(outcomes) if not o.ok]
    return grades, errors
