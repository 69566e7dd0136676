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
HTTP keeps one connection per request in flight: each of the `concurrency` slots of an API base has its own
one-connection transport (one shared pool would scan all its connections, a poll() each, under one lock twice per
request), asked directly (cookies are neither kept nor sent, redirects are not followed). A plain http:// base
reached without a proxy (a local vLLM or SGLang server, where the client's CPU sets the rate) gets
_LeanTransport, the standard library's http.client with this module's limits on top, at about half of httpx's
CPU a request; https:// and a proxy get
httpx's transport (CHIMDQA_HTTP_CLIENT=httpx sends every request through httpx). Both send the same bytes and
keep every limit above; retries go through tenacity; httpx and tenacity are imported only when a client is made,
so the commands' option parsing stays fast.
"""
from __future__ import annotations

import collections
import functools
import hashlib
import http.client
import io
import json
import os
import queue
import re
import select
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

HTTP_CLIENT_ENV = "CHIMDQA_HTTP_CLIENT"  # "httpx": every request through httpx, none through _LeanTransport
# A reply's status line and headers, informational replies (1xx) before it included: the bytes read before its
# head is parsed (what httpcore allows too). http.client's own limits apply as well, and are looser but for
# one: no line over http.client._MAXLINE (64 kB), no more than http.client._MAXHEADERS (100) header lines.
MAX_HEAD_BYTES = 100 * 2**10
_READ_SIZE = 2**16


def _lean_allowed(url: str, proxy: str | None) -> bool:
    """Whether requests to `url` go through _LeanTransport: plain http:// reached without a proxy, unless the
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


class _DeadlineReads(io.RawIOBase):
    """A connection's bytes as http.client reads a reply from them: every read ends by the request's deadline
    (_left: a server trickling a byte at a time cannot stretch a request, as a timeout per read alone would let
    it), asks for an immediate acknowledgement (_QUICKACK), and raises httpx's errors (ReadTimeout, ReadError)
    with the socket's error as their cause. While a reply's head is read, `head_left` bytes more are read at
    most (MAX_HEAD_BYTES; None once the head is read). It holds the socket's own reader (socket.makefile)
    until the reply is read: the socket stays open when http.client closed the connection first (a reply that
    ends it); it reads the socket directly (the reader's readinto adds nothing but checks made here)."""

    def __init__(self, sock: socket.socket):
        super().__init__()
        self._sock, self._io = sock, sock.makefile("rb", buffering=0)
        self.head_left: int | None = MAX_HEAD_BYTES
        self.reply_left = _MOST_READ_FOR_A_REPLY  # chunk framing and trailers count here; http.client caps neither

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        import httpx

        if self.head_left is not None and self.head_left <= 0:
            raise httpx.RemoteProtocolError(f"the reply's headers exceed {MAX_HEAD_BYTES:,} bytes")
        if self.reply_left <= 0:
            raise httpx.RemoteProtocolError(f"the reply exceeds {_MOST_READ_FOR_A_REPLY:,} bytes with its framing")
        buffer = memoryview(buffer)[:self.reply_left if self.head_left is None else min(self.head_left,
                                                                                        self.reply_left)]
        sock = self._sock
        try:
            sock.settimeout(_left(httpx.ReadTimeout))
            if _QUICKACK is not None:
                sock.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)
            received = sock.recv_into(buffer)
        except TimeoutError as err:
            raise httpx.ReadTimeout(str(err)) from err
        except OSError as err:
            raise httpx.ReadError(str(err)) from err
        if self.head_left is not None:
            self.head_left -= received
        self.reply_left -= received
        return received

    def close(self) -> None:
        self._io.close()
        super().close()


class _Reader(io.BufferedReader):
    """The buffered reader over _DeadlineReads that http.client's reply reads; http.client asks its "socket"
    for a reader (makefile), and this is its own."""

    def makefile(self, mode: str) -> "_Reader":
        return self


