"""The one OpenAI-compatible chat-completions client (vLLM, SGLang, Ollama, hosted APIs) used by every LLM user:
the factual judge, the RAG claim extractor and checker, and the commands that generate answers or questions.

`LLMEndpoint` says where and how to ask (model, one or more API bases, key variable, concurrency per base, timeout,
retries, cache, a cap on requests, optional prices); it is built once, from keyword arguments or from the commands'
shared flags (`endpoint_from_args`), and `endpoint.client()` opens a `ChatClient`. The client asks many prompts
with bounded concurrency per API base (several bases are served round-robin, the way a deployment with many
replicas is used), retries transient failures (timeouts, connection errors, 429, 5xx, honouring Retry-After) with
exponential backoff, asks again when the reply cannot be parsed (once, with the request's repair instruction
appended after the reply, when it has one), and keeps every reply (text, token log-probabilities, usage) in an
on-disk sqlite cache the moment it arrives: a re-run asks nothing again and a run killed halfway resumes where it
stopped. Failures are reported per request in `ChatOutcome.error`, never replaced by a default value. It counts
requests, cache hits and the API's token usage per stage (`usage_report()`), never sends more than `max_calls`
requests, counts what a run would still ask (`pending`) and checks that an endpoint answers before a run (`probe`).

Hard limits, because the endpoint may be slow, broken or hostile: a request ends `timeout` seconds after it
starts, whatever the server sends, its retries and the waits before them included (each attempt's connect, send
and every read get only what is left of that deadline, so a server trickling a byte at a time cannot stretch
it, and a retry is made only when its wait leaves at least MIN_ATTEMPT_SECONDS, or a quarter of `timeout`, for
it; a re-ask after a reply `parse` rejects is a new request); a reply body over MAX_REPLY_BYTES is refused while
it streams in, counted after decompression when a server compresses it anyway (gzip and deflate are inflated a
bounded step at a time, any other Content-Encoding is refused); a Retry-After is waited only up to
RETRY_AFTER_CAP (and never longer than `timeout`), a longer one ends the request at once; and an API base that
fails BREAKER_FAILURES attempts in a row (over BREAKER_SECONDS at least) stops the run with `EndpointDied`,
naming it and saying how many answers are cached for the re-run. A failure is no connection, a dropped one, no
complete reply by the deadline, or HTTP 502/503/504 (a gateway whose model server is gone); any other reply,
2xx or an error the model server itself sends, means the base is alive.
Every request in flight is asked from one thread, the client's event loop (asyncio; started on first use, ended by
close()), which also writes the answers to the cache and reports progress while the calling thread waits: a thread
per request spends more of the client's CPU waking up than on the exchange itself. HTTP keeps one connection per
request in flight: each of the `concurrency` slots of an API base has its own one-connection transport (one shared
pool would scan all its connections under one lock twice per request), asked directly (cookies are neither kept nor
sent, redirects are not followed). A plain http:// base reached without a proxy (a local vLLM or SGLang server,
where the client's CPU sets the rate) gets a _Lane, HTTP/1.1 written and read on the event loop by this module,
with its limits, at a fraction of httpx's CPU a request; https:// and a proxy get httpx's blocking transport, asked
from a pool of threads (CHIMDQA_HTTP_CLIENT=httpx sends every request through httpx). Both send the same bytes and
keep every limit above; retries go through tenacity; httpx and tenacity are imported only when a client is made, so
the commands' option parsing stays fast.
"""
from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import functools
import hashlib
import http.client
import json
import os
import re
import socket
import sqlite3
import sys
import threading
import time
import urllib.request
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence
from urllib.parse import urlsplit

from chimdqa_eval.cache import cache_dir
from chimdqa_eval.jsonio import loads
from chimdqa_eval.schema import InputError

# Authentication, permission and unknown-model errors fail every request alike: stop at the first one.
FATAL_STATUSES = (401, 403, 404)
CAP_ERROR = "not asked: the --max-llm-calls cap ({cap}) was reached"
PROBE_TIMEOUT = 10.0  # seconds: an endpoint that cannot list its models or answer one token by then is not up
MAX_REPLY_BYTES = 16 * 2**20  # the largest reply body read; 50k tokens with their log-probabilities fit
RETRY_AFTER_CAP = 60.0  # seconds: the longest wait before a retry (Retry-After or backoff)
MIN_ATTEMPT_SECONDS = 0.5  # the least time (or a quarter of --timeout) worth starting a retry with
BREAKER_FAILURES = 8  # consecutive failed attempts on one API base (see _Breaker), spanning at least
BREAKER_SECONDS = 3.0  # this many seconds: the endpoint is down (not a blip), so the run stops
GATEWAY_STATUSES = (502, 503, 504)  # a proxy or load balancer saying the model server behind it is not there
INFLATE_STEP = 2**20  # bytes: the most one step of decompressing a compressed reply produces
PROGRESS_EVERY = 5.0  # seconds between two progress lines when stderr is not a terminal
_ERROR_DETAIL = 300  # bytes of an error reply quoted in messages
_TIMED_OUT = "no complete reply by the request's deadline"
DEFAULT_PORTS = {"http": 80, "https": 443}


class ChatError(RuntimeError):
    """The endpoint refused in a way no retry fixes (bad key, no permission, unknown model or URL)."""


class EndpointDied(ChatError):
    """An API base stopped accepting connections during a run: the run stops rather than retrying every pending
    request against it. A ChatError, so every command that reports a refusing endpoint reports this one too."""


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
            if parts.username is not None or parts.password is not None:
                raise EndpointError("api_bases", parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl(),
                                    "has a user name or password in it, which is never sent; put the API key in "
                                    "the environment variable named by api_key_env (--api-key-env)")
            try:
                parts.port
            except ValueError:
                raise EndpointError("api_bases", base, "the port is not a number from 0 to 65535") from None
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
    def origins(self) -> str:
        """The API bases' scheme://host:port, sorted and comma-joined: what identifies the server in signatures
        and cache keys (two ports of one host are two servers; never a key, a user name or a path)."""
        return ",".join(sorted({origin(base) for base in self.api_bases}))

    def signature_fields(self, prefix: str = "judge_") -> dict:
        """What identifies the model in a score's signature: model, API origins, temperature."""
        return {f"{prefix}model": self.model, f"{prefix}api": self.origins, f"{prefix}temperature": self.temperature}

    def client(self, **options) -> "ChatClient":
        """A ChatClient for this endpoint; `options` are the client's tuning knobs (parse_retries, backoff)."""
        return ChatClient(self.model, self.api_bases, api_key_env=self.api_key_env, cache_path=self.cache_path,
                          concurrency=self.concurrency, max_retries=self.max_retries, timeout=self.timeout,
                          temperature=self.temperature, max_tokens=self.max_tokens, max_calls=self.max_calls,
                          prices=self.prices, **options)


def origin(url: str) -> str:
    """scheme://host:port of a URL, the port always written (http://h and http://h:80 are one server)."""
    parts = urlsplit(url)
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}:{parts.port or DEFAULT_PORTS[parts.scheme]}"


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
    # An unparseable reply is asked again once with this instruction appended after it (instead of the same
    # request again, which at temperature 0 returns the same reply); None: asked again unchanged (parse_retries).
    repair: str | None = field(default=None, hash=False)

    def __post_init__(self):
        object.__setattr__(self, "messages", tuple(self.messages))
        if self.extra is not None:
            object.__setattr__(self, "extra", dict(self.extra))

    def repaired(self, reply: str) -> "ChatRequest":
        """The follow-up to an unparseable `reply`: the conversation so far, the reply as the assistant's turn,
        then the repair instruction. Its usable reply is kept under this request's cache key."""
        turns = ({"role": "assistant", "content": reply}, {"role": "user", "content": self.repair})
        return ChatRequest(self.messages + turns, self.cache_key, self.extra)

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
    """A failure worth retrying; `wait` is the server's Retry-After in seconds, if it sent one; `timed_out` when
    the request's deadline passed."""

    def __init__(self, message: str, wait: float | None = None, *, timed_out: bool = False):
        super().__init__(message)
        self.wait = wait
        self.timed_out = timed_out


class _EndpointDown(Exception):
    """The circuit breaker is open: this request is not sent."""


class _Rejected(Exception):
    """The endpoint refused this one request (e.g. HTTP 400, prompt too long); asking again would not help."""


class _CapReached(Exception):
    """The client has sent max_calls requests; nothing more is asked."""


# -- HTTP with a deadline ---------------------------------------------------------------------------------------

_request = threading.local()  # .deadline: time.monotonic() by which this thread's current HTTP request must end


