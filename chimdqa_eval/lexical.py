"""ROUGE-L, METEOR, CIDEr and CIDEr-D over token lists: pure functions, one score per (prediction, reference) pair.

Each reproduces a reference definition to the last digit when fed the same tokens — rouge_score's ROUGE-L
F-measure, NLTK's ``meteor_score``, Vedantam et al.'s CIDEr and pycocoevalcap's ``Cider`` (CIDEr-D) — but none
is quadratic Python:

* ROUGE-L: the LCS length comes from the bit-parallel recurrence of Allison & Dix / Hyyrö, one big-integer step
  per prediction token, instead of a dynamic-programming table.
* METEOR: NLTK aligns greedily, scanning the hypothesis from its end and giving each word the last unused equal
  reference word. So for each word the k-th occurrence from the end on one side pairs with the k-th from the end
  on the other, and a batch of items is aligned with a few array sorts (batches of about _METEOR_BATCH_TOKENS
  tokens, so the sorts' temporaries stay small whatever the corpus size).
* CIDEr and CIDEr-D: one pass (``_cider_similarities``) counts n-grams and document frequencies once and takes
  both variants' products from the same tf-idf weights; counts, frequencies and products for the whole corpus
  are array operations instead of per-sentence dictionaries, one n-gram order at a time, each order one stable
  sort of the token positions. Items are scored _CIDER_BLOCK_ITEMS at a time (the references' document
  frequencies counted first, block by block), so the temporaries stay small whatever the corpus size, with the
  very same floats.

Token lists come as text.TokenLists (ids into one vocabulary, read directly) or as lists of strings (converted).

Scores are on the reference implementations' scales (0-1; CIDEr-D 0-10); callers rescale.
"""
from __future__ import annotations

import functools
import hashlib
import itertools
import operator
from typing import Callable, Iterable, Sequence

import numpy as np

from chimdqa_eval import porter as porter_stemmer
from chimdqa_eval.text import TokenLists

Tokens = Sequence[Sequence[str]]  # token lists: text.TokenLists (read as ids, no string hashed) or lists of str

METEOR_ALPHA, METEOR_BETA, METEOR_GAMMA = 0.9, 3.0, 0.5
CIDER_N, CIDER_SIGMA = 4, 6.0
# Composite int64 keys (item, word, rank) must stay below this; larger corpora renumber their groups first.
_KEY_LIMIT = 2 ** 62
# METEOR aligns this many tokens (both sides) at a time: its sorts' temporaries are about 100 bytes a token.
_METEOR_BATCH_TOKENS = 1 << 19
# CIDEr scores this many items at a time (after counting the references' document frequencies as many at a time):
# a block's n-gram temporaries are about 100 bytes a token, some 30 KB an item of ~300 tokens (both sides), so a
# block of 1,024 items holds ~30 MB where one of 8,192 held ~250 MB (bench/mem_phases.py shows the phase).
_CIDER_BLOCK_ITEMS = 1 << 10


def _check_pairs(predictions: Tokens, references: Tokens) -> None:
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions but {len(references)} references")


# ---- ROUGE-L --------------------------------------------------------------------------------------------------

def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token lists, O(len(a) * len(b) / wordsize).

    Bit j of `row` is 0 where the LCS of b[:j+1] with the tokens seen so far grows; the number of zero bits is the
    LCS length (Hyyrö 2004, "Bit-parallel LCS-length computation revisited").
    """
    if len(a) < len(b):
        a, b = b, a  # bits over the longer list, so the Python-level loop runs over the shorter one
    masks: dict = {}
    for j, token in enumerate(a):
        masks[token] = masks.get(token, 0) | (1 << j)
    full = (1 << len(a)) - 1
    row = full
    for token in b:
        match = masks.get(token)
        if match:
            u = row & match
            row = ((row + u) | (row - u)) & full
    return len(a) - row.bit_count()


def rouge_l(predictions: Tokens, references: Tokens) -> list[float]:
    """ROUGE-L F-measure per pair, as rouge_score's ``RougeScorer(["rougeL"])``: 0 when either side is empty."""
    _check_pairs(predictions, references)
    hyp, ref = _as_ids(predictions), _as_ids(references)
    scores = []
    for i in range(len(hyp)):  # the LCS compares ids: no string is hashed
        pred, gold = hyp.item_ids(i).tolist(), ref.item_ids(i).tolist()
        if not pred or not gold:
            scores.append(0.0)
            continue
        lcs = lcs_length(gold, pred)
        precision, recall = lcs / len(pred), lcs / len(gold)
        scores.append(2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0)
    return scores


# ---- shared -------------------------------------------------------------------------------------------------