class _Reply(http.client.HTTPResponse):
    """http.client's reply, read through _DeadlineReads (`reads`) from the connection's socket, or, for a reply
    after an informational one (1xx) on the same connection, from where that one's reader stopped (`after`).
    Its head is read by begin() below, its body by http.client (by Content-Length, chunked or to the end)."""

    def __init__(self, sock, debuglevel: int = 0, method: str | None = None, url=None, *,
                 after: "_Reply | None" = None):
        if after is None:
            self.reads = _DeadlineReads(sock)
            reader = _Reader(self.reads, _READ_SIZE)
        else:
            self.reads, reader, after.fp = after.reads, after.fp, None  # an informational reply has no body
        super().__init__(reader, debuglevel, method, url)

    def begin(self) -> None:
        """The status line (http.client's reading, 100 Continue skipped), then the header lines read here into
        _Fields, and the body's framing decided from them as HTTP/1.1 says, as h11 (httpx) decides it: http.client
        hands its headers to the email parser (about a third of this client's CPU an exchange) and frames some
        bodies otherwise (`chunked ` with a space is not chunked to it; `Content-Length: 7, 7` is no length)."""
        if self.headers is not None:
            return
        while True:
            version, status, reason = self._read_status()
            if status != http.client.CONTINUE:
                break
            _header_lines(self.fp)  # a 100 Continue's headers: skipped
        self.code = self.status = status
        self.reason = reason.strip()
        if version in ("HTTP/1.0", "HTTP/0.9"):
            self.version = 10
        elif version.startswith("HTTP/1."):
            self.version = 11
        else:
            raise http.client.UnknownProtocol(version)
        self.headers = self.msg = _fields(_header_lines(self.fp))
        self.chunked, self.chunk_left, self.length = _framing(self.headers, status, self._method)
        # A reply with both a Transfer-Encoding and a Content-Length is read as chunked, but its connection is not
        # trusted with another (RFC 9112 6.3: "ought to be handled as an error").
        both = "transfer-encoding" in self.headers and "content-length" in self.headers
        self.will_close = self._check_close() or both or (not self.chunked and self.length is None)

    def getheader(self, name: str, default=None):
        return self.headers.get(name, default)

    def _read_next_chunk_size(self) -> int:
        """A chunk's size line as HTTP/1.1 writes it (hex digits, extensions after `;`), or ValueError, which
        http.client reads as a malformed chunked body; int(line, 16) would also take `0x5`, `+5`, `-1` (a negative
        size reads on to the connection's end), `5_0` and spaces around."""
        line = self.fp.readline(_MOST_HEADER_LINE + 1)
        if len(line) > _MOST_HEADER_LINE:
            raise http.client.LineTooLong("chunk size")
        size = _CHUNK_SIZE.fullmatch(line)
        if size is None:
            self._close_conn()
            raise ValueError("a malformed chunk size line")
        return int(size.group(1), 16)

    def _safe_read(self, amt: int) -> bytes:
        """http.client's read of `amt` bytes; where it tosses the two bytes after a chunk (amt 2, chunk_left 0),
        they must be CRLF, or the body is malformed (http.client takes any two bytes)."""
        data = super()._safe_read(amt)
        if amt == 2 and self.chunked and self.chunk_left == 0 and data != b"\r\n":
            raise http.client.IncompleteRead(data)
        return data


_HEADER_NAME = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # a token (RFC 9110, 5.1)
_BAD_VALUE_BYTE = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")  # control bytes (a tab is allowed; RFC 9110, 5.5)
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,16})[ \t]*(?:;[^\r\n]*)?\r?\n")
_LENGTH = re.compile(r"[0-9]{1,20}")  # a Content-Length h11 takes: ASCII digits, at most 20 of them
_MOST_HEADER_LINE, _MOST_HEADER_LINES = 65536, 100  # http.client's own limits (_MAXLINE, _MAXHEADERS)


