"""The chat client's connections: kept alive and reused across requests (one per concurrent request at most), and
read with quick acknowledgement, so that a server using Nagle's algorithm does not hold a reply's body back
waiting for the acknowledgement of its head (a delayed ACK: 40 ms a request). Counted, not timed: the
throughput itself is bench/bench_generate.py's."""
from __future__ import annotations

import asyncio
import http.client
import json
import socket
import threading
import time

import pytest
from chat_server import ChatServer, Reply, completion_body

from chimdqa_eval import llm
from chimdqa_eval.llm import ChatRequest, LLMEndpoint

pytestmark = pytest.mark.usefixtures("http_client")  # each test through both HTTP paths


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


class _Recording:
    """A raw HTTP server on 127.0.0.1 for a few connections: it keeps each request's bytes as they came and answers
    each with the next of `replies` (bytes, sent whole), closing a connection after `per_connection` requests."""

    def __init__(self, replies, per_connection: int = 1):
        self.replies, self.per_connection, self.received, self.connections = list(replies), per_connection, [], 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.api_base = f"http://127.0.0.1:{self.listener.getsockname()[1]}/v1"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while self.replies:
            conn, _ = self.listener.accept()
            self.connections += 1
            with conn:
                for _ in range(self.per_connection):
                    if not self.replies:
                        break
                    self.received.append(self._request(conn))
                    conn.sendall(self.replies.pop(0))

    @staticmethod
    def _request(conn) -> bytes:
        data = b""
        while b"\r\n\r\n" not in data:
            data += conn.recv(65536)
        head = data.split(b"\r\n\r\n", 1)[0]
        length = [int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")]
        while len(data) < len(head) + 4 + sum(length):
            data += conn.recv(65536)
        return data

    def close(self):
        self.thread.join(5)
        self.listener.close()


def _ok(text: str, *extra: bytes) -> bytes:
    body = completion_body(text).encode("utf-8")
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n%s" % (
        b"".join(extra), len(body), body)


