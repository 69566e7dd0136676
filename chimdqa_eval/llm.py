"""The one OpenAI-compatible chat-completions client (vLLM, Ollama, hosted APIs) used by every LLM judge.

It asks many prompts with bounded concurrency, retries transient failures (timeouts, connection errors, 429,
5xx, honouring Retry-After) with exponential backoff, re-asks when the reply cannot be parsed, and keeps every
parsed answer in an on-disk sqlite cache the moment it arrives: a re-run asks nothing again and a run killed
halfway resumes where it stopped. Failures are reported per request in `ChatOutcome.error`, never replaced by a
default value. Only the standard library talks HTTP, so nothing here is imported unless a user asks for an API.
"""
from __future__ import annotations

import hashlib
import http.client
import json
import os
import random
import sqlite3
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence
from urllib.parse import urlsplit

from chimdqa_eval.cache import cache_dir

# Authentication, permission and unknown-model errors fail every request alike: stop at the first one.
FATAL_STATUSES = (401, 403, 404)


class ChatError(RuntimeError):
    """The endpoint refused in a way no retry fixes (bad key, no permission, unknown model or URL)."""


@dataclass(frozen=True)
class ChatRequest:
    messages: tuple   # {"role": ..., "content": ...} dicts
    cache_key: str    # prompt_key(prompt version, prompt text, inputs)

    def __post_init__(self):
        object.__setattr__(self, "messages", tuple(self.messages))


@dataclass
class ChatOutcome:
    value: object | None   # parse(raw) when ok
    raw: str | None        # the last raw reply text received
    error: str | None      # why there is no value
    cached: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None


def prompt_key(version: str, *parts: str) -> str:
    """A ChatRequest's cache key: the prompt version and a digest of every input the prompt depends on, the
    prompt's own text included (an edit without a new version must not be served the old prompt's answers)."""
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()
    return f"{version}:{digest}"


class _Transient(Exception):
    """A failure worth retrying; `wait` is the server's Retry-After in seconds, if it sent one."""

    def __init__(self, message: str, wait: float | None = None):
        super().__init__(message)
        self.wait = wait


class _Rejected(Exception):
    """The endpoint refused this one request (e.g. HTTP 400, prompt too long); asking again would not help."""


class ChatCache:
    """sqlite store of raw replies keyed by (model, settings: API host and generation settings, cache_key); WAL
    so readers never block writers."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), timeout=30, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS replies (model TEXT, settings TEXT, key TEXT, raw TEXT,"
                         " PRIMARY KEY (model, settings, key))")
        self._db.commit()

    def get(self, model: str, settings: str, key: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT raw FROM replies WHERE model=? AND settings=? AND key=?",
                                   (model, settings, key)).fetchone()
        return row[0] if row else None

    def put(self, model: str, settings: str, key: str, raw: str) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?)", (model, settings, key, raw))
            self._db.commit()

    def close(self) -> None:
        self._db.close()


def chat_url(api_base: str) -> str:
    """The chat-completions URL for an API base such as http://localhost:8000/v1 (a full URL is kept)."""
    base = api_base.rstrip("/")
    return base if base.endswith("/chat/completions") else base + "/chat/completions"


