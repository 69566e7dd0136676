"""Text normalization and tokenization: the one place where Chinese text is cleaned or split into tokens."""
from __future__ import annotations

import functools
import hashlib
import importlib.machinery
import importlib.util
import logging
import operator
import os
import re
import sqlite3
import sys
import threading
import unicodedata
from array import array
from collections.abc import Sequence
from contextlib import closing
from itertools import accumulate, chain, compress, islice

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
    import jieba

    jieba.setLogLevel(logging.WARNING)  # the dictionary-loading banner is noise in an evaluation run
    return jieba


# jieba's accurate mode (HMM on), computed with rjieba (jieba-rs) doing the dictionary work, token for token the
# same. What jieba does (jieba/__init__.py, Tokenizer.cut and __cut_DAG; jieba/finalseg): it splits a text into
# blocks with re_han_default, runs of the characters in _JIEBA_BLOCK; every other character is a token of its own
# (whitespace is dropped here). In a block it takes the most probable route through its dictionary (a DAG of
# words, the sum of log(freq / total), a tie to the longer word), then hands every run of two or more
# one-character steps that is not itself a dictionary word to its HMM (finalseg.cut).
# What rjieba does the same: the dictionary (word for word) and the route, the same sums in the same order;
# cut(block, hmm=False) returns the route's steps, except that it merges consecutive one-character letter and
# digit steps (no dictionary word is made of letters and digits only, so a merged step is recognisable).
# What it does not: its HMM has emission probabilities rounded to 6 decimals, which flips ties (人国国国国:
# 人国国/国国 in jieba, 人国/国国国 in jieba-rs), and it joins letter/digit runs across . _ - (XQ-58). So the route
# comes from rjieba and the HMM is jieba's, replayed in _viterbi_words with jieba's own tables.
_JIEBA_BLOCK = re.compile("([\u4E00-\u9FD5a-zA-Z0-9+#&._%\\-]+)")  # jieba.re_han_default
_HMM_HAN = re.compile("([\u4E00-\u9FD5]+)")  # jieba.finalseg.re_han
_HMM_SKIP = re.compile(r"([a-zA-Z0-9]+(?:\.\d+)?%?)")  # jieba.finalseg.re_skip
# jieba's dict.txt lists "B超 3 n" twice: jieba adds every line to its total, jieba-rs keeps one record per word
# and sums those. An entry no block can contain (U+3000 is never in one) gives rjieba jieba's total, so every
# log(freq / total) is the same number.
_TOTAL_EXCESS = ("\u3000", 3)


def _rjieba_module():
    """rjieba's compiled module without its package's __init__, which builds a module-level default segmenter
    (a second load of the whole dictionary, ~0.25 s) that we never use. Registered under its usual name, so a
    later `import rjieba` reuses it; a layout other than rjieba 0.2's is imported the ordinary way."""
    if "rjieba.rjieba" in sys.modules:
        return sys.modules["rjieba.rjieba"]
    package = importlib.util.find_spec("rjieba")
    spec = None
    if package is not None and package.submodule_search_locations:
        loaders = (importlib.machinery.ExtensionFileLoader, importlib.machinery.EXTENSION_SUFFIXES)
        spec = importlib.machinery.FileFinder(package.submodule_search_locations[0], loaders).find_spec(
            "rjieba.rjieba")
    if spec is None:
        import rjieba

        return rjieba
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[spec.name] = module
    return module


@functools.cache
def _rjieba():
    segmenter = _rjieba_module().Jieba()  # our own instance: nobody else's rjieba.add_word reaches it
    segmenter.add_word(*_TOTAL_EXCESS, None)
    return segmenter


_MIN_FLOAT = -3.14e100  # jieba.finalseg.MIN_FLOAT: the log-probability of what its tables lack


