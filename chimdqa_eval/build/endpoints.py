"""The LLMs a build stage talks to (the generator, the screening judges), all through chimdqa_eval.llm's one
client, and the strict JSON reading of their replies."""
from __future__ import annotations

import json
import re
from pathlib import Path

from chimdqa_eval.llm import ChatClient
from chimdqa_eval.schema import InputError

_JUDGE = re.compile(r"^(?P<model>[^@\s]+(?:@[^@\s]+)*?)@(?P<base>https?://\S+)$")
_FENCE = re.compile(r"^```(?:json)?\s*\n(?P<body>.*)\n```$", re.DOTALL)


def add_llm_arguments(parser, *, default_concurrency: int = 8, temperature: float = 0.0) -> None:
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY", metavar="VAR",
                        help="environment variable holding the API key (default: OPENAI_API_KEY)")
    parser.add_argument("--concurrency", type=int, default=default_concurrency, help="requests in flight per model")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per request (default: 120)")
    parser.add_argument("--max-retries", type=int, default=5, help="retries of a failed request (default: 5)")
    parser.add_argument("--temperature", type=float, default=temperature,
                        help=f"sampling temperature (default: {temperature})")


def parse_judge(spec: str, default_base: str | None) -> tuple[str, str]:
    """(model, api_base) from MODEL@URL, or from MODEL alone when a default --api-base is given."""
    found = _JUDGE.match(spec.strip())
    if found:
        return found.group("model"), found.group("base")
    if "@" not in spec and default_base:
        return spec.strip(), default_base
    raise InputError(f"--judges: {spec!r} is not MODEL@URL (e.g. qwen2.5-72b@http://localhost:8000/v1)"
                     + ("" if default_base else " and no --api-base was given for a bare model name"))


def open_client(model: str, api_base: str, args, cache_path: Path) -> ChatClient:
    try:
        return ChatClient(model, api_base, api_key_env=args.api_key_env, cache_path=cache_path,
                          concurrency=args.concurrency, max_retries=args.max_retries, timeout=args.timeout,
                          temperature=args.temperature)
    except ValueError as err:
        raise InputError(str(err)) from None


def model_fields(client) -> dict:
    """model, api (host) and temperature of a client: what a pair's provenance says produced it."""
    return {key.removeprefix("judge_"): value for key, value in client.signature_fields.items()}


def parse_json_object(raw: str) -> dict:
    """The JSON object a reply consists of; one ```json fence around it is tolerated, nothing else (no prose
    before or after). ValueError otherwise, so the client asks again."""
    text = raw.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group("body").strip()
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"reply is not JSON ({err.msg} at column {err.colno}): {raw[:120]!r}") from None
    if not isinstance(value, dict):
        raise ValueError(f"reply is JSON but not an object: {raw[:120]!r}")
    return value
