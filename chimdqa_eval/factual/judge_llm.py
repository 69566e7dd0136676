"""The LLM judge: an OpenAI-compatible chat model grades each answer with a grader template.

A template is a YAML file (the built-in one is templates/zh-judge-1.yaml, our own Chinese grader prompt):
`version`, optional `system`, `user` (a str.format text with {prediction}, {reference} and optionally
{question}), `verdict_regex` (one capture group, matched line by line) and `verdicts` (captured text -> CO / IN /
NA), searched in the reply after any <think> block. A reply with no match, or with matches that map to different
grades, is unparseable: asked again (ChatClient.parse_retries) and, if still unparseable or the request failed,
the item is graded "UNGRADED" with its reason — never turned into NA. Cached verdicts are keyed by the template's text as well as its version;
scores carry the version and the file's sha256 in their signature, so a run graded with another team's
protocol says so.
"""
from __future__ import annotations

import hashlib
import re
from contextlib import nullcontext
from dataclasses import dataclass
from importlib import resources

from chimdqa_eval.factual.scores import GRADES, UNGRADED
from chimdqa_eval.llm import ChatClient, ChatRequest, prompt_key, without_reasoning
from chimdqa_eval.schema import InputError, format_fields, read_yaml_mapping

DEFAULT_TEMPLATE = "zh-judge-1.yaml"
TEMPLATE_KEYS = ("version", "system", "user", "verdict_regex", "verdicts")
USER_FIELDS = {"question", "reference", "prediction"}


@dataclass(frozen=True)
class JudgeTemplate:
    version: str
    system: str | None
    user: str
    verdict_regex: re.Pattern
    verdicts: dict          # captured text -> CO | IN | NA
    sha256: str             # of the template file's bytes
    source: str

    def request(self, prediction: str, reference: str, question: str) -> ChatRequest:
        user = self.user.format(question=question or "（未提供）", reference=reference, prediction=prediction)
        messages = ([{"role": "system", "content": self.system}] if self.system else []) + \
            [{"role": "user", "content": user}]
        return ChatRequest(tuple(messages), prompt_key(self.version, self.system or "", self.user, question,
                                                       reference, prediction))

    def parse(self, reply: str) -> str:
        """The grade of a reply; ValueError when no line matches or the matches disagree. A reasoning model's
        <think> block is not searched: its drafts are not the verdict."""
        found = self.verdict_regex.findall(without_reasoning(reply))
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

    @property
    def signature_fields(self) -> dict:
        return {"prompt": self.version.replace("|", "/"), "prompt_sha": self.sha256[:12]}


def load_template(path=None) -> JudgeTemplate:
    """The grader template at `path` (None: the built-in one); InputError naming the file and key otherwise."""
    built_in = resources.files("chimdqa_eval.factual").joinpath("templates", DEFAULT_TEMPLATE)
    name = f"built-in {DEFAULT_TEMPLATE}" if path is None else str(path)
    with resources.as_file(built_in) if path is None else nullcontext(path) as file:
        doc, data = read_yaml_mapping(file, name, expected=f"a mapping with {', '.join(TEMPLATE_KEYS)}")
    unknown = sorted(set(doc) - set(TEMPLATE_KEYS), key=str)
    if unknown:
        raise InputError(f"{name}: unknown key(s) {', '.join(map(str, unknown))}; expected {', '.join(TEMPLATE_KEYS)}")
    for key in ("version", "user", "verdict_regex", "verdicts"):
        if not doc.get(key):
            raise InputError(f"{name}: '{key}' is missing or empty")
    for key in ("version", "user", "verdict_regex") + (("system",) if doc.get("system") is not None else ()):
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
    return JudgeTemplate(str(doc["version"]), doc.get("system"), doc["user"], regex,
                         {str(k).strip(): v for k, v in verdicts.items()}, hashlib.sha256(data).hexdigest(), name)


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