@functools.cache
def _finalseg_model() -> tuple[dict, dict, dict]:
    """jieba.finalseg's model (its prob_start, prob_trans and prob_emit tables) read from jieba's files without
    importing jieba, whose package __init__ imports pkg_resources where setuptools has it (~0.1 s) and nothing
    we use. A jieba already imported gives its own tables."""
    finalseg = sys.modules.get("jieba.finalseg")
    if finalseg is not None:
        return finalseg.start_P, finalseg.trans_P, finalseg.emit_P
    package = importlib.util.find_spec("jieba")
    if package is None or not package.submodule_search_locations:
        from jieba import finalseg

        return finalseg.start_P, finalseg.trans_P, finalseg.emit_P
    folder = os.path.join(package.submodule_search_locations[0], "finalseg")
    tables = []
    for name in ("prob_start", "prob_trans", "prob_emit"):
        spec = importlib.util.spec_from_file_location(f"_chimdqa_jieba_{name}", os.path.join(folder, f"{name}.py"))
        module = importlib.util.module_from_spec(spec)  # not registered: a later `import jieba` loads its own
        spec.loader.exec_module(module)
        tables.append(module.P)
    return tuple(tables)


@functools.cache
def _hmm_tables():
    """jieba.finalseg's model: per character its emission log-probabilities in the order B, E, M, S (MIN_FLOAT
    where jieba's table has none), the unknown character's, the start log-probabilities and the transitions."""
    start_P, trans_P, emit_P = _finalseg_model()
    emit: dict = {}
    for i, state in enumerate("BEMS"):
        for char, p in emit_P[state].items():
            emit.setdefault(char, [_MIN_FLOAT] * 4)[i] = p
    return ({char: tuple(p) for char, p in emit.items()}, (_MIN_FLOAT,) * 4, tuple(start_P[s] for s in "BEMS"),
            _transitions())


@functools.cache
def _transitions() -> dict:
    """jieba.finalseg's transition log-probabilities by state pair ("EB": from E to B)."""
    return {a + b: p for a, row in _finalseg_model()[1].items() for b, p in row.items()}


_HAN_FIRST, _HAN_END = 0x4E00, 0x9FD6  # the Han range of jieba's blocks and of finalseg.re_han
_B, _E, _M, _S = range(4)
_NUMPY_MIN_RUNS = 64  # fewer runs than this (one short text's) are cut in plain Python


@functools.cache
def _emission_table():
    """The emissions of _hmm_tables as a numpy array, one row per character of the Han range, filled straight
    from jieba's tables."""
    import numpy as np

    emit_P = _finalseg_model()[2]
    table = np.full((_HAN_END - _HAN_FIRST, 4), _MIN_FLOAT)
    for i, state in enumerate("BEMS"):
        chars = emit_P[state]
        codes = np.fromiter(map(ord, chars), dtype=np.int64, count=len(chars)) - _HAN_FIRST
        values = np.fromiter(chars.values(), dtype=np.float64, count=len(chars))
        inside = (codes >= 0) & (codes < len(table))
        table[codes[inside], i] = values[inside]
    return table


def _viterbi_one(han: str) -> list[str]:
    """_viterbi_words for one run in plain Python: the same sums, comparisons and ties, for batches too small
    for numpy's per-call cost to pay."""
    emit, unknown, (start_b, start_e, start_m, start_s), t = _hmm_tables()
    to_b, to_e, to_m, to_s = (t["EB"], t["SB"]), (t["BE"], t["ME"]), (t["BM"], t["MM"]), (t["ES"], t["SS"])
    probs = [emit.get(c, unknown) for c in han]
    e_b, e_e, e_m, e_s = probs[0]
    v_b, v_e, v_m, v_s = start_b + e_b, start_e + e_e, start_m + e_m, start_s + e_s
    back = []
    for e_b, e_e, e_m, e_s in probs[1:]:
        b1, b2 = v_e + to_b[0] + e_b, v_s + to_b[1] + e_b
        e1, e2 = v_b + to_e[0] + e_e, v_m + to_e[1] + e_e
        m1, m2 = v_b + to_m[0] + e_m, v_m + to_m[1] + e_m
        s1, s2 = v_e + to_s[0] + e_s, v_s + to_s[1] + e_s
        back.append((_E if b1 > b2 else _S, _B if e1 > e2 else _M, _B if m1 > m2 else _M, _E if s1 > s2 else _S))
        v_b, v_e, v_m, v_s = max(b1, b2), max(e1, e2), max(m1, m2), max(s1, s2)
    state = _E if v_e > v_s else _S
    words, end = [], len(han)
    for i in range(len(han) - 1, -1, -1):  # from the end: a word ends where the path is in E or S
        if i < len(han) - 1 and (state == _E or state == _S):
            words.append(han[i + 1:end])
            end = i + 1
        if i:
            state = back[i - 1][state]
    words.append(han[:end])
    return words[::-1]


