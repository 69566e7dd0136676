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
import zlib
from pathlib import Path

import pytest

from chat_server import ChatServer, Reply
from chimdqa_eval import llm
from chimdqa_eval.llm import ChatClient, ChatError, ChatRequest, EndpointDied, LLMEndpoint

pytestmark = pytest.mark.usefixtures("http_client")  # each test through both HTTP paths

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


def test_a_retry_fits_in_the_deadline_of_the_whole_request(tmp_path):
    with ChatServer(lambda body: "5") as server:
        server.queue(Reply(status=500), Reply(raw=[b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{"]))
        [outcome] = client_for(server, tmp_path, timeout=2).complete_all([ask("q")], int)
    assert outcome.value == 5 and len(server.requests) == 3  # two quick failures, then the answer


HANG = Reply(delay=60)  # accepts the connection and the request, never answers (in any test's time)


@pytest.mark.parametrize("script, settings", [
    ((Reply(status=429, headers={"Retry-After": "0.4"}), Reply(status=500), HANG), dict(max_retries=5)),
    ((), dict(max_retries=10, backoff=0.4)),  # HTTP 500 every time: the backoff's waits count too
], ids=["retry-after-then-no-reply", "backoff"])
def test_a_request_ends_by_its_timeout_retries_and_waits_included(tmp_path, script, settings):
    """--timeout is the whole request's deadline: each attempt gets what is left of it, and a wait (Retry-After
    or backoff) that would leave no time for the next attempt ends the request instead."""
    with ChatServer(lambda body: Reply(status=500)) as server:
        server.queue(*script)
        start = time.monotonic()
        [outcome] = client_for(server, tmp_path, timeout=1.5, **settings).complete_all([ask("q")], int)
        elapsed = time.monotonic() - start
    assert not outcome.ok and "1.5 s" in outcome.error and "--timeout" in outcome.error, outcome.error
    assert elapsed < 1.5 + 0.5 and len(server.requests) >= 2


# -- the size cap ------------------------------------------------------------------------------------------------

HUGE = 200 * 2**20
CHILD = textwrap.dedent("""
    import re, sys
    from chimdqa_eval.llm import ChatClient, ChatRequest
    concurrency = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    client = ChatClient("judge-x", sys.argv[1], cache_path=sys.argv[2], max_retries=0, concurrency=concurrency)
    requests = [ChatRequest(({"role": "user", "content": f"q{i}"},), f"q{i}") for i in range(concurrency)]
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


def gzip_bomb(gib: int = 1) -> bytes:
    """About 1 MB of gzip that inflates to `gib` GiB of zeros: one 1 MiB block compressed and repeated (a full
    flush leaves the same bytes each time). Its end is left out: a client with limits never gets there."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = b"\0" * 2**20
    first = packer.compress(zeros) + packer.flush(zlib.Z_FULL_FLUSH)
    block = packer.compress(zeros) + packer.flush(zlib.Z_FULL_FLUSH)
    return first + block * (1024 * gib - 1)


def test_a_gzip_bomb_is_refused_under_300_mb_at_concurrency_8(tmp_path):
    """The client asks for no compression, but a server may gzip anyway: what it inflates to is capped too."""
    bomb = gzip_bomb()
    head = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
            b"Content-Length: %d\r\n\r\n" % len(bomb))
    with ChatServer(lambda body: Reply(raw=[head, bomb])) as server:
        done = subprocess.run([sys.executable, "-c", CHILD, server.api_base, str(tmp_path / "c.sqlite"), "8"],
                              cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    answered, error, peak_mib = done.stdout.strip().split("\n")
    assert answered == "0" and f"{llm.MAX_REPLY_BYTES:,}" in error and "bytes" in error, error
    assert int(peak_mib) < 300


@pytest.mark.parametrize("encoding, pack", [
    ("gzip", lambda data: zlib.compress(data, wbits=31)),
    ("deflate", zlib.compress),
    ("identity", lambda data: data),
])
def test_a_compressed_reply_under_the_cap_is_read(tmp_path, encoding, pack):
    from chat_server import completion_body

    body = pack(completion_body("字" * 1000).encode("utf-8"))
    head = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: %s\r\n"
            b"Content-Length: %d\r\n\r\n" % (encoding.encode(), len(body)))
    with ChatServer(lambda request: Reply(raw=[head, body])) as server:
        [outcome] = client_for(server, tmp_path).complete_all([ask("q")], str)
    assert outcome.value == "字" * 1000


def test_an_encoding_the_client_cannot_bound_is_refused_naming_it(tmp_path):
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: br\r\nContent-Length: 4\r\n\r\n"
    with ChatServer(lambda request: Reply(raw=[head, b"\x0b\x01\x80\x03"])) as server:
        [outcome] = client_for(server, tmp_path).complete_all([ask("q")], str)
    assert not outcome.ok and "Content-Encoding" in outcome.error and "br" in outcome.error, outcome.error
    assert len(server.requests) == 1  # refused at once, not retried


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


def test_a_gateway_answering_502_stops_the_run_within_seconds(tmp_path):
    """A proxy whose model server is gone answers every request at once with 502: that is no answer."""
    with ChatServer(lambda body: Reply(status=502, body="<html>502 Bad Gateway</html>")) as server:
        client = ChatClient("judge-x", server.api_base, cache_path=tmp_path / "c.sqlite", concurrency=2)
        start = time.monotonic()
        with pytest.raises(EndpointDied) as died:
            client.complete_all([ask(f"q{i}") for i in range(8)], int)  # default retries and backoff
        elapsed = time.monotonic() - start
    assert origin(server) in str(died.value) and "HTTP 502" in str(died.value), str(died.value)
    assert elapsed < 10


def test_a_server_that_never_replies_stops_the_run_within_seconds(tmp_path):
    with ChatServer(lambda body: HANG) as server:
        client = client_for(server, tmp_path, timeout=1, max_retries=1, concurrency=2)
        start = time.monotonic()
        with pytest.raises(EndpointDied) as died:
            client.complete_all([ask(f"q{i}") for i in range(20)], int)
        elapsed = time.monotonic() - start
    assert origin(server) in str(died.value) and "0 of 20 answers are cached" in str(died.value), str(died.value)
    assert elapsed < 10 and len(server.requests) < 20


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


def test_a_probe_reply_announcing_a_gigabyte_is_an_input_error_naming_the_url(tmp_path, capsys):
    from chimdqa_eval import cli, release

    huge = Reply(raw=[b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 999999999\r\n\r\n{}"])
    with ChatServer(lambda body: "结论：正确", models=huge) as server:
        code = cli.main(["evaluate", "--predictions", str(release.SAMPLE_DIR / "predictions.jsonl"), "--out",
                         str(tmp_path / "out"), "--metrics", "factual", "--resamples", "0", "--judge", "llm",
                         "--judge-model", "grader", "--api-base", server.api_base])
        asked = len(server.requests)
    err = capsys.readouterr().err
    assert code == 2 and server.api_base in err and "999,999,999" in err and "Traceback" not in err, err
    assert asked == 0
