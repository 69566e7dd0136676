"""ChatClient against a real HTTP chat-completions server on 127.0.0.1 (tests/chat_server.py)."""
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from chimdqa_eval.llm import ChatClient, ChatError, ChatRequest
from chat_server import ChatServer, Reply


def ask(text, key=None):
    return ChatRequest(({"role": "user", "content": text},), cache_key=key or text)


def strict_int(raw):
    """A parser like a judge's: the whole reply must be an integer."""
    return int(raw.strip())


def echo_length(body):
    return str(len(body["messages"][-1]["content"]))


def client_for(server, tmp_path, **kw):
    kw.setdefault("backoff", 0.01)
    return ChatClient("judge-x", server.api_base, cache_path=tmp_path / "c.sqlite", **kw)


def test_answers_in_request_order_and_sends_the_protocol(tmp_path, monkeypatch):
    monkeypatch.setenv("TEST_JUDGE_KEY", "sk-test-123")
    with ChatServer(echo_length) as server:
        client = client_for(server, tmp_path, api_key_env="TEST_JUDGE_KEY", concurrency=4, max_tokens=8)
        texts = ["a" * n for n in (5, 1, 12, 3, 7, 2)]
        outcomes = client.complete_all([ask(t) for t in texts], strict_int)
    assert [o.value for o in outcomes] == [5, 1, 12, 3, 7, 2]
    assert all(o.ok and not o.cached for o in outcomes)
    body = server.requests[0]
    assert body["model"] == "judge-x" and body["temperature"] == 0.0 and body["max_tokens"] == 8
    assert body["messages"][0]["role"] == "user"
    assert server.headers[0]["Authorization"] == "Bearer sk-test-123"


def test_rerun_is_served_from_the_cache_and_duplicates_are_asked_once(tmp_path):
    with ChatServer(echo_length) as server:
        first = client_for(server, tmp_path).complete_all([ask("xx"), ask("yyy"), ask("xx")], strict_int)
        assert len(server.requests) == 2
        again = client_for(server, tmp_path).complete_all([ask("yyy"), ask("xx")], strict_int)
        assert len(server.requests) == 2
        # Another model or other generation settings must not reuse these answers.
        ChatClient("judge-y", server.api_base, cache_path=tmp_path / "c.sqlite").complete_all([ask("xx")], strict_int)
        client_for(server, tmp_path, temperature=0.7).complete_all([ask("xx")], strict_int)
        assert len(server.requests) == 4
        # Nor another API host (the signature names it): the same server reached as localhost asks again.
        ChatClient("judge-x", server.api_base.replace("127.0.0.1", "localhost"),
                   cache_path=tmp_path / "c.sqlite").complete_all([ask("xx")], strict_int)
        assert len(server.requests) == 5
    assert [o.value for o in first] == [2, 3, 2]
    assert [(o.value, o.cached) for o in again] == [(3, True), (2, True)]


def test_429_and_5xx_are_retried_honouring_retry_after(tmp_path):
    with ChatServer(lambda body: "7") as server:
        server.queue(Reply(status=429, headers={"Retry-After": "0.3"}), Reply(status=503), Reply(status=500))
        start = time.monotonic()
        [outcome] = client_for(server, tmp_path).complete_all([ask("q")], strict_int)
        elapsed = time.monotonic() - start
    assert outcome.ok and outcome.value == 7
    assert len(server.requests) == 4
    assert elapsed >= 0.3  # the server asked for 0.3 s; our own backoff here is only ~0.01 s


def test_retries_run_out_into_a_reported_error_that_is_not_cached(tmp_path):
    with ChatServer(lambda body: Reply(status=500, text="overloaded")) as server:
        [outcome] = client_for(server, tmp_path, max_retries=2).complete_all([ask("q")], strict_int)
        assert len(server.requests) == 3
        assert not outcome.ok and outcome.value is None
        assert "HTTP 500" in outcome.error and "overloaded" in outcome.error
        server.handler = lambda body: "1"
        [outcome] = client_for(server, tmp_path).complete_all([ask("q")], strict_int)
    assert outcome.ok and outcome.value == 1 and not outcome.cached


def test_garbage_reply_is_reasked_then_reported(tmp_path):
    with ChatServer(lambda body: "I think the answer is probably fine") as server:
        server.queue(Reply(text="???"))
        server.handler = lambda body: "42"
        [fixed] = client_for(server, tmp_path).complete_all([ask("a")], strict_int)
        assert fixed.value == 42 and len(server.requests) == 2

        server.handler = lambda body: "I think the answer is probably fine"
        [broken] = client_for(server, tmp_path, parse_retries=2).complete_all([ask("b")], strict_int)
    assert not broken.ok and broken.value is None
    assert "unparseable" in broken.error and broken.raw == "I think the answer is probably fine"
    assert server.hits("b") == 3