def _viterbi_words(hans: list[str]) -> dict[str, str]:
    """finalseg.__cut on runs of Han characters, each run's words joined by spaces; all runs of one length at
    once with numpy: the same Viterbi sums in the same order (float64 like Python's floats), and ties broken as
    its max() over (log-probability, state) pairs breaks them (the later letter wins). The best path ends in E
    or S, so every word ends where the path is in E or S."""
    if len(hans) < _NUMPY_MIN_RUNS:
        return {han: " ".join(_viterbi_one(han)) for han in hans}
    import numpy as np

    table = _emission_table()
    start_b, start_e, start_m, start_s = (_finalseg_model()[0][s] for s in "BEMS")
    t = _transitions()
    to_b, to_e, to_m, to_s = (t["EB"], t["SB"]), (t["BE"], t["ME"]), (t["BM"], t["MM"]), (t["ES"], t["SS"])
    by_length: dict = {}
    for han in hans:
        by_length.setdefault(len(han), []).append(han)
    words: dict = {}
    for length, group in by_length.items():
        chars = np.frombuffer("".join(group).encode("utf-32-le"), dtype=np.uint32).reshape(len(group), length)
        probs = table[chars - _HAN_FIRST].transpose(1, 2, 0)  # [position, state, run]
        e_b, e_e, e_m, e_s = probs[0]
        v_b, v_e, v_m, v_s = start_b + e_b, start_e + e_e, start_m + e_m, start_s + e_s
        back = np.empty((length, 4, len(group)), dtype=np.uint8)
        for i in range(1, length):
            e_b, e_e, e_m, e_s = probs[i]
            b1, b2 = v_e + to_b[0] + e_b, v_s + to_b[1] + e_b
            e1, e2 = v_b + to_e[0] + e_e, v_m + to_e[1] + e_e
            m1, m2 = v_b + to_m[0] + e_m, v_m + to_m[1] + e_m
            s1, s2 = v_e + to_s[0] + e_s, v_s + to_s[1] + e_s
            back[i, _B] = np.where(b1 > b2, _E, _S)
            back[i, _E] = np.where(e1 > e2, _B, _M)
            back[i, _M] = np.where(m1 > m2, _B, _M)
            back[i, _S] = np.where(s1 > s2, _E, _S)
            v_b, v_e, v_m, v_s = np.maximum(b1, b2), np.maximum(e1, e2), np.maximum(m1, m2), np.maximum(s1, s2)
        state = np.where(v_e > v_s, _E, _S).astype(np.uint8)
        ends = np.empty((len(group), length), dtype=bool)
        runs = np.arange(len(group))
        for i in range(length - 1, -1, -1):
            ends[:, i] = (state == _E) | (state == _S)
            if i:
                state = back[i, state, runs]
        # Every run's characters with a space after each word but its last, a newline after the run, decoded at
        # once and split into runs.
        spaced = np.zeros((len(group), 2 * length), dtype=np.uint32)
        spaced[:, 0::2] = chars
        spaced[:, 1::2][ends] = 0x20
        spaced[:, -1] = 0x0A
        words.update(zip(group, spaced[spaced != 0].tobytes().decode("utf-32-le").split("\n")))
    return words