def test_both_http_paths_send_the_same_bytes(tmp_path, monkeypatch):
    """The lean transport sends, byte for byte, what httpx sends: the chat request (POST) and the probe (GET)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    sent = {}
    for path in ("lean", "httpx"):
        monkeypatch.setenv("CHIMDQA_HTTP_CLIENT", path)
        models = b'{"object": "list", "data": []}'
        server = _Recording([b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(models), models),
                             _ok("1")])
        with llm.ChatClient("m", server.api_base, cache_path=tmp_path / f"{path}.sqlite") as client:
            client.probe()
            [outcome] = client.complete_all([ChatRequest(({"role": "user", "content": "问题"},), "k")], int)
        server.close()
        assert outcome.value == 1
        port = server.api_base.split(":")[2].split("/")[0]
        sent[path] = [request.replace(port.encode(), b"PORT") for request in server.received]
    assert sent["lean"] == sent["httpx"]
    get, post = sent["lean"]
    assert get.startswith(b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\nAccept: */*\r\n")
    assert post.startswith(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\n")


FRAMINGS = {
    "content-length": [_ok("7")],
    "chunked": [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                + b"".join(b"%x;ext=1\r\n%s\r\n" % (len(part), part)
                           for part in (completion_body("7").encode()[:9], completion_body("7").encode()[9:]))
                + b"0\r\nX-Trailer: t\r\n\r\n"],
    "to-the-end": [b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + completion_body("7").encode()],
    "http/1.0": [b"HTTP/1.0 200 OK\r\n\r\n" + completion_body("7").encode()],
    "after-100-continue": [b"HTTP/1.1 100 Continue\r\n\r\n" + _ok("7")],
    "after-103-early-hints": [b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" + _ok("7")],
}


@pytest.mark.parametrize("framing", FRAMINGS)
def test_a_reply_is_read_however_its_body_is_framed(tmp_path, framing):
    with ChatServer(lambda body: Reply(raw=FRAMINGS[framing])) as server:
        with llm.ChatClient("m", server.api_base, cache_path=tmp_path / "c.sqlite", max_retries=0) as client:
            [outcome] = client.complete_all([ChatRequest(({"role": "user", "content": "q"},), "k")], int)
    assert outcome.value == 7, outcome.error


MALFORMED = {
    "two-lengths": _ok("7", b"Content-Length: 3\r\n"),
    "gzip-transfer-encoding": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n" + completion_body("7").encode(),
    "bad-chunk-size": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    "huge-head": b"HTTP/1.1 200 OK\r\n" + b"X-Pad: %s\r\n" % (b"a" * 200_000) + b"\r\n",
    "folded-header": b"HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\nContent-Length: 0\r\n\r\n",
    "no-status-line": b"<html>hello</html>\r\n\r\n",
    "negative-chunk-size": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n" + b"a" * 100_000,
    "body-cut-short": _ok("7").replace(b"Content-Length: ", b"Content-Length: 9"),
    "header-line-without-a-colon": _ok("7").replace(b"Content-Type", b"Content Type"),
    "a-control-character-in-a-header": _ok("7", b"X-A: a\rContent-Length: 99\r\n"),
    "the-head-cut-short": b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n",
    **{f"chunk-size-{size.decode()}": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n%s\r\n%s\r\n0\r\n\r\n" % (
        size, completion_body("7").encode()[:5]) for size in (b"0x5", b"+5", b"5_0", b" 5")},
    "no-crlf-after-a-chunk": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%sXY0\r\n\r\n" % (
        len(completion_body("7").encode()), completion_body("7").encode()),
}


@pytest.mark.parametrize("reply", MALFORMED)
def test_a_malformed_reply_is_a_failed_attempt_that_is_retried(tmp_path, reply):
    with ChatServer(lambda body: Reply(raw=[MALFORMED[reply]])) as server:
        with llm.ChatClient("m", server.api_base, cache_path=tmp_path / "c.sqlite", max_retries=1,
                            backoff=0.01) as client:
            [outcome] = client.complete_all([ChatRequest(({"role": "user", "content": "q"},), "k")], int)
    assert not outcome.ok and "gave up after 2 attempts" in outcome.error, outcome.error
    assert len(server.requests) == 2


_CHUNKED_7 = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (completion_body("7").encode(),)) + b"0\r\n\r\n"
READ_AS_MEANT = {  # headers http.client's own reading frames otherwise than they mean (and than h11 does)
    "chunked-with-a-space": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked \r\n\r\n" + _CHUNKED_7,
    "a-length-given-twice-in-one-line": _ok("7").replace(b"Content-Length: ", b"Content-Length: %d, " % len(
        completion_body("7").encode())),
}


@pytest.mark.parametrize("reply", READ_AS_MEANT)
def test_a_reply_is_framed_as_its_headers_mean_on_both_paths(tmp_path, reply, http_client):
    """`Transfer-Encoding: chunked ` (a space) is chunked, and `Content-Length: 7, 7` is 7 bytes, on both paths
    (http.client's own reading would take the first as unframed and the second as no length: to the connection's
    end, which on a kept-alive connection is the deadline)."""
    with ChatServer(lambda body: Reply(raw=[READ_AS_MEANT[reply]])) as server:
        with llm.ChatClient("m", server.api_base, cache_path=tmp_path / "c.sqlite", max_retries=0) as client:
            [outcome] = client.complete_all([ChatRequest(({"role": "user", "content": "q"},), "k")], int)
    assert outcome.value == 7, outcome.error


def test_header_lines_are_read_as_http_says():
    """The lean path's own reading of a reply's header lines: names in any case, values trimmed, a repeated name
    joined by ", " (as httpx joins them), a folded line joined by a space; a line without a colon, or whose name
    is not a token, is refused; so are more than 100 lines and a line over 64 kB (http.client's limits)."""
    import httpx

    fields = llm._fields([b"Content-Type:  application/json ", b"X-A: 1", b"x-a: 2", b"X-Long: a", b"\t b",
                          b"Empty:"])
    assert fields == {"content-type": "application/json", "x-a": "1, 2", "x-long": "a b", "empty": ""}
    assert fields.get("Content-TYPE") == "application/json"
    for line in (b"Content Type: a", b"no colon", b": no name", b"X(A): 1", "X-\u00e9: 1".encode("latin-1")):
        with pytest.raises(httpx.RemoteProtocolError, match="malformed header line"):
            llm._fields([line])
    assert _head(b"HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\n\r\nbody") == (11, 200, {"a": "1", "b": "2"})
    assert _head(b"HTTP/1.1 200 OK\r\n" + b"A: 1\r\n" * 100 + b"\r\n")[2] == {"a": ", ".join(["1"] * 100)}
    with pytest.raises(http.client.HTTPException, match="more than 100 headers"):
        _head(b"HTTP/1.1 200 OK\r\n" + b"A: 1\r\n" * 101 + b"\r\n")
    with pytest.raises(http.client.LineTooLong):
        _head(b"HTTP/1.1 200 OK\r\nA: " + b"a" * 70_000 + b"\r\n\r\n")
    with pytest.raises(http.client.RemoteDisconnected):  # the connection's end inside the head
        _head(b"HTTP/1.1 200 OK\r\nA: 1\r\nB: 2")
    with pytest.raises(httpx.RemoteProtocolError, match="headers exceed 102,400 bytes"):
        _head(b"HTTP/1.1 200 OK\r\n" + b"A: %s\r\n" % (b"a" * 60_000) * 2 + b"\r\n")
    assert _head(b"HTTP/1.1 100 Continue\r\nX: 1\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: a\r\n\r\n"
                 b"HTTP/1.0 201 Created\r\nB: 2\r\n\r\n") == (10, 201, {"b": "2"})
    for raw, error in ((b"", http.client.RemoteDisconnected), (b"HTTP/1.1 20x OK\r\n\r\n", http.client.BadStatusLine),
                       (b"ICY 200 OK\r\n\r\n", http.client.BadStatusLine), (b"\r\n", http.client.BadStatusLine),
                       (b"HTTP/1.1 99 Low\r\n\r\n", http.client.BadStatusLine),
                       (b"HTTP/2.0 200 OK\r\n\r\n", http.client.UnknownProtocol)):
        with pytest.raises(error):
            _head(raw)


def _lane(raw: bytes, ended: bool = True) -> "llm._Lane":
    """A _Lane whose connection has received `raw` (and then ended, or stays open with nothing more coming)."""
    lane = llm._Lane("http://127.0.0.1:9/v1/chat/completions")
    lane._wire = wire = llm._Wire()
    wire.data_received(raw)
    if ended:
        wire.eof_received()
    return lane


def _head(raw: bytes, method: str = "POST") -> tuple:
    """(version, status, headers) of the reply head a _Lane reads from `raw`."""
    return asyncio.run(_lane(raw)._reply_head(method))[:3]


def _reply(raw: bytes, method: str = "POST", ended: bool = False) -> tuple:
    """(status, headers, body, reusable) of the reply a _Lane reads from `raw`, on a connection that stays open
    with nothing more coming unless `ended`: a reader that waited for more would miss the 2 s given."""
    async def read():
        return await asyncio.wait_for(_lane(raw, ended)._reply(method), 2)

    return asyncio.run(read())


def test_a_bodys_framing_follows_its_headers():
    """(chunked, length): chunked wins over a Content-Length, a
    length repeated alike counts once, no body after 1xx / 204 / 304 or for HEAD, none given: to the end; no
    telling where the body ends (two lengths, a bad one, another Transfer-Encoding) is refused."""
    import httpx

    framing = llm._framing
    assert framing(llm._Fields({"transfer-encoding": "Chunked", "content-length": "5"}), 200, "POST") == (True, None)
    assert framing(llm._Fields({"content-length": "7, 7"}), 200, "POST") == (False, 7)
    assert framing(llm._Fields({"content-length": "7"}), 204, "POST") == (False, 0)
    assert framing(llm._Fields({"content-length": "7"}), 200, "HEAD") == (False, 0)
    assert framing(llm._Fields(), 200, "POST") == (False, None)
    for fields in ({"content-length": "7, 3"}, {"content-length": "-1"}, {"content-length": "７"},
                   {"content-length": ""}, {"transfer-encoding": "gzip, chunked"}):
        with pytest.raises(httpx.RemoteProtocolError, match="Content-Length|Transfer-Encoding"):
            framing(llm._Fields(fields), 200, "POST")


@pytest.mark.parametrize("length", [b"1" * 21, "\u00b2".encode("latin-1"), b"5\x0b", b"\xa05", b"0" * 24 + b"5",
                                    b"9" * 5000])
def test_a_content_length_h11_would_refuse_is_a_failed_attempt_never_a_crash(tmp_path, length):
    """Content-Lengths that are not ASCII digits (at most 20, as h11 takes them) are refused, beside chunked too:
    an ordinary failed attempt, not a ValueError ending the run (int() of 5,000 digits or of `²`), and never
    read as a length after Python's wider whitespace was stripped (`5\\x0b`)."""
    raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: %s\r\n\r\n%s" % (length, _CHUNKED_7)
    for reply in (raw, _ok("7").replace(b"Content-Length: ", b"Content-Length: " + length + b"\r\nX-B: ")):
        with ChatServer(lambda body: Reply(raw=[reply])) as server:
            with llm.ChatClient("m", server.api_base, cache_path=tmp_path / "c.sqlite", max_retries=0) as client:
                [outcome] = client.complete_all([ChatRequest(({"role": "user", "content": "q"},), "k")], int)
        assert not outcome.ok and "Content-Length" in outcome.error, outcome.error


def test_a_reply_with_no_body_by_its_status_has_none_whatever_its_headers_say():
    """204 and 304 replies (and a HEAD request's) carry no body even with `Transfer-Encoding: chunked`: read at
    once, not waited on until the deadline for a chunk that never comes (RFC 9112 6.3, as h11)."""
    for status in (b"204 No Content", b"304 Not Modified"):
        assert _reply(b"HTTP/1.1 %s\r\nTransfer-Encoding: chunked\r\n\r\n" % status)[2:] == (b"", True)
    assert _reply(_ok("7"), method="HEAD")[2:] == (b"", True)


def test_a_reply_framed_both_ways_is_read_chunked_and_its_connection_not_reused():
    status, _, body, reusable = _reply(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n"
                                       + _CHUNKED_7)
    assert json.loads(body)["choices"][0]["message"]["content"] == "7" and not reusable
    _, fields, body, reusable = _reply(b"HTTP/1.1 200 OK\r\nTransfer-Encoding:\r\n chunked\r\n\r\n" + _CHUNKED_7)
    assert json.loads(body)["choices"][0]["message"]["content"] == "7" and reusable
    assert fields.get("TRANSFER-ENCODING") == "chunked" and "Transfer-Encoding" in fields
    assert fields["Transfer-Encoding"] == "chunked"


def test_a_reply_is_read_by_its_framing_and_the_connection_kept_only_when_it_may_be():
    """Content-Length, chunked (extensions and trailers), to the connection's end; HTTP/1.0 or `Connection: close`
    not kept; a body cut short, a malformed chunk and a chunk not followed by CRLF refused."""
    import httpx

    body = completion_body("7").encode("utf-8")
    assert _reply(_ok("7"))[2:] == (body, True)
    assert _reply(_ok("7").replace(b"HTTP/1.1", b"HTTP/1.0"))[3] is False
    assert _reply(_ok("7", b"Connection: Close\r\n"))[3] is False
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    pieces = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(body[k:k + 9]), body[k:k + 9]) for k in range(0, len(body), 9))
    assert _reply(chunked + pieces + b"0\r\nX-Trailer: 1\r\n\r\n")[2:] == (body, True)
    assert _reply(b"HTTP/1.1 200 OK\r\n\r\n" + body, ended=True)[2:] == (body, False)
    with pytest.raises(httpx.RemoteProtocolError, match="5 bytes before the end"):
        _reply(_ok("7")[:-5], ended=True)
    for broken in (b"x\r\n", b"5\r\nabcdeXY0\r\n\r\n", b"0x5\r\nabcde\r\n0\r\n\r\n", b"5\r\nab"):
        with pytest.raises(http.client.IncompleteRead):
            _reply(chunked + broken, ended=True)


