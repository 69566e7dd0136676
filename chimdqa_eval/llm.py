"""The one OpenAI-compatible chat-completions client (vLLM, SGLang, Ollama, hosted APIs) used by every LLM user:
the factual judge, the RAG claim extractor and checker, and the commands that generate answers or questions.

`LLMEndpoint` says where and how to ask (model, one or more API bases, key variable, concurrency per base,
timeout, retries, cache, a cap on requests, optional prices); it is built once, from keyword arguments or from
the shared CLI options (`add_endpoint_arguments` / `endpoint_from_args`), and `endpoint.client()` opens a
`ChatClient`. The client asks many prompts with bounded concurrency per API base (several bases are served
round-robin, the way a deployment with many replicas is used), retries transient failures (timeouts,
connection errors, 429, 5xx, honouring Retry-After) with exponential backoff, re-asks when the reply cannot be
parsed, and keeps every reply (text, token log-probabilities, usage) in an on-disk sqlite cache the moment it
arrives: a re-run asks nothing again and a run killed halfway resumes where it stopped. Failures are reported
per request in `ChatOutcome.error`, never replaced by a default value. It counts requests, cache hits and the
API's token usage per stage (`usage_report()`), never sends more than `max_calls` requests, counts what a run
would still ask (`pending`) and checks that an endpoint answers before a run (`probe`). Only the standard
library talks HTTP, so nothing here is imported unless a user asks for an API.
"""
from __future__ import annotations

import hashlib
import http.client
import json
import os
import queue
import random
import re
import sqlite3
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence
from urllib.parse import urlsplit

from chimdqa_eval.cache import cache_dir
from chimdqa_eval.schema import InputError

# Authentication, permission and unknown-model errors fail every request alike: stop at the first one.
FATAL_STATUSES = (401, 403, 404)
CAP_ERROR = "not asked: the --max-llm-calls cap ({cap}) was reached"
PROBE_TIMEOUT = 10.0  # seconds: an endpoint that cannot list its models or answer one token by then is not up


class ChatError(RuntimeError):
    """The endpoint refused in a way no retry fixes (bad key, no permission, unknown model or URL)."""


class EndpointError(InputError):
    """An LLMEndpoint setting is invalid; `field` names it so the CLI can name its flag instead."""

    def __init__(self, field_name: str, value, problem: str):
        super().__init__(f"{field_name}={value!r}: {problem}")
        self.field, self.value, self.problem = field_name, value, problem