_HMM_MEMO: dict = {}  # run -> its tokens joined by spaces; short runs recur a lot
_HMM_MEMO_SIZE = 1 << 16


def _hmm_cut_many(runs) -> dict[str, str]:
    """finalseg.cut of each run (distinct runs of a block's characters), its tokens joined by spaces: Han
    characters through the HMM, letters and digits cut by re_skip. (Its forced splits are empty while jieba's
    dictionary is untouched, the only case this runs in.) All runs in one string, a newline after each: re_skip
    and re_han act inside a run as on it alone (neither matches a newline), so spaces around re_skip's matches
    and the HMM's words in place of the Han parts give every run's tokens at once."""
    runs = list(runs)
    spaced = " ".join(_HMM_SKIP.split("\n".join(runs)))  # (a join, not re.sub: its template is Python code)
    parts = _HMM_HAN.split(spaced)  # other, Han, other, ..., other
    viterbi = _viterbi_words(list(set(parts[1::2])))
    parts[1::2] = map(viterbi.__getitem__, parts[1::2])
    return dict(zip(runs, map(" ".join, map(str.split, " ".join(parts).split("\n")))))


def _hmm_cut(run: str) -> tuple[str, ...]:
    return tuple(_hmm_cut_many([run])[run].split())


# rjieba cuts a whole text as jieba splits it into blocks and other characters, when the text holds none of the
# characters jieba-rs counts as Han and jieba does not (CJK extension A and the planes above, U+9FD6 and up,
# compatibility ideographs; the class here is wider than jieba-rs's) and no lone surrogate (no UTF-8 for rjieba):
# its blocks are then jieba's, and every other character is a step of its own ("\r\n" one step, whitespace
# either way). A text with one of them is cut block by block.
# (Two classes: as one, the astral range makes re compile a table of ~10 ms.)
_RJIEBA_WIDER = re.compile("[\u3400-\u4dff\u9fd6-\u9fff\uf900-\ufaff\ud800-\udfff]|[\U00020000-\U0002ffff]")
# Steps joined by spaces, a space before the first: a run of two or more steps that jieba takes one character at
# a time, each a whole step (after a space, before a space or the end): one character of a block, or letters and
# digits rjieba merged (no dictionary word is made of letters and digits only). No such step holds a space, and
# no run reaches across two blocks: between two blocks stands a step of another character. (The leading space
# lets re look for runs at spaces only; possessive repeats never try a shorter step or run.)
_STEP = "(?:[\u4E00-\u9FD5+#&._%\\-]|[a-zA-Z0-9]++)(?![^ ])"
_RUN = re.compile(f" ({_STEP}(?: {_STEP})++)")


def _cut_runs(runs, has_word) -> dict[str, str]:
    """Each run (its steps joined by spaces) cut by __cut_DAG's rule, the tokens joined by spaces: a dictionary
    word splits into its characters, anything else goes to the HMM (what it cut is remembered in _HMM_MEMO).
    Library calls mapped over all runs at once."""
    runs = list(runs)
    chars = "\n".join(runs).replace(" ", "").split("\n")  # each run's characters
    is_word = list(map(has_word, chars))
    cuts = dict(zip(compress(runs, is_word), map(" ".join, compress(chars, is_word))))
    not_word = list(map(operator.not_, is_word))
    runs, chars = list(compress(runs, not_word)), list(compress(chars, not_word))
    known = dict(zip(chars, map(_HMM_MEMO.get, chars)))
    new = _hmm_cut_many([c for c, tokens in known.items() if tokens is None])
    known.update(new)
    cuts.update(zip(runs, map(known.__getitem__, chars)))
    if len(_HMM_MEMO) + len(new) > _HMM_MEMO_SIZE:
        _HMM_MEMO.clear()
    _HMM_MEMO.update(new)
    return cuts


