"""Flag groups several commands share: the LLM endpoint options (read back into an LLMEndpoint by
chimdqa_eval.llm.endpoint_from_args) and the scoring options of evaluate and run."""
from __future__ import annotations

from chimdqa_eval.llm import BREAKER_FAILURES


def add_endpoint_arguments(parser, prefix: str = "", model_flag: str | None = "--judge-model",
                           model_help: str = "model name at the OpenAI-compatible endpoint", *,
                           alias: str | None = None, dry_run: bool = True) -> None:
    """The one set of LLM endpoint options for every command that asks an LLM (evaluate, rag-metrics, generate,
    build). `prefix` ("gen-") prefixes every flag for a command with two endpoints; `model_flag` is the model's
    flag ("--judge-model" for a judge, "--model" for generate; None when the command defines it itself).
    Read them back with `endpoint_from_args`. A command may add --temperature / --max-tokens itself. `alias`
    ("judge-") also accepts every flag under that prefix (evaluate's --api-base is `run`'s --judge-api-base);
    dry_run=False leaves --dry-run to the command."""
    p = f"--{prefix}"

    def add(name, **options):  # the flag, and its alias spelling when there is one
        parser.add_argument(name, *([name.replace(p, f"--{alias}", 1)] if alias else []), **options)

    if model_flag:
        parser.add_argument(model_flag, help=model_help)
    add(f"{p}api-base", nargs="+", metavar="URL",
        help="OpenAI-compatible API base(s), e.g. http://localhost:8000/v1; several are served "
             "round-robin (one model on many replicas)")
    add(f"{p}api-key-env", default="OPENAI_API_KEY", metavar="VAR",
        help="environment variable holding the API key (default OPENAI_API_KEY)")
    add(f"{p}concurrency", type=int, default=16, metavar="N",
        help="parallel requests per API base (default 16)")
    add(f"{p}timeout", type=float, default=60.0, metavar="SECONDS",
        help="the most one request may take in all, every attempt and every wait between them included "
             "(connecting, sending and reading the whole reply; Retry-After and backoff waits), "
             "default 60; a retry whose wait leaves no time for it is not made, and a server asking to "
             "wait longer than this (Retry-After) is not waited for")
    add(f"{p}max-retries", type=int, default=5, metavar="N",
        help="retries of a timed-out, refused or 429/5xx request, within its --timeout (default 5); "
             f"an endpoint failing {BREAKER_FAILURES} attempts in a row (refused or dropped connections, "
             "timeouts, HTTP 502/503/504 from a gateway) stops the run within seconds")
    add(f"{p}max-llm-calls", type=int, metavar="N",
        help="send at most N requests; what is answered is cached and the same command resumes")
    add(f"{p}price-per-mtok", type=float, nargs=2, metavar=("PROMPT", "COMPLETION"),
        help="USD per million prompt and completion tokens, to report the cost")
    add(f"{p}llm-cache", metavar="FILE",
        help="sqlite file of LLM replies (default: $CHIMDQA_CACHE or ~/.cache/chimdqa, llm/)")
    if dry_run:
        parser.add_argument(f"{p}dry-run", action="store_true",
                            help="print how many LLM calls the run would make after the cache, ask nothing, exit")