def _time_left(timeout: float | None, expired: str) -> float | None:
    """The timeout of one socket operation: the operation's own, cut to what is left before the calling thread's
    request deadline; raises the httpcore timeout named `expired` once the deadline has passed."""
    import httpcore

    deadline = getattr(_request, "deadline", None)
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise getattr(httpcore, expired)("the request's deadline passed")
    return left if timeout is None else min(timeout, left)


# Linux's TCP_QUICKACK: what arrives is acknowledged at once, not up to 40 ms later (delayed ACK). A server that
# writes a reply's head and body separately with Nagle's algorithm on (Python's http.server, cpp-httplib as
# llama.cpp's server uses it) holds the body back until the head is acknowledged: 40 ms more per request on a
# kept-alive connection. The kernel may leave quick-ACK mode again, so it is asked for before every read.
_QUICKACK = getattr(socket, "TCP_QUICKACK", None)


class _DeadlineStream:
    """An httpcore network stream whose every read, write and TLS handshake ends by the request's deadline: a
    server trickling a byte at a time cannot stretch a request past it (a timeout per read alone would let it).
    Its reads acknowledge at once where the system can (_QUICKACK)."""

    def __init__(self, stream):
        self._stream = stream
        self._socket = stream.get_extra_info("socket") if _QUICKACK is not None else None

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        if self._socket is not None:
            try:
                self._socket.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)
            except (OSError, AttributeError):
                self._socket = None  # not a TCP socket after all: reads as they are
        return self._stream.read(max_bytes, _time_left(timeout, "ReadTimeout"))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _time_left(timeout, "WriteTimeout"))

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context, server_hostname=None, timeout=None) -> "_DeadlineStream":
        return _DeadlineStream(self._stream.start_tls(ssl_context, server_hostname,
                                                      _time_left(timeout, "ConnectTimeout")))

    def get_extra_info(self, info: str):
        return self._stream.get_extra_info(info)


class _DeadlineBackend:
    """httpcore's synchronous network backend, opening _DeadlineStreams."""

    def __init__(self):
        import httpcore

        self._backend = httpcore.SyncBackend()

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None) -> _DeadlineStream:
        return _DeadlineStream(self._backend.connect_tcp(host, port, _time_left(timeout, "ConnectTimeout"),
                                                         local_address, socket_options))

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


def _transport(connections: int, proxy: str | None, ssl_context=None):
    """An httpx transport keeping up to `connections` keep-alive connections, over _DeadlineStreams, through
    `proxy` (an http:// or https:// proxy URL) when one is given; `ssl_context` (httpx's default when None) may
    be shared by many transports."""
    import httpcore
    import httpx

    ssl_context = ssl_context or httpx.create_ssl_context()
    transport = httpx.HTTPTransport(verify=ssl_context)  # its own pool is replaced below: no context of its own
    pool = dict(ssl_context=ssl_context, max_connections=connections,
                max_keepalive_connections=connections, network_backend=_DeadlineBackend())
    if proxy is None:
        connection_pool = httpcore.ConnectionPool(**pool)
    else:
        try:
            parsed = httpx.Proxy(proxy)
        except ValueError as err:
            raise InputError(f"the environment names the proxy {proxy!r}: {err}") from None
        url = parsed.url
        connection_pool = httpcore.HTTPProxy(
            proxy_url=httpcore.URL(scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path),
            proxy_auth=parsed.raw_auth, proxy_headers=parsed.headers.raw, **pool)
    # httpx takes no network backend of its own: its transport keeps its pool here, and only uses it through
    # the pool's public interface, which is what is swapped in.
    transport._pool = connection_pool
    return transport


def _proxy_for(base: str) -> str | None:
    """The proxy the environment (http_proxy, https_proxy, no_proxy) names for an API base, as urllib reads it."""
    parts = urlsplit(base)
    if urllib.request.proxy_bypass(parts.hostname):
        return None
    return urllib.request.getproxies().get(parts.scheme)


# -- the lean transport: plain http:// without a proxy ------------------------------------------------------------

HTTP_CLIENT_ENV = "CHIMDQA_HTTP_CLIENT"  # "httpx": every request through httpx, none through a _Lane
# A reply's status line and headers, informational replies (1xx) before it included: the bytes read before its
# head is parsed (what httpcore allows too). http.client's own limits apply as well, and are looser but for
# one: no line over http.client._MAXLINE (64 kB), no more than http.client._MAXHEADERS (100) header lines.
MAX_HEAD_BYTES = 100 * 2**10
_READ_SIZE = 2**16
_READ_AHEAD = 4 * _READ_SIZE  # bytes a connection buffers before it stops reading until they are taken


def _lean_allowed(url: str, proxy: str | None) -> bool:
    """Whether requests to `url` go through a _Lane: plain http:// reached without a proxy, unless the
    environment's CHIMDQA_HTTP_CLIENT=httpx sends everything through httpx (TLS and proxies always are)."""
    return proxy is None and url.startswith("http://") and os.environ.get(HTTP_CLIENT_ENV, "") != "httpx"


class _Fields(dict):
    """A reply's headers: lower-case names (a repeated one's values joined by ", ", as httpx joins them), looked
    up in any case."""

    def get(self, name: str, default=None):
        return dict.get(self, name.lower(), default)

    def __getitem__(self, name: str) -> str:
        return dict.__getitem__(self, name.lower())

    def __contains__(self, name) -> bool:
        return dict.__contains__(self, name.lower())


# What one reply may take on the wire: its head and a trailer, and a body with chunk framing twice its size cap.
_MOST_READ_FOR_A_REPLY = 2 * MAX_HEAD_BYTES + 2 * MAX_REPLY_BYTES
_HEADER_NAME = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # a token (RFC 9110, 5.1)
_BAD_VALUE_BYTE = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")  # control bytes (a tab is allowed; RFC 9110, 5.5)
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,16})[ \t]*(?:;[^\r\n]*)?\r?\n")
_LENGTH = re.compile(r"[0-9]{1,20}")  # a Content-Length h11 takes: ASCII digits, at most 20 of them
_MOST_HEADER_LINE, _MOST_HEADER_LINES = 65536, 100  # http.client's own limits (_MAXLINE, _MAXHEADERS)


def _fields(lines: list[bytes]) -> _Fields:
    """Header lines as _Fields (names lower-cased; a repeated name's values joined by ", ", as httpx joins them;
    a line folded onto the next, obsolete but allowed in a reply, joined by a space, as RFC 9112 5.2 asks); a line
    that is not `name: value` with a token for its name is httpx's RemoteProtocolError."""
    import httpx

    fields, last = _Fields(), None
    for line in lines:
        if _BAD_VALUE_BYTE.search(line) is not None:
            raise httpx.RemoteProtocolError(f"a header line with a control character {line[:40]!r}")
        if line[:1] in (b" ", b"\t") and last is not None:
            more = line.strip(b" \t").decode("latin-1")
            fields[last] = f"{fields[last]} {more}".strip(" \t")
            continue
        name, colon, value = line.partition(b":")
        if not colon or _HEADER_NAME.fullmatch(name) is None:
            raise httpx.RemoteProtocolError(f"a malformed header line {line[:40]!r}")
        last, value = name.decode("ascii").lower(), value.strip(b" \t").decode("latin-1")
        fields[last] = f"{fields[last]}, {value}" if last in fields else value
    return fields


def _framing(fields: _Fields, status: int, method: str | None) -> tuple:
    """(chunked, length) of a reply's body, in RFC 9112 6.3's order: no body after a 1xx, 204 or 304 reply or
    for a HEAD request, whatever its headers say; chunked when
    the Transfer-Encoding says so (a Content-Length beside it is ignored, once checked); else the Content-Length
    (values repeated alike count once); else None: to the connection's end. A Transfer-Encoding other than
    chunked, or a Content-Length that is not one number of ASCII digits (at most 20, as h11 takes it), is httpx's
    RemoteProtocolError: there is no telling where such a body ends."""
    import httpx

    declared = fields.get("content-length")
    length = None
    if declared is not None:
        lengths = {value.strip(" \t") for value in declared.split(",")}
        length = lengths.pop() if len(lengths) == 1 else ""
        if _LENGTH.fullmatch(length) is None:
            raise httpx.RemoteProtocolError(f"a bad Content-Length {declared[:40]!r}")
        length = int(length)
    if status in (204, 304) or 100 <= status < 200 or method == "HEAD":
        return False, 0
    encoding = fields.get("transfer-encoding")
    if encoding is not None:
        if encoding.lower() != "chunked":
            raise httpx.RemoteProtocolError(f"unsupported Transfer-Encoding {encoding[:40]!r}")
        return True, None
    return False, length