def _header_lines(reader) -> list[bytes]:
    """A head's header lines, up to the empty line that ends it (not included), line ends stripped; at most
    _MOST_HEADER_LINES lines of _MOST_HEADER_LINE bytes. A head cut short by the connection's end is
    http.client's RemoteDisconnected (a reply that never came: h11 says so too), not a reply with no body."""
    lines = []
    while True:
        line = reader.readline(_MOST_HEADER_LINE + 1)
        if len(line) > _MOST_HEADER_LINE:
            raise http.client.LineTooLong("header line")
        if line in (b"\r\n", b"\n"):
            return lines
        if not line.endswith(b"\n"):  # the connection's end inside the head: no reply to read
            raise http.client.RemoteDisconnected("the server closed the connection in the middle of a reply's head")
        if len(lines) == _MOST_HEADER_LINES:
            raise http.client.HTTPException(f"got more than {_MOST_HEADER_LINES} headers")
        lines.append(line.rstrip(b"\r\n"))


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
    """(chunked, chunk_left, length) of a reply's body, as http.client's reader wants them, in RFC 9112 6.3's
    order: no body after a 1xx, 204 or 304 reply or for a HEAD request, whatever its headers say; chunked when
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
        return False, None, 0
    encoding = fields.get("transfer-encoding")
    if encoding is not None:
        if encoding.lower() != "chunked":
            raise httpx.RemoteProtocolError(f"unsupported Transfer-Encoding {encoding[:40]!r}")
        return True, None, None
    return False, None, length


class _Connection(http.client.HTTPConnection):
    """http.client's connection, reading its replies as _Replies, and writing a request's head and body in one
    write when `body_follows` says a body comes after the head: endheaders(body) sends them one after the other,
    two packets, each a pass through the kernel's TCP stack and a wake-up of the server (on the loopback, twice
    the CPU of one)."""

    response_class = _Reply
    body_follows = False
    _head = b""

    def send(self, data) -> None:
        if self.body_follows:
            self._head, self.body_follows = data, False
            return
        head, self._head = self._head, b""
        super().send(head + data if head else data)


class _LeanResponse:
    """A reply read by _LeanTransport, with what _exchange reads of httpx's: status_code, headers, iter_raw()
    (the body as it arrives, de-chunked, still compressed) and close()."""

    def __init__(self, transport: "_LeanTransport", reply: _Reply, headers: _Fields):
        self.status_code, self.headers, self._transport, self._reply = reply.status, headers, transport, reply

    def iter_raw(self):
        return self._transport._pieces(self._reply)

    def close(self) -> None:
        self._transport._finished(self._reply)


class _LeanTransport:
    """One kept-alive HTTP/1.1 connection to a plain http:// API base reached without a proxy, for one slot:
    what httpx's transport does there at a fraction of its CPU (httpcore and h11 build, check and parse each
    request and reply through layers of objects), on the standard library's http.client, which writes the
    request and reads the reply's status line and body (by Content-Length, chunked or to the connection's end;
    100 Continue, HTTP/1.0); its header lines are read by _Reply.begin. It sends the bytes httpx sends, in its
    order (tests/test_llm_connections.py), and keeps its guarantees: every connect, write and read ends by the
    request's deadline (_request.deadline), reads ask for an immediate acknowledgement (_QUICKACK), a reply's head
    is read up to MAX_HEAD_BYTES, one whose body has no telling length (two different Content-Lengths, a
    Transfer-Encoding other than chunked) or that has a malformed header line is refused, other informational
    replies (1xx) are skipped as 100 Continue is, and a connection is reused only after a complete HTTP/1.1 reply
    that keeps it alive, checked before reuse (a server may close an idle one). Failures raise httpx's errors
    (ConnectError, ReadTimeout, ReadError, RemoteProtocolError...), with the socket's error as their cause, so
    both transports are handled alike."""

    def __init__(self, url: str):
        (host, port), self.host, _ = _http_parts(url)
        self._connection = _Connection(host, port)
        self._reusable = False  # the last reply was read whole and the connection may carry another

    def handle_request(self, url: str, data: bytes | None, headers: dict) -> _LeanResponse:
        """Send one request (POST `data`, or GET when None) and read the reply's head; its body is read through
        the response's iter_raw(). The request's deadline is _request.deadline."""
        connection = self._connection
        if connection.sock is not None and not (self._reusable and not _readable(connection.sock)):
            connection.close()  # what was left of the last reply, or an idle connection the server closed
        self._reusable = False
        if connection.sock is None:
            self._connect()
        method = "GET" if data is None else "POST"
        self._send(method, url, data, headers)
        return self._response(method)

    def _connect(self) -> None:
        import httpx

        connection = self._connection
        connection.timeout = _left(httpx.ConnectTimeout)
        try:
            connection.connect()  # with TCP_NODELAY, as httpcore: the request's head and body go at once
        except TimeoutError as err:
            raise httpx.ConnectTimeout(str(err)) from err
        except OSError as err:
            raise httpx.ConnectError(str(err)) from err

    def _send(self, method: str, url: str, data: bytes | None, headers: dict) -> None:
        import httpx

        connection = self._connection
        connection.putrequest(method, _http_parts(url)[2], skip_host=True, skip_accept_encoding=True)
        connection.putheader("Host", self.host)
        for name, value in _request_headers(headers):  # their values are checked: ChatClient._headers
            connection.putheader(name, value)
        if data is not None:
            connection.putheader("Content-Length", str(len(data)))
        try:
            connection.sock.settimeout(_left(httpx.WriteTimeout))
            connection.body_follows = bool(data)  # (http.client writes no empty body)
            connection.endheaders(data)
        except TimeoutError as err:
            raise httpx.WriteTimeout(str(err)) from err
        except OSError as err:
            raise httpx.WriteError(str(err)) from err

    def _response(self, method: str) -> _LeanResponse:
        """The reply, its head read; when it cannot be read, the reply and the connection are closed at once (the
        reply's reader keeps the socket open until it is closed)."""
        import httpx

        reply = None
        try:
            reply = self._connection.getresponse()  # after any 100 Continue
            for _ in range(100):  # other informational replies; a server sending only those...
                if not 100 < reply.status < 200:
                    break
                if reply.status == 101:
                    raise httpx.RemoteProtocolError("the server switched protocols (HTTP 101) unasked")
                reply = _Reply(None, method=method, after=reply)
                reply.begin()
            else:
                raise httpx.RemoteProtocolError("the server sent only informational replies (1xx)")
            reply.reads.head_left = None
            return _LeanResponse(self, reply, reply.headers)
        except (http.client.HTTPException, ValueError) as err:  # (ValueError: what http.client did not foresee)
            unreadable = _unreadable(err)
        except BaseException:
            self._finished(reply)
            raise
        self._finished(reply)
        raise unreadable  # here, not in the except clause: its message is all there is to say (see _reason)

    def _pieces(self, reply: _Reply):
        """The reply's body as it arrives (never more than _READ_SIZE bytes a piece, whatever a chunk's size
        line says), marking the connection reusable once it is read whole, when the reply keeps it alive."""
        import httpx

        try:
            while piece := reply.read1(_READ_SIZE):
                yield piece
        except (http.client.HTTPException, ValueError) as err:
            unreadable = _unreadable(err)
        else:
            unreadable = None
        if unreadable is not None:
            raise unreadable  # outside the except clause, as in _response
        if reply.length:  # http.client leaves a body cut short by the connection's end unsaid
            raise httpx.RemoteProtocolError(f"the server closed the connection {reply.length:,} bytes before "
                                            "the end of the reply's body")
        self._reusable = reply.version == 11 and not reply.will_close and self._connection.sock is not None

    def _finished(self, reply: _Reply | None) -> None:
        """A reply is done with: a connection not left at the end of a reply that keeps it alive is closed."""
        if reply is not None:
            reply.close()
        if not self._reusable:
            self._connection.close()

    def close(self) -> None:
        self._connection.close()
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


def _left(timeout_error) -> float:
    """What is left of the calling thread's request deadline (_request.deadline), in seconds; the httpx error
    `timeout_error` once it has passed."""
    left = _request.deadline - time.monotonic()
    if left <= 0:
        raise timeout_error("the request's deadline passed")
    return left


def _readable(sock: socket.socket) -> bool:
    """Whether a connection with no request on it has something to read: the server closed it (or wrote what it
    should not have); either way it is not reused."""
    if not hasattr(select, "poll"):  # Windows
        return bool(select.select([sock], [], [], 0)[0])
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))