@dataclass(frozen=True)
class LLMEndpoint:
    """Where and how to ask: one model behind one or more OpenAI-compatible API bases (served round-robin,
    `concurrency` requests in flight per base). `max_calls` caps the HTTP requests of one client (one run;
    retries and re-asks count); `prices` are USD per million prompt and completion tokens, to turn the API's
    usage into a cost."""
    model: str
    api_bases: tuple[str, ...]
    api_key_env: str = "OPENAI_API_KEY"
    concurrency: int = 16
    timeout: float = 60.0
    max_retries: int = 5
    temperature: float = 0.0
    max_tokens: int | None = None
    cache_path: str | Path | None = None
    max_calls: int | None = None
    prices: tuple[float, float] | None = None

    def __post_init__(self):
        bases = (self.api_bases,) if isinstance(self.api_bases, str) else tuple(self.api_bases or ())
        object.__setattr__(self, "api_bases", bases)
        if self.prices is not None:
            object.__setattr__(self, "prices", tuple(self.prices))
        if not isinstance(self.model, str) or not self.model.strip():
            raise EndpointError("model", self.model, "expected the model name the endpoint serves")
        if not bases:
            raise EndpointError("api_bases", self.api_bases, "expected at least one OpenAI-compatible API base "
                                "URL, e.g. http://localhost:8000/v1")
        for base in bases:
            parts = urlsplit(base) if isinstance(base, str) else None
            if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
                raise EndpointError("api_bases", base, "expected an http:// or https:// URL such as "
                                    "http://localhost:8000/v1")
        if len(set(bases)) != len(bases):
            raise EndpointError("api_bases", bases, "an API base is listed twice")
        if not isinstance(self.api_key_env, str) or not self.api_key_env:
            raise EndpointError("api_key_env", self.api_key_env, "expected the name of an environment variable")
        _check_number("concurrency", self.concurrency, 1, integer=True, what="parallel requests per API base")
        _check_number("timeout", self.timeout, 0, strict=True, what="seconds")
        _check_number("max_retries", self.max_retries, 0, integer=True, what="retries")
        _check_number("temperature", self.temperature, 0, what="a temperature")
        if self.max_tokens is not None:
            _check_number("max_tokens", self.max_tokens, 1, integer=True, what="tokens")
        if self.max_calls is not None:
            _check_number("max_calls", self.max_calls, 0, integer=True, what="requests")
        if self.prices is not None:
            if len(self.prices) != 2:
                raise EndpointError("prices", self.prices, "expected two prices: prompt and completion tokens")
            for price in self.prices:
                _check_number("prices", price, 0, what="USD per million tokens")

    @property
    def hosts(self) -> str:
        """The API hosts, sorted and comma-joined: what identifies the server in signatures and cache keys (never
        a key or a path)."""
        return ",".join(sorted({urlsplit(base).hostname for base in self.api_bases}))

    def signature_fields(self, prefix: str = "judge_") -> dict:
        """What identifies the model in a score's signature: model, API hosts, temperature."""
        return {f"{prefix}model": self.model, f"{prefix}api": self.hosts, f"{prefix}temperature": self.temperature}

    def client(self, **options) -> "ChatClient":
        """A ChatClient for this endpoint; `options` are the client's tuning knobs (parse_retries, backoff)."""
        return ChatClient(self.model, self.api_bases, api_key_env=self.api_key_env, cache_path=self.cache_path,
                          concurrency=self.concurrency, max_retries=self.max_retries, timeout=self.timeout,
                          temperature=self.temperature, max_tokens=self.max_tokens, max_calls=self.max_calls,
                          prices=self.prices, **options)


def _check_number(name, value, minimum, *, integer=False, strict=False, what=""):
    kind = int if integer else (int, float)
    ok = isinstance(value, kind) and not isinstance(value, bool) and (value > minimum if strict else value >= minimum)
    if not ok:
        bound = f"more than {minimum}" if strict else f"at least {minimum}"
        raise EndpointError(name, value, f"expected {'a whole number' if integer else 'a number'} of {what}, {bound}")


@dataclass(frozen=True)
class ChatRequest:
    messages: tuple   # {"role": ..., "content": ...} dicts
    cache_key: str    # prompt_key(prompt version, prompt text, inputs)
    extra: dict | None = field(default=None, hash=False)  # extra body fields: max_tokens, logprobs, stop...

    def __post_init__(self):
        object.__setattr__(self, "messages", tuple(self.messages))
        if self.extra is not None:
            object.__setattr__(self, "extra", dict(self.extra))

    @property
    def key(self) -> str:
        """The cache key: the prompt's key, and the extra body fields when there are any."""
        if not self.extra:
            return self.cache_key
        extra = json.dumps(self.extra, sort_keys=True, ensure_ascii=False)
        return f"{self.cache_key}|{hashlib.sha256(extra.encode('utf-8')).hexdigest()}"


@dataclass
class ChatOutcome:
    value: object | None   # parse(raw) when ok
    raw: str | None        # the last raw reply text received
    error: str | None      # why there is no value
    cached: bool = False
    logprobs: list[float] | None = None  # per generated token, when the endpoint sent them
    usage: dict | None = None            # the API's usage of the reply (prompt_tokens, completion_tokens...)

    @property
    def ok(self) -> bool:
        return self.error is None


def prompt_key(version: str, *parts: str) -> str:
    """A ChatRequest's cache key: the prompt version and a digest of every input the prompt depends on, the
    prompt's own text included (an edit without a new version must not be served the old prompt's answers)."""
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()
    return f"{version}:{digest}"