class _Wire(asyncio.Protocol):
    """One TCP connection's bytes as they arrive, kept in `buffer` until _Lane takes them; `ended` once the server
    closed its side or the connection broke (`error`: how it broke, None for a clean end). `taken` counts what the
    reply being read took (head, framing and body), which _MOST_READ_FOR_A_REPLY caps. Reading pauses once
    _READ_AHEAD bytes wait in `buffer` (a server writing on while nobody reads fills no memory) and resumes when
    more are asked for. Only the client's event loop touches it."""

    def __init__(self):
        self.buffer = bytearray()
        self.ended, self.error, self.transport, self.taken = False, None, None, 0
        self._waiter, self._paused = None, False

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if len(self.buffer) >= _READ_AHEAD and not self._paused:
            self.transport.pause_reading()
            self._paused = True
        self._wake()

    def eof_received(self) -> None:
        self.ended = True  # (returning None: the transport then closes itself)
        self._wake()

    def connection_lost(self, exc) -> None:
        self.ended, self.error = True, self.error or exc
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def _more(self) -> bool:
        """Wait for bytes beyond those buffered; False once the connection has ended (no more will come)."""
        if self.ended:
            if self.error is not None:  # a reset, not an end: said as the socket said it (httpx's ReadError)
                import httpx

                raise httpx.ReadError(str(self.error)) from self.error
            return False
        if self._paused:
            self._paused = False
            self.transport.resume_reading()
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None
        return True

    def take(self, size: int) -> bytes:
        data = bytes(self.buffer[:size])
        del self.buffer[:size]
        self.taken += len(data)
        if self.taken > _MOST_READ_FOR_A_REPLY:  # chunk framing and trailers count here; no other cap bounds them
            import httpx

            raise httpx.RemoteProtocolError(f"the reply exceeds {_MOST_READ_FOR_A_REPLY:,} bytes with its framing")
        return data

    async def line(self, most: int) -> bytes | None:
        """The next line, its b"\\n" included, when it is at most `most` bytes long; None when `most` bytes come
        without a line end; what is left (b"" when nothing) when the connection ends first."""
        scanned = 0
        while True:
            end = self.buffer.find(b"\n", scanned, most)
            if end >= 0:
                return self.take(end + 1)
            if len(self.buffer) >= most:
                return None
            scanned = len(self.buffer)
            if not await self._more():
                return self.take(len(self.buffer))

    async def some(self, most: int) -> bytes:
        """At most `most` bytes, as soon as there are any; b"" when the connection has ended."""
        while not self.buffer:
            if not await self._more():
                return b""
        return self.take(most)

    async def exactly(self, size: int) -> bytes:
        """`size` bytes, or fewer when the connection ends first."""
        while len(self.buffer) < size:
            if not await self._more():
                break
        return self.take(size)


def _close(sock: socket.socket | None) -> None:
    if sock is not None:
        sock.close()