def _segment_many(texts) -> list[list[str]]:
    """jieba.lcut(text) of each text with its whitespace tokens dropped.

    The route's steps come from rjieba, joined by spaces; _RUN finds the runs of one-character steps (with the
    letter and digit steps rjieba merged), each cut by __cut_DAG's rule: a dictionary word splits into its
    characters, anything else goes to the HMM, all the texts' new runs at once. Each run is then replaced by its
    tokens and the text split on whitespace: string methods over whole texts, library calls mapped over runs."""
    segmenter = _rjieba()
    cut, has_word = segmenter.cut, segmenter.has_word
    pieces, runs = [], set()
    for text in texts:
        if _RJIEBA_WIDER.search(text) is None:
            steps = cut(text, False)
        else:
            steps = []
            for i, part in enumerate(_JIEBA_BLOCK.split(text)):
                if i % 2:
                    steps += cut(part, False)
                else:
                    steps += part  # every other character a step (whitespace is dropped below)
        steps.insert(0, "")
        split = _RUN.split(" ".join(steps))  # text, run, text, ..., text
        runs.update(split[1::2])
        pieces.append(split)
    cuts = _cut_runs(runs, has_word)
    out = []
    for i, split in enumerate(pieces):
        split[1::2] = map(cuts.__getitem__, split[1::2])
        out.append(" ".join(split).split())
        pieces[i] = None  # the joined text goes as its tokens come
    return out


def _jieba_dictionary_changed() -> bool:
    """Whether jieba's own tokenizer has left its default dictionary: set_dictionary, load_userdict, add_word,
    del_word and suggest_freq(tune=True) each change its dictionary path, its total or finalseg's forced splits.
    rjieba holds only the default dictionary, so then jieba itself segments."""
    jieba = sys.modules.get("jieba")
    if jieba is None:
        return False
    tokenizer = jieba.dt
    return (tokenizer.dictionary is not None or bool(jieba.finalseg.Force_Split_Words)
            or (tokenizer.initialized and tokenizer.total != _default_total()))


@functools.cache
def _default_total() -> int:
    """The total frequency jieba computes for its default dictionary (every line of dict.txt counts)."""
    import jieba

    with jieba.Tokenizer().get_dict_file() as lines:
        return sum(int(line.split()[1]) for line in lines)


def _dictionary_digest() -> str:
    """A short digest of what can be seen of jieba's changed dictionary (path, total, size, forced splits)."""
    jieba = _jieba()
    jieba.dt.check_initialized()
    seen = (jieba.dt.dictionary, jieba.dt.total, len(jieba.dt.FREQ), sorted(jieba.finalseg.Force_Split_Words))
    return hashlib.blake2b(repr(seen).encode("utf-8", "surrogatepass"), digest_size=4).hexdigest()


def tokenize(text: str, tokenizer: str = "jieba") -> list[str]:
    """Split text into tokens: ``"jieba"`` (jieba's accurate mode with its HMM for unknown words; rjieba does the
    dictionary work, with jieba's tokens; a dictionary changed in jieba itself, such as a user dictionary, is
    honoured by calling jieba) or ``"char"`` (every non-whitespace character is a token). The text is tokenized
    as given (no normalization); whitespace never becomes a token.

    >>> tokenize("我爱北京天安门, Hello world")
    ['我', '爱', '北京', '天安门', ',', 'Hello', 'world']
    >>> tokenize("北京 GDP", tokenizer="char")
    ['北', '京', 'G', 'D', 'P']
    """
    if _check_tokenizer(tokenizer) == "char":
        return [c for c in text if not c.isspace()]
    if _jieba_dictionary_changed():
        return " ".join(_jieba().lcut(text)).split()
    return _segment_many([text])[0]


def tokenizer_signature(name: str) -> str:
    """The tokenizer as it goes into score signatures, with the versions of the libraries doing the work:
    jieba's accurate mode computed with rjieba, or by jieba with a changed dictionary (and its digest)."""
    if _check_tokenizer(name) == "char":
        return "char"
    jieba = f"jieba-{package_version('jieba')}-accurate"
    if _jieba_dictionary_changed():
        return f"{jieba}+dict-{_dictionary_digest()}"
    return f"{jieba}+rjieba-{package_version('rjieba')}"