def test_a_body_that_is_not_a_completion_is_retried(tmp_path):
    with ChatServer(lambda body: "3") as server:
        server.queue(Reply(body="<html>bad gateway</html>"), Reply(body='{"choices": []}'))
        [outcome] = client_for(server, tmp_path).complete_all([ask("q")], strict_int)
    assert outcome.value == 3 and len(server.requests) == 3


def test_a_slow_reply_times_out_and_is_retried(tmp_path):
    with ChatServer(lambda body: "5") as server:
        server.queue(Reply(text="5", delay=2.0))
        [outcome] = client_for(server, tmp_path, timeout=0.3).complete_all([ask("q")], strict_int)
    assert outcome.value == 5 and len(server.requests) == 2


def test_bad_key_stops_with_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    with ChatServer(lambda body: Reply(status=401, text="invalid api key")) as server:
        with pytest.raises(ChatError, match=r"401.*NO_SUCH_KEY_VAR.*invalid api key"):
            client_for(server, tmp_path, api_key_env="NO_SUCH_KEY_VAR").complete_all([ask("q")], strict_int)
        assert len(server.requests) == 1
        assert "Authorization" not in server.headers[0]


def test_a_rejected_request_is_reported_without_retrying(tmp_path):
    with ChatServer(lambda body: Reply(status=400, text="prompt too long")) as server:
        [outcome] = client_for(server, tmp_path).complete_all([ask("q")], strict_int)
    assert "HTTP 400" in outcome.error and "prompt too long" in outcome.error
    assert len(server.requests) == 1


def test_concurrency_is_bounded(tmp_path):
    lock, state = threading.Lock(), {"now": 0, "max": 0}

    def slow(body):
        with lock:
            state["now"] += 1
            state["max"] = max(state["max"], state["now"])
        time.sleep(0.1)
        with lock:
            state["now"] -= 1
        return "1"

    with ChatServer(slow) as server:
        client_for(server, tmp_path, concurrency=3).complete_all([ask(str(i)) for i in range(12)], strict_int)
    assert state["max"] == 3


CHILD = textwrap.dedent("""
    import sys
    from chimdqa_eval.llm import ChatClient, ChatRequest
    api_base, cache = sys.argv[1], sys.argv[2]
    requests = [ChatRequest(({"role": "user", "content": f"q{i}"},), f"q{i}") for i in range(20)]
    ChatClient("judge-x", api_base, cache_path=cache, concurrency=1).complete_all(requests, int)
""")


def _cached_rows(path) -> int:
    if not Path(path).exists():
        return 0
    db = sqlite3.connect(path)
    try:
        return db.execute("SELECT COUNT(*) FROM replies").fetchone()[0]
    except sqlite3.OperationalError:  # the child has not created the table yet
        return 0
    finally:
        db.close()


def test_a_killed_run_resumes_from_the_cache(tmp_path):
    sixth = threading.Event()

    def handler(body):
        if len(server.requests) == 6:
            sixth.set()
            return Reply(text="6", delay=30)  # the child is killed while waiting for this one
        return "1"

    with ChatServer(handler) as server:
        cache = tmp_path / "c.sqlite"
        repo = Path(__file__).resolve().parents[1]
        child = subprocess.Popen([sys.executable, "-c", CHILD, server.api_base, str(cache)], cwd=repo)
        try:
            assert sixth.wait(60)
            # The fifth answer is written by the child's main thread while the sixth request is in flight.
            deadline = time.monotonic() + 20
            while _cached_rows(cache) < 5 and time.monotonic() < deadline:
                time.sleep(0.05)
        finally:
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
        assert _cached_rows(cache) == 5
        server.handler = lambda body: "1"
        requests = [ask(f"q{i}") for i in range(20)]
        outcomes = ChatClient("judge-x", server.api_base, cache_path=cache).complete_all(requests, int)
    assert len(server.requests) == 6 + 15
    assert sum(o.cached for o in outcomes) == 5 and all(o.value == 1 for o in outcomes)


def test_a_connection_dropped_mid_reply_is_retried(tmp_path):
    """A server that dies while sending (truncated body, garbage status line) is a transient failure."""
    import socket

    from chat_server import completion_body

    good = completion_body("7").encode("utf-8")
    replies = [b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{\"choi",
               b"garbage\r\n\r\n",
               b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
               b"Connection: close\r\n\r\n" % len(good) + good]
    listener = socket.create_server(("127.0.0.1", 0))

    def serve():
        for reply in replies:
            conn, _ = listener.accept()
            with conn:
                conn.recv(65536)
                conn.sendall(reply)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    port = listener.getsockname()[1]
    client = ChatClient("judge-x", f"http://127.0.0.1:{port}/v1", cache_path=tmp_path / "c.sqlite", backoff=0.01)
    [outcome] = client.complete_all([ask("q")], strict_int)
    thread.join(5)
    listener.close()
    assert outcome.value == 7