_REASONING = re.compile(r"\s*<think>.*?(?:</think>|\Z)", re.DOTALL)


def without_reasoning(text: str) -> str:
    """A reply without the <think>…</think> block a reasoning model may start it with (served without a reasoning
    parser): its drafts are not its answer. A block never closed (the reply was cut off while reasoning) leaves
    nothing; a reply that only closes one (the chat template opened it in the prompt) keeps what follows."""
    if text.lstrip().startswith("<think>"):
        return _REASONING.sub("", text, count=1)
    return text.split("</think>", 1)[1] if "</think>" in text else text


class _Transient(Exception):
    """A failure worth retrying; `wait` is the server's Retry-After in seconds, if it sent one."""

    def __init__(self, message: str, wait: float | None = None):
        super().__init__(message)
        self.wait = wait


class _Rejected(Exception):
    """The endpoint refused this one request (e.g. HTTP 400, prompt too long); asking again would not help."""


class _CapReached(Exception):
    """The client has sent max_calls requests; nothing more is asked."""


class ChatCache:
    """sqlite store of replies keyed by (model, settings: API hosts and generation settings, request key); each
    reply is a JSON record {text, logprobs, usage}. WAL, so readers never block writers."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), timeout=30, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS completions (model TEXT, settings TEXT, key TEXT, record TEXT,"
                         " PRIMARY KEY (model, settings, key))")
        self._db.commit()

    def get(self, model: str, settings: str, key: str) -> dict | None:
        with self._lock:
            row = self._db.execute("SELECT record FROM completions WHERE model=? AND settings=? AND key=?",
                                   (model, settings, key)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, model: str, settings: str, key: str, record: dict) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO completions VALUES (?, ?, ?, ?)",
                             (model, settings, key, json.dumps(record, ensure_ascii=False)))
            self._db.commit()

    def close(self) -> None:
        self._db.close()


def chat_url(api_base: str) -> str:
    """The chat-completions URL for an API base such as http://localhost:8000/v1 (a full URL is kept)."""
    base = api_base.rstrip("/")
    return base if base.endswith("/chat/completions") else base + "/chat/completions"


def _models_url(api_base: str) -> str:
    base = api_base.rstrip("/")
    return (base[:-len("/chat/completions")] if base.endswith("/chat/completions") else base) + "/models"


_STAGE_COUNTS = ("asked", "requests", "cache_hits", "failed", "not_asked", "prompt_tokens", "completion_tokens",
                 "replies_without_usage")