def _as_ids(token_lists: Tokens) -> TokenLists:
    """Token lists as vocabulary ids: text.TokenLists as they are, lists of strings converted."""
    return token_lists if isinstance(token_lists, TokenLists) else TokenLists.from_lists(token_lists)


def _columns(lists: TokenLists) -> tuple[np.ndarray, np.ndarray]:
    """The ids (a view, no copy) and the lengths of TokenLists as numpy arrays."""
    return np.frombuffer(lists.ids, dtype=np.intc), np.diff(np.frombuffer(lists.offsets, dtype=np.int64))


def _item_and_position(lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For every token of flattened lists: the index of its list and its position in it."""
    item = np.repeat(np.arange(len(lengths)), lengths)
    starts = np.cumsum(lengths) - lengths
    return item, np.arange(len(item)) - np.repeat(starts, lengths)


def _sorted_changes(values: np.ndarray, order: np.ndarray, chunk: int = 1 << 20) -> np.ndarray:
    """For values taken in `order`: True where one differs from the one before (and at the start), gathered a
    chunk at a time so no sorted copy of `values` is made."""
    changes = np.empty(len(order), dtype=bool)
    previous = None
    for start in range(0, len(order), chunk):
        part = values[order[start:start + chunk]]
        np.not_equal(part[1:], part[:-1], out=changes[start + 1:start + len(part)])
        changes[start] = previous is None or part[0] != previous
        previous = part[-1]
    return changes


def _stable_sort(values: np.ndarray, index, sorted_values: bool = False) -> tuple:
    """A stable sort of non-negative ints: the order (as `index`), where each value differs from the one before
    in that order, and (if asked) the sorted values. When value * count + position fits in an int64 those keys
    are unique and numpy's (vectorized) sort of them gives the stable order at a fraction of a stable argsort's
    cost; otherwise a stable argsort."""
    count = len(values)
    if count and int(values.min()) >= 0 and (int(values.max()) + 1) * count < 2 ** 63:
        keys = values.astype(np.int64)
        keys *= count
        keys += np.arange(count, dtype=np.int64)
        keys.sort()
        order = (keys % count).astype(index)
        keys //= count
        changes = np.empty(count, dtype=bool)
        changes[0] = True
        np.not_equal(keys[1:], keys[:-1], out=changes[1:])
        return (order, changes, keys) if sorted_values else (order, changes)
    order = np.argsort(values, kind="stable").astype(index)
    if sorted_values:
        ordered = values[order]
        return order, np.r_[True, ordered[1:] != ordered[:-1]][:count], ordered
    return order, _sorted_changes(values, order)


# ---- METEOR ---------------------------------------------------------------------------------------------------

def _sorted_groups(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A stable sort of keys: the order, the sorted keys, and for each sorted element how many later elements
    carry the same key (0 for the last occurrence)."""
    order, changes, sorted_keys = _stable_sort(keys, np.int64, sorted_values=True)
    starts = np.flatnonzero(changes)
    sizes = np.diff(np.r_[starts, len(keys)])
    return order, sorted_keys, np.repeat(starts + sizes - 1, sizes) - np.arange(len(keys))


def _align_from_end(item_h, word_h, item_r, word_r):
    """Indices (into the hypothesis and reference columns) of NLTK's greedy matches: per item and word, the k-th
    occurrence from the end in the hypothesis pairs with the k-th from the end in the reference. One stable
    sort per side; each hypothesis occurrence finds its partner's place in the sorted reference by binary
    search."""
    if len(word_h) == 0 or len(word_r) == 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    words = int(max(word_h.max(), word_r.max())) + 1
    group_h, group_r = item_h * words + word_h, item_r * words + word_r
    if (int(max(item_h.max(), item_r.max())) + 1) * words >= _KEY_LIMIT:  # renumber groups densely
        _, inverse = np.unique(np.r_[group_h, group_r], return_inverse=True)
        group_h, group_r = inverse[:len(word_h)], inverse[len(word_h):]
    order_h, sorted_h, from_end = _sorted_groups(group_h)
    order_r, sorted_r = _sorted_groups(group_r)[:2]
    stop = np.searchsorted(sorted_r, sorted_h, side="right")
    paired = from_end < stop - np.searchsorted(sorted_r, sorted_h, side="left")
    return order_h[paired], order_r[(stop - 1 - from_end)[paired]]


def _synonym_matches(hyp_words: list, ref_words: list, synonyms: Callable[[str], Iterable[str]]):
    """NLTK's WordNet stage on the still-unmatched words of one pair: from the end of the hypothesis, each word
    takes the last unused reference word among itself and its synonyms. Returns (hyp index, ref index) pairs
    into the given lists."""
    positions: dict = {}
    for j, word in enumerate(ref_words):
        positions.setdefault(word, []).append(j)
    pairs = []
    for i in range(len(hyp_words) - 1, -1, -1):
        word = hyp_words[i]
        best = None
        for candidate in {word, *synonyms(word)}:
            found = positions.get(candidate)
            if found and (best is None or found[-1] > positions[best][-1]):
                best = candidate
        if best is not None:
            pairs.append((i, positions[best].pop()))
    return pairs


@functools.lru_cache(maxsize=1)
def porter_stem() -> Callable[[str], str]:
    """NLTK's Porter stemmer (its default NLTK_EXTENSIONS mode), the stemmer NLTK's METEOR uses, for lower-case
    words: chimdqa_eval.porter, which equals it word for word without importing NLTK. Every Porter rule and
    NLTK's table of irregular forms act on words ending in an ASCII letter; any other word (all of Chinese) is
    its own stem and skips the stemmer, and only the stemmed words' stems are remembered (a corpus's Chinese
    words would fill the memo for nothing)."""
    porter = functools.lru_cache(maxsize=1 << 16)(porter_stemmer.stem)

    def stem(word: str) -> str:
        return porter(word) if _porter_acts_on(word) else word

    return stem


_ASCII_LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")
_LAST_CHARACTER = operator.itemgetter(slice(-1, None))  # "" for ""


def _porter_acts_on(word: str) -> bool:
    """Whether a lower-case word can have a Porter stem other than itself: it ends in an ASCII letter."""
    return _LAST_CHARACTER(word) in _ASCII_LOWER


def _porter_changes(words: list[str]) -> list[int]:
    """The indices of the words _porter_acts_on, found with C-level maps."""
    return list(itertools.compress(range(len(words)), map(_ASCII_LOWER.__contains__, map(_LAST_CHARACTER, words))))


def meteor(predictions: Tokens, references: Tokens, *, alpha: float = METEOR_ALPHA,
           beta: float = METEOR_BETA, gamma: float = METEOR_GAMMA, stem: Callable[[str], str] | None = None,
           synonyms: Callable[[str], Iterable[str]] | None = None) -> list[float]:
    """METEOR per pair, as NLTK's ``meteor_score([reference], prediction)``: lower-cased tokens are aligned by
    exact match, then by stem (`stem`, NLTK's Porter stemmer by default), then by synonym (`synonyms(word)`
    returns a word's synonyms; none by default, the offline choice — NLTK would need WordNet). 0 when either
    side is empty or nothing matches.
    """
    _check_pairs(predictions, references)
    stem, every_word = (porter_stem(), False) if stem is None else (stem, True)
    hyp, ref = _as_ids(predictions), _as_ids(references)
    (hyp_ids, hyp_lengths), (ref_ids, ref_lengths) = _columns(hyp), _columns(ref)
    scores: list[float] = []
    for start, stop in _batches(hyp_lengths, ref_lengths, _METEOR_BATCH_TOKENS):
        scores += _meteor_batch(hyp_ids[hyp.offsets[start]:hyp.offsets[stop]], hyp_lengths[start:stop],
                                ref_ids[ref.offsets[start]:ref.offsets[stop]], ref_lengths[start:stop],
                                hyp.words, alpha, beta, gamma, stem, every_word, synonyms)
    return scores


def _batches(hyp_lengths: Sequence[int], ref_lengths: Sequence[int], tokens: int):
    """(start, stop) of consecutive items holding about `tokens` tokens on both sides together."""
    start = count = 0
    for i, (pred, ref) in enumerate(zip(hyp_lengths, ref_lengths)):
        count += int(pred) + int(ref)
        if count >= tokens:
            yield start, i + 1
            start, count = i + 1, 0
    if start < len(hyp_lengths):
        yield start, len(hyp_lengths)


def _distinct_and_index(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(ids, return_inverse=True) for non-negative ids without sorting them: a mark per id up to the
    largest, the distinct ids where marked, each id's place among them from a running count of the marks."""
    present = np.zeros(int(ids.max()) + 1 if len(ids) else 0, dtype=bool)
    present[ids] = True
    rank = np.cumsum(present, dtype=np.int64)
    rank -= 1
    return np.flatnonzero(present), rank[ids]


def _lower_each(words: list[str]) -> list[str]:
    """[w.lower() for w in words], lowered as one string where no word holds a newline (lower() acts on each
    character alone but for the final sigma, whose context a newline ends as the end of a word does)."""
    lowered = "\n".join(words).lower().split("\n")
    return lowered if len(lowered) == len(words) else [w.lower() for w in words]


def _meteor_batch(hyp_ids: np.ndarray, hyp_lengths: np.ndarray, ref_ids: np.ndarray, ref_lengths: np.ndarray,
                  vocabulary: list[str], alpha: float, beta: float, gamma: float, stem: Callable[[str], str],
                  every_word: bool, synonyms: Callable[[str], Iterable[str]] | None) -> list[float]:
    """meteor() on a batch of items (their token ids and lengths, both sides): each item's score depends on
    that item alone. Lower-casing and stemming act once per distinct word of the batch (the default Porter
    stemmer only on the words it can change, `every_word` False)."""
    distinct, index = _distinct_and_index(np.concatenate([hyp_ids, ref_ids]))
    lowered = _lower_each([vocabulary[w] for w in distinct.tolist()])
    lower_vocab = dict(zip(dict.fromkeys(lowered), itertools.count()))  # ids by first occurrence
    lower = np.fromiter(map(lower_vocab.__getitem__, lowered), dtype=np.int64, count=len(lowered))
    lower_words = list(lower_vocab)
    stemmed = np.arange(len(lower_words), dtype=np.int64)  # every word its own stem, but
    changing = range(len(lower_words)) if every_word else _porter_changes(lower_words)
    stemmed[changing] = [lower_vocab.setdefault(stem(lower_words[i]), len(lower_vocab)) for i in changing]
    lower_words = list(lower_vocab)  # now with the stems that are not corpus words
    words = lower[index]
    word_h, word_r = words[:len(hyp_ids)], words[len(hyp_ids):]
    del words, index
    n_items = len(hyp_lengths)
    item_h, pos_h = _item_and_position(hyp_lengths)
    item_r, pos_r = _item_and_position(ref_lengths)

    matched_h = np.zeros(len(word_h), dtype=bool)
    matched_r = np.zeros(len(word_r), dtype=bool)
    pairs_h, pairs_r = [], []

    def match(index_h, index_r):
        matched_h[index_h] = matched_r[index_r] = True
        pairs_h.append(index_h)
        pairs_r.append(index_r)

    for stage in (None, stemmed):  # exact, then stem, each on what is still unmatched
        left_h, left_r = np.flatnonzero(~matched_h), np.flatnonzero(~matched_r)
        w_h, w_r = word_h[left_h], word_r[left_r]
        if stage is not None:
            if np.array_equal(stage[w_h], w_h) and np.array_equal(stage[w_r], w_r):
                continue  # stems equal words, so nothing new can match
            w_h, w_r = stage[w_h], stage[w_r]
        ih, ir = _align_from_end(item_h[left_h], w_h, item_r[left_r], w_r)
        match(left_h[ih], left_r[ir])
    if synonyms is not None:
        left_h, left_r = np.flatnonzero(~matched_h), np.flatnonzero(~matched_r)
        cut_h = np.searchsorted(item_h[left_h], np.arange(n_items + 1))
        cut_r = np.searchsorted(item_r[left_r], np.arange(n_items + 1))
        found_h, found_r = [], []
        for k in range(n_items):
            own_h, own_r = left_h[cut_h[k]:cut_h[k + 1]], left_r[cut_r[k]:cut_r[k + 1]]
            if len(own_h) and len(own_r):
                # NLTK looks up synonyms of the stemmed forms left over by the stem stage.
                for i, j in _synonym_matches([lower_words[w] for w in stemmed[word_h[own_h]]],
                                             [lower_words[w] for w in stemmed[word_r[own_r]]], synonyms):
                    found_h.append(own_h[i])
                    found_r.append(own_r[j])
        match(np.array(found_h, dtype=np.int64), np.array(found_r, dtype=np.int64))

    partner = np.full(len(word_h), -1, dtype=np.int64)  # hypothesis order, as NLTK sorts its matches
    for index_h, index_r in zip(pairs_h, pairs_r):
        partner[index_h] = index_r
    index_h = np.flatnonzero(partner >= 0)
    index_r = partner[index_h]
    del partner
    item = item_h[index_h]
    matches = np.bincount(item, minlength=n_items).astype(float)
    # A chunk continues when the next match (same item) is one step further on both sides.
    continues = ((item[1:] == item[:-1]) & (np.diff(pos_h[index_h]) == 1) & (np.diff(pos_r[index_r]) == 1))
    chunks = matches - np.bincount(item[1:][continues], minlength=n_items)
    scores = []
    for m, chunk_count, n_hyp, n_ref in zip(matches.tolist(), chunks.tolist(), hyp_lengths.tolist(),
                                             ref_lengths.tolist()):
        if m == 0 or n_hyp == 0 or n_ref == 0:
            scores.append(0.0)
            continue
        precision, recall = m / n_hyp, m / n_ref
        fmean = (precision * recall) / (alpha * precision + (1 - alpha) * recall)
        scores.append((1 - gamma * (chunk_count / m) ** beta) * fmean)
    return scores


# ---- CIDEr and CIDEr-D ----------------------------------------------------------------------------------------

def _first_occurrence_ranks(columns: Sequence[np.ndarray], chunk: int = 1 << 20) -> tuple[np.ndarray, int]:
    """For every id of the given columns (taken in turn): its rank by first occurrence, as an array indexed by
    id (-1 for ids that never occur), and the number of distinct ids. A chunk of tokens at a time."""
    top = max((int(c.max()) + 1 for c in columns if len(c)), default=0)
    rank = np.full(top, -1, dtype=np.int32 if top < 2 ** 31 else np.int64)
    count = 0
    for column in columns:
        for start in range(0, len(column), chunk):
            part = column[start:start + chunk]
            order, changes = _stable_sort(part, np.int64)
            first = order[changes]  # each id's first position in the chunk, by id
            del order, changes
            unique = part[first]
            new = rank[unique] < 0
            unique = unique[new][np.argsort(first[new])]
            rank[unique] = np.arange(count, count + len(unique))
            count += len(unique)
    return rank, count


def _lookup(table: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """The index of each key in a sorted table of distinct keys, -1 where it is not there."""
    if not len(table):
        return np.full(len(keys), -1, dtype=np.int64)
    at = np.searchsorted(table, keys)
    np.minimum(at, len(table) - 1, out=at)
    return np.where(table[at] == keys, at, -1)


def _next_keys(previous: np.ndarray | None, token: np.ndarray, k: int, vocabulary: int) -> np.ndarray:
    """The key of the k-gram at each position: its token for k = 1, else the (k-1)-gram's index in its table
    times the vocabulary plus the k-gram's last token (negative where the (k-1)-gram is in no table: the key is
    then in none either). Keys are ordered as the k-grams' tokens are, lexicographically."""
    if previous is None:
        return token.astype(np.int64)
    keys = previous[:max(len(token) - k + 1, 0)].astype(np.int64)
    keys *= vocabulary
    keys += token[k - 1:]
    return keys


def _text_and_left(lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For every token of flattened texts: its text, and how many tokens from it to its text's end (a k-gram
    starting there lies inside the text if >= k)."""
    text = np.repeat(np.arange(len(lengths), dtype=np.int32), lengths)
    left = (np.repeat(np.cumsum(lengths), lengths) - np.arange(len(text))).astype(np.int32)
    return text, left


def _reference_tables(ids: np.ndarray, lengths: np.ndarray, rank: np.ndarray, vocabulary: int, n: int,
                      block: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """For k = 1..n: the sorted keys (_next_keys) of every k-gram of the references and the number of references
    holding each (its document frequency), counted `block` references at a time."""
    offsets = np.r_[0, np.cumsum(lengths)]
    place_type = np.int32 if len(ids) < 2 ** 31 else np.int64  # places among at most len(ids) k-grams
    index = np.full(len(ids), -1, dtype=place_type)  # each position's k-gram's index in the table of order k
    tables = []
    for k in range(1, n + 1):
        distinct_keys, counts, bases = [], [], [0]
        for first in range(0, len(lengths), block):
            last = min(first + block, len(lengths))
            start, stop = offsets[first], offsets[last]
            text, left = _text_and_left(lengths[first:last])
            at = np.flatnonzero(left >= k)
            keys = _next_keys(None if k == 1 else index[start:stop], rank[ids[start:stop]], k, vocabulary)[at]
            order, changes, keys = _stable_sort(keys, np.int64, sorted_values=True)
            distinct = keys[changes]
            del keys
            place = np.cumsum(changes)
            place -= 1
            # The references ascend within a k-gram (a stable sort): each change of k-gram or of reference along
            # the order is one more reference holding the k-gram.
            holder = text[at[order]]
            changes[1:] |= holder[1:] != holder[:-1]
            holders = np.bincount(place[changes], minlength=len(distinct))
            del holder, changes
            index[start:stop] = -1
            place += bases[-1]
            index[start + at[order]] = place  # its place among the blocks' distinct keys, for now
            del order, place
            distinct_keys.append(distinct)
            counts.append(holders)
            bases.append(bases[-1] + len(distinct))
        keys, inverse = _merged_keys(distinct_keys, place_type)
        del distinct_keys
        tables.append((keys, np.bincount(inverse, weights=np.concatenate(counts or [np.empty(0)]),
                                         minlength=len(keys))))
        del counts
        _renumber(index, inverse)  # each position's k-gram's index in the merged table
        del inverse
    return tables


def _merged_keys(parts: list[np.ndarray], place_type) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(np.concatenate(parts), return_inverse=True) (the sorted distinct keys, and each key's index
    among them) with fewer temporaries: one sort order, the sorted keys, and indices of `place_type`."""
    merged = np.concatenate(parts or [np.empty(0, np.int64)])
    order = np.argsort(merged)
    merged = merged[order]
    changes = np.empty(len(merged), dtype=bool)
    changes[:1] = True
    np.not_equal(merged[1:], merged[:-1], out=changes[1:])
    keys = merged[changes]
    del merged
    inverse = np.empty(len(changes), dtype=place_type)
    inverse[order] = np.cumsum(changes, dtype=place_type) - 1
    return keys, inverse


def _renumber(index: np.ndarray, new: np.ndarray, chunk: int = 1 << 20) -> None:
    """index[i] = new[index[i]] in place where index[i] >= 0 (-1 stays -1), a chunk at a time."""
    new = np.append(new.astype(index.dtype, copy=False), index.dtype.type(-1))  # -1 picks the appended -1
    for start in range(0, len(index), chunk):
        part = index[start:start + chunk]
        part[...] = new[part]


def _ngram_groups(token: np.ndarray, lengths: np.ndarray, n: int, vocabulary: int | None = None, tables=None):
    """For k = 1..n, one order at a time: (gram, text, tf, width, df) for every distinct k-gram of every text
    that lies inside it, sorted by k-gram, then text; `gram` is the k-gram's id, width one more than the largest,
    df the k-gram's document frequency from `tables` (_reference_tables) or None without them.

    `token` holds tokens numbered 0..vocabulary-1 (by first occurrence in the corpus: so the order, and with it
    every sum over k-grams, is the same however the vocabulary numbered them; without `vocabulary`, tokens in
    any numbering, numbered here by first occurrence), and k-gram ids are dense and
    ordered as the k-grams' tokens are (lexicographically): a k-gram is the (k-1)-gram id at its start times
    the vocabulary plus its last token. Each order costs one stable sort of the positions by that code, which
    groups them by k-gram with the texts ascending inside a group: every text meets its k-grams in id order, in
    a block of texts as in the whole corpus. K-grams across a text's end are numbered too, then dropped: they
    change no order."""
    n_tokens = len(token)
    text, left = _text_and_left(lengths)
    index = np.int32 if n_tokens < 2 ** 31 else np.int64  # positions (and k-gram ids) fit
    first = None
    if vocabulary is None:  # one block: number the tokens by first occurrence here, from the sort that groups them
        order, changes = _stable_sort(token, index)
        starts = np.flatnonzero(changes).astype(index)
        del changes
        sizes = np.diff(np.r_[starts, np.array([n_tokens], dtype=index)])
        by_first = np.argsort(order[starts])  # distinct tokens in order of first occurrence
        starts, sizes = starts[by_first], sizes[by_first]
        moved = np.repeat(starts - (np.cumsum(sizes, dtype=index) - sizes), sizes)  # each group to its new place
        moved += np.arange(n_tokens, dtype=index)
        order = order[moved]
        del moved
        vocabulary = len(starts)
        ranks = np.repeat(np.arange(vocabulary, dtype=index), sizes)  # the id of each position along `order`
        token = np.empty(n_tokens, dtype=index)
        token[order] = ranks
        first = order, ranks
        del order, ranks, starts, sizes
    gram = token = token.astype(index)
    found = None  # each k-gram's index in the references' table of its order (-1: in none)
    for k in range(1, n + 1):
        if first is not None:  # order 1 from the numbering's sort
            (order, ranks), first = first, None
        else:
            if k > 1:
                code = gram[:-1].astype(np.int64)
                del gram
                code *= vocabulary
                code += token[k - 1:]
            else:
                code = token
            order, changes = _stable_sort(code, index)
            if tables is not None:  # each k-gram's index in the references' table, looked up once per k-gram
                code = code[order[changes]]  # the distinct codes, ascending: their keys ascend too
                if k > 1:
                    prefix = found[code // vocabulary]
                    code %= vocabulary
                    code += prefix * vocabulary
                    code[prefix < 0] = -1
                    del prefix
                found = np.full(len(code), -1, dtype=np.int64)
                known = np.flatnonzero(code >= 0)
                found[known] = _lookup(tables[k - 1][0], code[known])
                del known
            del code
            ranks = np.cumsum(changes, dtype=index)
            del changes
            ranks -= 1
            gram = np.empty(len(ranks), dtype=index)
            gram[order] = ranks
        inside = order[left[order] >= k]
        kept, kept_text = gram[inside], text[inside]
        width = int(ranks[-1]) + 1 if len(ranks) else 1
        del order, ranks  # only `gram`, `token` and `found` go on to the next order
        new = np.empty(len(kept), dtype=bool)
        new[:1] = True
        np.logical_or(kept[1:] != kept[:-1], kept_text[1:] != kept_text[:-1], out=new[1:])
        starts = np.flatnonzero(new).astype(index)
        del new
        gram_of, text_of = kept[starts], kept_text[starts]
        df = None
        if tables is not None:
            at = found[gram_of]
            df = np.zeros(len(at))  # a k-gram no reference has: df 0 (the table may even be empty)
            hit = at >= 0
            df[hit] = tables[k - 1][1][at[hit]]
            del at, hit
        del kept_text, inside
        tf = np.diff(starts, append=index(len(kept)))
        del kept, starts
        groups = gram_of, text_of, tf, width, df
        del gram_of, text_of, tf, df
        yield groups
        del groups


def _cider_order(gram: np.ndarray, text: np.ndarray, tf: np.ndarray, width: int, df: np.ndarray | None,
                 n_items: int, corpus: int):
    """One n-gram order's part of _cider_similarities for a block of n_items items, from _ngram_groups: its
    cosine and clipped products per item and the norm of every text's weight vector. Predictions are texts
    0..n_items-1, references follow; `corpus` items in all (the block's own references are the corpus where df
    is None); a bincount adds each text's (item's) terms in k-gram order."""
    is_reference = text >= n_items
    if df is None:
        idf = np.maximum(np.bincount(gram[is_reference], minlength=width), 1.0)
    else:
        idf = np.maximum(df, 1.0)
    np.log(idf, out=idf)
    np.subtract(np.log(float(corpus)), idf, out=idf)
    weight = idf[gram] if df is None else idf
    del idf
    weight *= tf
    norms = np.sqrt(np.bincount(text, weights=weight * weight, minlength=2 * n_items))
    # Sorted keys (k-gram, text): a prediction's reference holds the same k-gram at its key plus n_items.
    keys = gram.astype(np.int64)
    keys *= 2 * n_items
    keys += text
    np.logical_not(is_reference, out=is_reference)
    hyp = np.flatnonzero(is_reference)
    del is_reference
    wanted = keys[hyp]
    wanted += n_items
    ir = np.searchsorted(keys, wanted)
    np.minimum(ir, max(len(keys) - 1, 0), out=ir)
    found = keys[ir] == wanted if len(keys) else np.zeros(0, dtype=bool)
    del keys, wanted
    ih, ir = hyp[found], ir[found]
    del hyp, found
    w_h, w_r = weight[ih], weight[ir]
    del weight
    item = text[ih]
    return (np.bincount(item, weights=w_h * w_r, minlength=n_items),
            np.bincount(item, weights=np.minimum(w_h, w_r) * w_r, minlength=n_items), norms)


def _cider_similarities(predictions: Tokens, references: Tokens, n: int, block: int | None = None):
    """For k = 1..n the similarity of each prediction to its reference, both ways CIDEr and CIDEr-D take it,
    from one count of the n-grams: two (n, items) matrices, and the token count of every text (predictions,
    then references).

    Each text is a vector of k-gram weights tf * idf, idf = log(number of items) - log(max(1, df)) with df the
    number of references holding the k-gram (the evaluated references are the corpus, one per item). CIDEr
    (Vedantam et al. 2015) takes the cosine sum(h * r) / (|h| |r|); CIDEr-D (pycocoevalcap) the clipped
    sum(min(h, r) * r) / (|h| |r|). tf is the raw count: the paper's tf divides it by the text's number of
    k-grams, which rescales a whole vector and leaves a cosine unchanged, and pycocoevalcap's CIDEr-D clips raw
    counts.

    Items are taken `block` (default _CIDER_BLOCK_ITEMS) at a time, so the temporaries stay small whatever the
    corpus size: a corpus of more than one block first counts the references' document frequencies block by
    block (_reference_tables), then scores each block with them. Every text sums its terms in the same order
    either way (its k-grams ordered by their tokens, numbered by first occurrence in the whole corpus), so the
    numbers are the same to the last bit whatever the block size.
    """
    _check_pairs(predictions, references)
    n_items = len(predictions)
    block = max(1, block or _CIDER_BLOCK_ITEMS)
    (hyp_ids, hyp_lengths), (ref_ids, ref_lengths) = _columns(_as_ids(predictions)), _columns(_as_ids(references))
    lengths = np.concatenate([hyp_lengths, ref_lengths])
    rank, vocabulary, tables = None, None, None
    if n_items > block:
        rank, vocabulary = _first_occurrence_ranks([hyp_ids, ref_ids])
        tables = _reference_tables(ref_ids, ref_lengths, rank, vocabulary, n, block)
    hyp_offsets, ref_offsets = np.r_[0, np.cumsum(hyp_lengths)], np.r_[0, np.cumsum(ref_lengths)]
    cosine, clipped = np.zeros((n, n_items)), np.zeros((n, n_items))
    norms = np.zeros((n, 2 * n_items))
    for first in range(0, n_items, block):
        last = min(first + block, n_items)
        token = [hyp_ids[hyp_offsets[first]:hyp_offsets[last]], ref_ids[ref_offsets[first]:ref_offsets[last]]]
        token = np.concatenate([rank[t] for t in token] if tables is not None else token)
        texts = np.concatenate([hyp_lengths[first:last], ref_lengths[first:last]])
        for k, groups in enumerate(_ngram_groups(token, texts, n, vocabulary, tables)):
            cosine[k, first:last], clipped[k, first:last], block_norms = _cider_order(*groups, last - first,
                                                                                       n_items)
            norms[k, first:last], norms[k, n_items + first:n_items + last] = np.split(block_norms, 2)
            del groups, block_norms  # before the next order's are built
        del token
    norm_h, norm_r = norms[:, :n_items], norms[:, n_items:]
    both = (norm_h != 0) & (norm_r != 0)
    for similarity in (cosine, clipped):
        similarity[both] /= (norm_h * norm_r)[both]
    return cosine, clipped, lengths


def cider_and_cider_d(predictions: Tokens, references: Tokens, *, n: int = CIDER_N,
                      sigma: float = CIDER_SIGMA) -> tuple[list[float], list[float]]:
    """cider() and cider_d() per pair from one pass over the n-grams (the same numbers as calling each)."""
    cosine, clipped, lengths = _cider_similarities(predictions, references, n)
    # CIDEr-D's Gaussian length penalty, a text's length being its number of bigrams, as pycocoevalcap counts it.
    bigrams = np.maximum(lengths - 1, 0)
    delta = (bigrams[:len(predictions)] - bigrams[len(predictions):]).astype(float)
    clipped *= np.exp(-(delta ** 2) / (2 * sigma ** 2))
    return cosine.mean(axis=0).tolist(), (clipped.mean(axis=0) * 10.0).tolist()


def cider(predictions: Tokens, references: Tokens, *, n: int = CIDER_N) -> list[float]:
    """CIDEr per pair as Vedantam et al. 2015 define it (0-1): for k = 1..n the cosine of the tf-idf vectors of
    prediction and reference, document frequencies over the given references; the mean over k (uniform
    weights 1/n). No clipping, no length penalty. A pair scores 0 where either side has no k-gram of any
    order, and every pair of a single-item corpus scores 0 (every idf is log(1/1))."""
    return _cider_similarities(predictions, references, n)[0].mean(axis=0).tolist()


def cider_d(predictions: Tokens, references: Tokens, *, n: int = CIDER_N,
            sigma: float = CIDER_SIGMA) -> list[float]:
    """CIDEr-D per pair, as pycocoevalcap's ``Cider().compute_score`` with one reference per item (its 0-10
    scale): CIDEr's tf-idf weights with clipped products sum(min(h, r) * r) and the Gaussian length penalty
    (sigma = 6), the mean over k, times 10."""
    return cider_and_cider_d(predictions, references, n=n, sigma=sigma)[1]


def reference_digest(references: Tokens) -> str:
    """A short digest (12 hex digits of sha256) of reference token lists: names the corpus CIDEr's document
    frequencies came from, so signatures tell scores over different reference sets apart."""
    digest = hashlib.sha256()
    if isinstance(references, TokenLists):  # the same bytes, joined from the vocabulary without item lists
        words, ids, offsets = references.words, references.ids, references.offsets
        for i in range(len(references)):
            joined = "\x1f".join(map(words.__getitem__, ids[offsets[i]:offsets[i + 1]]))
            digest.update(joined.encode("utf-8", "surrogatepass") + b"\x1e")
        return digest.hexdigest()[:12]
    for tokens in references:
        digest.update("\x1f".join(tokens).encode("utf-8", "surrogatepass") + b"\x1e")
    return digest.hexdigest()[:12]