def test_a_head_that_arrives_in_pieces_is_read_when_whole():
    """A reply's head split across packets (CRLF line ends, or bare LF ones, which are read line by line)."""
    for first, rest in ((b"HTTP/1.1 200 OK\r\nContent-Le", b"ngth: 2\r\nX: 1\r\n\r\nok"),
                        (b"HTTP/1.1 200 OK\nContent-Le", b"ngth: 2\nX: 1\n\nok"),
                        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n", b"\r\nok")):
        async def read():
            lane = _lane(first, ended=False)
            asyncio.get_running_loop().call_later(0.05, lane._wire.data_received, rest)
            return await asyncio.wait_for(lane._reply("POST"), 2)

        status, fields, body, reusable = asyncio.run(read())
        assert (status, fields["Content-Length"], body, reusable) == (200, "2", b"ok", True)


def test_an_idle_connection_is_reused_only_while_nothing_came_on_it():
    for after in (b"", b"x"):
        lane = _lane(_ok("7"), ended=False)
        lane._reusable = asyncio.run(lane._reply("POST"))[3]
        assert lane._idle()
        lane._wire.data_received(after)
        assert lane._idle() is not bool(after)
        lane._wire.eof_received()  # the server closed it
        assert not lane._idle()


def test_answers_that_arrive_while_a_run_stops_are_kept(tmp_path):
    """A fatal reply (HTTP 401) stops the run while other requests are in flight: their answers, which arrive
    while it stops, are cached, so the next run does not ask (and pay for) them again."""
    def answer(body):
        if body["messages"][0]["content"] == "bad":
            return Reply(status=401, body='{"error": "no"}')
        return Reply(text="5", delay=0.4)

    requests = [ChatRequest(({"role": "user", "content": f"q{i}"},), f"k{i}") for i in range(3)]
    with ChatServer(answer) as server:
        with llm.ChatClient("m", server.api_base, cache_path=tmp_path / "c.sqlite", concurrency=4,
                            max_retries=0) as client:
            with pytest.raises(llm.ChatError, match="401"):
                client.complete_all([*requests, ChatRequest(({"role": "user", "content": "bad"},), "kb")], int)
        asked = len(server.requests)
        with llm.ChatClient("m", server.api_base, cache_path=tmp_path / "c.sqlite", concurrency=4) as client:
            outcomes = client.complete_all(requests, int)
    assert [o.value for o in outcomes] == [5, 5, 5] and all(o.cached for o in outcomes)
    assert len(server.requests) == asked == 4


def test_chunk_framing_and_trailers_count_towards_what_a_reply_may_take(tmp_path, monkeypatch, http_client):
    """http.client caps neither a chunk's extensions nor a trailer's lines: the lean path counts every byte of a
    reply (here against a cap of 20,000 bytes, in place of 32 MB and more) and refuses the reply past it."""
    if http_client == "httpx":
        pytest.skip("h11 has caps of its own")
    monkeypatch.setattr(llm, "_MOST_READ_FOR_A_REPLY", 20_000)
    trailer = b"".join(b"X-T%d: %s\r\n" % (i, b"t" * 90) for i in range(400))  # 40 kB of trailer lines
    raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + _CHUNKED_7[:-2] + trailer + b"\r\n"
    with ChatServer(lambda body: Reply(raw=[raw])) as server:
        with llm.ChatClient("m", server.api_base, cache_path=tmp_path / "c.sqlite", max_retries=0) as client:
            [outcome] = client.complete_all([ChatRequest(({"role": "user", "content": "q"},), "k")], int)
    assert not outcome.ok and "the reply exceeds 20,000 bytes" in outcome.error, outcome.error
    monkeypatch.setattr(llm, "_MOST_READ_FOR_A_REPLY", 60_000)
    with ChatServer(lambda body: Reply(raw=[raw])) as server:
        with llm.ChatClient("m", server.api_base, cache_path=tmp_path / "d.sqlite", max_retries=0) as client:
            [outcome] = client.complete_all([ChatRequest(({"role": "user", "content": "q"},), "k")], int)
    assert outcome.value == 7, outcome.error


def test_a_kept_alive_connection_the_server_closed_is_replaced_not_failed(tmp_path):
    """A server that closes idle connections (uvicorn does after 5 s): the next request opens a new one at once,
    with no failed attempt (none retried, none counted by the circuit breaker)."""
    server = _Recording([_ok("1"), _ok("2")], per_connection=1)  # it closes each connection after one reply
    with llm.ChatClient("m", server.api_base, cache_path=tmp_path / "c.sqlite", concurrency=1) as client:
        [first] = client.complete_all([ChatRequest(({"role": "user", "content": "a"},), "a")], int)
        time.sleep(0.2)  # the server's close arrives
        [second] = client.complete_all([ChatRequest(({"role": "user", "content": "b"},), "b")], int)
        sent = client.calls_sent
    server.close()
    assert (first.value, second.value, sent, server.connections) == (1, 2, 2, 2)


class _Answering:
    """A stand-in for the event loop's transport of a _Lane: each request written is answered at once with `reply`."""

    def __init__(self, wire, reply: bytes):
        self.wire, self.reply, self.sock, self.sent = wire, reply, _Socket(), []

    def write(self, data: bytes) -> None:
        self.sent.append(data)
        self.wire.data_received(self.reply)

    def get_extra_info(self, name):
        return self.sock if name == "socket" else None

    def abort(self) -> None:
        self.wire.connection_lost(None)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


@pytest.mark.skipif(not hasattr(socket, "TCP_QUICKACK"), reason="TCP_QUICKACK is Linux's")
def test_every_lean_request_asks_for_an_immediate_acknowledgement_of_its_reply():
    lane = _lane(b"", ended=False)
    lane._wire.transport = transport = _Answering(lane._wire, _ok("7"))
    lane._reusable = True
    url, headers = "http://127.0.0.1:9/v1/chat/completions", {"Content-Type": "application/json"}
    for data in (b'{"a": 1}', b'{"b": 22}'):
        status, _, body, = asyncio.run(lane.exchange(url, data, headers, 5))
        assert status == 200 and json.loads(body)["choices"][0]["message"]["content"] == "7"
    assert transport.sock.options == [(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)] * 2
    assert [sent.split(b"\r\n")[0] for sent in transport.sent] == [b"POST /v1/chat/completions HTTP/1.1"] * 2
    assert transport.sent[1].endswith(b"Content-Length: 9\r\n\r\n{\"b\": 22}")


def test_the_lean_transport_addresses_a_url_as_httpx_does():
    """Where it connects, its Host header and its request target: the default port left out of Host, an IPv6 host
    bracketed there and bare for the connection, a path percent-encoded, an IDNA host encoded."""
    assert llm._http_parts("http://localhost/v1/chat/completions") == (
        ("localhost", 80), "localhost", "/v1/chat/completions")
    assert llm._http_parts("http://[::1]:8000/v1/a b?x=1") == (("::1", 8000), "[::1]:8000", "/v1/a%20b?x=1")
    assert llm._http_parts("http://bücher.example:81/v1") == (
        ("xn--bcher-kva.example", 81), "xn--bcher-kva.example:81", "/v1")


def test_a_hostile_header_line_is_read_in_linear_time(tmp_path):
    """A header value of 60 kB of spaces between two words (a backtracking pattern would take most of a minute on
    it; a line over 64 kB is refused on the lean path: http.client's limit): the reply is read and answered, in
    CPU seconds far above what the read takes."""
    head = b"X-Pad: a" + b" " * 60_000 + b"b\r\n"
    with ChatServer(lambda body: Reply(raw=[_ok("7", head)])) as server:
        with llm.ChatClient("m", server.api_base, cache_path=tmp_path / "c.sqlite", max_retries=0) as client:
            start = time.process_time()
            [outcome] = client.complete_all([ChatRequest(({"role": "user", "content": "q"},), "k")], int)
            cpu = time.process_time() - start
    assert outcome.value == 7, outcome.error
    assert cpu < 2, f"{cpu:.2f} s of CPU"


def test_a_head_trickled_a_byte_at_a_time_is_read_in_linear_time():
    """90 kB of head lines arriving one byte per turn of the event loop: each byte searched once (searching the
    whole buffer again at every byte took minutes of CPU), in CPU seconds far above what the read takes."""
    head = (b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-%d: %s\r\n" % (i, b"v" * 900) for i in range(99))
            + b"Content-Length: 0\r\n\r\n")

    async def read():
        lane = _lane(b"", ended=False)
        lane._wire.transport = _Answering(lane._wire, b"")

        async def feed():
            for i in range(len(head)):
                lane._wire.data_received(head[i:i + 1])
                await asyncio.sleep(0)

        feeding = asyncio.ensure_future(feed())
        status, fields, body, _ = await lane._reply("POST")
        await feeding
        return status, len(fields), body

    start = time.process_time()
    assert asyncio.run(read()) == (200, 100, b"")
    assert time.process_time() - start < 10


def test_the_benchmarks_event_loop_endpoint_answers_by_its_timer_on_kept_alive_connections(tmp_path):
    """bench/event_server.py, the endpoint bench_generate.py measures the goal against: each request answered
    `latency` after its last byte (never before), on the connections the client keeps (one per slot)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    try:
        from event_server import EventServer
    finally:
        sys.path.pop(0)
    requests = [ChatRequest(({"role": "user", "content": f"问题{i}"},), f"k{i}") for i in range(32)]
    with EventServer(latency=0.02, text="7") as server:
        with llm.ChatClient("m", server.api_base, cache_path=tmp_path / "c.sqlite", concurrency=4) as client:
            outcomes = client.complete_all(requests, int)
        stats = server.stats()
    assert [o.value for o in outcomes] == [7] * 32
    assert stats["requests"] == 32 and stats["accepted"] == 4
    assert 0.02 <= stats["own"] < 0.5