class ChatClient:
    """Ask an OpenAI-compatible endpoint many prompts; see the module docstring for the guarantees.
    `api_base` is one URL or a sequence of URLs (served round-robin, `concurrency` requests per URL)."""

    def __init__(self, model: str, api_base, *, api_key_env: str = "OPENAI_API_KEY", cache_path=None,
                 concurrency: int = 16, max_retries: int = 5, parse_retries: int = 2, timeout: float = 60.0,
                 temperature: float = 0.0, max_tokens: int | None = None, backoff: float = 0.5,
                 max_calls: int | None = None, prices=None):
        self.endpoint = LLMEndpoint(model, api_base, api_key_env=api_key_env, concurrency=concurrency,
                                    timeout=timeout, max_retries=max_retries, temperature=temperature,
                                    max_tokens=max_tokens, cache_path=cache_path, max_calls=max_calls, prices=prices)
        self.model = model
        self.urls = [chat_url(base) for base in self.endpoint.api_bases]
        self.url = self.urls[0]
        self.api_key_env = api_key_env
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.parse_retries = parse_retries
        self.timeout = timeout
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.backoff = backoff
        self.max_calls = max_calls
        self.cache = ChatCache(Path(cache_path) if cache_path else cache_dir("llm") / "chat.sqlite")
        # Whatever the signature says produced an answer (the API hosts too: one model name on two servers can
        # be two models) and the generation settings are part of the cache key.
        self._settings = json.dumps({"api": self.endpoint.hosts, "temperature": temperature,
                                     "max_tokens": max_tokens})
        # One slot per request allowed in flight, bases interleaved: a worker takes the base at the head and puts
        # it back at the tail, so bases are served in turn and a slow base gets fewer requests.
        self._slots: queue.Queue = queue.Queue()
        for _ in range(concurrency):
            for index in range(len(self.urls)):
                self._slots.put(index)
        self._lock = threading.Lock()
        self.calls_sent = 0
        self.sent_per_base = [0] * len(self.urls)
        self._stages: dict[str, dict] = {}

    @property
    def signature_fields(self) -> dict:
        """What identifies the judge in a score's signature (hosts only: no key, no path secrets); every metric
        that asks an LLM adds these fields."""
        return self.endpoint.signature_fields()

    @property
    def cap_reached(self) -> bool:
        """True once a request was left unasked because the client had sent max_calls requests."""
        return any(stage["not_asked"] for stage in self._stages.values())

    def close(self) -> None:
        """Close the cache; the client cannot be used afterwards."""
        self.cache.close()

    def __enter__(self) -> "ChatClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- asking ----------------------------------------------------------------------------------------------

    def pending(self, requests: Sequence[ChatRequest], parse: Callable[[str], object] | None = None) -> int:
        """How many distinct requests are not in the cache (what complete_all would ask); with `parse`, a cached
        reply that parse rejects counts too (complete_all asks it again)."""
        unique = {r.key: r for r in requests}.values()
        if parse is not None:
            return sum(self._from_cache(r, parse) is None for r in unique)
        return sum(self.cache.get(self.model, self._settings, r.key) is None for r in unique)

    def cached(self, requests: Sequence[ChatRequest], parse: Callable[[str], object]) -> list[ChatOutcome | None]:
        """The cached outcome of each request, or None where the cache has no usable reply; asks nothing."""
        return [self._from_cache(r, parse) for r in requests]

    def _from_cache(self, request: ChatRequest, parse) -> ChatOutcome | None:
        record = self.cache.get(self.model, self._settings, request.key)
        if record is None:
            return None
        try:
            value = parse(record["text"])
        except ValueError:
            return None  # the parser became stricter since: ask again
        return ChatOutcome(value, record["text"], None, cached=True, logprobs=record.get("logprobs"),
                           usage=record.get("usage"))

    def complete_all(self, requests: Sequence[ChatRequest], parse: Callable[[str], object], desc: str = "",
                     stage: str = "judge") -> list[ChatOutcome]:
        """One outcome per request, in the same order. `parse` raises ValueError on an unusable reply. Usage is
        counted under `stage` (see usage_report)."""
        outcomes: dict[str, ChatOutcome] = {}
        todo: dict[str, ChatRequest] = {}
        for request in requests:
            key = request.key
            if key in outcomes or key in todo:
                continue
            hit = self._from_cache(request, parse)
            if hit is not None:
                outcomes[key] = hit
            else:
                todo[key] = request
        self._count(stage, cache_hits=len(outcomes), asked=len(todo))
        if todo:
            outcomes.update(self._ask_all(list(todo.values()), parse, desc or stage, stage))
        return [outcomes[r.key] for r in requests]

    def _ask_all(self, requests: list[ChatRequest], parse, desc: str, stage: str) -> dict[str, ChatOutcome]:
        from tqdm.auto import tqdm

        results = {}
        pool = ThreadPoolExecutor(max_workers=min(self.concurrency * len(self.urls), len(requests)))
        try:
            futures = {pool.submit(self._ask_one, r, parse, stage): r for r in requests}
            with tqdm(total=len(requests), desc=desc or self.model, unit="req", disable=None) as bar:
                for future in as_completed(futures):
                    request = futures[future]
                    outcome = future.result()
                    if outcome.ok:
                        # Written at once, from this thread only, so a killed run loses nothing it was told.
                        self.cache.put(self.model, self._settings, request.key,
                                       {"text": outcome.raw, "logprobs": outcome.logprobs, "usage": outcome.usage})
                    results[request.key] = outcome
                    bar.update(1)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        return results

    def _ask_one(self, request: ChatRequest, parse, stage: str) -> ChatOutcome:
        outcome = self._attempts(request, parse, stage)
        if not outcome.ok:
            capped = outcome.error == CAP_ERROR.format(cap=self.max_calls)
            self._count(stage, **({"not_asked": 1} if capped else {"failed": 1}))
        return outcome

    def _attempts(self, request: ChatRequest, parse, stage: str) -> ChatOutcome:
        reply, problem = None, None
        for _ in range(self.parse_retries + 1):
            try:
                reply = self._post(request, stage)
            except _CapReached:
                return ChatOutcome(None, reply and reply["text"], CAP_ERROR.format(cap=self.max_calls))
            except _Transient as failure:
                return ChatOutcome(None, reply and reply["text"],
                                   f"gave up after {self.max_retries + 1} attempts: {failure}")
            except _Rejected as failure:
                return ChatOutcome(None, reply and reply["text"], f"request rejected: {failure}")
            try:
                return ChatOutcome(parse(reply["text"]), reply["text"], None, logprobs=reply["logprobs"],
                                   usage=reply["usage"])
            except ValueError as failure:
                problem = failure
        return ChatOutcome(None, reply["text"], f"unparseable reply after {self.parse_retries + 1} attempts: "
                                                f"{problem}", logprobs=reply["logprobs"], usage=reply["usage"])

    def _body(self, request: ChatRequest) -> dict:
        body = {"model": self.model, "messages": list(request.messages), "temperature": self.temperature}
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        body.update(request.extra or {})
        return body

    def _headers(self) -> dict:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _post(self, request: ChatRequest, stage: str) -> dict:
        """The reply {text, logprobs, usage}, retrying transient failures; raises _Transient when retries run out
        and _CapReached when the client may send no more requests."""
        data = json.dumps(self._body(request), ensure_ascii=False).encode("utf-8")
        headers = self._headers()
        for attempt in range(self.max_retries + 1):
            base = self._slots.get()
            try:
                self._reserve_call(base, stage)
                reply = self._post_once(self.urls[base], data, headers)
            except _Transient as failure:
                if attempt == self.max_retries:
                    raise
                wait = failure.wait if failure.wait is not None else self.backoff * 2 ** attempt
            else:
                self._count_reply(stage, reply["usage"])
                return reply
            finally:
                self._slots.put(base)
            time.sleep(min(wait, 60.0) + random.uniform(0, self.backoff / 2))
        raise AssertionError("unreachable")

    def _reserve_call(self, base: int, stage: str) -> None:
        with self._lock:
            if self.max_calls is not None and self.calls_sent >= self.max_calls:
                raise _CapReached()
            self.calls_sent += 1
            self.sent_per_base[base] += 1
            self._stage(stage)["requests"] += 1

    def _post_once(self, url: str, data: bytes, headers: dict, timeout: float | None = None) -> dict:
        request = urllib.request.Request(url, data=data, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=timeout or self.timeout) as response:
                payload = response.read()
        except urllib.error.HTTPError as err:
            detail = err.read()[:300].decode("utf-8", "replace")
            if err.code == 429 or err.code >= 500:
                raise _Transient(f"HTTP {err.code}: {detail}", _retry_after(err.headers.get("Retry-After")))
            if err.code in FATAL_STATUSES:
                hint = f" (is ${self.api_key_env} set and valid?)" if err.code in (401, 403) else ""
                raise ChatError(f"{url} answered HTTP {err.code}{hint}: {detail}") from None
            raise _Rejected(f"HTTP {err.code}: {detail}") from None
        except (urllib.error.URLError, TimeoutError, ConnectionError, OSError, http.client.HTTPException) as err:
            # HTTPException: the connection broke mid-reply (IncompleteRead, a garbage status line)
            raise _Transient(f"{type(err).__name__}: {err}") from None
        return parse_completion(payload)

    # -- usage -----------------------------------------------------------------------------------------------

    def _stage(self, stage: str) -> dict:
        return self._stages.setdefault(stage, dict.fromkeys(_STAGE_COUNTS, 0))

    def _count(self, stage: str, **counts) -> None:
        with self._lock:
            record = self._stage(stage)
            for name, value in counts.items():
                record[name] += value

    def _count_reply(self, stage: str, usage: dict | None) -> None:
        prompt = usage.get("prompt_tokens") if usage else None
        completion = usage.get("completion_tokens") if usage else None
        if isinstance(prompt, int) and isinstance(completion, int):
            self._count(stage, prompt_tokens=prompt, completion_tokens=completion)
        else:
            self._count(stage, replies_without_usage=1)

    def usage_report(self) -> dict:
        """Requests, cache hits and token usage per stage and in total, with the cost when prices are known.

        Per stage: asked (distinct requests not in the cache), requests (HTTP requests sent, retries and
        re-asks included), cache_hits, failed, not_asked (left out by the max_calls cap), prompt_tokens and
        completion_tokens summed over the replies whose `usage` the API reported, replies_without_usage (their
        tokens are unknown, not 0: then the token counts and the cost are lower bounds, and `note` says so)."""
        with self._lock:
            stages = {name: dict(record) for name, record in self._stages.items()}
        total = {name: sum(s[name] for s in stages.values()) for name in _STAGE_COUNTS}
        for record in (*stages.values(), total):
            if self.endpoint.prices is not None:
                prompt_price, completion_price = self.endpoint.prices
                record["cost_usd"] = round((record["prompt_tokens"] * prompt_price
                                            + record["completion_tokens"] * completion_price) / 1e6, 6)
        report = {"model": self.model, "api": self.endpoint.hosts, "max_calls": self.max_calls,
                  "calls_sent": self.calls_sent, "cap_reached": self.cap_reached,
                  "prices_usd_per_mtok": list(self.endpoint.prices) if self.endpoint.prices else None,
                  "stages": stages, "total": total}
        if total["replies_without_usage"]:
            report["note"] = (f"{total['replies_without_usage']} replies carried no token usage: their tokens are "
                              "unknown, so the token counts" + (" and the cost" if self.endpoint.prices else "")
                              + " are lower bounds")
        return report

    # -- probing ---------------------------------------------------------------------------------------------

    def probe(self, timeout: float = PROBE_TIMEOUT) -> None:
        """Check that every API base answers, before a run: GET <base>/models, and where that is not served, one
        chat request of one token. A refused connection, an unknown host, a timeout, HTTP 404, 401 or 403 raises
        InputError naming the URL at once (no retries). The one-token request counts as a call."""
        timeout = min(timeout, self.timeout)
        for index, base in enumerate(self.endpoint.api_bases):
            url = _models_url(base)
            try:
                with urllib.request.urlopen(urllib.request.Request(url, headers=self._headers()),
                                            timeout=timeout) as response:
                    response.read()
                continue
            except urllib.error.HTTPError as err:
                if err.code in (401, 403):
                    raise InputError(f"the LLM endpoint {url} answered HTTP {err.code} (is ${self.api_key_env} set "
                                     f"and valid?): {err.read()[:300].decode('utf-8', 'replace')}") from None
            except (urllib.error.URLError, TimeoutError, ConnectionError, OSError, http.client.HTTPException) as err:
                raise InputError(f"the LLM endpoint {base} cannot be reached ({_reason(err)}); is the server "
                                 "running and the URL right?") from None
            self._probe_chat(index, base, timeout)

    def _probe_chat(self, index: int, base: str, timeout: float) -> None:
        """The endpoint does not list models: ask for one token (some servers only serve chat completions)."""
        body = {"model": self.model, "messages": [{"role": "user", "content": "1"}], "max_tokens": 1,
                "temperature": 0.0}
        try:
            self._reserve_call(index, "probe")
            reply = self._post_once(self.urls[index], json.dumps(body).encode("utf-8"), self._headers(), timeout)
            self._count_reply("probe", reply["usage"])
        except _CapReached:
            pass  # no call left to spend on a probe; the run itself reports the cap
        except ChatError as err:
            raise InputError(f"the LLM endpoint {base} refused a one-token request: {err}") from None
        except _Transient as err:
            if not str(err).startswith("HTTP "):  # 429 / 5xx: it is up and busy; the run's retries handle that
                raise InputError(f"the LLM endpoint {base} did not answer a one-token request: {err}") from None
        except _Rejected:
            pass  # it answered: the server is up, it only disliked this tiny request


