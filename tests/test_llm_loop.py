"""The chat client's event loop (one thread asks every request in flight): what stops a run stops it, once, in
the caller's thread, and leaves the client usable; a connection's bytes wait in bounded memory; what is not HTTP
fails at once. Each through both HTTP paths where both apply (the `http_client` fixture)."""
from __future__ import annotations

import asyncio
import os
import socket
import sqlite3
import time

import pytest
from chat_server import ChatServer, Reply

from chimdqa_eval import llm
from chimdqa_eval.llm import ChatRequest


def _requests(n: int, prefix: str = "q") -> list:
    return [ChatRequest(({"role": "user", "content": f"{prefix}{i}"},), f"{prefix}{i}") for i in range(n)]


@pytest.mark.usefixtures("http_client")
def test_a_cache_that_cannot_be_written_stops_the_run(tmp_path, monkeypatch):
    """A failed cache write (a full disk) ends the run with its own error, sending no more requests whose answers
    could not be kept; not a KeyError later, not every request sent."""
    def full(*args, **kwargs):
        raise sqlite3.OperationalError("database or disk is full")

    with ChatServer(lambda body: Reply(text="5", delay=0.02)) as server:
        with llm.ChatClient("m", server.api_base, cache_path=tmp_path / "c.sqlite", concurrency=2) as client:
            monkeypatch.setattr(client.cache, "put_many", full)
            with pytest.raises(sqlite3.OperationalError, match="disk is full"):
                client.complete_all(_requests(200), int)
            assert client.calls_sent < 20


@pytest.mark.usefixtures("http_client")
def test_whatever_parse_raises_reaches_the_caller_and_the_client_stays_usable(tmp_path):
    def parse(text: str) -> str:
        if text == "stop":
            raise KeyboardInterrupt
        return text

    with ChatServer(lambda body: "stop" if body["messages"][0]["content"] == "q3" else "ok") as server:
        with llm.ChatClient("m", server.api_base, cache_path=tmp_path / "c.sqlite", concurrency=2) as client:
            with pytest.raises(KeyboardInterrupt):
                client.complete_all(_requests(8), parse)
            outcomes = client.complete_all(_requests(3, "again"), parse)  # the loop's thread still runs
    assert [o.value for o in outcomes] == ["ok"] * 3


def test_running_out_of_file_descriptors_fails_requests_not_the_run(tmp_path, monkeypatch):
    """socket() itself failing (EMFILE) is a failed connection attempt, as a refused connection is."""
    real = socket.socket

    class NoDescriptors:
        def __getattr__(self, name):
            return getattr(socket, name)

        @staticmethod
        def socket(*args, **kwargs):
            raise OSError(24, "Too many open files")

    with ChatServer(lambda body: "ok") as server:
        with llm.ChatClient("m", server.api_base, cache_path=tmp_path / "c.sqlite", concurrency=2,
                            max_retries=0) as client:
            monkeypatch.setattr(llm, "socket", NoDescriptors())
            outcomes = client.complete_all(_requests(3), str)
            monkeypatch.setattr(llm, "socket", socket)
            assert socket.socket is real
    assert all(not o.ok and "Errno 24" in o.error for o in outcomes), [o.error for o in outcomes]


class _Paused:
    """A stand-in for a _Wire's transport that records flow control."""

    def __init__(self):
        self.calls = []

    def pause_reading(self):
        self.calls.append("pause")

    def resume_reading(self):
        self.calls.append("resume")