# jieba itself (a changed dictionary) is pure Python: from this many characters on, worker processes share the
# work. The rjieba path stays in one process: there two forked workers saved little on a 2-core machine
# (bench/bench_tokenize.py [3] measures both) and would hold a second copy of the token lists in transit.
_PARALLEL_MIN_CHARS = 200_000


def _joined_tokens(text: str) -> str:
    return " ".join(tokenize(text, "jieba"))  # one string crosses the process boundary faster than a list


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


# ---- compact token lists ---------------------------------------------------------------------------------------
# Token lists are kept as ids into one vocabulary for the whole process: 4 bytes a token in one flat array, where
# a list of strings costs 8 bytes a token (the pointer) plus 56 a list, and the lexical metrics read the ids
# without hashing a string again. The vocabulary only grows: it holds each distinct token once, like jieba's
# dictionary (a 60k-item run meets a few hundred thousand distinct tokens).
class _Vocabulary(dict):
    """token -> id; looking up a token it lacks adds it (ids in order of first occurrence), so a pass of
    dict.__getitem__ over a batch's tokens gives all their ids, Python code running only for new tokens."""

    def __missing__(self, token: str) -> int:
        with _VOCABULARY_LOCK:
            found = self.get(token)
            if found is None:
                found = self[token] = len(_WORDS)
                _WORDS.append(token)
            return found


_VOCABULARY = _Vocabulary()
_WORDS: list[str] = []
_VOCABULARY_LOCK = threading.Lock()


_ID_BATCH = 1000  # token lists whose ids are looked up in one pass


class TokenLists(Sequence):
    """The token lists of many texts as one array of vocabulary ids (``ids``, C ints) and the lists' boundaries
    (``offsets``, one more than there are lists). Reads as a sequence of lists of strings (each item a new list
    of the vocabulary's strings); chimdqa_eval.lexical reads ``ids`` and ``offsets`` directly.

    >>> lists = TokenLists.from_lists([["北京", "是", "首都"], [], ["北京"]])
    >>> len(lists), lists[0], lists[-1], list(lists.offsets)
    (3, ['北京', '是', '首都'], ['北京'], [0, 3, 3, 4])
    """
    __slots__ = ("ids", "offsets")

    def __init__(self):
        self.ids = array("i")
        self.offsets = array("q", [0])

    @classmethod
    def from_lists(cls, token_lists) -> "TokenLists":
        lists, token_lists = cls(), iter(token_lists)
        while batch := list(islice(token_lists, _ID_BATCH)):
            lists.extend_lists(batch)
        return lists

    def extend_lists(self, token_lists: list) -> None:
        """Appends lists of strings, the ids of all their tokens looked up in one pass."""
        self.ids.extend(map(_VOCABULARY.__getitem__, chain.from_iterable(token_lists)))
        self.offsets.extend(islice(accumulate(map(len, token_lists), initial=self.offsets[-1]), 1, None))

    def append_ids(self, ids) -> None:
        self.ids.extend(ids)
        self.offsets.append(len(self.ids))

    def item_ids(self, index: int) -> array:
        """The ids of one list, as an array of its own."""
        return self.ids[self.offsets[index]:self.offsets[index + 1]]

    @property
    def words(self) -> list[str]:
        """The vocabulary: ids index it."""
        return _WORDS

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(len(self))[index]]
        index = range(len(self))[index]
        return list(map(_WORDS.__getitem__, self.item_ids(index)))

    def __eq__(self, other):
        if isinstance(other, TokenLists):
            return self.ids == other.ids and self.offsets == other.offsets
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None

    def __reduce__(self):
        return TokenLists.from_lists, (list(self),)  # as strings: ids mean nothing in another process

    def __repr__(self) -> str:
        return f"TokenLists({list(self)!r})"