def _status_line(line: bytes) -> tuple[int, int, str]:
    """(version: 10 or 11, status, reason) of a reply's status line, read as http.client reads it (its errors:
    RemoteDisconnected when the connection ended before one, BadStatusLine, UnknownProtocol)."""
    if not line:
        raise http.client.RemoteDisconnected("Remote end closed connection without response")
    text = line.decode("iso-8859-1")
    parts = text.split(None, 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/"):
        raise http.client.BadStatusLine(text)
    version, status, reason = parts[0], parts[1], parts[2] if len(parts) == 3 else ""
    try:
        status = int(status)
    except ValueError:
        raise http.client.BadStatusLine(text) from None
    if not 100 <= status <= 999:
        raise http.client.BadStatusLine(text)
    if version in ("HTTP/1.0", "HTTP/0.9"):
        return 10, status, reason.strip()
    if version.startswith("HTTP/1."):
        return 11, status, reason.strip()
    raise http.client.UnknownProtocol(version)


class _Lane:
    """One kept-alive HTTP/1.1 connection to a plain http:// API base reached without a proxy, for one slot,
    written and read on the client's event loop (one thread for every request in flight: a thread per request
    spends more of the CPU on waking up than on the exchange). What httpx's transport does there at a fraction of
    its CPU, keeping its guarantees: the same request bytes in its order (tests/test_llm_connections.py), the
    whole exchange (connect, write, every read) ended by the request's deadline, reads acknowledged at once
    (_QUICKACK), a reply's head read up to MAX_HEAD_BYTES with http.client's line limits, the body framed as RFC
    9112 says (_framing: by Content-Length, chunked or to the connection's end; a body with no telling length or a
    malformed header line refused), informational replies (1xx) skipped, and a connection reused only after a
    complete HTTP/1.1 reply that keeps it alive and only while nothing came on it since (a server may close an
    idle one). Failures raise httpx's errors (ConnectError, ReadTimeout, ReadError, RemoteProtocolError...), with
    the socket's error as their cause, so both transports are handled alike."""

    def __init__(self, url: str):
        self._address, self.host, _ = _http_parts(url)
        self._wire: _Wire | None = None
        self._reusable = False  # the last reply was read whole and the connection may carry another
        self._heads: dict = {}  # (method, url, headers) -> the request's head but its Content-Length

    async def exchange(self, url: str, data: bytes | None, headers: dict, timeout: float) -> tuple:
        """(status, headers, body) of one request (POST `data`, or GET when None), ending within `timeout`
        seconds in all. A success's body over MAX_REPLY_BYTES is _Rejected; an error's is cut to its first
        bytes. On any failure the connection is closed."""
        import httpx

        stage = [httpx.ConnectTimeout]  # the timeout error of the step under way when the deadline passes
        try:
            async with asyncio.timeout(timeout):
                return await self._exchange(url, data, headers, stage)
        except TimeoutError as err:  # the deadline, or the system's own connect timeout
            self.close()
            failure = stage[0](f"the request's deadline passed ({timeout:g} s)")
            failure.__cause__ = err
        except (http.client.HTTPException, ValueError) as err:  # (ValueError: what the checks did not foresee)
            self.close()
            failure = _unreadable(err)
        except BaseException:
            self.close()
            raise
        raise failure  # here, not in the except clause: its message is all there is to say (see _reason)

    async def _exchange(self, url: str, data: bytes | None, headers: dict, stage: list) -> tuple:
        import httpx

        if self._wire is not None and not self._idle():
            self.close()  # what was left of the last reply, or an idle connection the server closed or wrote on
        self._reusable = False
        if self._wire is None:
            await self._connect()
        wire, method = self._wire, "GET" if data is None else "POST"
        wire.taken = 0
        wire.transport.write(self._head(method, url, headers, data) + (data or b""))  # one write: one packet
        if _QUICKACK is not None:
            wire.transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)
        stage[0] = httpx.ReadTimeout
        status, fields, body, self._reusable = await self._reply(method)
        if not self._reusable:
            self.close()  # what is left of the reply is not read (nor held) any longer
        return status, fields, body

    def _idle(self) -> bool:
        """Whether the connection may carry the next request: the last reply was read whole and kept it alive,
        and nothing came on it since (the server closed it, or wrote what it should not have)."""
        wire = self._wire
        return wire is not None and self._reusable and not wire.ended and not wire.buffer

    async def _reply(self, method: str) -> tuple:
        """(status, headers, body, whether the connection may carry another request) of the reply on the wire."""
        version, status, fields, (chunked, length) = await self._reply_head(method)
        success = status < 300
        body = _Body(fields, MAX_REPLY_BYTES if success else _ERROR_DETAIL, refuse=success)
        whole = await (self._chunks(body) if chunked else self._until(length, body))
        # A reply framed both ways is read as chunked, but its connection is not trusted with another (RFC 9112
        # 6.3: "ought to be handled as an error"); nor one read to its end, or that asks to be closed.
        closes = ("transfer-encoding" in fields and "content-length" in fields) or (not chunked and length is None)
        reusable = whole and version == 11 and not closes and "close" not in fields.get("connection", "").lower()
        return status, fields, bytes(body.data), reusable

    async def _connect(self) -> None:
        """A new connection, trying each address the host name has, as socket.create_connection does (and with its
        errors: the last address's), then handed to the event loop (which sets TCP_NODELAY, as httpcore does)."""
        import httpx

        loop = asyncio.get_running_loop()
        host, port = self._address
        failure = None
        try:
            try:  # an address needs no lookup (the loop's would go through a thread)
                addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST)
            except socket.gaierror:
                addresses = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as err:
            raise httpx.ConnectError(str(err)) from err
        for family, kind, protocol, _, address in addresses:
            sock = None
            try:
                sock = socket.socket(family, kind, protocol)  # (out of file descriptors: an OSError here too)
                sock.setblocking(False)
                await loop.sock_connect(sock, address)
                _, self._wire = await loop.create_connection(_Wire, sock=sock)
                return
            except TimeoutError:
                _close(sock)
                raise
            except OSError as err:
                _close(sock)
                failure = err
            except BaseException:
                _close(sock)
                raise
        raise httpx.ConnectError(str(failure)) from failure

    def _head(self, method: str, url: str, headers: dict, data: bytes | None) -> bytes:
        """The request's head, as http.client writes it after httpx's headers (_request_headers): built once for
        a URL and headers (their values are checked: ChatClient._headers), then only its Content-Length."""
        key = (method, url, tuple(headers.items()))
        head = self._heads.get(key)
        if head is None:
            lines = [f"{method} {_http_parts(url)[2]} HTTP/1.1", f"Host: {self.host}"]
            lines += [f"{name}: {value}" for name, value in _request_headers(headers)]
            head = self._heads[key] = "\r\n".join(lines).encode("latin-1") + b"\r\n"
        return head + (b"\r\n" if data is None else b"Content-Length: %d\r\n\r\n" % len(data))

    async def _reply_head(self, method: str) -> tuple:
        """(version, status, headers, (chunked, length)) of the reply, after any informational ones (1xx: 100
        Continue and others skipped, 101 refused): MAX_HEAD_BYTES read at most for all their heads."""
        import httpx

        left = MAX_HEAD_BYTES
        for _ in range(_MOST_HEADER_LINES):
            (version, status, _), lines, taken = await self._next_head(left)
            left -= taken
            if status == 100:
                continue  # 100 Continue: its headers skipped
            fields = _fields(lines)
            framing = _framing(fields, status, method)  # a malformed Content-Length is refused on any reply
            if status == 101:
                raise httpx.RemoteProtocolError("the server switched protocols (HTTP 101) unasked")
            if not 100 < status < 200:
                return version, status, fields, framing
        raise httpx.RemoteProtocolError("the server sent only informational replies (1xx)")

    async def _next_head(self, left: int) -> tuple[tuple, list, int]:
        """(version, status, reason), header lines without their ends and the bytes taken of the next head on the
        wire, within `left` bytes: at once when it has arrived whole, every line ended by CRLF (as servers write
        them); else line by line as it comes (a bare LF ends a line too, as http.client reads it). Its status line
        is checked as soon as it has come (what is not HTTP fails then, not at the request's deadline)."""
        wire = self._wire
        buffer, status = wire.buffer, None
        seen = breaks = line_start = 0  # bytes searched already (none searched again: a head trickled a byte at a
        while True:                     # time is read in linear time), line ends among them, the last line's start
            end = buffer.find(b"\r\n\r\n", max(0, seen - 3), left)
            if end >= 0:
                break
            if status is None and 0 <= (line_end := buffer.find(b"\n", seen, _MOST_HEADER_LINE)):
                status = _status_line(bytes(buffer[:line_end + 1]))
            breaks += buffer.count(b"\n", seen)
            line_start = max(line_start, buffer.rfind(b"\n", seen) + 1)
            if (len(buffer) >= left or len(buffer) - line_start >= _MOST_HEADER_LINE or breaks > _MOST_HEADER_LINES + 1
                    or buffer.find(b"\n\n", max(0, seen - 1)) >= 0 or buffer.find(b"\n\r\n", max(0, seen - 2)) >= 0):
                end = None  # over a cap, or a line ended by a bare LF: line by line, which says which, at once
                break
            seen = len(buffer)
            if not await wire._more():
                end = None  # the connection's end: line by line, which says what came
                break
        if end is not None:
            raw = bytes(buffer[:end])
            crlf = raw.count(b"\r\n")
            if crlf <= _MOST_HEADER_LINES and raw.count(b"\n") == crlf == raw.count(b"\r"):
                lines = raw.split(b"\r\n")
                if max(map(len, lines)) <= _MOST_HEADER_LINE - 2:
                    status = status or _status_line(lines[0] + b"\r\n")
                    wire.take(end + 4)
                    return status, lines[1:], end + 4
        status_line = await self._line(left, "status line")
        status, taken, lines = _status_line(status_line), len(status_line), []
        while True:
            line = await self._line(left - taken, "header line")
            taken += len(line)
            if line in (b"\r\n", b"\n"):
                return status, lines, taken
            if not line.endswith(b"\n"):  # the connection's end inside the head: no reply to read
                raise http.client.RemoteDisconnected("the server closed the connection in the middle of a reply's "
                                                     "head")
            if len(lines) == _MOST_HEADER_LINES:
                raise http.client.HTTPException(f"got more than {_MOST_HEADER_LINES} headers")
            lines.append(line.rstrip(b"\r\n"))

    async def _line(self, left: int, what: str) -> bytes:
        """A line of the reply's head: at most http.client's _MAXLINE bytes, within the `left` of MAX_HEAD_BYTES."""
        import httpx

        line = await self._wire.line(min(_MOST_HEADER_LINE, left))
        if line is None:
            if left <= _MOST_HEADER_LINE:
                raise httpx.RemoteProtocolError(f"the reply's headers exceed {MAX_HEAD_BYTES:,} bytes")
            raise http.client.LineTooLong(what)
        return line

    async def _until(self, length: int | None, body: "_Body") -> bool:
        """A body of `length` bytes (None: to the connection's end) fed to `body`; whether it was read whole."""
        import httpx

        while length is None or length > 0:
            piece = await self._wire.some(_READ_SIZE if length is None else min(_READ_SIZE, length))
            if not piece:
                if length is None:
                    return True
                raise httpx.RemoteProtocolError(f"the server closed the connection {length:,} bytes before the end "
                                                "of the reply's body")
            if length is not None:
                length -= len(piece)
            if body.feed(piece):
                return False
        return True

    async def _chunks(self, body: "_Body") -> bool:
        """A chunked body fed to `body` (sizes as HTTP/1.1 writes them, CRLF after each chunk; trailers read and
        dropped); whether it was read whole. A malformed or cut one is http.client's IncompleteRead."""
        wire = self._wire
        while True:
            line = await wire.line(_MOST_HEADER_LINE)
            if line is None:
                raise http.client.LineTooLong("chunk size")
            size = _CHUNK_SIZE.fullmatch(line)
            if size is None:
                raise http.client.IncompleteRead(line)
            left = int(size.group(1), 16)
            if not left:
                break
            while left:
                piece = await wire.some(min(_READ_SIZE, left))
                if not piece:
                    raise http.client.IncompleteRead(b"")
                left -= len(piece)
                if body.feed(piece):
                    return False
            if (end := await wire.exactly(2)) != b"\r\n":
                raise http.client.IncompleteRead(end)
        while True:  # trailer lines, up to an empty one (or the connection's end)
            line = await wire.line(_MOST_HEADER_LINE)
            if line is None:
                raise http.client.LineTooLong("trailer line")
            if line in (b"\r\n", b"\n", b""):
                return True

    def close(self) -> None:
        """Close the connection (from the event loop's thread)."""
        if self._wire is not None:
            self._wire.transport.abort()
            self._wire = None
        self._reusable = False


def _unreadable(err: Exception):
    """httpx's RemoteProtocolError for a reply http.client could not read, saying why in a line."""
    import httpx

    if isinstance(err, http.client.RemoteDisconnected):
        return httpx.RemoteProtocolError("the server closed the connection without sending a reply")
    if isinstance(err, http.client.IncompleteRead):
        return httpx.RemoteProtocolError("the server closed the connection in the middle of a chunked body, or "
                                         "sent a malformed one")
    detail = str(err)  # a status line that is not one is quoted, cut, as it came
    return httpx.RemoteProtocolError(f"not a readable HTTP/1.x reply ({type(err).__name__}: {detail[:60]!r}"
                                     f"{'...' if len(detail) > 60 else ''})")


@functools.lru_cache(maxsize=256)
def _http_parts(url: str) -> tuple:
    """((host, port) to connect to, the Host header, the request target) of an http:// URL, as httpx makes them
    (an IDNA host encoded, the default port left out of Host, the path percent-encoded); parsed once a URL."""
    import httpx

    parsed = httpx.URL(url)
    address = (parsed.raw_host.decode("ascii"), parsed.port or DEFAULT_PORTS["http"])
    return address, parsed.netloc.decode("ascii"), parsed.raw_path.decode("ascii")


