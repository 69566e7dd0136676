"""A local OpenAI-compatible chat-completions server for tests and benchmarks (real HTTP on 127.0.0.1).

    with ChatServer(lambda body: "A") as server:            # the reply text for each request
        client = ChatClient("judge", server.api_base)
        server.latency = 0.05                                 # seconds slept before every reply
        server.queue(Reply(status=429, headers={"Retry-After": "0"}), Reply(status=500))  # the next two
        server.requests                                       # every request body received, in order
        server.gets                                           # every GET path received (GET <base>/models)

The handler gets the decoded JSON request body and returns either the assistant's reply text or a `Reply`
(any status, raw body, headers, extra delay). Queued replies are served first, one per request, before the
handler is consulted; that is how tests script "fail twice, then answer". `hits(text)` counts requests
whose last message contains a text, to check what was (not) asked again. Every completion reports `usage`:
by default one "token" per character (prompt: all message contents; completion: the reply), or `Reply.usage`;
`Reply(no_usage=True)` leaves it out, `Reply(logprobs=[...])` adds OpenAI-style token log-probabilities.
`GET <base>/models` lists the one model "test-model" unless the server was made with `serve_models=False`, or
answers `models=Reply(...)` instead when one is given.
`Reply(raw=chunks, interval=s)` writes the byte chunks verbatim (status line and headers included), `s` seconds
apart: a server that trickles, or streams a body far larger than it holds in memory. `close()` also drops every
open connection, keep-alive ones included, the way a killed server does; `replied` lists the request bodies
whose completion was written whole before that.
"""
from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Iterable


@dataclass
class Reply:
    """One scripted HTTP reply. `text` becomes a normal completion; `body` (if set) is sent verbatim instead."""
    text: str = ""
    status: int = 200
    body: str | None = None
    headers: dict = field(default_factory=dict)
    delay: float = 0.0
    usage: dict | None = None      # default: one token per character (see the module docstring)
    no_usage: bool = False         # leave `usage` out of the completion, as some servers do
    logprobs: list | None = None   # one log-probability per token, sent as choices[0].logprobs.content
    raw: Iterable[bytes] | None = None  # sent verbatim instead of a response built here
    interval: float = 0.0          # seconds between two chunks of `raw`


def completion_body(text: str, model: str = "test-model", usage: dict | None = None,
                    logprobs: list | None = None) -> str:
    """The JSON of a chat.completion object whose only choice says `text` (with `usage` when given)."""
    choice = {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
    if logprobs is not None:
        choice["logprobs"] = {"content": [{"token": f"t{k}", "logprob": lp, "top_logprobs": []}
                                          for k, lp in enumerate(logprobs)]}
    body = {"id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [choice]}
    if usage is not None:
        body["usage"] = usage
    return json.dumps(body, ensure_ascii=False)


def char_usage(body: dict, text: str) -> dict:
    """The test server's token usage: one token per character of the messages and of the reply."""
    prompt = sum(len(m.get("content") or "") for m in body.get("messages", []))
    return {"prompt_tokens": prompt, "completion_tokens": len(text), "total_tokens": prompt + len(text)}


class _Server(ThreadingHTTPServer):
    request_queue_size = 128  # the default listen backlog (5) refuses connections when many clients connect at once


class ChatServer:
    """Serves POST /v1/chat/completions (and GET /v1/models) on 127.0.0.1 (a free port) in a background thread."""

    def __init__(self, handler: Callable[[dict], "str | Reply"] = lambda body: "", *, latency: float = 0.0,
                 serve_models: bool = True, port: int = 0, models: "Reply | None" = None):
        self.handler = handler
        self.models = models
        self.latency = latency
        self.serve_models = serve_models
        self.requests: list[dict] = []
        self.gets: list[str] = []
        self.headers: list[dict] = []
        self.replied: list[dict] = []
        self._connections: set = set()
        self._queue: deque = deque()
        self._lock = threading.Lock()
        self._httpd = _Server(("127.0.0.1", port), self._handler_class())  # port 0: a free one
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)

    @property
    def api_base(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def queue(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def hits(self, text: str) -> int:
        with self._lock:
            return sum(text in body["messages"][-1]["content"] for body in self.requests)

    def start(self) -> "ChatServer":
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop listening and drop every open connection (keep-alive ones too): what a killed server does."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()
        with self._lock:
            connections, self._connections = list(self._connections), set()
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already closed by its handler

    def __enter__(self) -> "ChatServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def _next_reply(self, body: dict) -> Reply:
        with self._lock:
            self.requests.append(body)
            scripted = self._queue.popleft() if self._queue else None
        if scripted is not None:
            return scripted
        reply = self.handler(body)
        return reply if isinstance(reply, Reply) else Reply(text=reply)

    def _handler_class(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                super().setup()
                with server._lock:
                    server._connections.add(self.connection)

            def finish(self):
                with server._lock:
                    server._connections.discard(self.connection)
                try:
                    super().finish()
                except OSError:
                    pass  # the connection was dropped by close()

            def do_GET(self):
                with server._lock:
                    server.gets.append(self.path)
                if server.models is not None and self.path.rstrip("/") == "/v1/models":
                    return self._send(server.models)
                if server.serve_models and self.path.rstrip("/") == "/v1/models":
                    return self._send(Reply(body=json.dumps({"object": "list", "data": [
                        {"id": "test-model", "object": "model", "owned_by": "tests"}]})))
                self._send(Reply(status=404, body='{"error": {"message": "not found"}}'))

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if self.path.rstrip("/") != "/v1/chat/completions":
                    return self._send(Reply(status=404, body='{"error": {"message": "not found"}}'))
                try:
                    body = json.loads(raw)
                except ValueError:
                    return self._send(Reply(status=400, body='{"error": {"message": "body is not JSON"}}'))
                with server._lock:
                    server.headers.append(dict(self.headers))
                reply = server._next_reply(body)
                time.sleep(server.latency + reply.delay)
                self._send(reply, body)

            def _send(self, reply: Reply, request: dict | None = None):
                if reply.raw is not None:
                    return self._send_raw(reply)
                if reply.body is not None:
                    payload = reply.body
                elif reply.status == 200:
                    usage = None if reply.no_usage else reply.usage or char_usage(request or {}, reply.text)
                    payload = completion_body(reply.text, (request or {}).get("model", "test-model"), usage,
                                              reply.logprobs)
                else:
                    payload = json.dumps({"error": {"message": reply.text or f"status {reply.status}"}})
                data = payload.encode("utf-8")
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                    self.wfile.flush()
                except OSError:
                    self.close_connection = True  # the client gave up (its timeout), or close() dropped it
                    return
                if request is not None:
                    with server._lock:
                        server.replied.append(request)

            def _send_raw(self, reply: Reply):
                self.close_connection = True
                try:
                    for n, chunk in enumerate(reply.raw):
                        if n and reply.interval:
                            time.sleep(reply.interval)
                        self.wfile.write(chunk)
                        self.wfile.flush()
                except OSError:
                    pass  # the client stopped reading: what a client with limits does

            def log_message(self, *args):
                pass  # keep test output clean

        return Handler