_SEGMENT_CHUNK = 1000  # texts segmented at once: enough runs for the HMM's batch, few strings alive


def tokenize_many(texts, tokenizer: str = "jieba") -> TokenLists:
    """tokenize() over a list, kept compactly as TokenLists (every distinct token one string in the process's
    vocabulary, every token a 4-byte id). When jieba itself segments (a
    changed dictionary), a large input is split across the available CPUs with forked worker processes, which
    inherit its loaded dictionary; off Linux (no fork on Windows, an unsafe one on macOS) it runs in this
    process. Either way the result is the same as tokenizing one by one."""
    texts = list(texts)
    workers = min(_cpus(), 8)
    if _check_tokenizer(tokenizer) == "char":
        token_lists = ([c for c in t if not c.isspace()] for t in texts)
    elif not _jieba_dictionary_changed():
        # A chunk at a time: its token strings (new objects from rjieba) live until they are ids.
        token_lists = (tokens for start in range(0, len(texts), _SEGMENT_CHUNK)
                       for tokens in _segment_many(texts[start:start + _SEGMENT_CHUNK]))
    elif workers >= 2 and sys.platform == "linux" and sum(map(len, texts)) >= _PARALLEL_MIN_CHARS:
        import multiprocessing

        _jieba().initialize()
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            joined = pool.map(_joined_tokens, texts, chunksize=max(1, len(texts) // (8 * workers)))
        token_lists = (j.split() for j in joined)
    else:
        token_lists = (tokenize(t, tokenizer) for t in texts)
    return TokenLists.from_lists(token_lists)


_memory_cache: dict = {}


def _disk_cache(name: str):
    path = cache_dir("tokens") / f"{tokenizer_signature(name)}.sqlite"
    db = sqlite3.connect(str(path), timeout=60)
    db.execute("CREATE TABLE IF NOT EXISTS tokens (key BLOB PRIMARY KEY, tokens TEXT NOT NULL)")
    return db


def _text_key(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


def tokenize_references(texts, tokenizer: str = "jieba") -> TokenLists:
    """tokenize_many() for texts that recur across runs (references): jieba results are kept in memory (as id
    arrays) and on disk under ``cache_dir("tokens")``, keyed by the tokenizer's signature (jieba's and rjieba's
    versions, or the digest of a changed jieba dictionary) and the text, so each reference is split once per
    machine. ``"char"`` is cheaper than a cache lookup and is computed directly."""
    texts = list(texts)
    if _check_tokenizer(tokenizer) == "char":
        return tokenize_many(texts, "char")
    signature = tokenizer_signature(tokenizer)
    memory = _memory_cache.setdefault(signature, {})
    missing = list(dict.fromkeys(t for t in texts if t not in memory))
    if missing:
        with closing(_disk_cache(tokenizer)) as db:
            keys = {_text_key(t): t for t in missing}
            key_list = list(keys)
            for start in range(0, len(key_list), 500):
                chunk = key_list[start:start + 500]
                rows = db.execute(f"SELECT key, tokens FROM tokens WHERE key IN ({','.join('?' * len(chunk))})",
                                  chunk).fetchall()
                found = TokenLists.from_lists([tokens.split() for _, tokens in rows])  # ids in one pass
                memory.update(zip([keys[k] for k, _ in rows], map(found.item_ids, range(len(rows)))))
            new_texts = {k: t for k, t in keys.items() if t not in memory}
            if new_texts:
                new = tokenize_many(new_texts.values(), tokenizer)
                rows = []
                for i, (k, t) in enumerate(new_texts.items()):
                    memory[t] = ids = new.item_ids(i)
                    rows.append((k, " ".join(map(_WORDS.__getitem__, ids))))
                with db:
                    db.executemany("INSERT OR REPLACE INTO tokens VALUES (?, ?)", rows)
    lists = TokenLists()
    for t in texts:
        lists.append_ids(memory[t])
    return lists
