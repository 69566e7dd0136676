"""chimdqa_eval.porter against NLTK's PorterStemmer on every distinct word of a folder's text files (a check, not a
test: millions of words take minutes). Prints the count, the mismatches (none expected) and both sides' time.

    python bench/porter_parity.py [FOLDER]    # default: the installed site-packages

Words: every run of Latin letters (as written and lower-cased) and the first 20,000 whitespace-separated pieces
of each .py .txt .md .rst .json .jsonl .html file. NLTK before 3.10 looks irregular forms up before lower-casing
(Dying -> dy); words where only that differs are counted apart (tests/test_porter.py says why).
"""
from __future__ import annotations

import os
import re
import sys
import sysconfig
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nltk.stem.porter import PorterStemmer  # noqa: E402

from chimdqa_eval import porter  # noqa: E402


def words_of(folder: str) -> set[str]:
    words: set[str] = set()
    for path, _, files in os.walk(folder):
        for name in files:
            if name.endswith((".py", ".txt", ".md", ".rst", ".json", ".jsonl", ".html")):
                try:
                    text = Path(path, name).read_text(encoding="utf-8", errors="ignore")
                except OSError:
                    continue
                latin = re.findall(r"[A-Za-z]+", text)
                words.update(latin)
                words.update(w.lower() for w in latin)
                words.update(text.split()[:20_000])
    return words


def main() -> None:
    folder = sys.argv[1] if len(sys.argv) > 1 else sysconfig.get_paths()["purelib"]
    words = sorted(words_of(folder))
    nltk = PorterStemmer().stem
    start = time.perf_counter()
    theirs = [nltk(w) for w in words]
    nltk_seconds = time.perf_counter() - start
    start = time.perf_counter()
    ours = [porter.stem(w) for w in words]
    our_seconds = time.perf_counter() - start
    differ = [(w, o, t) for w, o, t in zip(words, ours, theirs) if o != t]
    case_only = [d for d in differ if d[0] != d[0].lower() and d[0].lower() in porter._IRREGULAR]
    print(f"{len(words):,} distinct words from {folder}")
    print(f"mismatches: {len(differ) - len(case_only)} (+{len(case_only)} irregular forms in capitals, where NLTK "
          f"before 3.10 differs); first: {[d for d in differ if d not in case_only][:10]}")
    print(f"NLTK {nltk_seconds:.1f} s, ours {our_seconds:.1f} s: {nltk_seconds / our_seconds:.2f}x")


if __name__ == "__main__":
    main()