def _request_headers(headers: dict) -> list:
    """An exchange's headers: what httpx's client sends by default (compression declined: a server compressing
    anyway is read by _read_body, which caps what the body inflates to; httpx's own decoding would not), then
    `headers`."""
    import httpx

    return [("Accept", "*/*"), ("Connection", "keep-alive"), ("User-Agent", f"python-httpx/{httpx.__version__}"),
            ("Accept-Encoding", "identity"), *headers.items()]  # in the order httpx.Client sent them


_DECODERS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS,
             "deflate": 32 + zlib.MAX_WBITS}  # zlib window bits: a gzip stream; a zlib (or gzip) stream


def _read_body(response, limit: int, refuse: bool) -> bytes:
    """At most `limit` bytes of a streamed response body, after its Content-Encoding. Over the limit: _Rejected
    when `refuse` (the length it announces is checked before any byte is read), else the first `limit` bytes (an
    error's detail). The bytes are read raw (httpx's iter_bytes would inflate each chunk whole: a 64 kB chunk
    of a gzip bomb is 64 MB) and inflated here INFLATE_STEP at a time; the compressed bytes count too."""
    declared = response.headers.get("Content-Length", "")
    if refuse and _LENGTH.fullmatch(declared) and int(declared) > limit:
        raise _Rejected(f"the reply announces {int(declared):,} bytes, more than the {limit:,} bytes read "
                        "(MAX_REPLY_BYTES)")
    encoding = response.headers.get("Content-Encoding", "").strip().lower()
    decoder = None
    if encoding in _DECODERS:
        decoder = zlib.decompressobj(_DECODERS[encoding])
    elif encoding not in ("", "identity") and refuse:
        raise _Rejected(f"the reply is sent with Content-Encoding {encoding!r}, which this client does not read "
                        "(it asks for identity and reads gzip or deflate, within MAX_REPLY_BYTES once inflated)")
    # (An error's detail in an encoding not read here is quoted as it came: it is only shown.)
    body, received = bytearray(), 0
    for chunk in response.iter_raw():
        received += len(chunk)
        data = chunk
        while data:
            if decoder is None:
                piece, data = data, b""
            else:
                try:
                    piece = decoder.decompress(data, min(INFLATE_STEP, limit + 1 - len(body)))
                except zlib.error as err:
                    if not refuse:
                        return bytes(body)
                    raise _Rejected(f"the reply's {encoding} body cannot be decompressed ({err})") from None
                if not piece and decoder.unconsumed_tail == data:
                    break  # nothing more comes out of this input (never expected; no endless loop either way)
                data = decoder.unconsumed_tail
            body += piece
            if len(body) > limit or received > limit:
                if refuse:
                    raise _Rejected(f"the reply is larger than {limit:,} bytes, the most read (MAX_REPLY_BYTES)"
                                    + (f", once its {encoding} content is inflated" if decoder else ""))
                return bytes(body[:limit])
    return bytes(body)


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
        self.tripped = threading.Event()
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


