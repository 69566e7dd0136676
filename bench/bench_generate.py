"""Throughput of `chimdqa generate` (a benchmark, not a test): prints figures and ratios.

    python bench/bench_generate.py [--requests 480] [--latency 0.05] [--concurrency 16] [--docs 60] [--pages 140]

- API backend: answers/s through the generation backend against a chat endpoint on 127.0.0.1 (in its own process)
  with injected latency, against the ideal concurrency / latency; goal >= 95% of the ideal at concurrency 16 and
  50 ms. The endpoint is bench/event_server.py, one asyncio event loop as model servers answer (uvicorn behind
  vLLM / SGLang); the same run then repeats against tests/chat_server.py (a thread per connection, 0.4-0.8 ms of
  CPU a request on the same two cores: a second line), and sends the same requests from two bare keep-alive
  clients, no retries, cache or checks, against the event-loop endpoint: 16 threads on http.client, and one
  asyncio loop on its streams (the backend's own design, at its least): what the machine allows at that moment,
  the reference side. The client's CPU time a request and the
  machine's load are printed with each: on a loaded machine the ratio measures the load. Then where each
  request's cycle goes: the server's own time (last request byte to reply; over the latency when the machine is
  loaded) and the turnaround from a reply to the next request on its connection. Then the same answers again
  from the cache.
- BM25: a synthetic corpus of `--docs` documents x `--pages` pages of Chinese text (`--page-chars` characters a
  page): chunking + jieba tokenization + one bm25s index per document + saving them (seconds, peak memory), loading
  the saved indexes back (seconds), and the per-question query time.
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from chat_server import ChatServer  # noqa: E402
from tiny_models import CHARS  # noqa: E402


def serve(latency: float, address, stop, accepted, timings) -> None:
    """The chat server in its own process, so that it does not share the client's interpreter lock; `accepted`
    counts the TCP connections it accepts (a client that keeps its connections alive opens `concurrency`).
    `timings` sums, in seconds, (1) the server's own time a request, from its request line to its reply's last
    byte (the latency slept included), and (2) the turnaround on a kept-alive connection, from a reply's last byte
    to the next request line on it (the client reading the reply and sending its next request, both processes'
    wake-ups and the loopback), with their counts: what of the gap to the ideal is the server's and what is not."""
    with ChatServer(lambda body: "48.6亿元", latency=latency) as server:
        httpd = server._httpd
        process_request = httpd.process_request

        def counted(request, client_address):
            with accepted.get_lock():
                accepted.value += 1
            process_request(request, client_address)

        httpd.process_request = counted
        handler = httpd.RequestHandlerClass
        parse_request, do_post = handler.parse_request, handler.do_POST

        def timed_parse(self):  # called once a request line has arrived
            self.began = time.monotonic()
            if getattr(self, "replied_at", None) is not None:
                _add(timings, 2, self.began - self.replied_at)
            return parse_request(self)

        def timed_post(self):
            do_post(self)
            self.replied_at = time.monotonic()
            _add(timings, 0, self.replied_at - self.began)

        handler.parse_request, handler.do_POST = timed_parse, timed_post
        address.put(server.api_base)
        stop.wait()


def serve_event(latency: float, address, stop, stats) -> None:
    """bench/event_server.py in its own process; its stats() are put on `stats` once `stop` is set."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from event_server import EventServer

    with EventServer(latency) as server:
        address.put(server.api_base)
        stop.wait()
        stats.put(server.stats())


def bare_client(api_base: str, bodies: list, concurrency: int) -> None:
    """The reference side: `concurrency` threads, each one kept-alive http.client connection asking for an
    immediate acknowledgement before each read, sending the bodies and parsing each reply's JSON; nothing else."""
    import http.client
    import json
    import queue
    import socket
    import threading
    from urllib.parse import urlsplit

    parts = urlsplit(api_base)
    work = queue.SimpleQueue()
    for body in bodies:
        work.put(body)

    def worker() -> None:
        connection = http.client.HTTPConnection(parts.hostname, parts.port)
        while True:
            try:
                body = work.get_nowait()
            except queue.Empty:
                break
            connection.request("POST", parts.path + "/chat/completions", body, {"Content-Type": "application/json"})
            if hasattr(socket, "TCP_QUICKACK"):  # (Linux's; see llm._QUICKACK)
                connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
            json.loads(connection.getresponse().read())
        connection.close()

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def bare_event_client(api_base: str, bodies: list, concurrency: int) -> None:
    """The second reference side: one asyncio event loop, `concurrency` kept-alive connections on its streams,
    each sending the next body, reading the reply by its Content-Length and parsing its JSON; nothing else."""
    import asyncio
    import json
    from urllib.parse import urlsplit

    parts = urlsplit(api_base)
    work = list(reversed(bodies))

    async def lane() -> None:
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
        while work:
            body = work.pop()
            writer.write(b"POST %s/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n%s" % (parts.path.encode(), parts.netloc.encode(), len(body),
                                                                body))
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length:"))
            json.loads(await reader.readexactly(length))
        writer.close()

    async def run() -> None:
        await asyncio.gather(*(lane() for _ in range(concurrency)))

    asyncio.run(run())


