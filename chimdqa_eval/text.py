"""Text normalization and tokenization: the one place where Chinese text is cleaned or split into tokens."""
from __future__ import annotations

import functools
import hashlib
import multiprocessing
import os
import re
import sqlite3
import sys
import unicodedata
from contextlib import closing

from chimdqa_eval.cache import cache_dir
from chimdqa_eval.schema import InputError
from chimdqa_eval.signature import package_version

_SPACE = re.compile(r"[ \t\u3000\u00a0]+")
_BLANK_LINES = re.compile(r"\n\s*\n+")


def is_wide(char: str) -> bool:
    """A wide (CJK) or full-width character: Chinese text joins such characters without spaces, and one of them
    is about one token."""
    return unicodedata.east_asian_width(char) in ("W", "F")


def normalize_text(text: str) -> str:
    """NFKC (full-width forms become half-width: ＡＢ１２ -> AB12, ，？（ -> ,?( ; 。、《》 have no half-width form
    and stay), collapsed runs of spaces, trimmed lines, at most one blank line in a row."""
    text = unicodedata.normalize("NFKC", text).replace("\r\n", "\n").replace("\r", "\n")
    lines = [_SPACE.sub(" ", line).strip() for line in text.split("\n")]
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


# ---- tokenization -------------------------------------------------------------------------------------------
# Every lexical metric sees text through tokenize(). Tokens never contain whitespace and are never empty, so a
# token list survives " ".join(...).split() unchanged: that is how pycocoevalcap-style code reads it, and how the
# disk cache stores it.

TOKENIZERS = ("jieba", "char")


def _check_tokenizer(name: str) -> str:
    if name not in TOKENIZERS:
        raise InputError(f"tokenizer {name!r} is unknown; expected one of {', '.join(TOKENIZERS)}")
    return name


@functools.cache
def _jieba():
    import logging

    import jieba

    jieba.setLogLevel(logging.WARNING)  # the dictionary-loading banner is noise in an evaluation run
    return jieba


def tokenize(text: str, tokenizer: str = "jieba") -> list[str]:
    """Split text into tokens: ``"jieba"`` (jieba's accurate mode with its HMM for unknown words, the default
    dictionary) or ``"char"`` (every non-whitespace character is a token). The text is tokenized as given
    (no normalization); whitespace never becomes a token.

    >>> tokenize("我爱北京天安门, Hello world")
    ['我', '爱', '北京', '天安门', ',', 'Hello', 'world']
    >>> tokenize("北京 GDP", tokenizer="char")
    ['北', '京', 'G', 'D', 'P']
    """
    if _check_tokenizer(tokenizer) == "char":
        return [c for c in text if not c.isspace()]
    return " ".join(_jieba().lcut(text)).split()


def tokenizer_signature(name: str) -> str:
    """The tokenizer as it goes into score signatures, with the version of the library doing the work."""
    if _check_tokenizer(name) == "char":
        return "char"
    return f"jieba-{package_version('jieba')}-accurate"


# Below this many characters a process pool costs more than it saves.
_PARALLEL_MIN_CHARS = 200_000


def _joined_tokens(text: str) -> str:
    return " ".join(tokenize(text, "jieba"))  # one string crosses the process boundary faster than a list


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def tokenize_many(texts, tokenizer: str = "jieba") -> list[list[str]]:
    """tokenize() over a list. jieba is pure Python, so a large input (a whole submission) is split across the
    available CPUs with forked worker processes, which inherit jieba's loaded dictionary; the result is the
    same as tokenizing one by one. Off Linux (no fork on Windows, an unsafe one on macOS) it runs in this process."""
    texts = list(texts)
    workers = min(_cpus(), 8)
    if (_check_tokenizer(tokenizer) == "char" or workers < 2 or sys.platform != "linux"
            or sum(map(len, texts)) < _PARALLEL_MIN_CHARS):
        return [tokenize(t, tokenizer) for t in texts]
    _jieba().initialize()
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        joined = pool.map(_joined_tokens, texts, chunksize=max(1, len(texts) // (8 * workers)))
    return [j.split() for j in joined]


_memory_cache: dict = {}


def _disk_cache(name: str):
    path = cache_dir("tokens") / f"{tokenizer_signature(name)}.sqlite"
    db = sqlite3.connect(str(path), timeout=60)
    db.execute("CREATE TABLE IF NOT EXISTS tokens (key BLOB PRIMARY KEY, tokens TEXT NOT NULL)")
    return db


def _text_key(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


def tokenize_references(texts, tokenizer: str = "jieba") -> list[list[str]]:
    """tokenize() for texts that recur across runs (references): jieba results are kept in memory and on disk
    under ``cache_dir("tokens")``, keyed by tokenizer, jieba version and text, so each reference is split once
    per machine. The disk cache assumes jieba's default dictionary (a user dictionary would need a fresh
    $CHIMDQA_CACHE). ``"char"`` is cheaper than a cache lookup and is computed directly."""
    texts = list(texts)
    if _check_tokenizer(tokenizer) == "char":
        return [tokenize(t, "char") for t in texts]
    signature = tokenizer_signature(tokenizer)
    memory = _memory_cache.setdefault(signature, {})
    missing = list(dict.fromkeys(t for t in texts if t not in memory))
    if missing:
        with closing(_disk_cache(tokenizer)) as db:
            keys = {_text_key(t): t for t in missing}
            found = {}
            key_list = list(keys)
            for start in range(0, len(key_list), 500):
                chunk = key_list[start:start + 500]
                rows = db.execute(f"SELECT key, tokens FROM tokens WHERE key IN ({','.join('?' * len(chunk))})",
                                  chunk)
                found.update((keys[k], v.split()) for k, v in rows)
            new_texts = [t for t in missing if t not in found]
            new = list(zip(new_texts, tokenize_many(new_texts, tokenizer)))
            with db:
                db.executemany("INSERT OR REPLACE INTO tokens VALUES (?, ?)",
                               [(_text_key(t), " ".join(tokens)) for t, tokens in new])
        memory.update(found)
        memory.update(new)
    return [list(memory[t]) for t in texts]
