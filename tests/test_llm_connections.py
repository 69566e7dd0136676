"""The chat client's connections: kept alive and reused across requests (one per concurrent request at most), and
read with quick acknowledgement, so that a server using Nagle's algorithm does not hold a reply's body back
waiting for the acknowledgement of its head (a delayed ACK: 40 ms a request). Counted, not timed: the
throughput itself is bench/bench_generate.py's."""
from __future__ import annotations

import json
import socket

import pytest
from chat_server import ChatServer

from chimdqa_eval import llm
from chimdqa_eval.llm import ChatRequest, LLMEndpoint


class _Counting(set):
    """The server's set of open connections, counting every connection it is told of."""

    def __init__(self, items, opened: list):
        super().__init__(items)
        self.opened = opened

    def add(self, connection):
        self.opened.append(connection)
        super().add(connection)


def test_connections_are_kept_alive_and_reused(tmp_path):
    opened = []
    with ChatServer(lambda body: "48.6亿元") as server:
        server._connections = _Counting(server._connections, opened)
        with LLMEndpoint("m", (server.api_base,), cache_path=tmp_path / "c.sqlite", concurrency=4).client() as client:
            requests = [ChatRequest(({"role": "user", "content": f"问题{i}"},), f"k{i}") for i in range(64)]
            outcomes = client.complete_all(requests, parse=lambda text: text)
    assert [o.value for o in outcomes] == ["48.6亿元"] * 64
    assert 1 <= len(opened) <= 4  # 64 requests over at most `concurrency` connections


class _Socket:
    def __init__(self, fails=False):
        self.options, self.fails = [], fails

    def setsockopt(self, *option):
        if self.fails:
            raise OSError("not a TCP socket")
        self.options.append(option)


class _Stream:
    def __init__(self, sock):
        self.sock, self.reads = sock, 0

    def get_extra_info(self, info):
        return self.sock if info == "socket" else None

    def read(self, max_bytes, timeout=None):
        self.reads += 1
        return b"x"


@pytest.mark.skipif(not hasattr(socket, "TCP_QUICKACK"), reason="TCP_QUICKACK is Linux's")
def test_every_read_asks_for_an_immediate_acknowledgement():
    sock = _Socket()
    stream = llm._DeadlineStream(_Stream(sock))
    assert stream.read(10) == b"x" and stream.read(10) == b"x"
    assert sock.options == [(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)] * 2  # the kernel forgets it: each read
    failing = _Socket(fails=True)
    stream = llm._DeadlineStream(inner := _Stream(failing))
    assert stream.read(10) == b"x" and stream.read(10) == b"x" and inner.reads == 2  # reads go on without it
    assert llm._DeadlineStream(_Stream(None)).read(10) == b"x"  # no socket to set it on


def test_requests_carry_the_headers_httpx_client_sent(tmp_path, monkeypatch):
    """The slots' transports are asked directly: the server still sees httpx's default headers, in their order,
    compression declined, then the request's own."""
    import httpx

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with ChatServer(lambda body: "1") as server:
        with LLMEndpoint("m", (server.api_base,), cache_path=tmp_path / "c.sqlite").client() as client:
            client.complete_all([ChatRequest(({"role": "user", "content": "q"},), "k")], parse=int)
    headers = server.headers[0]
    assert list(headers) == ["Host", "Accept", "Connection", "User-Agent", "Accept-Encoding", "Content-Type",
                             "Authorization", "Content-Length"]
    assert (headers["Accept-Encoding"], headers["Connection"], headers["User-Agent"], headers["Authorization"]) == (
        "identity", "keep-alive", f"python-httpx/{httpx.__version__}", "Bearer sk-test")
    assert int(headers["Content-Length"]) == len(json.dumps(server.requests[0], ensure_ascii=False).encode("utf-8"))