def _reference(client, who: str, api_base_of, bodies: list, n: int, latency: float, concurrency: int,
               elapsed: float) -> None:
    """Run a bare client (`client(api_base, bodies, concurrency)`) against a new event-loop endpoint and print its
    rate line beside the backend's (`elapsed` seconds for the same requests)."""
    server, stop, api_base, stats = api_base_of()
    load = os.getloadavg()[0]
    start, cpu = time.perf_counter(), time.process_time()
    client(api_base, bodies, concurrency)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    stop.set()
    stats.get(timeout=60)
    server.join()
    print(_rate_line(f"  {who}, event-loop endpoint", n, seconds, cpu, latency, concurrency, load)
          + f"; the backend's rate is {seconds / elapsed:.1%} of its rate")


def _add(sums, index: int, seconds: float) -> None:
    """Add `seconds` to the sum at `index` of a shared array of (sum, count) pairs."""
    with sums.get_lock():
        sums[index] += seconds
        sums[index + 1] += 1


def cpu_seconds(pid: int) -> float | None:
    """A process's CPU time (user + system) from /proc, or None where there is no /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _prompts(n: int) -> list:
    from chimdqa_eval.generate.backends import Prompt, prompt_cache_key

    prompts = []
    for i in range(n):
        messages = ({"role": "user", "content": f"问题{i}：公司2023年的营业收入是多少？"},)
        prompts.append(Prompt(messages, prompt_cache_key("bench", messages)))
    return prompts


def _start(target, latency: float, *shared):
    """A server process (spawned: it shares nothing with this interpreter) and its API base: `target(latency,
    address, stop, *shared)`."""
    context = multiprocessing.get_context("spawn")
    address, stop = context.Queue(), context.Event()
    server = context.Process(target=target, args=(latency, address, stop, *shared), daemon=True)
    server.start()
    return server, stop, address.get(timeout=60)


def _run_backend(api_base: str, prompts: list, concurrency: int, folder: str, name: str):
    """(the backend, seconds, CPU seconds of this process) for one generation run through ApiBackend."""
    from chimdqa_eval.generate.backends import ApiBackend
    from chimdqa_eval.llm import LLMEndpoint

    client = LLMEndpoint("bench-model", (api_base,), cache_path=Path(folder) / f"{name}.sqlite",
                         concurrency=concurrency).client()
    backend = ApiBackend(client)
    start, cpu = time.perf_counter(), time.process_time()
    answers = backend.complete(prompts)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    assert all(a.error is None for a in answers)
    return backend, elapsed, cpu


def _rate_line(who: str, n: int, elapsed: float, cpu: float, latency: float, concurrency: int, load: float) -> str:
    ideal = concurrency / latency
    return (f"{who}: {n} answers in {elapsed:.2f} s = {n / elapsed:.1f} answers/s; ideal {concurrency} / "
            f"{latency * 1000:.0f} ms = {ideal:.0f}/s; ratio {n / elapsed / ideal:.1%}; client CPU "
            f"{cpu / n * 1000:.2f} ms a request (load average {load:.2f} before, {os.getloadavg()[0]:.2f} after)")


def _cycle_line(n: int, elapsed: float, own: float, turnaround: float, latency: float, concurrency: int) -> str:
    return (f"  of each request's cycle: the server's own {own * 1000:.2f} ms (last request byte to reply, the "
            f"{latency * 1000:.0f} ms waited included: {latency / own:.1%} of the ideal is the most any client "
            f"reaches against it), then {turnaround * 1000:.2f} ms from the reply to the next request on its "
            f"connection (the client's turnaround, wake-ups included); {n / elapsed * own / concurrency:.1%} of "
            "the ideal at the server's own pace")


def bench_api(n: int, latency: float, concurrency: int) -> None:
    import json

    prompts = _prompts(n)
    with tempfile.TemporaryDirectory() as folder:
        # 1. The event-loop endpoint: the goal's figure.
        context = multiprocessing.get_context("spawn")
        stats = context.Queue()
        server, stop, api_base = _start(serve_event, latency, stats)
        load = os.getloadavg()[0]
        backend, elapsed, cpu = _run_backend(api_base, prompts, concurrency, folder, "event")
        print(_rate_line("API backend, event-loop endpoint", n, elapsed, cpu, latency, concurrency, load)
              + " (goal >= 95%)")
        start = time.perf_counter()
        again = backend.complete(prompts)
        cached = time.perf_counter() - start
        assert all(a.cached for a in again)
        backend.close()
        stop.set()
        event_stats = stats.get(timeout=60)
        server.join()
        print(f"  {event_stats['accepted']} TCP connections accepted by the endpoint for {event_stats['requests']} "
              f"requests at concurrency {concurrency}")
        print(_cycle_line(n, elapsed, event_stats["own"], event_stats["turnaround"], latency, concurrency))
        # 2. The reference side: bare keep-alive clients, each against a new endpoint of the same kind, right after.
        bodies = [json.dumps({"model": "bench-model", "messages": list(p.messages), "temperature": 0.0},
                             ensure_ascii=False).encode("utf-8") for p in prompts]
        endpoint = lambda: (*_start(serve_event, latency, stats), stats)
        _reference(bare_client, "bare keep-alive client, 16 threads (the reference side)", endpoint, bodies, n,
                   latency, concurrency, elapsed)
        _reference(bare_event_client, "bare keep-alive client, one asyncio loop", endpoint, bodies, n, latency,
                   concurrency, elapsed)
        # 3. The tests' threaded server.
        accepted, timings = context.Value("i", 0), context.Array("d", 4)
        server, stop, api_base = _start(serve, latency, accepted, timings)
        load, server_cpu = os.getloadavg()[0], cpu_seconds(server.pid)
        backend, elapsed, cpu = _run_backend(api_base, prompts, concurrency, folder, "threaded")
        backend.close()
        server_line = ("server CPU not measured (no /proc)" if server_cpu is None else
                       f"server CPU {(cpu_seconds(server.pid) - server_cpu) / n * 1000:.2f} ms a request")
        print(_rate_line("API backend, tests/chat_server.py (a thread per connection)", n, elapsed, cpu, latency,
                         concurrency, load) + f"; {server_line}; {accepted.value} TCP connections accepted")
        with timings.get_lock():
            own, turnaround = timings[0] / max(1, timings[1]), timings[2] / max(1, timings[3])
        print(_cycle_line(n, elapsed, own, turnaround, latency, concurrency))
        stop.set()
        server.join()
        print(f"cached re-run: {n} answers in {cached:.3f} s = {n / cached:.0f} answers/s, no request sent")


def synthetic_corpus(docs: int, pages: int, page_chars: int, seed: int = 0) -> dict:
    """{doc_id: [(page, text)]}: headed sections of sentences made of two-character words from a fixed alphabet."""
    rng = random.Random(seed)
    alphabet = sorted(set(CHARS))
    words = ["".join(rng.sample(alphabet, 2)) for _ in range(3000)]
    corpus = {}
    for d in range(docs):
        doc = []
        for p in range(1, pages + 1):
            lines = [f"{p}.1 {''.join(rng.sample(words, 3))}"]
            while sum(map(len, lines)) < page_chars:
                sentence = "".join(rng.choice(words) for _ in range(rng.randint(8, 20)))
                lines.append(sentence + f"，数值为{rng.randint(1, 9999)}。")
            doc.append((p, "\n".join(lines)))
        corpus[f"doc-{d:02d}"] = doc
    return corpus, words


def bench_bm25(docs: int, pages: int, page_chars: int, queries: int) -> None:
    from chimdqa_eval.generate.retrieval import Retriever, RetrievalSettings

    corpus, words = synthetic_corpus(docs, pages, page_chars)
    chars = sum(len(t) for doc in corpus.values() for _, t in doc)
    settings = RetrievalSettings(top_k=5)
    with tempfile.TemporaryDirectory() as folder:
        os.environ["CHIMDQA_CACHE"] = folder
        # Peak memory as the process's high-water mark (ru_maxrss, KiB on Linux): tracemalloc would slow jieba
        # down tenfold. Tokenizing a large corpus forks worker processes; their memory is counted apart.
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        start = time.perf_counter()
        retriever = Retriever(corpus, settings)
        built = time.perf_counter() - start
        rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"BM25 index: {docs} documents x {pages} pages ({chars / 1e6:.1f} M characters, "
              f"{retriever.n_chunks} chunks) built and saved in {built:.1f} s; peak RSS {rss_after:.0f} MiB "
              f"(before the build {rss_before:.0f} MiB; largest tokenizer worker {children:.0f} MiB)")
        start = time.perf_counter()
        loaded = Retriever(corpus, settings)
        assert loaded.cached["bm25"]
        print(f"cached index: loaded in {time.perf_counter() - start:.1f} s (chunking included)")
        rng = random.Random(1)
        doc_ids = list(corpus)
        questions = ["".join(rng.choice(words) for _ in range(6)) + "是多少？" for _ in range(queries)]
        targets = [rng.choice(doc_ids) for _ in range(queries)]
        start = time.perf_counter()
        loaded.search_all(questions, targets)
        elapsed = time.perf_counter() - start
        print(f"queries: {queries} in {elapsed:.2f} s = {1000 * elapsed / queries:.2f} ms per question "
              "(jieba on the question included)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=480)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--docs", type=int, default=60)
    parser.add_argument("--pages", type=int, default=140)
    parser.add_argument("--page-chars", type=int, default=800)
    parser.add_argument("--queries", type=int, default=6000)
    args = parser.parse_args()
    bench_api(args.requests, args.latency, args.concurrency)
    bench_bm25(args.docs, args.pages, args.page_chars, args.queries)


if __name__ == "__main__":
    main()
