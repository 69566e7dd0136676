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

pytestmark = pytest.mark.usefixtures("http_client")  # each test through both HTTP paths


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



def test_a_run_looks_its_requests_up_in_the_cache_in_batches(tmp_path):
    """complete_all, pending and cached read the cache a batch of keys a query: 1,201 requests are 3 queries,
    across the batches' edges every key is found, and only the other settings' replies are not."""
    from chimdqa_eval import llm

    with ChatServer(lambda body: "7") as server:
        client = client_for(server, tmp_path)
        requests = [ask(f"q{i}") for i in range(1201)]
        for request in requests[:1200]:
            client.cache.put("judge-x", client._settings, request.key, {"text": "1", "logprobs": None, "usage": None})
        client.cache.put("judge-x", "other settings", requests[1200].key, {"text": "9", "logprobs": None,
                                                                          "usage": None})
        queries = []
        client.cache._db.set_trace_callback(lambda sql: queries.append(sql) if sql.startswith("SELECT") else None)
        assert client.pending(requests) == 1 and client.pending(requests, strict_int) == 1
        assert [o is None for o in client.cached(requests, strict_int)] == [False] * 1200 + [True]
        outcomes = client.complete_all(requests, strict_int)
    assert len(queries) == 4 * -(-1201 // llm._KEYS_A_QUERY) == 12
    assert [o.value for o in outcomes] == [1] * 1200 + [7] and len(server.requests) == 1

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


def test_a_slow_reply_times_out_at_the_requests_deadline_and_a_rerun_asks_again(tmp_path):
    """--timeout is the whole request's deadline: an attempt that uses it up leaves no time for a retry."""
    with ChatServer(lambda body: "5") as server:
        server.queue(Reply(text="5", delay=2.0))
        start = time.monotonic()
        [slow] = client_for(server, tmp_path, timeout=0.3).complete_all([ask("q")], strict_int)
        elapsed = time.monotonic() - start
        assert not slow.ok and "timed out" in slow.error and "0.3 s" in slow.error and len(server.requests) == 1
        assert elapsed < 1.5
        [again] = client_for(server, tmp_path, timeout=0.3).complete_all([ask("q")], strict_int)
    assert again.value == 5 and not again.cached and len(server.requests) == 2


def test_bad_key_stops_with_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    with ChatServer(lambda body: Reply(status=401, text="invalid api key")) as server:
        with pytest.raises(ChatError, match=r"401.*NO_SUCH_KEY_VAR.*invalid api key"):
            client_for(server, tmp_path, api_key_env="NO_SUCH_KEY_VAR").complete_all([ask("q")], strict_int)
        assert len(server.requests) == 1
        assert "Authorization" not in server.headers[0]



@pytest.mark.parametrize("key", ["sk-1\r\nX-Injected: 1", "sk-1\x1b", "sk-ключ", "sk-1 ", " sk-1"])
def test_a_key_no_header_can_carry_is_refused_without_quoting_it(tmp_path, monkeypatch, key):
    monkeypatch.setenv("TEST_JUDGE_KEY", key)
    with ChatServer(lambda body: "1") as server:
        with pytest.raises(ChatError, match=r"\$TEST_JUDGE_KEY is not an API key") as raised:
            client_for(server, tmp_path, api_key_env="TEST_JUDGE_KEY").complete_all([ask("q")], strict_int)
        assert server.requests == []
    assert "sk-" not in str(raised.value)


def test_a_rejected_request_is_reported_without_retrying(tmp_path):
    with ChatServer(lambda body: Reply(status=400, text="prompt too long")) as server:
        [outcome] = client_for(server, tmp_path).complete_all([ask("q")], strict_int)
    assert "HTTP 400" in outcome.error and "prompt too long" in outcome.error
    assert len(server.requests) == 1


def peak_counter():
    """A handler that answers "1" after 0.1 s and records the peak number of requests in flight."""
    lock, state = threading.Lock(), {"now": 0, "max": 0}

    def slow(body):
        with lock:
            state["now"] += 1
            state["max"] = max(state["max"], state["now"])
        time.sleep(0.1)
        with lock:
            state["now"] -= 1
        return "1"

    return slow, state


def test_concurrency_is_bounded(tmp_path):
    slow, state = peak_counter()
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
        return db.execute("SELECT COUNT(*) FROM completions").fetchone()[0]
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


# -- LLMEndpoint, several API bases, logprobs, usage, the call cap, pending, probe ------------------------------

import argparse  # noqa: E402
import socket  # noqa: E402

from chimdqa_eval.commands._options import add_endpoint_arguments  # noqa: E402
from chimdqa_eval.llm import CAP_ERROR, LLMEndpoint, endpoint_from_args  # noqa: E402
from chimdqa_eval.schema import InputError  # noqa: E402


def test_several_api_bases_are_served_in_turn_with_their_own_concurrency(tmp_path):
    first, first_state = peak_counter()
    second, second_state = peak_counter()
    with ChatServer(first) as a, ChatServer(second) as b:
        # Distinct hosts for the two servers: 127.0.0.1 and localhost (both this machine).
        bases = (a.api_base, b.api_base.replace("127.0.0.1", "localhost"))
        client = LLMEndpoint("judge-x", bases, concurrency=2, cache_path=tmp_path / "c.sqlite").client()
        outcomes = client.complete_all([ask(str(i)) for i in range(16)], strict_int)
    assert all(o.value == 1 for o in outcomes)
    assert len(a.requests) + len(b.requests) == 16
    assert len(a.requests) >= 4 and len(b.requests) >= 4
    assert client.sent_per_base == [len(a.requests), len(b.requests)]
    assert first_state["max"] == 2 and second_state["max"] == 2  # 2 per base, never more
    assert client.signature_fields["judge_api"] == ",".join(sorted(
        [a.api_base[:-len("/v1")], b.api_base[:-len("/v1")].replace("127.0.0.1", "localhost")]))


def test_logprobs_and_usage_are_parsed_and_kept_in_the_cache(tmp_path):
    with ChatServer(lambda body: Reply(text="42", logprobs=[-0.25, -1.5])) as server:
        [fresh] = client_for(server, tmp_path).complete_all([ask("q")], strict_int)
        [again] = client_for(server, tmp_path).complete_all([ask("q")], strict_int)
    assert fresh.logprobs == [-0.25, -1.5] and not fresh.cached
    assert fresh.usage["prompt_tokens"] == 1 and fresh.usage["completion_tokens"] == 2
    assert again.cached and again.value == 42 and again.logprobs == [-0.25, -1.5] and again.usage == fresh.usage
    assert len(server.requests) == 1


def test_extra_body_fields_are_sent_and_part_of_the_cache_key(tmp_path):
    with ChatServer(lambda body: Reply(text="7", logprobs=[-0.5] if body.get("logprobs") else None)) as server:
        client = client_for(server, tmp_path, max_tokens=8)
        plain = ask("q")
        with_lp = ChatRequest(plain.messages, plain.cache_key, extra={"logprobs": True, "max_tokens": 512})
        first = client.complete_all([plain, with_lp, with_lp], strict_int)
        assert len(server.requests) == 2
        asked_plain, asked_lp = sorted(server.requests, key=lambda body: "logprobs" in body)  # sent concurrently
        assert asked_lp["logprobs"] is True and asked_lp["max_tokens"] == 512
        assert asked_plain["max_tokens"] == 8 and "logprobs" not in asked_plain
        again = client.complete_all([with_lp], strict_int)
        assert len(server.requests) == 2
    assert first[0].logprobs is None and first[1].logprobs == [-0.5] and again[0].cached


def test_usage_is_summed_per_stage_with_cache_hits_and_unknown_usage_said(tmp_path):
    def handler(body):
        text = body["messages"][-1]["content"]
        return Reply(text="5", no_usage=True) if text == "nousage" else "12"

    with ChatServer(handler) as server:
        client = client_for(server, tmp_path, prices=(2.0, 10.0))
        client.complete_all([ask("ab"), ask("cde")], strict_int, stage="extract")
        client.complete_all([ask("ab"), ask("fgh"), ask("nousage")], strict_int, stage="check")
        report = client.usage_report()
    extract, check = report["stages"]["extract"], report["stages"]["check"]
    assert (extract["asked"], extract["requests"], extract["cache_hits"]) == (2, 2, 0)
    assert (extract["prompt_tokens"], extract["completion_tokens"]) == (2 + 3, 2 + 2)
    assert (check["asked"], check["requests"], check["cache_hits"]) == (2, 2, 1)
    assert (check["prompt_tokens"], check["completion_tokens"], check["replies_without_usage"]) == (3, 2, 1)
    assert report["total"]["requests"] == 4 and report["total"]["prompt_tokens"] == 8
    assert extract["cost_usd"] == pytest.approx((5 * 2.0 + 4 * 10.0) / 1e6)
    assert "1 replies carried no token usage" in report["note"] and "lower bounds" in report["note"]


def test_the_call_cap_stops_cleanly_and_a_rerun_asks_only_the_rest(tmp_path):
    requests = [ask(f"q{i}") for i in range(10)]
    with ChatServer(lambda body: "3") as server:
        client = client_for(server, tmp_path, max_calls=4, concurrency=3)
        assert client.pending(requests) == 10
        outcomes = client.complete_all(requests, strict_int)
        assert len(server.requests) == 4
        assert sum(o.ok for o in outcomes) == 4
        assert {o.error for o in outcomes if not o.ok} == {CAP_ERROR.format(cap=4)}
        assert CAP_ERROR.format(cap=4) == "not asked: the --max-llm-calls cap (4) was reached"
        assert client.cap_reached and client.usage_report()["total"]["not_asked"] == 6
        assert client.pending(requests) == 6  # the answered four are cached
        rerun = client_for(server, tmp_path, max_calls=100)
        assert [o.value for o in rerun.complete_all(requests, strict_int)] == [3] * 10
        assert len(server.requests) == 10 and not rerun.cap_reached
        assert rerun.usage_report()["stages"]["judge"]["cache_hits"] == 4


def test_pending_counts_distinct_uncached_requests_and_asks_nothing(tmp_path):
    with ChatServer(lambda body: "1") as server:
        client = client_for(server, tmp_path)
        client.complete_all([ask("a")], strict_int)
        assert client.pending([ask("a"), ask("b"), ask("b"), ask("c")]) == 2
        assert len(server.requests) == 1


def test_pending_with_the_parser_counts_cached_replies_it_would_ask_again(tmp_path):
    def stricter(raw):  # e.g. a template whose verdict_regex changed while its prompt text did not
        if raw == "1":
            raise ValueError("1 is no longer a verdict")
        return raw

    with ChatServer(lambda body: "1") as server:
        client = client_for(server, tmp_path)
        client.complete_all([ask("a")], strict_int)
        assert client.pending([ask("a")]) == 0 and client.pending([ask("a")], strict_int) == 0
        assert client.pending([ask("a"), ask("b")], stricter) == 2
        client.complete_all([ask("a")], stricter)  # what the dry run said: asked again
        assert len(server.requests) == 1 + 3


def test_probe_names_a_closed_port_at_once(tmp_path):
    with socket.create_server(("127.0.0.1", 0)) as sock:
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    client = ChatClient("judge-x", url, cache_path=tmp_path / "c.sqlite")
    start = time.monotonic()
    with pytest.raises(InputError, match=rf"{url} cannot be reached .*ConnectionRefused"):
        client.probe()
    assert time.monotonic() - start < 5


def test_probe_lists_models_or_asks_one_token_and_names_a_wrong_url(tmp_path):
    with ChatServer(lambda body: "1") as server:
        client_for(server, tmp_path).probe()
        assert server.gets == ["/v1/models"] and server.requests == []
    with ChatServer(lambda body: "1", serve_models=False) as server:
        client = client_for(server, tmp_path)
        client.probe()  # /models is not served: one chat request of one token instead
        assert len(server.requests) == 1 and server.requests[0]["max_tokens"] == 1 and client.calls_sent == 1
        probe = client.usage_report()["stages"]["probe"]  # its tokens are counted with it (one each here)
        assert (probe["requests"], probe["prompt_tokens"], probe["completion_tokens"]) == (1, 1, 1)
        wrong = server.api_base.replace("/v1", "/nowhere")
        with pytest.raises(InputError, match=rf"{wrong} refused a one-token request: .*HTTP 404"):
            ChatClient("judge-x", wrong, cache_path=tmp_path / "c.sqlite").probe()


@pytest.mark.parametrize("changes, message", [
    (dict(model=""), "model=''"),
    (dict(api_bases=()), "api_bases=()"),
    (dict(api_bases=("localhost:8000",)), "api_bases='localhost:8000': expected an http"),
    (dict(concurrency=0), "concurrency=0: expected a whole number of parallel requests per API base, at least 1"),
    (dict(timeout=0), "timeout=0: expected a number of seconds, more than 0"),
    (dict(max_retries=-1), "max_retries=-1"),
    (dict(max_calls=-2), "max_calls=-2"),
    (dict(prices=(1.0,)), "prices=\\(1.0,\\): expected two prices"),
])
def test_endpoint_settings_are_checked(changes, message):
    settings = dict(model="m", api_bases=("http://localhost:8000/v1",)) | changes
    with pytest.raises(InputError, match=message):
        LLMEndpoint(**settings)


def test_credentials_in_an_api_base_are_refused_without_repeating_them():
    # the client sends its requests to the transport itself, so a user:password in the URL would be dropped
    # silently (httpx.Client made it a Basic header); refused instead, and the password is not echoed
    with pytest.raises(InputError, match="api_bases='https://api.example.com/v1': has a user name or password") as e:
        LLMEndpoint("m", "https://user:s3cret@api.example.com/v1")
    assert "s3cret" not in str(e.value) and "user:" not in str(e.value)


def test_endpoint_keeps_one_url_as_a_tuple_and_signs_without_secrets():
    endpoint = LLMEndpoint("m", "https://api.example.com/v1?key=1", api_key_env="MY_KEY")
    assert endpoint.api_bases == ("https://api.example.com/v1?key=1",)
    assert endpoint.signature_fields() == {"judge_model": "m", "judge_api": "https://api.example.com:443",
                                           "judge_temperature": 0.0}
    assert endpoint.signature_fields(prefix="") == {"model": "m", "api": "https://api.example.com:443",
                                                    "temperature": 0.0}


def parse_cli(*argv, model_flag="--judge-model"):
    parser = argparse.ArgumentParser(exit_on_error=False)
    add_endpoint_arguments(parser, model_flag=model_flag)
    return parser.parse_args([str(a) for a in argv])


def test_cli_options_build_the_endpoint():
    args = parse_cli("--judge-model", "g", "--api-base", "http://a:1/v1", "http://b:2/v1", "--concurrency", 4,
                     "--timeout", 5, "--max-retries", 1, "--max-llm-calls", 30, "--price-per-mtok", 0.5, 2,
                     "--llm-cache", "x.sqlite")
    endpoint = endpoint_from_args(args, needed_for="--judge llm")
    assert endpoint == LLMEndpoint("g", ("http://a:1/v1", "http://b:2/v1"), concurrency=4, timeout=5.0,
                                   max_retries=1, max_calls=30, prices=(0.5, 2.0), cache_path="x.sqlite")
    assert endpoint_from_args(parse_cli("--judge-model", "g")) is None  # checked, but no LLM is asked
    with pytest.raises(InputError, match="--concurrency 0"):  # a bad value is an error even then
        endpoint_from_args(parse_cli("--concurrency", 0))
    generate = endpoint_from_args(parse_cli("--model", "qwen", "--api-base", "http://a/v1", model_flag="--model"),
                                  model_attr="model", needed_for="the api backend")
    assert generate.model == "qwen"


@pytest.mark.parametrize("argv, message", [
    (("--judge-model", "g"), "--api-base is required with --judge llm"),
    (("--api-base", "http://a/v1"), "--judge-model is required with --judge llm"),
    (("--judge-model", "g", "--api-base", "http://a/v1", "--concurrency", 0), "--concurrency 0: expected a whole"),
    (("--judge-model", "g", "--api-base", "a:8000"), "--api-base a:8000: expected an http"),
    (("--judge-model", "g", "--api-base", "http://a/v1", "--timeout", -1), "--timeout -1.0: expected a number"),
    (("--judge-model", "g", "--api-base", "http://a/v1", "--max-llm-calls", -1), "--max-llm-calls -1:"),
    (("--judge-model", "g", "--api-base", "http://a/v1", "--price-per-mtok", -1, 2), "--price-per-mtok -1.0:"),
])
def test_cli_errors_name_the_flags(argv, message):
    with pytest.raises(InputError) as err:
        endpoint_from_args(parse_cli(*argv), needed_for="--judge llm")
    assert str(err.value).startswith(message)
    assert "=" not in str(err.value).split(":")[0]  # a flag, not a Python keyword