def test_a_connection_stops_reading_while_nobody_takes_its_bytes():
    async def run():
        wire = llm._Wire()
        wire.connection_made(transport := _Paused())
        for _ in range(8):
            wire.data_received(b"x" * (llm._READ_AHEAD // 4))
        assert transport.calls == ["pause"] and len(wire.buffer) == 2 * llm._READ_AHEAD
        assert len(await wire.some(10)) == 10 and transport.calls == ["pause"]  # buffered: no need to read on
        wire.take(len(wire.buffer))
        asyncio.get_running_loop().call_later(0.01, wire.data_received, b"more")
        assert await wire.some(10) == b"more" and transport.calls == ["pause", "resume"]

    asyncio.run(run())


def test_a_reply_not_read_to_its_end_closes_its_connection():
    """An error's detail is its first bytes: the rest is not read, so the connection is closed at once (not left
    open, receiving, until the slot's next request)."""
    from test_llm_connections import _Answering, _lane

    body = b"e" * 5000
    lane = _lane(b"", ended=False)
    lane._wire.transport = _Answering(lane._wire, b"HTTP/1.1 500 Oops\r\nContent-Length: %d\r\n\r\n%s" % (
        len(body), body))
    lane._reusable = True
    status, _, detail = asyncio.run(lane.exchange("http://127.0.0.1:9/v1/chat/completions", b"{}", {}, 5))
    assert (status, detail, lane._wire) == (500, body[:llm._ERROR_DETAIL], None)


@pytest.mark.parametrize("raw,error", [(b"SSH-2.0-OpenSSH_9.6\r\n", "BadStatusLine"),
                                       (b"HTP/1.1 200 OK\r\n", "BadStatusLine"),
                                       (b"HTTP/2 200\r\n", "UnknownProtocol"),
                                       (b"HTTP/1.1 1000 Big\r\n", "BadStatusLine")])
def test_a_status_line_that_is_not_http_fails_as_soon_as_it_has_come(raw, error):
    from test_llm_connections import _lane

    async def read():
        return await asyncio.wait_for(_lane(raw, ended=False)._reply("POST"), 2)

    start = time.monotonic()
    with pytest.raises(Exception) as caught:
        asyncio.run(read())
    assert type(caught.value).__name__ == error and time.monotonic() - start < 1


@pytest.mark.parametrize("head,error", [
    (b"HTTP/1.1 200 OK\r\nX: " + b"a" * 70_000, "LineTooLong"),
    (b"HTTP/1.1 200 OK " + b"a" * 70_000, "LineTooLong"),
    (b"HTTP/1.1 200 OK\r\n" + b"A: 1\r\n" * 101, "HTTPException")])
def test_a_head_over_a_line_cap_fails_as_soon_as_the_cap_is_passed(head, error):
    """Held open after a head over http.client's caps (a line of 64 kB, 100 header lines): refused then, not
    waited on until the deadline for the head's end."""
    from test_llm_connections import _lane

    async def read():
        return await asyncio.wait_for(_lane(head, ended=False)._reply("POST"), 2)

    start = time.monotonic()
    with pytest.raises(Exception) as caught:
        asyncio.run(read())
    assert type(caught.value).__name__ == error and time.monotonic() - start < 1, caught.value


def test_a_closed_client_says_so(tmp_path):
    with ChatServer(lambda body: "ok") as server:
        client = llm.ChatClient("m", server.api_base, cache_path=tmp_path / "c.sqlite")
        client.complete_all(_requests(1), str)
        client.close()
        client.close()
        with pytest.raises(llm.ChatError, match="closed"):
            client.probe()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_child_is_told_to_open_its_own_client_and_may_close_the_inherited_one(tmp_path):
    with ChatServer(lambda body: "ok") as server:
        with llm.ChatClient("m", server.api_base, cache_path=tmp_path / "c.sqlite") as client:
            client.complete_all(_requests(1), str)  # the loop's thread runs
            pid = os.fork()
            if pid == 0:  # the child: told, not left hanging; close() returns
                code = 1
                try:
                    client.complete_all(_requests(1, "child"), str)
                except llm.ChatError as err:
                    code = 0 if "forked" in str(err) else 2
                try:
                    client.probe()
                    code = 3
                except llm.ChatError as err:  # said as it is, not as an endpoint's unreadable reply
                    code = code if "forked" in str(err) else 4
                client.close()
                os._exit(code)
            deadline = time.monotonic() + 20
            while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
                time.sleep(0.05)
            if done[0] == 0:
                os.kill(pid, 9)
            assert done[0] == pid and os.waitstatus_to_exitcode(done[1]) == 0
            assert [o.value for o in client.complete_all(_requests(2, "parent"), str)] == ["ok", "ok"]