class ChatClient:
    """Ask an OpenAI-compatible endpoint many prompts; see the module docstring for the guarantees."""

    def __init__(self, model: str, api_base: str, *, api_key_env: str = "OPENAI_API_KEY", cache_path=None,
                 concurrency: int = 16, max_retries: int = 5, parse_retries: int = 2, timeout: float = 60.0,
                 temperature: float = 0.0, max_tokens: int | None = None, backoff: float = 0.5):
        if not model or not api_base:
            raise ValueError("an LLM judge needs both a model name and an api_base URL")
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        self.model = model
        self.url = chat_url(api_base)
        self.api_key_env = api_key_env
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.parse_retries = parse_retries
        self.timeout = timeout
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.backoff = backoff
        self.cache = ChatCache(Path(cache_path) if cache_path else cache_dir("llm") / "chat.sqlite")
        # Whatever the signature says produced an answer (the API host too: one model name on two servers can
        # be two models) and the generation settings are part of the cache key.
        self._settings = json.dumps({"api": self.signature_fields["judge_api"], "temperature": temperature,
                                     "max_tokens": max_tokens})

    @property
    def signature_fields(self) -> dict:
        """What identifies the judge in a score's signature (host only: no key, no path secrets); every metric
        that asks an LLM adds these fields."""
        return {"judge_model": self.model, "judge_api": urlsplit(self.url).hostname or "?",
                "judge_temperature": self.temperature}

    def close(self) -> None:
        """Close the cache; the client cannot be used afterwards."""
        self.cache.close()

    def complete_all(self, requests: Sequence[ChatRequest], parse: Callable[[str], object],
                     desc: str = "") -> list[ChatOutcome]:
        """One outcome per request, in the same order. `parse` raises ValueError on an unusable reply."""
        outcomes: dict[str, ChatOutcome] = {}
        todo: dict[str, ChatRequest] = {}
        for request in requests:
            if request.cache_key in outcomes or request.cache_key in todo:
                continue
            raw = self.cache.get(self.model, self._settings, request.cache_key)
            if raw is not None:
                try:
                    outcomes[request.cache_key] = ChatOutcome(parse(raw), raw, None, cached=True)
                    continue
                except ValueError:
                    pass  # the parser became stricter since: ask again
            todo[request.cache_key] = request
        if todo:
            outcomes.update(self._ask_all(list(todo.values()), parse, desc))
        return [outcomes[r.cache_key] for r in requests]

    def _ask_all(self, requests: list[ChatRequest], parse, desc: str) -> dict[str, ChatOutcome]:
        from tqdm.auto import tqdm

        results = {}
        pool = ThreadPoolExecutor(max_workers=min(self.concurrency, len(requests)))
        try:
            futures = {pool.submit(self._ask_one, r, parse): r for r in requests}
            with tqdm(total=len(requests), desc=desc or self.model, unit="req", disable=None) as bar:
                for future in as_completed(futures):
                    request = futures[future]
                    outcome = future.result()
                    if outcome.ok:
                        # Written at once, from this thread only, so a killed run loses nothing it was told.
                        self.cache.put(self.model, self._settings, request.cache_key, outcome.raw)
                    results[request.cache_key] = outcome
                    bar.update(1)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        return results

    def _ask_one(self, request: ChatRequest, parse) -> ChatOutcome:
        raw, problem = None, None
        for _ in range(self.parse_retries + 1):
            try:
                raw = self._post(request.messages)
            except _Transient as failure:
                return ChatOutcome(None, raw, f"gave up after {self.max_retries + 1} attempts: {failure}")
            except _Rejected as failure:
                return ChatOutcome(None, raw, f"request rejected: {failure}")
            try:
                return ChatOutcome(parse(raw), raw, None)
            except ValueError as failure:
                problem = failure
        return ChatOutcome(None, raw, f"unparseable reply after {self.parse_retries + 1} attempts: {problem}")

    def _post(self, messages) -> str:
        """The reply text, retrying transient failures; raises _Transient when retries run out."""
        body = {"model": self.model, "messages": list(messages), "temperature": self.temperature}
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        for attempt in range(self.max_retries + 1):
            try:
                return self._post_once(data, headers)
            except _Transient as failure:
                if attempt == self.max_retries:
                    raise
                wait = failure.wait if failure.wait is not None else self.backoff * 2 ** attempt
                time.sleep(min(wait, 60.0) + random.uniform(0, self.backoff / 2))
        raise AssertionError("unreachable")

    def _post_once(self, data: bytes, headers: dict) -> str:
        request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                payload = response.read()
        except urllib.error.HTTPError as err:
            detail = err.read()[:300].decode("utf-8", "replace")
            if err.code == 429 or err.code >= 500:
                raise _Transient(f"HTTP {err.code}: {detail}", _retry_after(err.headers.get("Retry-After")))
            if err.code in FATAL_STATUSES:
                hint = f" (is ${self.api_key_env} set and valid?)" if err.code in (401, 403) else ""
                raise ChatError(f"{self.url} answered HTTP {err.code}{hint}: {detail}") from None
            raise _Rejected(f"HTTP {err.code}: {detail}") from None
        except (urllib.error.URLError, TimeoutError, ConnectionError, OSError, http.client.HTTPException) as err:
            # HTTPException: the connection broke mid-reply (IncompleteRead, a garbage status line)
            raise _Transient(f"{type(err).__name__}: {err}") from None
        try:
            content = json.loads(payload)["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            content = None
        if not isinstance(content, str):
            raise _Transient(f"not a chat completion: {payload[:200]!r}")
        return content


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None  # an HTTP date; fall back to our own backoff
