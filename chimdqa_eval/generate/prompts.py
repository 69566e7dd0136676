"""Prompt templates of `chimdqa generate`: a versioned YAML file (templates/chimdqa.yaml by default, any file of
the same shape with --prompt PATH) rendered into chat messages, and the parser of the model's reply.

The template's version and the sha256 of its bytes go into the predictions' metadata; requests are cached by
their full content, so editing a template never serves answers to the old text.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from chimdqa_eval.schema import InputError, format_fields, read_yaml_mapping

DEFAULT_TEMPLATE = Path(__file__).with_name("templates") / "chimdqa.yaml"
# key path -> the placeholders that text may use
PLACEHOLDERS = {
    ("system",): set(),
    ("user", "with_context"): {"title", "context", "question", "instruction"},
    ("user", "closed_book"): {"question", "instruction"},
    ("instruction", "factual"): set(),
    ("instruction", "open_ended"): set(),
    ("confidence",): set(),
    ("passage",): {"number", "page", "text"},
}
# key path -> the placeholders that text must use: a user prompt without the question asks nothing
REQUIRED = {("user", "with_context"): {"question"}, ("user", "closed_book"): {"question"}}
# The look-behind starts a match only where a run of marks and spaces starts, and no two adjacent repetitions
# can take the same characters: searching a line costs time linear in its length, whatever a model sends.
_CONFIDENCE = re.compile(r"(?<![*_\s])[*_\s]*置信度[*_\s]*[:：][*_\s]*(\d{1,3}(?:\.\d+)?)(?:\s*%)?[*_\s]*$")


@dataclass(frozen=True)
class Template:
    path: str
    version: str
    sha256: str
    texts: dict        # key path tuple -> text

    def text(self, *key) -> str:
        return self.texts[key]

    def metadata(self) -> dict:
        return {"path": self.path, "version": self.version, "sha256": self.sha256}


def load_template(path=None) -> Template:
    """The template at `path` (default: the bundled one), checked: every text present, only known placeholders,
    each a plain {name}, the question in each user prompt."""
    path = Path(path) if path is not None else DEFAULT_TEMPLATE
    needs = f"a 'version' and the texts {', '.join('.'.join(k) for k in PLACEHOLDERS)}"
    data, raw = read_yaml_mapping(path, f"--prompt {path}", expected=f"a mapping with {needs}")
    if not isinstance(data.get("version"), (str, int, float)):
        raise InputError(f"{path}: a prompt template needs {needs}")
    texts = {}
    for key, allowed in PLACEHOLDERS.items():
        value = data
        for part in key:
            value = value.get(part) if isinstance(value, dict) else None
        name = ".".join(key)
        if not isinstance(value, str) or not value.strip():
            raise InputError(f"{path}: '{name}' must be a non-empty text")
        used = format_fields(value, f"{path}: '{name}'")
        if used - allowed:
            raise InputError(f"{path}: '{name}' uses unknown placeholder(s) {', '.join(sorted(used - allowed))}; "
                             f"allowed: {', '.join(sorted(allowed)) or 'none'}")
        missing = REQUIRED.get(key, set()) - used
        if missing:
            raise InputError(f"{path}: '{name}' must use {', '.join('{' + m + '}' for m in sorted(missing))}: "
                             "without it the model is never asked the question")
        texts[key] = value
    return Template(str(path), str(data["version"]), hashlib.sha256(raw).hexdigest(), texts)


def instruction(template: Template, category: str, ask_confidence: bool) -> str:
    text = template.text("instruction", category)
    return f"{text}\n{template.text('confidence')}" if ask_confidence else text


def render_messages(template: Template, question: str, category: str, *, context: str | None = None,
                    title: str = "", ask_confidence: bool = False) -> list[dict]:
    """The chat messages for one question: with the document or passages as `context`, or closed-book."""
    fields = {"question": question, "instruction": instruction(template, category, ask_confidence)}
    if context is None:
        user = template.text("user", "closed_book").format(**fields)
    else:
        user = template.text("user", "with_context").format(title=title, context=context, **fields)
    return [{"role": "system", "content": template.text("system")}, {"role": "user", "content": user}]


def render_passages(template: Template, chunks) -> str:
    """Retrieved chunks, numbered in rank order, as one context text."""
    return "\n\n".join(template.text("passage").format(number=n, page=c.page, text=c.text)
                       for n, c in enumerate(chunks, 1))


def parse_reply(reply: str, ask_confidence: bool) -> tuple[str, float | None]:
    """(answer, confidence 0-100 or None). With --ask-confidence the last '置信度：N' line is taken off the answer;
    a reply without one (or with a number above 100) keeps its full text and has no confidence."""
    text = reply.strip()
    if not ask_confidence:
        return text, None
    lines = text.split("\n")
    for i in range(len(lines) - 1, -1, -1):
        line = lines[i].strip()
        match = _CONFIDENCE.search(line)
        if match:
            value = float(match.group(1))
            if value > 100:
                return text, None
            head = line[:match.start()].strip()
            answer = "\n".join(lines[:i] + ([head] if head else []) + lines[i + 1:]).strip()
            return answer, value
        if lines[i].strip():
            break  # the confidence must be the last non-empty line
    return text, None


def answer_token_count(ids, decode, answer: str) -> int | None:
    """How many of a reply's tokens `ids` make its answer (parse_reply's answer, which starts the reply): the
    fewest whose decoded text starts with the answer, spaces and case aside (a tokenizer's decoding may space
    or lower-case what it joins; a character cut between two tokens decodes whole only with the second). None
    when not even all of them do."""
    target = "".join(answer.split()).casefold()

    def spells(n: int) -> bool:
        return "".join(decode(ids[:n]).split()).casefold().startswith(target)

    if not spells(len(ids)):
        return None
    low, high = 0, len(ids)
    while low < high:  # more tokens spell more of the reply: the first n that spells the answer
        middle = (low + high) // 2
        if spells(middle):
            high = middle
        else:
            low = middle + 1
    return low
