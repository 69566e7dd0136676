"""The LLM client's hard limits, against real HTTP servers on 127.0.0.1 (tests/chat_server.py): a deadline for the
whole request, a cap on the reply's size, a cap on Retry-After, a circuit breaker for an endpoint that died,
progress lines when stderr is not a terminal, and cache keys that name the server's scheme, host and port."""
import os
import re
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from chat_server import ChatServer, Reply
from chimdqa_eval import llm
from chimdqa_eval.llm import ChatClient, ChatError, ChatRequest, EndpointDied, LLMEndpoint

REPO = Path(__file__).resolve().parents[1]


def ask(text):
    return ChatRequest(({"role": "user", "content": text},), cache_key=text)


def client_for(server, tmp_path, **kw):
    kw.setdefault("backoff", 0.01)
    return ChatClient("judge-x", server.api_base, cache_path=tmp_path / "c.sqlite", **kw)


def trickle(head: bytes, forever: bytes = b" "):
    """A reply that starts with `head`, then sends one more byte per chunk for as long as the client listens."""
    yield head
    for _ in range(10_000):
        yield forever


def origin(server) -> str:
    return server.api_base.rsplit("/v1", 1)[0]


# -- the deadline ------------------------------------------------------------------------------------------------

BODY_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"
TRICKLES = {"body": BODY_HEAD, "headers": b"HTTP/1.1 200 OK\r\nX-Slow: "}


@pytest.mark.parametrize("where", TRICKLES)
def test_a_server_trickling_a_byte_every_half_second_is_given_up_at_the_deadline(tmp_path, where):
    with ChatServer(lambda body: Reply(raw=trickle(TRICKLES[where]), interval=0.5)) as server:
        start = time.monotonic()
        [outcome] = client_for(server, tmp_path, timeout=2, max_retries=0).complete_all([ask("q")], int)
        elapsed = time.monotonic() - start
    assert not outcome.ok and "2" in outcome.error and "deadline" in outcome.error
    assert 1.5 < elapsed < 6  # ~2 s; each read alone never waits long enough to time out


def test_the_deadline_covers_every_attempt_of_a_retried_request_separately(tmp_path):
    with ChatServer(lambda body: "5") as server:
        server.queue(Reply(raw=trickle(BODY_HEAD), interval=0.2))
        [outcome] = client_for(server, tmp_path, timeout=1).complete_all([ask("q")], int)
    assert outcome.value == 5 and len(server.requests) == 2  # the slow attempt timed out, the retry answered


# -- the size cap ------------------------------------------------------------------------------------------------

HUGE = 200 * 2**20
CHILD = textwrap.dedent("""
    import re, sys
    from chimdqa_eval.llm import ChatClient, ChatRequest
    client = ChatClient("judge-x", sys.argv[1], cache_path=sys.argv[2], max_retries=0, concurrency=4)
    requests = [ChatRequest(({"role": "user", "content": f"q{i}"},), f"q{i}") for i in range(4)]
    outcomes = client.complete_all(requests, str)
    print(sum(o.ok for o in outcomes), outcomes[0].error, sep="\\n")
    # The peak RSS of this process since it started (getrusage's would include the forking parent's, pytest's)
    with open("/proc/self/status") as status:
        print(int(re.search(r"VmHWM:\\s*(\\d+) kB", status.read()).group(1)) // 1024)
""")


