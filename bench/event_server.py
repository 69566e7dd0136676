"""An OpenAI-compatible chat endpoint on one asyncio event loop, for bench/bench_generate.py (not for tests).

What it measures: how close a client comes to an endpoint's ideal rate (concurrency / latency). The tests' server
(tests/chat_server.py, Python's http.server: a thread per connection, a reply written as head and body apart, a
`time.sleep` per request) spends 0.4-0.8 ms of CPU a request and wakes a thread per request, on the same two cores
as the client, and its replies come later than its latency the more the machine is loaded. Model servers answer
from an event loop (vLLM and SGLang behind uvicorn); this one does too: every connection is read by one loop, a
request is answered `latency` seconds after its last byte arrived (a timer, not a sleeping thread), head and body
in one write. It parses only what a benchmark client sends (a request line, headers, a Content-Length body) and
answers every POST with the same completion.

    with EventServer(latency=0.05) as server:   # in its own thread; server.api_base, server.stats()
        ...
"""
from __future__ import annotations

import asyncio
import json
import threading
import time

_HEAD_END = b"\r\n\r\n"
_MOST_HEAD = 64 * 1024


def _reply_bytes(text: str) -> bytes:
    body = json.dumps({"id": "chatcmpl-bench", "object": "chat.completion", "created": 0, "model": "bench-model",
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": text}}],
                       "usage": {"prompt_tokens": 20, "completion_tokens": len(text), "total_tokens": 20 + len(text)}},
                      ensure_ascii=False).encode("utf-8")
    head = (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            "Connection: keep-alive\r\n\r\n").encode("ascii")
    return head + body


class _Connection(asyncio.Protocol):
    """One client connection: requests are read as they arrive (one at a time, as HTTP/1.1 without pipelining
    sends them) and each is answered by a timer."""

    def __init__(self, server: "EventServer"):
        self.server, self.buffer, self.transport = server, bytearray(), None
        self.replied_at = None  # when the last reply was written: the turnaround runs from there

    def connection_made(self, transport) -> None:
        self.transport = transport
        self.server.accepted += 1

    def data_received(self, data: bytes) -> None:
        now = time.monotonic()
        if not self.buffer and self.replied_at is not None:
            self.server.turnaround.append(now - self.replied_at)
            self.replied_at = None
        self.buffer += data
        while (request_end := self._request_end()) is not None:
            del self.buffer[:request_end]
            self.server.loop.call_later(self.server.latency, self._reply, now)

    def _request_end(self) -> int | None:
        """Where the first whole request in the buffer ends, or None while it is incomplete."""
        head_end = self.buffer.find(_HEAD_END)
        if head_end < 0:
            if len(self.buffer) > _MOST_HEAD:
                self.transport.close()
            return None
        length = 0
        for line in bytes(self.buffer[:head_end]).split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        end = head_end + len(_HEAD_END) + length
        return end if len(self.buffer) >= end else None

    def _reply(self, arrived: float) -> None:
        if self.transport.is_closing():
            return
        self.transport.write(self.server.reply)
        self.replied_at = time.monotonic()
        self.server.own.append(self.replied_at - arrived)


class EventServer:
    """The server on its own thread's event loop; `stats()` gives the connections accepted, the mean time from a
    request's last byte to its reply written (the latency included) and the mean turnaround from a reply written
    to the next request's first byte on that connection."""

    def __init__(self, latency: float = 0.05, text: str = "48.6亿元"):
        self.latency, self.reply = latency, _reply_bytes(text)
        self.accepted, self.own, self.turnaround = 0, [], []
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.api_base = None

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(
            self.loop.create_server(lambda: _Connection(self), "127.0.0.1", 0))
        port = server.sockets[0].getsockname()[1]
        self.api_base = f"http://127.0.0.1:{port}/v1"
        self._ready.set()
        self.loop.run_forever()
        server.close()
        self.loop.run_until_complete(server.wait_closed())
        self.loop.close()

    def __enter__(self) -> "EventServer":
        self._thread.start()
        self._ready.wait(30)
        return self

    def __exit__(self, *exc) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(30)

    def stats(self) -> dict:
        own, turnaround = list(self.own), list(self.turnaround)
        return {"accepted": self.accepted, "requests": len(own),
                "own": sum(own) / max(1, len(own)), "turnaround": sum(turnaround) / max(1, len(turnaround))}
