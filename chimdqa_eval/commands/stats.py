"""`chimdqa stats [DOMAIN]`: the paper's Table 2 and Table 3 for a release."""
from __future__ import annotations

from chimdqa_eval import release
from chimdqa_eval.schema import DOMAINS, InputError
from chimdqa_eval.stats import render


def add_arguments(parser) -> None:
    parser.add_argument("name", nargs="?", default="all", choices=("all", *DOMAINS),
                        help="all (default) or one domain")
    parser.add_argument("--data-dir", metavar="DIR", help="release folder (default: the bundled sample release)")


def run(args) -> int:
    domains = DOMAINS if args.name == "all" else (args.name,)
    qa = [r for r in release.read_qa(args.data_dir) if r["domain"] in domains]
    pages = [p for p in release.read_documents(args.data_dir) if p["domain"] in domains]
    if not qa:
        raise InputError(f"{release.release_dir(args.data_dir)}: no QA pairs in domain {args.name}")
    print(f"ChiMDQA release {release.fingerprint(args.data_dir)} ({args.name})\n")
    print(render(qa, pages))
    return 0