def huge_completion(declared: bool):
    """A 200 MB chat completion made on the fly (never held whole): with its Content-Length, or chunked."""
    head, tail = b'{"choices": [{"message": {"role": "assistant", "content": "', b'"}}]}'
    block = b"a" * 2**20
    blocks = HUGE // len(block)
    size = len(head) + blocks * len(block) + len(tail)
    if declared:
        yield b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % size + head
        for _ in range(blocks):
            yield block
        yield tail
    else:
        yield b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        for part in (head, *[block] * blocks, tail):
            yield b"%x\r\n%s\r\n" % (len(part), part)
        yield b"0\r\n\r\n"


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "chunked"])
def test_a_200_mb_reply_is_refused_without_reading_it_whole(tmp_path, declared):
    with ChatServer(lambda body: Reply(raw=huge_completion(declared))) as server:
        done = subprocess.run([sys.executable, "-c", CHILD, server.api_base, str(tmp_path / "c.sqlite")], cwd=REPO,
                              capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    answered, error, peak_mib = done.stdout.strip().split("\n")
    assert answered == "0" and f"{llm.MAX_REPLY_BYTES:,}" in error and "bytes" in error
    assert int(peak_mib) < 300


def test_a_reply_under_the_cap_is_read(tmp_path):
    text = "字" * 200_000  # 600 kB of UTF-8
    with ChatServer(lambda body: text) as server:
        [outcome] = client_for(server, tmp_path).complete_all([ask("q")], str)
    assert outcome.value == text


# -- Retry-After -------------------------------------------------------------------------------------------------

def test_a_retry_after_of_a_day_gives_up_at_once_not_after_a_minute_per_retry(tmp_path):
    with ChatServer(lambda body: Reply(status=429, headers={"Retry-After": "86400"})) as server:
        start = time.monotonic()
        [outcome] = client_for(server, tmp_path, timeout=5, max_retries=2).complete_all([ask("q")], int)
        elapsed = time.monotonic() - start
    assert not outcome.ok and "86400" in outcome.error and "HTTP 429" in outcome.error
    assert elapsed < 5 and len(server.requests) == 1


def test_a_retry_after_longer_than_the_deadline_is_not_waited_for(tmp_path):
    with ChatServer(lambda body: "3") as server:
        server.queue(Reply(status=503, headers={"Retry-After": "4"}))
        start = time.monotonic()
        [outcome] = client_for(server, tmp_path, timeout=2, max_retries=3).complete_all([ask("q")], int)
        elapsed = time.monotonic() - start
    assert not outcome.ok and "Retry-After" in outcome.error and elapsed < 3.5  # not the 4 s asked for


def test_a_short_retry_after_is_still_honoured(tmp_path):
    with ChatServer(lambda body: "3") as server:
        server.queue(Reply(status=429, headers={"Retry-After": "1"}))
        start = time.monotonic()
        [outcome] = client_for(server, tmp_path, timeout=5).complete_all([ask("q")], int)
    assert outcome.value == 3 and time.monotonic() - start >= 1


# -- the circuit breaker -----------------------------------------------------------------------------------------

def killed_after(server, n):
    """A thread that closes `server` (every connection dropped) once it has received `n` requests."""
    def watch():
        deadline = time.monotonic() + 120
        while len(server.requests) < n and time.monotonic() < deadline:
            time.sleep(0.005)
        server.close()
        killed.append(time.monotonic())

    killed = []
    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread, killed


def cached_rows(path) -> int:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT COUNT(*) FROM completions").fetchone()[0]


def test_an_endpoint_that_dies_stops_the_run_naming_it_and_what_is_cached(tmp_path):
    server = ChatServer(lambda body: "1", latency=0.02).start()
    thread, killed = killed_after(server, 10)
    # Default retries and backoff: before the breaker, each pending request was retried for ~30 s, silently.
    client = ChatClient("judge-x", server.api_base, cache_path=tmp_path / "c.sqlite", concurrency=2)
    with pytest.raises(EndpointDied) as died:
        client.complete_all([ask(f"q{i}") for i in range(40)], int)
    stopped = time.monotonic()
    thread.join()
    assert stopped - killed[0] < 15
    message = str(died.value)
    cached = cached_rows(tmp_path / "c.sqlite")
    assert origin(server) in message and f"{cached} of 40 answers are cached" in message
    assert 5 <= cached < 40 and isinstance(died.value, ChatError)  # every command already reports a ChatError
    with ChatServer(lambda body: "1", port=int(origin(server).rsplit(":", 1)[1])) as again:
        outcomes = ChatClient("judge-x", again.api_base, cache_path=tmp_path / "c.sqlite").complete_all(
            [ask(f"q{i}") for i in range(40)], int)
    assert all(o.value == 1 for o in outcomes) and len(again.requests) == 40 - cached


def test_a_single_dropped_connection_does_not_trip_the_breaker(tmp_path):
    with ChatServer(lambda body: "1") as server:
        server.queue(Reply(raw=[b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{"]))
        outcomes = client_for(server, tmp_path, concurrency=2).complete_all([ask(f"q{i}") for i in range(6)], int)
    assert all(o.value == 1 for o in outcomes)


GENERATE = [sys.executable, "-m", "chimdqa_eval.cli", "generate", "--model", "test-model", "--mode", "closed-book",
            "--concurrency", "2"]


def test_a_server_killed_mid_generate_stops_it_within_30_s_and_the_rerun_asks_only_the_rest(tmp_path):
    out = tmp_path / "p.jsonl"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    server = ChatServer(lambda body: "答案", latency=0.05).start()
    port = int(origin(server).rsplit(":", 1)[1])
    thread, killed = killed_after(server, 20)
    run = subprocess.run([*GENERATE, "--api-base", server.api_base, "--out", str(out)], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=600)
    stopped = time.monotonic()
    thread.join()
    assert run.returncode != 0 and stopped - killed[0] < 30, run.stderr
    found = re.search(r"(\d+) of (\d+) answers are cached", run.stderr)
    assert origin(server) in run.stderr and found, run.stderr
    cached, total = int(found.group(1)), int(found.group(2))
    assert total == 66 and 15 <= cached < 66
    with ChatServer(lambda body: "答案", port=port) as again:
        rerun = subprocess.run([*GENERATE, "--api-base", again.api_base, "--out", str(out)], cwd=REPO, env=env,
                               capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    assert len(again.requests) == total - cached and len(out.read_text(encoding="utf-8").splitlines()) == 66


# -- progress ----------------------------------------------------------------------------------------------------

def test_progress_goes_to_stderr_as_plain_lines_when_it_is_not_a_terminal(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(llm, "PROGRESS_EVERY", 0.1)
    with ChatServer(lambda body: Reply(status=400) if "bad" in body["messages"][-1]["content"] else "1",
                    latency=0.05) as server:
        client = client_for(server, tmp_path, concurrency=2)
        client.complete_all([ask("q0"), ask("q1")], int)
        client.complete_all([ask(f"q{i}") for i in range(20)] + [ask("bad")], int, desc="judging")
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("judging")]
    assert len(lines) >= 3 and "\r" not in "".join(lines)
    assert re.fullmatch(r"judging: 18 answered, 2 cached, 1 failed, 0 left \(\d+ s\)", lines[-1])


# -- what names the server ---------------------------------------------------------------------------------------

def test_the_cache_and_the_signature_name_scheme_host_and_port(tmp_path):
    with ChatServer(lambda body: "1") as first, ChatServer(lambda body: "2") as second:
        assert client_for(first, tmp_path).complete_all([ask("q")], int)[0].value == 1
        [other] = client_for(second, tmp_path).complete_all([ask("q")], int)  # same host, another port
        assert other.value == 2 and not other.cached and len(second.requests) == 1
        assert client_for(second, tmp_path).signature_fields["judge_api"] == origin(second)
    endpoint = LLMEndpoint("m", ("https://api.example.com/v1", "http://10.0.0.5:8000/v1", "http://h/v1"))
    assert endpoint.signature_fields()["judge_api"] == \
        "http://10.0.0.5:8000,http://h:80,https://api.example.com:443"


def test_a_cache_written_under_the_old_key_is_not_read(tmp_path):
    """Replies cached before the key named the port (settings {"api": host}) are misses, never served."""
    with ChatServer(lambda body: "1") as server:
        client = client_for(server, tmp_path)
        old = '{"api": "127.0.0.1", "temperature": 0.0, "max_tokens": null}'
        client.cache.put("judge-x", old, "q", {"text": "9", "logprobs": None, "usage": None})
        [outcome] = client.complete_all([ask("q")], int)
    assert outcome.value == 1 and not outcome.cached


def test_the_proxy_the_environment_names_is_used_unless_no_proxy_says_otherwise(tmp_path, monkeypatch):
    """As urllib did: http_proxy carries the requests (the proxy here is the test server, which answers a
    request for another host's URL with 404); no_proxy exempts a host."""
    with ChatServer(lambda body: "1") as proxy, ChatServer(lambda body: "2") as direct:
        monkeypatch.setenv("http_proxy", origin(proxy))
        monkeypatch.setenv("no_proxy", "localhost")
        with pytest.raises(ChatError, match="HTTP 404"):
            ChatClient("judge-x", "http://llm.invalid/v1", cache_path=tmp_path / "c.sqlite").complete_all(
                [ask("q")], int)
        local = direct.api_base.replace("127.0.0.1", "localhost")
        [outcome] = ChatClient("judge-x", local, cache_path=tmp_path / "c.sqlite").complete_all([ask("q")], int)
    assert outcome.value == 2 and len(direct.requests) == 1


def test_a_judge_endpoint_killed_mid_evaluate_stops_it_naming_the_endpoint(tmp_path, capsys):
    from chimdqa_eval import cli, release

    def evaluate(server, out):
        return cli.main(["evaluate", "--predictions", str(release.SAMPLE_DIR / "predictions.jsonl"), "--out",
                         str(out), "--metrics", "factual", "--resamples", "0", "--judge", "llm", "--judge-model",
                         "grader", "--api-base", server.api_base, "--concurrency", "2"])

    server = ChatServer(lambda body: "结论：正确", latency=0.05).start()
    thread, killed = killed_after(server, 10)
    code = evaluate(server, tmp_path / "out")
    stopped = time.monotonic()
    thread.join()
    err = capsys.readouterr().err
    found = re.search(rf"{origin(server)} stopped answering: .* (\d+) of (\d+) answers are cached", err)
    assert code == 2 and found and stopped - killed[0] < 30, err
    assert not (tmp_path / "out" / "results.json").exists()
    cached, total = int(found.group(1)), int(found.group(2))
    with ChatServer(lambda body: "结论：正确", port=int(origin(server).rsplit(":", 1)[1])) as again:
        assert evaluate(again, tmp_path / "out") == 0
    assert len(again.requests) == total - cached and cached >= 5