def _reason(err: BaseException) -> str:
    reason = getattr(err, "reason", None)
    return f"{type(reason).__name__}: {reason}" if reason is not None else f"{type(err).__name__}: {err}"


def parse_completion(payload: bytes) -> dict:
    """{text, logprobs, usage} of a chat.completion body; _Transient when it is not one. logprobs: one float
    per generated token from choices[0].logprobs.content, or None when the endpoint sent none."""
    try:
        data = json.loads(payload)
        choice = data["choices"][0]
        content = choice["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        content = None
    if not isinstance(content, str):
        raise _Transient(f"not a chat completion: {payload[:200]!r}")
    logprobs = None
    tokens = (choice.get("logprobs") or {}).get("content") if isinstance(choice.get("logprobs"), dict) else None
    if isinstance(tokens, list):
        values = [t.get("logprob") if isinstance(t, dict) else None for t in tokens]
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            logprobs = [float(v) for v in values]
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else None
    return {"text": content, "logprobs": logprobs, "usage": usage}


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None  # an HTTP date; fall back to our own backoff


# -- the shared command-line options ---------------------------------------------------------------------------

_FLAGS = {"model": None, "api_bases": "api-base", "api_key_env": "api-key-env", "concurrency": "concurrency",
          "timeout": "timeout", "max_retries": "max-retries", "max_calls": "max-llm-calls",
          "prices": "price-per-mtok", "cache_path": "llm-cache", "temperature": "temperature",
          "max_tokens": "max-tokens"}


def add_endpoint_arguments(parser, prefix: str = "", model_flag: str | None = "--judge-model",
                           model_help: str = "model name at the OpenAI-compatible endpoint") -> None:
    """The one set of LLM endpoint options for every command that asks an LLM (evaluate, rag-metrics, generate,
    build). `prefix` ("gen-") prefixes every flag for a command with two endpoints; `model_flag` is the model's
    flag ("--judge-model" for a judge, "--model" for generate; None when the command defines it itself).
    Read them back with `endpoint_from_args`. A command may add --temperature / --max-tokens itself."""
    p = f"--{prefix}"
    if model_flag:
        parser.add_argument(model_flag, help=model_help)
    parser.add_argument(f"{p}api-base", nargs="+", metavar="URL",
                        help="OpenAI-compatible API base(s), e.g. http://localhost:8000/v1; several are served "
                             "round-robin (one model on many replicas)")
    parser.add_argument(f"{p}api-key-env", default="OPENAI_API_KEY", metavar="VAR",
                        help="environment variable holding the API key (default OPENAI_API_KEY)")
    parser.add_argument(f"{p}concurrency", type=int, default=16, metavar="N",
                        help="parallel requests per API base (default 16)")
    parser.add_argument(f"{p}timeout", type=float, default=60.0, metavar="SECONDS",
                        help="seconds to wait for one reply (default 60)")
    parser.add_argument(f"{p}max-retries", type=int, default=5, metavar="N",
                        help="retries of a timed-out, refused or 429/5xx request (default 5)")
    parser.add_argument(f"{p}max-llm-calls", type=int, metavar="N",
                        help="send at most N requests; what is answered is cached and the same command resumes")
    parser.add_argument(f"{p}price-per-mtok", type=float, nargs=2, metavar=("PROMPT", "COMPLETION"),
                        help="USD per million prompt and completion tokens, to report the cost")
    parser.add_argument(f"{p}llm-cache", metavar="FILE",
                        help="sqlite file of LLM replies (default: $CHIMDQA_CACHE or ~/.cache/chimdqa, llm/)")
    parser.add_argument(f"{p}dry-run", action="store_true",
                        help="print how many LLM calls the run would make after the cache, ask nothing, exit")


def endpoint_from_args(args, model_attr: str = "judge_model", prefix: str = "",
                       needed_for: str | None = None) -> LLMEndpoint | None:
    """The LLMEndpoint of the options added by add_endpoint_arguments, when `needed_for` names what needs it
    ("--judge llm"). With needed_for=None the options are only checked (a bad value is an error even when no
    LLM is asked) and None is returned. Errors are InputErrors naming the CLI flags, e.g. "--api-base is
    required with --judge llm", "--concurrency 0: expected ..."."""
    dest = prefix.replace("-", "_")

    def get(name, default=None):
        return getattr(args, dest + name, default)

    model_flag = "--" + model_attr.replace("_", "-")
    model, bases = getattr(args, model_attr, None), get("api_base")
    if needed_for is not None:
        for value, flag in ((model, model_flag), (bases, f"--{prefix}api-base")):
            if not value:
                raise InputError(f"{flag} is required with {needed_for}")
    try:
        endpoint = LLMEndpoint(model or "unused", tuple(bases or ("http://unused",)),
                               api_key_env=get("api_key_env", "OPENAI_API_KEY"),
                               concurrency=get("concurrency", 16), timeout=get("timeout", 60.0),
                               max_retries=get("max_retries", 5), temperature=get("temperature", 0.0),
                               max_tokens=get("max_tokens"), cache_path=get("llm_cache"),
                               max_calls=get("max_llm_calls"), prices=get("price_per_mtok"))
    except EndpointError as err:
        flag = model_flag if err.field == "model" else f"--{prefix}{_FLAGS[err.field]}"
        value = " ".join(map(str, err.value)) if isinstance(err.value, (tuple, list)) else err.value
        raise InputError(f"{flag} {value}: {err.problem}") from None
    return endpoint if needed_for is not None else None


def cap_message(client: ChatClient, what: str = "the run") -> str:
    """What to tell a user whose run stopped at the --max-llm-calls cap."""
    report = client.usage_report()
    return (f"--max-llm-calls {client.max_calls}: the cap was reached after {client.calls_sent} requests and "
            f"{report['total']['not_asked']} were not asked, so {what} is incomplete. Every answer received is "
            "cached: run the same command again to continue (with a higher --max-llm-calls, or without it, to "
            "finish)")


def open_client(endpoint: "LLMEndpoint | ChatClient") -> tuple[ChatClient, bool]:
    """(client, owned): a ChatClient passed in is shared (its caller closes it and reads its usage); an
    LLMEndpoint gets a new client that the callee owns and closes."""
    if isinstance(endpoint, ChatClient):
        return endpoint, False
    if isinstance(endpoint, LLMEndpoint):
        return endpoint.client(), True
    raise InputError(f"endpoint: expected an LLMEndpoint or a ChatClient, got {type(endpoint).__name__}")


def endpoint_from_keywords(judge_model, api_base, *, api_key_env="OPENAI_API_KEY", concurrency=16,
                           cache_path=None, needed_for: str) -> LLMEndpoint:
    """The evaluate modules' and libraries' keyword arguments as an LLMEndpoint; InputError naming the keywords."""
    if not judge_model or not api_base:
        raise InputError(f"{needed_for} needs judge_model= and api_base= (an OpenAI-compatible endpoint such as "
                         "http://localhost:8000/v1)")
    return LLMEndpoint(judge_model, api_base, api_key_env=api_key_env, concurrency=concurrency,
                       cache_path=cache_path)


def format_plan(plan: dict) -> str:
    """{stage: {"calls", "exact"[, "note"]}} -> a dry run's printout."""
    lines = ["LLM calls this run would make (after the cache):"]
    for stage, entry in plan.items():
        note = f"  — {entry['note']}" if entry.get("note") else ""
        lines.append(f"  {stage:<12} {entry['calls']:>7}{'' if entry['exact'] else ' (estimate)'}{note}")
    return "\n".join(lines)