_COLLECT_FOR = 0.01  # seconds the collecting thread lets answers gather between two cache writes
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
        self._slots: queue.SimpleQueue = queue.SimpleQueue()
        for lane in range(concurrency):
            for index in range(len(self.urls)):
                self._slots.put((index, lane))
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
        """Close the cache and the connections; the client cannot be used afterwards."""
        self.cache.close()
        for lanes in self._lanes:
            for transport in lanes:
                if transport is not None:
                    transport.close()

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
        results = {}
        progress = _Progress(desc or self.model, len(requests), cached)
        # One long-lived worker per slot, each taking the next request itself: no future, lock or callback per
        # request, and no submission loop holding the interpreter lock while the first requests wait to go out.
        work, finished = collections.deque(requests), queue.SimpleQueue()
        stop = threading.Event()

        def worker() -> None:
            while not stop.is_set():
                try:
                    request = work.popleft()  # (a deque's pops are atomic)
                except IndexError:
                    return
                try:
                    finished.put((request, self._ask_one(request, parse, stage), None))
                except BaseException as error:  # a ChatError (a bad key...) stops the run: see below
                    finished.put((request, None, error))
                    return

        threads = [threading.Thread(target=worker, name=f"chimdqa-chat-{k}", daemon=True)
                   for k in range(min(self.concurrency * len(self.urls), len(requests)))]
        try:
            for thread in threads:
                thread.start()
            left = len(requests)
            while left:
                done = [self._next_done(finished, progress)]
                while not finished.empty():  # whatever else is done already, kept before any error is raised
                    done.append(finished.get())
                left -= len(done)
                self._keep(done, results, progress)
                for _, _, error in done:
                    if error is not None:
                        raise error  # once the answers above are kept
                progress.report()
                if left > len(threads):
                    # Let a few more answers come before the next write: one transaction and one wake-up of this
                    # thread for several answers, not a commit and a turn of the interpreter lock per answer (not
                    # in the last round, whose answers end the run).
                    stop.wait(_COLLECT_FOR)
        finally:
            stop.set()  # no new request; those in flight end (each by its deadline)
            for thread in threads:
                if thread.ident is not None:
                    thread.join()
            late = []
            while not finished.empty():  # answers that came while the run was stopping: paid for, so kept
                late.append(finished.get())
            self._keep(late, results, progress)
            progress.close()
        return results

    def _keep(self, done: list, results: dict, progress: "_Progress") -> None:
        """Cache the answers of `done` ((request, outcome or None, error) triples) in one transaction, then count
        them: from the thread that runs _ask_all only, and counted once written, so a killed run loses nothing
        it was told (at most the last _COLLECT_FOR seconds of answers, never counted, are asked again)."""
        answered = [(request, outcome) for request, outcome, _ in done if outcome is not None]
        self.cache.put_many(self.model, self._settings, [
            (request.key, {"text": outcome.raw, "logprobs": outcome.logprobs, "usage": outcome.usage})
            for request, outcome in answered if outcome.ok])
        for request, outcome in answered:
            results[request.key] = outcome
            progress.count(outcome.ok)

    @staticmethod
    def _next_done(finished: queue.SimpleQueue, progress: "_Progress"):
        """The next finished request, printing the progress line whenever one is due meanwhile."""
        while True:
            try:
                return finished.get(timeout=progress.wait_time())
            except queue.Empty:
                progress.report()

    def _ask_one(self, request: ChatRequest, parse, stage: str) -> ChatOutcome:
        outcome = self._attempts(request, parse, stage)
        if not outcome.ok:
            capped = outcome.error == CAP_ERROR.format(cap=self.max_calls)
            self._count(stage, **({"not_asked": 1} if capped else {"failed": 1}))
        return outcome

    def _attempts(self, request: ChatRequest, parse, stage: str) -> ChatOutcome:
        """Ask `request`; an unparseable reply is asked again: once with the request's repair instruction
        appended when it has one (and parse_retries allows a retry), else up to parse_retries times unchanged."""
        reply, problem = None, None
        tries = self.parse_retries + 1 if request.repair is None else 1 + min(1, self.parse_retries)
        asked = request
        for _ in range(tries):
            try:
                reply = self._post(asked, stage)
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

    def _post(self, request: ChatRequest, stage: str) -> dict:
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

        try:
            return self._attempt(data, headers, stage, deadline)  # most requests: one attempt, no retry machinery
        except _Transient as failure:
            first = [failure]

        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(_Transient),
            stop=tenacity.stop_after_attempt(self.max_retries + 1) | self._wait_too_long | out_of_time,
            wait=self._wait, sleep=self._breaker.tripped.wait, reraise=True)

        def attempt() -> dict:  # the first attempt's failure again, as tenacity's first attempt; then new ones
            if first:
                raise first.pop()
            return self._attempt(data, headers, stage, deadline)

        try:
            return retrying(attempt)
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

    def _wait_too_long_for(self, failure: BaseException | None) -> bool:
        return isinstance(failure, _Transient) and failure.wait is not None and failure.wait > self.max_wait

    def _wait_too_long(self, state) -> bool:
        return self._wait_too_long_for(state.outcome.exception())

    def _wait(self, state) -> float:
        """The server's Retry-After when it sent one (no longer than max_wait: see _wait_too_long), else
        exponential backoff with jitter."""
        failure = state.outcome.exception()
        return failure.wait if failure.wait is not None else self._backoff(state)

    def _attempt(self, data: bytes, headers: dict, stage: str, deadline: float) -> dict:
        if self._breaker.tripped.is_set():
            raise _EndpointDown()
        slot = self._slots.get()
        base, lane = slot
        try:
            left = deadline - time.monotonic()
            if left <= 0:  # only when taking a slot took that long: not the server's doing, not counted
                raise _Transient(self._timed_out(self.timeout), timed_out=True)
            self._reserve_call(base, stage)
            reply = self._post_once(base, data, headers, left, total=self.timeout, lane=lane)
        finally:
            self._slots.put(slot)
        self._count_reply(stage, reply["usage"])
        return reply

    def _reserve_call(self, base: int, stage: str) -> None:
        with self._lock:
            if self.max_calls is not None and self.calls_sent >= self.max_calls:
                raise _CapReached()
            self.calls_sent += 1
            self.sent_per_base[base] += 1
            self._stage(stage)["requests"] += 1

    def _exchange(self, transport, url: str, data: bytes | None, headers: dict, timeout: float) -> tuple:
        """(status, headers, body) of one HTTP request (POST `data`, or GET) through `transport` (a slot's) that
        ends within `timeout` seconds in all. A success's body over MAX_REPLY_BYTES is _Rejected; an error's is
        cut to its first bytes. httpx's errors are raised as httpx raises them."""
        import httpx

        _request.deadline = time.monotonic() + timeout
        try:
            if isinstance(transport, _LeanTransport):
                response = transport.handle_request(url, data, headers)
            else:
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

    def _timed_out(self, total: float) -> str:
        flag = ", --timeout" if total == self.timeout else ""
        return f"timed out: no complete reply by the request's deadline ({total:g} s in all{flag})"

    def _lane(self, base: int, lane: int):
        """The one-connection transport of the base's slot `lane`, made on first use (by the one thread holding
        the slot: no lock needed; lane 0, which a probe uses outside the slots, is made with the client)."""
        transport = self._lanes[base][lane]
        if transport is None:
            transport = self._lanes[base][lane] = self._new_lane(base)
        return transport

    def _new_lane(self, base: int):
        """A one-connection transport to API base `base`: _LeanTransport for plain http:// without a proxy
        (_lean_allowed), else httpx's through the proxy the environment names."""
        url, proxy = self.urls[base], self._proxies[base]
        return _LeanTransport(url) if _lean_allowed(url, proxy) else _transport(1, proxy, self._tls)

    def _post_once(self, base: int, data: bytes, headers: dict, timeout: float, total: float | None = None,
                   lane: int = 0) -> dict:
        """One attempt, ending within `timeout` seconds (what is left of a request's deadline of `total`), through
        the base's slot `lane` (the first by default, as a probe asks before any run)."""
        import httpx

        url, total = self.urls[base], total or timeout
        try:
            status, reply_headers, body = self._exchange(self._lane(base, lane), url, data, headers, timeout)
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

        timeout = min(timeout, self.timeout)
        headers = self._headers()
        for index, base in enumerate(self.endpoint.api_bases):
            url = _models_url(base)
            try:
                status, _, body = self._exchange(self._lane(index, 0), url, None, headers, timeout)
            except httpx.RequestError as err:
                raise InputError(f"the LLM endpoint {base} cannot be reached ({_reason(err)}); is the server "
                                 "running and the URL right?") from None
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
            reply = self._post_once(index, json.dumps(body).encode("utf-8"), self._headers(), timeout)
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
