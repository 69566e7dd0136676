"""What the build stages share about the LLMs they ask — the generator and each screening judge, clients of
chimdqa_eval.llm (the one client: cache, retries, concurrency, usage, --max-llm-calls): parsing MODEL@URL,
probing, usage, the call cap, and the strict JSON reading of their replies. The endpoints themselves are made
from the flags by chimdqa_eval.commands.build (replies cached in WORK/llm-cache.sqlite unless --llm-cache names
another file, so a work folder resumes on its own)."""
from __future__ import annotations

import re

from chimdqa_eval.jsonio import loads
from chimdqa_eval.llm import cap_message
from chimdqa_eval.schema import InputError

_JUDGE = re.compile(r"^(?P<model>\S+?)@(?P<base>https?://\S+)$")


def parse_judge(spec: str, default_bases) -> tuple[str, tuple]:
    """(model, api bases) from MODEL@URL, or from MODEL alone with the --api-base URLs."""
    found = _JUDGE.match(spec.strip())
    if found:
        return found.group("model"), (found.group("base"),)
    if "@" not in spec and default_bases:
        return spec.strip(), tuple(default_bases)
    raise InputError(f"--judges: {spec!r} is not MODEL@URL (e.g. qwen2.5-72b@http://localhost:8000/v1)"
                     + ("" if default_bases else " and no --api-base was given for a bare model name"))


def model_fields(client) -> dict:
    """model, api (scheme://host:port of each base) and temperature of a client: what a pair's provenance says
    produced it."""
    return client.endpoint.signature_fields(prefix="")


def probe_if_needed(client, requests) -> None:
    """Stop at once when an endpoint that has something to answer is down or refuses, not after retries."""
    if client.pending(requests):
        client.probe()


def usage(clients: dict) -> dict:
    return {name: client.usage_report() for name, client in clients.items()}


def check_cap(clients: dict, what: str) -> None:
    """InputError saying how to resume when a client stopped at --max-llm-calls (the stage's results so far
    are written and its answers cached)."""
    for client in clients.values():
        if client.cap_reached:
            raise InputError(cap_message(client, what))


def parse_json_object(raw: str) -> dict:
    """The JSON object a reply consists of; one ```json fence around it is tolerated, nothing else (no prose
    before or after). ValueError otherwise, so the client asks again."""
    text = _unfenced(raw.strip())
    try:
        value = loads(text, "the reply", bom=False)
    except InputError as err:
        raise ValueError(f"reply is not JSON ({str(err).removeprefix('the reply: ')}): {raw[:120]!r}") from None
    if not isinstance(value, dict):
        raise ValueError(f"reply is JSON but not an object: {raw[:120]!r}")
    return value


def _unfenced(text: str) -> str:
    """The body of one ``` (or ```json) fence around the whole text, else the text. String operations, not a
    regex: the regex this replaces took time quadratic in a run of newlines after the opening fence."""
    if text.startswith("```") and text.endswith("\n```"):
        opening, newline, body = text[3:-4].partition("\n")
        if newline and opening.rstrip() in ("", "json"):
            return body.strip()
    return text