def _request_headers(headers: dict) -> list:
    """An exchange's headers: what httpx's client sends by default (compression declined: a server compressing
    anyway is read by _read_body, which caps what the body inflates to; httpx's own decoding would not), then
    `headers`."""
    import httpx

    return [("Accept", "*/*"), ("Connection", "keep-alive"), ("User-Agent", f"python-httpx/{httpx.__version__}"),
            ("Accept-Encoding", "identity"), *headers.items()]  # in the order httpx.Client sent them


_DECODERS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS,
             "deflate": 32 + zlib.MAX_WBITS}  # zlib window bits: a gzip stream; a zlib (or gzip) stream


class _Body:
    """A reply body fed piece by piece as it arrives, still compressed (feed), kept up to `limit` bytes after its
    Content-Encoding (`data`). Over the limit: _Rejected when `refuse` (the length the reply announces is checked
    before any byte is read), else the first `limit` bytes (an error's detail). The pieces are inflated here
    INFLATE_STEP at a time (inflating a 64 kB piece of a gzip bomb whole would make 64 MB); the compressed bytes
    count too. Both transports' bodies go through it."""

    def __init__(self, headers, limit: int, refuse: bool):
        declared = headers.get("Content-Length", "")
        if refuse and _LENGTH.fullmatch(declared) and int(declared) > limit:
            raise _Rejected(f"the reply announces {int(declared):,} bytes, more than the {limit:,} bytes read "
                            "(MAX_REPLY_BYTES)")
        self.encoding = headers.get("Content-Encoding", "").strip().lower()
        self._decoder = None
        if self.encoding in _DECODERS:
            self._decoder = zlib.decompressobj(_DECODERS[self.encoding])
        elif self.encoding not in ("", "identity") and refuse:
            raise _Rejected(f"the reply is sent with Content-Encoding {self.encoding!r}, which this client does not "
                            "read (it asks for identity and reads gzip or deflate, within MAX_REPLY_BYTES once "
                            "inflated)")
        # (An error's detail in an encoding not read here is quoted as it came: it is only shown.)
        self.limit, self.refuse = limit, refuse
        self.data, self.received = bytearray(), 0

    def feed(self, chunk: bytes) -> bool:
        """Take the next piece as it came; True once no more is wanted (an error's detail is complete)."""
        decoder, limit, body = self._decoder, self.limit, self.data
        self.received += len(chunk)
        data = chunk
        while data:
            if decoder is None:
                piece, data = data, b""
            else:
                try:
                    piece = decoder.decompress(data, min(INFLATE_STEP, limit + 1 - len(body)))
                except zlib.error as err:
                    if not self.refuse:
                        return True
                    raise _Rejected(f"the reply's {self.encoding} body cannot be decompressed ({err})") from None
                if not piece and decoder.unconsumed_tail == data:
                    break  # nothing more comes out of this input (never expected; no endless loop either way)
                data = decoder.unconsumed_tail
            body += piece
            if len(body) > limit or self.received > limit:
                if self.refuse:
                    raise _Rejected(f"the reply is larger than {limit:,} bytes, the most read (MAX_REPLY_BYTES)"
                                    + (f", once its {self.encoding} content is inflated" if decoder else ""))
                del body[limit:]
                return True
        return False


def _read_body(response, limit: int, refuse: bool) -> bytes:
    """At most `limit` bytes of an httpx response's body, streamed raw (iter_raw) through _Body."""
    body = _Body(response.headers, limit, refuse)
    for chunk in response.iter_raw():
        if body.feed(chunk):
            break
    return bytes(body.data)


def _httpx_exchange(transport, url: str, data: bytes | None, headers: dict, timeout: float) -> tuple:
    """ChatClient._exchange through httpx's blocking transport, in a thread of the client's pool: every socket
    operation ends by the request's deadline (_request.deadline, read by _DeadlineStream)."""
    import httpx

    _request.deadline = time.monotonic() + timeout
    try:
        request = httpx.Request("GET" if data is None else "POST", url, content=data,
                                headers=_request_headers(headers),
                                extensions={"timeout": httpx.Timeout(timeout).as_dict()})
        response = transport.handle_request(request)
        response.request = request
        try:
            success = response.status_code < 300
            body = _read_body(response, MAX_REPLY_BYTES if success else _ERROR_DETAIL, refuse=success)
            return response.status_code, response.headers, body
        finally:
            response.close()
    finally:
        _request.deadline = None


def _connection_failure(err) -> bool:
    """Whether an httpx error means the server could not be reached, dropped the connection or did not answer
    in time (refused, reset, closed without a reply, any timeout): what the circuit breaker counts."""
    import httpx

    return isinstance(err, (httpx.ConnectError, httpx.TimeoutException, httpx.ReadError, httpx.WriteError,
                            httpx.RemoteProtocolError))


class _Breaker:
    """Counts each API base's consecutive failed attempts (no connection, a dropped one, no reply by the deadline,
    HTTP 502/503/504); any other reply from the base resets its count. Once one base has failed BREAKER_FAILURES
    times in a row over at least BREAKER_SECONDS, `tripped` is set and `dead` says which base, how often, over
    how long and the last error."""

    def __init__(self, bases: int):
        self._lock = threading.Lock()
        self._streaks: list[tuple | None] = [None] * bases  # (failures, first failure time, last error)
        self.tripped = asyncio.Event()  # set on the client's event loop (every attempt runs there): waits end at once
        self.dead: tuple | None = None  # (base index, failures, seconds, last error)

    def alive(self, base: int) -> None:
        with self._lock:
            self._streaks[base] = None

    def failed(self, base: int, error: str) -> None:
        now = time.monotonic()
        with self._lock:
            failures, first, _ = self._streaks[base] or (0, now, None)
            self._streaks[base] = (failures + 1, first, error)
            if failures + 1 >= BREAKER_FAILURES and now - first >= BREAKER_SECONDS and self.dead is None:
                self.dead = (base, failures + 1, now - first, error)
                self.tripped.set()

    def down(self) -> tuple | None:
        """`dead`, or else a base still failing BREAKER_FAILURES times in a row (requests that failed faster than
        BREAKER_SECONDS, every one of them, end a run the same way)."""
        with self._lock:
            if self.dead is not None:
                return self.dead
            for base, streak in enumerate(self._streaks):
                if streak is not None and streak[0] >= BREAKER_FAILURES:
                    return (base, streak[0], time.monotonic() - streak[1], streak[2])
        return None


class _Progress:
    """How far complete_all is: tqdm's bar when stderr is a terminal; else (a log file, CI, a pipe) a plain line
    every PROGRESS_EVERY seconds, and a last one when any was printed."""

    def __init__(self, desc: str, asked: int, cached: int):
        self.desc, self.asked, self.cached = desc, asked, cached
        self.answered = self.failed = 0
        self.start = time.monotonic()
        self.due = self.start + PROGRESS_EVERY
        self.shown = None  # (answered, failed) of the last line printed
        self.bar = None
        if sys.stderr is not None and sys.stderr.isatty():
            from tqdm.auto import tqdm

            self.bar = tqdm(total=asked, desc=desc, unit="req")

    def wait_time(self) -> float | None:
        """How long the caller may wait for answers before the next line is due (None: no lines)."""
        return None if self.bar is not None else max(0.0, self.due - time.monotonic())

    def count(self, ok: bool) -> None:
        if ok:
            self.answered += 1
        else:
            self.failed += 1
        if self.bar is not None:
            self.bar.update(1)

    def report(self) -> None:
        if self.bar is None and time.monotonic() >= self.due:
            self._line()
            self.due = time.monotonic() + PROGRESS_EVERY

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        elif self.shown is not None and self.shown != (self.answered, self.failed):
            self._line()

    def _line(self) -> None:
        left = self.asked - self.answered - self.failed
        print(f"{self.desc}: {self.answered} answered, {self.cached} cached, {self.failed} failed, {left} left "
              f"({time.monotonic() - self.start:.0f} s)", file=sys.stderr, flush=True)
        self.shown = (self.answered, self.failed)


_COLLECT_FOR = 0.01  # seconds the event loop lets answers gather between two cache writes
_KEYS_A_QUERY = 500  # keys looked up by one SQL query (SQLite allows 999 parameters at least)


class ChatCache:
    """sqlite store of replies keyed by (model, settings: API origins and generation settings, request key); each
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

    def get_many(self, model: str, settings: str, keys) -> dict:
        """{key: record} of the `keys` the cache holds, in one query per _KEYS_A_QUERY keys (not one per key)."""
        keys, found = list(keys), {}
        for start in range(0, len(keys), _KEYS_A_QUERY):
            part = keys[start:start + _KEYS_A_QUERY]
            marks = ",".join("?" * len(part))
            with self._lock:
                rows = self._db.execute(f"SELECT key, record FROM completions WHERE model=? AND settings=? AND key IN "
                                        f"({marks})", (model, settings, *part)).fetchall()
            found.update((key, json.loads(record)) for key, record in rows)
        return found

    def put(self, model: str, settings: str, key: str, record: dict) -> None:
        self.put_many(model, settings, [(key, record)])

    def put_many(self, model: str, settings: str, records) -> None:
        """Store (key, record) pairs in one transaction."""
        rows = [(model, settings, key, json.dumps(record, ensure_ascii=False)) for key, record in records]
        if not rows:
            return
        with self._lock:
            self._db.executemany("INSERT OR REPLACE INTO completions VALUES (?, ?, ?, ?)", rows)
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
        import tenacity

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
        # A wait longer than the whole request may take is not worth it: the request gives up instead.
        self.max_wait = min(RETRY_AFTER_CAP, timeout)
        # A retry with less time than this left of the request's deadline is not started.
        self.min_attempt = min(MIN_ATTEMPT_SECONDS, timeout / 4)
        self._backoff = (tenacity.wait_exponential(multiplier=backoff, max=self.max_wait)
                         + tenacity.wait_random(0, backoff / 2))
        self.cache = ChatCache(Path(cache_path) if cache_path else cache_dir("llm") / "chat.sqlite")
        # Whatever the signature says produced an answer (the API origins too: one model name on two servers can
        # be two models) and the generation settings are part of the cache key.
        self._settings = json.dumps({"api": self.endpoint.origins, "temperature": temperature,
                                     "max_tokens": max_tokens})
        # One slot per request allowed in flight, each with its own kept-alive connection (a one-connection
        # transport), bases interleaved: a worker takes the slot at the head and puts it back at the tail, so
        # bases are served in turn and a slow base gets fewer requests. Each transport is made when first used (a
        # run of a few requests makes a few), all with one TLS context (loading the CA certificates takes
        # milliseconds).
        import httpx

        self._lanes: list[list] = [[None] * concurrency for _ in self.urls]
        self._tls = httpx.create_ssl_context()
        self._proxies = [_proxy_for(base) for base in self.endpoint.api_bases]
        for base, lanes in enumerate(self._lanes):
            lanes[0] = self._new_lane(base)  # now: a proxy setting httpx refuses is an error at once
        self._breaker = _Breaker(len(self.urls))
        self._slots: asyncio.Queue = asyncio.Queue()
        for lane in range(concurrency):
            for index in range(len(self.urls)):
                self._slots.put_nowait((index, lane))
        self._loop: asyncio.AbstractEventLoop | None = None  # made on first use (_run)
        self._loop_thread: threading.Thread | None = None
        self._pool = None  # the threads httpx's blocking transports are asked from (_exchange), made on first use
        self._loop_lock = threading.Lock()
        self._loop_pid, self._closed = os.getpid(), False
        self._lock = threading.Lock()
        self.calls_sent = 0
        self.sent_per_base = [0] * len(self.urls)
        self._stages: dict[str, dict] = {}

    @property
    def signature_fields(self) -> dict:
        """What identifies the judge in a score's signature (origins only: no key, no path secrets); every metric
        that asks an LLM adds these fields."""
        return self.endpoint.signature_fields()

    @property
    def cap_reached(self) -> bool:
        """True once a request was left unasked because the client had sent max_calls requests."""
        return any(stage["not_asked"] for stage in self._stages.values())

    def close(self) -> None:
        """Close the cache and the connections, and end the client's event loop; the client cannot be used
        afterwards."""
        self.cache.close()
        with self._loop_lock:
            loop, self._loop, self._closed = self._loop, None, True
            if self._loop_pid != os.getpid():
                loop = None  # a forked child: the loop (and its thread) is the parent's; nothing of it runs here
        if loop is not None:
            asyncio.run_coroutine_threadsafe(self._close_lanes(), loop).result()
            loop.call_soon_threadsafe(loop.stop)
            self._loop_thread.join()
            loop.close()
        for lanes in self._lanes:
            for transport in lanes:
                if transport is not None and not isinstance(transport, _Lane):
                    transport.close()
        if self._pool is not None:
            self._pool.shutdown()

    def _check_usable(self) -> None:
        """ChatError when this client can ask nothing: closed, or inherited by a forked process."""
        if self._closed:
            raise ChatError("this chat client is closed")
        if self._loop is not None and self._loop_pid != os.getpid():
            raise ChatError("this chat client was opened by the process this one was forked from, whose event loop "
                            "does not run here: open a new client in this process")

    async def _close_lanes(self) -> None:
        for lanes in self._lanes:
            for transport in lanes:
                if isinstance(transport, _Lane):
                    transport.close()
        await asyncio.get_running_loop().shutdown_default_executor()  # (its threads looked host names up)

    def _run(self, coroutine, wait: bool = True):
        """Run `coroutine` on the client's event loop (started on first use, in its own thread: every request in
        flight is asked from that one thread) and return its result; with wait=False, its concurrent future."""
        with self._loop_lock:
            try:
                self._check_usable()
            except ChatError:
                coroutine.close()
                raise
            if self._loop is None:
                self._loop_pid = os.getpid()
                self._loop = asyncio.new_event_loop()
                self._loop_thread = threading.Thread(target=self._loop.run_forever, name="chimdqa-chat",
                                                     daemon=True)
                self._loop_thread.start()
            running = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        return running.result() if wait else running

    def __enter__(self) -> "ChatClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- asking ----------------------------------------------------------------------------------------------

    def pending(self, requests: Sequence[ChatRequest], parse: Callable[[str], object] | None = None) -> int:
        """How many distinct requests are not in the cache (what complete_all would ask); with `parse`, a cached
        reply that parse rejects counts too (complete_all asks it again)."""
        keys = {r.key for r in requests}
        records = self.cache.get_many(self.model, self._settings, keys)
        if parse is not None:
            return sum(self._cached_outcome(records.get(key), parse) is None for key in keys)
        return len(keys) - len(records)

    def cached(self, requests: Sequence[ChatRequest], parse: Callable[[str], object]) -> list[ChatOutcome | None]:
        """The cached outcome of each request, or None where the cache has no usable reply; asks nothing."""
        keys = [r.key for r in requests]
        records = self.cache.get_many(self.model, self._settings, set(keys))
        return [self._cached_outcome(records.get(key), parse) for key in keys]

    @staticmethod
    def _cached_outcome(record: dict | None, parse) -> ChatOutcome | None:
        """A cached reply's outcome; None when there is none or `parse` rejects it."""
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
        counted under `stage` (see usage_report). EndpointDied when an API base stopped answering (the answers
        received before are cached); ChatError when the endpoint refuses every request alike."""
        outcomes: dict[str, ChatOutcome] = {}
        todo: dict[str, ChatRequest] = {}
        unique: dict[str, ChatRequest] = {}
        for request in requests:
            unique.setdefault(request.key, request)  # the first of requests with one key is the one asked
        records = self.cache.get_many(self.model, self._settings, unique)
        for key, request in unique.items():
            hit = self._cached_outcome(records.get(key), parse)
            if hit is not None:
                outcomes[key] = hit
            else:
                todo[key] = request
        self._count(stage, cache_hits=len(outcomes), asked=len(todo))
        if todo:
            outcomes.update(self._ask_all(list(todo.values()), parse, desc or stage, stage, len(outcomes)))
            down = self._breaker.down()
            if down is not None and not all(o.ok for o in outcomes.values()):
                raise EndpointDied(self._died_message(down, sum(o.ok for o in outcomes.values()), len(outcomes)))
        return [outcomes[r.key] for r in requests]

    def _died_message(self, down: tuple, cached: int, total: int) -> str:
        base, failures, seconds, error = down
        slow = (f" If it is only slow, a longer --timeout (now {self.timeout:g} s for a whole request) lets it "
                "answer." if _TIMED_OUT in error else "")
        return (f"the LLM endpoint {origin(self.urls[base])} stopped answering: {failures} attempts failed in a row "
                f"over {seconds:.0f} s (no connection, a dropped one, no reply within --timeout, or HTTP 502/503/504 "
                f"from a gateway; last: {error}). {cached} of {total} answers are cached: run the same command "
                f"again when the endpoint is back, and only the {total - cached} missing are asked.{slow}")

    def _ask_all(self, requests: list[ChatRequest], parse, desc: str, stage: str,
                 cached: int) -> dict[str, ChatOutcome]:
        """The outcomes of `requests`, asked on the client's event loop, which also writes each answer to the
        cache and reports progress (this thread only waits: a second thread taking turns with the loop's at the
        interpreter lock would delay the replies it reads). Interrupted (Ctrl-C), no new request is sent and the
        answers of those in flight (each ends by its deadline) are still cached."""
        results = {}
        progress = _Progress(desc or self.model, len(requests), cached)
        stop = threading.Event()
        running = self._run(self._work(collections.deque(requests), results, progress, stop, parse, stage),
                            wait=False)
        try:
            error = running.result()
        finally:
            stop.set()
            concurrent.futures.wait([running])
            progress.close()
        if error is not None:
            raise error  # here, in the caller's thread (raised on the loop's, a KeyboardInterrupt would end it)
        return results

    async def _work(self, work: collections.deque, results: dict, progress: "_Progress", stop: threading.Event,
                    parse, stage: str) -> BaseException | None:
        """One worker a slot, each asking the next request of `work` until none is left or `stop` is set; their
        answers are cached _COLLECT_FOR seconds at a time (one transaction for several) and at the end. The first
        error (a ChatError: a bad key...; a cache that cannot be written; whatever `parse` raised) stops the run
        once the requests in flight have ended and every answer that can be is cached; it is returned, for the
        caller to raise."""
        loop, answered, errors, flushing = asyncio.get_running_loop(), [], [], []

        def flush() -> None:
            flushing.clear()
            batch, answered[:] = answered[:], []
            try:
                self._keep(batch, results, progress)
            except Exception as error:  # (a full disk...): no request is sent whose answer could not be kept
                errors.append(error)
                stop.set()
            progress.report()

        async def worker() -> None:
            while not stop.is_set():
                try:
                    request = work.popleft()
                except IndexError:
                    return
                try:
                    answered.append((request, await self._ask_one(request, parse, stage)))
                except asyncio.CancelledError:
                    raise
                except BaseException as error:  # (a KeyboardInterrupt raised here would end the loop's thread)
                    errors.append(error)
                    stop.set()
                    return
                if not flushing:
                    flushing.append(loop.call_later(_COLLECT_FOR, flush))

        async def reporter() -> None:  # progress lines while no answer comes
            while (wait := progress.wait_time()) is not None:
                await asyncio.sleep(wait + 0.01)
                progress.report()

        lines = loop.create_task(reporter())
        try:
            await asyncio.gather(*(worker() for _ in range(min(self.concurrency * len(self.urls), len(work)))))
        finally:
            lines.cancel()
            for handle in flushing:
                handle.cancel()
            flush()
        return errors[0] if errors else None

    def _keep(self, answered: list, results: dict, progress: "_Progress") -> None:
        """Cache the answers of `answered` ((request, outcome) pairs) in one transaction, then count them: counted
        once written, so a killed run loses nothing it was told (at most the last _COLLECT_FOR seconds of answers,
        never counted, are asked again)."""
        self.cache.put_many(self.model, self._settings, [
            (request.key, {"text": outcome.raw, "logprobs": outcome.logprobs, "usage": outcome.usage})
            for request, outcome in answered if outcome.ok])
        for request, outcome in answered:
            results[request.key] = outcome
            progress.count(outcome.ok)

    async def _ask_one(self, request: ChatRequest, parse, stage: str) -> ChatOutcome:
        outcome = await self._attempts(request, parse, stage)
        if not outcome.ok:
            capped = outcome.error == CAP_ERROR.format(cap=self.max_calls)
            self._count(stage, **({"not_asked": 1} if capped else {"failed": 1}))
        return outcome

    async def _attempts(self, request: ChatRequest, parse, stage: str) -> ChatOutcome:
        """Ask `request`; an unparseable reply is asked again: once with the request's repair instruction
        appended when it has one (and parse_retries allows a retry), else up to parse_retries times unchanged."""
        reply, problem = None, None
        tries = self.parse_retries + 1 if request.repair is None else 1 + min(1, self.parse_retries)
        asked = request
        for _ in range(tries):
            try:
                reply = await self._post(asked, stage)
            except _CapReached:
                return ChatOutcome(None, reply and reply["text"], CAP_ERROR.format(cap=self.max_calls))
            except _EndpointDown:
                return ChatOutcome(None, reply and reply["text"], "not asked: the endpoint stopped answering")
            except _Transient as failure:
                return ChatOutcome(None, reply and reply["text"], str(failure))
            except _Rejected as failure:
                return ChatOutcome(None, reply and reply["text"], f"request rejected: {failure}")
            try:
                return ChatOutcome(parse(reply["text"]), reply["text"], None, logprobs=reply["logprobs"],
                                   usage=reply["usage"])
            except ValueError as failure:
                problem = failure
            if request.repair is not None:
                asked = request.repaired(reply["text"])
        how = (f"after {tries} attempts" if request.repair is None else
               "also after the repair instruction" if tries > 1 else "(no retry: parse_retries=0)")
        return ChatOutcome(None, reply["text"], f"unparseable reply {how}: {problem}", logprobs=reply["logprobs"],
                           usage=reply["usage"])

    def _body(self, request: ChatRequest) -> dict:
        body = {"model": self.model, "messages": list(request.messages), "temperature": self.temperature}
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        body.update(request.extra or {})
        return body

    def _headers(self) -> dict:
        """The request's own headers: its content type and the API key, when the environment has one; a key that
        an HTTP header cannot carry (a line break, another control character, a non-ASCII one) is a ChatError that
        does not quote it (httpx's error would have, whole)."""
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env)
        if key:
            if not (key.isascii() and key.isprintable()) or key != key.strip():
                raise ChatError(f"${self.api_key_env} is not an API key an HTTP header can carry: it has a line "
                                "break, a control character, a non-ASCII character or a space at an end")
            headers["Authorization"] = f"Bearer {key}"
        return headers

    async def _post(self, request: ChatRequest, stage: str) -> dict:
        """The reply {text, logprobs, usage}, retrying transient failures (tenacity) while attempts are left, the
        request's deadline (`timeout` seconds after it starts) leaves time for the wait and the next attempt, and
        the wait the server asks for is one this client makes; raises _Transient saying why it gave up,
        _CapReached when the client may send no more requests, _EndpointDown once the circuit breaker is open."""
        import tenacity

        data = json.dumps(self._body(request), ensure_ascii=False).encode("utf-8")
        headers = self._headers()
        deadline = time.monotonic() + self.timeout
        refused_wait = []  # the wait that the deadline left no time for, when that is why the request gave up

        def out_of_time(state) -> bool:
            late = deadline - time.monotonic() - state.upcoming_sleep < self.min_attempt
            if late:
                refused_wait.append(state.upcoming_sleep)
            return late

        try:  # most requests: one attempt, no retry machinery
            return await self._attempt(data, headers, stage, deadline)
        except _Transient as failure:
            first = [failure]

        retrying = tenacity.AsyncRetrying(
            retry=tenacity.retry_if_exception_type(_Transient),
            stop=tenacity.stop_after_attempt(self.max_retries + 1) | self._wait_too_long | out_of_time,
            wait=self._wait, sleep=self._nap, reraise=True)

        async def attempt() -> dict:  # the first attempt's failure again, as tenacity's first attempt; then new
            if first:
                raise first.pop()
            return await self._attempt(data, headers, stage, deadline)

        try:
            return await retrying(attempt)
        except _Transient as failure:
            attempts = retrying.statistics.get("attempt_number", 1)
            message = f"gave up after {attempts} attempt{'s' if attempts > 1 else ''}: {failure}"
            if self._wait_too_long_for(failure):
                message += (f" (its Retry-After asks for a wait of {failure.wait:g} s; this client waits at most "
                            f"{self.max_wait:g} s, the lesser of RETRY_AFTER_CAP and --timeout)")
            elif refused_wait and not failure.timed_out:
                asked = " (its Retry-After)" if failure.wait is not None else ""
                message += (f" (no time left for a retry: a wait of {refused_wait[-1]:.2g} s{asked} and another "
                            f"attempt do not fit in the request's {self.timeout:g} s deadline, --timeout)")
            raise _Transient(message) from None

    async def _nap(self, seconds: float) -> None:
        """The wait before a retry, ended at once when the circuit breaker trips (the retry then is not sent)."""
        try:
            await asyncio.wait_for(self._breaker.tripped.wait(), seconds)
        except TimeoutError:
            pass

    def _wait_too_long_for(self, failure: BaseException | None) -> bool:
        return isinstance(failure, _Transient) and failure.wait is not None and failure.wait > self.max_wait

    def _wait_too_long(self, state) -> bool:
        return self._wait_too_long_for(state.outcome.exception())

    def _wait(self, state) -> float:
        """The server's Retry-After when it sent one (no longer than max_wait: see _wait_too_long), else
        exponential backoff with jitter."""
        failure = state.outcome.exception()
        return failure.wait if failure.wait is not None else self._backoff(state)

    async def _attempt(self, data: bytes, headers: dict, stage: str, deadline: float) -> dict:
        if self._breaker.tripped.is_set():
            raise _EndpointDown()
        slot = await self._slots.get()
        base, lane = slot
        try:
            left = deadline - time.monotonic()
            if left <= 0:  # only when taking a slot took that long: not the server's doing, not counted
                raise _Transient(self._timed_out(self.timeout), timed_out=True)
            self._reserve_call(base, stage)
            reply = await self._post_once(base, data, headers, left, total=self.timeout, lane=lane)
        finally:
            self._slots.put_nowait(slot)
        self._count_reply(stage, reply["usage"])
        return reply

    def _reserve_call(self, base: int, stage: str) -> None:
        with self._lock:
            if self.max_calls is not None and self.calls_sent >= self.max_calls:
                raise _CapReached()
            self.calls_sent += 1
            self.sent_per_base[base] += 1
            self._stage(stage)["requests"] += 1

    async def _exchange(self, transport, url: str, data: bytes | None, headers: dict, timeout: float) -> tuple:
        """(status, headers, body) of one HTTP request (POST `data`, or GET) through `transport` (a slot's) that
        ends within `timeout` seconds in all. A success's body over MAX_REPLY_BYTES is _Rejected; an error's is
        cut to its first bytes. httpx's errors are raised as httpx raises them. A _Lane is asked on the event
        loop; httpx's blocking transport from a thread of the client's pool (one per slot)."""
        if isinstance(transport, _Lane):
            return await transport.exchange(url, data, headers, timeout)
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(self.concurrency * len(self.urls),
                                                               thread_name_prefix="chimdqa-http")
        return await asyncio.get_running_loop().run_in_executor(self._pool, _httpx_exchange, transport, url, data,
                                                                headers, timeout)

    def _timed_out(self, total: float) -> str:
        flag = ", --timeout" if total == self.timeout else ""
        return f"timed out: no complete reply by the request's deadline ({total:g} s in all{flag})"

    def _lane(self, base: int, lane: int):
        """The one-connection transport of the base's slot `lane`, made on first use (by the worker holding the
        slot, on the event loop: no lock needed; lane 0, which a probe uses outside the slots, is made with the
        client)."""
        transport = self._lanes[base][lane]
        if transport is None:
            transport = self._lanes[base][lane] = self._new_lane(base)
        return transport

    def _new_lane(self, base: int):
        """A one-connection transport to API base `base`: a _Lane for plain http:// without a proxy
        (_lean_allowed), else httpx's through the proxy the environment names."""
        url, proxy = self.urls[base], self._proxies[base]
        return _Lane(url) if _lean_allowed(url, proxy) else _transport(1, proxy, self._tls)

    async def _post_once(self, base: int, data: bytes, headers: dict, timeout: float, total: float | None = None,
                   lane: int = 0) -> dict:
        """One attempt, ending within `timeout` seconds (what is left of a request's deadline of `total`), through
        the base's slot `lane` (the first by default, as a probe asks before any run)."""
        import httpx

        url, total = self.urls[base], total or timeout
        try:
            status, reply_headers, body = await self._exchange(self._lane(base, lane), url, data, headers, timeout)
        except httpx.TimeoutException as err:
            self._breaker.failed(base, f"{type(err).__name__}: {_TIMED_OUT}")
            raise _Transient(self._timed_out(total), timed_out=True) from None
        except httpx.RequestError as err:
            if _connection_failure(err):
                self._breaker.failed(base, _reason(err))
            raise _Transient(f"connection to {origin(url)} failed ({_reason(err)})") from None
        if status in GATEWAY_STATUSES:
            self._breaker.failed(base, f"HTTP {status}: {_detail(body)[:80]}")
        else:
            self._breaker.alive(base)
        if status == 429 or status >= 500:
            raise _Transient(f"HTTP {status}: {_detail(body)}", _retry_after(reply_headers.get("Retry-After")))
        if status in FATAL_STATUSES:
            hint = f" (is ${self.api_key_env} set and valid?)" if status in (401, 403) else ""
            raise ChatError(f"{url} answered HTTP {status}{hint}: {_detail(body)}")
        if status >= 300:
            raise _Rejected(f"HTTP {status}: {_detail(body)}")
        return parse_completion(body)

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
        report = {"model": self.model, "api": self.endpoint.origins, "max_calls": self.max_calls,
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
        chat request of one token. A refused connection, an unknown host, a timeout, HTTP 404, 401 or 403, a reply
        that cannot be read (over MAX_REPLY_BYTES, an unknown encoding) — any failure — raises InputError naming
        the URL at once (no retries). The one-token request counts as a call."""
        import httpx

        self._check_usable()
        timeout = min(timeout, self.timeout)
        headers = self._headers()
        for index, base in enumerate(self.endpoint.api_bases):
            url = _models_url(base)
            try:
                status, _, body = self._run(self._exchange(self._lane(index, 0), url, None, headers, timeout))
            except httpx.RequestError as err:
                raise InputError(f"the LLM endpoint {base} cannot be reached ({_reason(err)}); is the server "
                                 "running and the URL right?") from None
            except ChatError:
                raise  # the client itself cannot ask (closed, or inherited by a forked process): said as it is
            except Exception as err:  # _Rejected (a reply over the size cap...), or whatever else the reply causes
                raise InputError(f"the LLM endpoint {base} sent a reply to GET {url} that cannot be read "
                                 f"({_problem(err)}); is it an OpenAI-compatible server?") from None
            if status in (401, 403):
                raise InputError(f"the LLM endpoint {url} answered HTTP {status} (is ${self.api_key_env} set "
                                 f"and valid?): {_detail(body)}")
            if status >= 300:
                self._probe_chat(index, base, timeout)

    def _probe_chat(self, index: int, base: str, timeout: float) -> None:
        """The endpoint does not list models: ask for one token (some servers only serve chat completions)."""
        body = {"model": self.model, "messages": [{"role": "user", "content": "1"}], "max_tokens": 1,
                "temperature": 0.0}
        try:
            self._reserve_call(index, "probe")
            reply = self._run(self._post_once(index, json.dumps(body).encode("utf-8"), self._headers(), timeout))
            self._count_reply("probe", reply["usage"])
        except _CapReached:
            pass  # no call left to spend on a probe; the run itself reports the cap
        except ChatError as err:
            raise InputError(f"the LLM endpoint {base} refused a one-token request: {err}") from None
        except _Transient as err:
            if not str(err).startswith("HTTP "):  # 429 / 5xx: it is up and busy; the run's retries handle that
                raise InputError(f"the LLM endpoint {base} did not answer a one-token request: {err}") from None
        except _Rejected as err:
            if not str(err).startswith("HTTP "):  # a success this client cannot read (too large, an encoding)
                raise InputError(f"the LLM endpoint {base} sent a reply to a one-token request that cannot be "
                                 f"read: {err}") from None
            # else it answered: the server is up, it only disliked this tiny request
        except Exception as err:  # whatever else: the run would meet it too, so it is said here, as an input error
            raise InputError(f"the LLM endpoint {base} failed a one-token request ({_problem(err)})") from None


def _problem(err: BaseException) -> str:
    """An error's message; its type too where the type is not one of this module's own."""
    own = isinstance(err, (_Transient, _Rejected))
    return str(err) if own else _reason(err)


def _reason(err: BaseException) -> str:
    """The root cause of an httpx error (e.g. ConnectionRefusedError: [Errno 111] Connection refused): httpx
    wraps httpcore's error, which was raised while handling the socket's."""
    while (err.__cause__ or err.__context__) is not None:
        err = err.__cause__ or err.__context__
    return f"{type(err).__name__}: {err}"


def _detail(body: bytes) -> str:
    return body[:_ERROR_DETAIL].decode("utf-8", "replace")


def parse_completion(payload: bytes) -> dict:
    """{text, logprobs, usage} of a chat.completion body; _Transient when it is not one. logprobs: one float
    per generated token from choices[0].logprobs.content, or None when the endpoint sent none."""
    try:
        data = loads(payload, "the reply")
        choice = data["choices"][0]
        content = choice["message"]["content"]
    except (InputError, KeyError, IndexError, TypeError):
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
