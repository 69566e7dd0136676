"""ROUGE-L, METEOR, CIDEr and CIDEr-D over token lists: pure functions, one score per (prediction, reference) pair.

Each reproduces a reference definition to the last digit when fed the same tokens — rouge_score's ROUGE-L
F-measure, NLTK's ``meteor_score``, Vedantam et al.'s CIDEr and pycocoevalcap's ``Cider`` (CIDEr-D) — but none
is quadratic Python:

* ROUGE-L: the LCS length comes from the bit-parallel recurrence of Allison & Dix / Hyyrö, one big-integer step
  per prediction token, instead of a dynamic-programming table.
* METEOR: NLTK aligns greedily, scanning the hypothesis from its end and giving each word the last unused equal
  reference word. So for each word the k-th occurrence from the end on one side pairs with the k-th from the end
  on the other, and the whole corpus is aligned with a few array sorts.
* CIDEr and CIDEr-D: one rule (``_cider_per_n``) whose clipping and length penalty are switches; n-gram counts,
  document frequencies and tf-idf products for the whole corpus are array operations instead of per-sentence
  dictionaries.

Scores are on the reference implementations' scales (0-1; CIDEr-D 0-10); callers rescale.
"""
from __future__ import annotations

import functools
import hashlib
from itertools import chain
from typing import Callable, Iterable, Sequence

import numpy as np

TokenLists = Sequence[Sequence[str]]

METEOR_ALPHA, METEOR_BETA, METEOR_GAMMA = 0.9, 3.0, 0.5
CIDER_N, CIDER_SIGMA = 4, 6.0
# Composite int64 keys (item, word, rank) must stay below this; larger corpora renumber their groups first.
_KEY_LIMIT = 2 ** 62


def _check_pairs(predictions: TokenLists, references: TokenLists) -> None:
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


def rouge_l(predictions: TokenLists, references: TokenLists) -> list[float]:
    """ROUGE-L F-measure per pair, as rouge_score's ``RougeScorer(["rougeL"])``: 0 when either side is empty."""
    _check_pairs(predictions, references)
    scores = []
    for pred, ref in zip(predictions, references):
        if not pred or not ref:
            scores.append(0.0)
            continue
        lcs = lcs_length(ref, pred)
        precision, recall = lcs / len(pred), lcs / len(ref)
        scores.append(2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0)
    return scores


# ---- shared by METEOR and CIDEr-D -----------------------------------------------------------------------------

class _Corpus:
    """Token lists flattened into one int array (ids from a shared vocabulary) with item and position columns."""

    def __init__(self, token_lists: TokenLists, vocab: dict):
        lengths = np.fromiter((len(t) for t in token_lists), dtype=np.int64, count=len(token_lists))
        self.lengths = lengths
        flat = list(chain.from_iterable(token_lists))
        for token in dict.fromkeys(flat):  # a loop over distinct tokens only; the mapping below runs in C
            vocab.setdefault(token, len(vocab))
        self.ids = np.fromiter(map(vocab.__getitem__, flat), dtype=np.int64, count=len(flat))
        self.item = np.repeat(np.arange(len(lengths)), lengths)
        starts = np.cumsum(lengths) - lengths
        self.pos = np.arange(len(self.ids)) - np.repeat(starts, lengths)


# ---- METEOR ---------------------------------------------------------------------------------------------------

def _ranks_from_end(keys: np.ndarray) -> np.ndarray:
    """For each element, how many later elements carry the same key (0 for the last occurrence)."""
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    group_start = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
    group_size = np.diff(np.r_[group_start, len(keys)])
    index_in_group = np.arange(len(keys)) - np.repeat(group_start, group_size)
    ranks = np.empty(len(keys), dtype=np.int64)
    ranks[order] = np.repeat(group_size, group_size) - 1 - index_in_group
    return ranks


def _align_from_end(item_h, word_h, item_r, word_r):
    """Indices (into the hypothesis and reference columns) of NLTK's greedy matches: per item and word, the k-th
    occurrence from the end in the hypothesis pairs with the k-th from the end in the reference."""
    if len(word_h) == 0 or len(word_r) == 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    words = int(max(word_h.max(), word_r.max())) + 1
    group_h, group_r = item_h * words + word_h, item_r * words + word_r
    width = max(len(word_h), len(word_r)) + 1
    if (int(max(item_h.max(), item_r.max())) + 1) * words * width >= _KEY_LIMIT:  # renumber groups densely
        _, inverse = np.unique(np.r_[group_h, group_r], return_inverse=True)
        group_h, group_r = inverse[:len(word_h)], inverse[len(word_h):]
    key_h = group_h * width + _ranks_from_end(group_h)
    key_r = group_r * width + _ranks_from_end(group_r)
    _, index_h, index_r = np.intersect1d(key_h, key_r, assume_unique=True, return_indices=True)
    return index_h, index_r


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
    words, remembering every stem it computed. Every Porter rule and NLTK's table of irregular forms act on
    words ending in an ASCII letter; any other word (all of Chinese) is its own stem and skips the stemmer."""
    from nltk.stem.porter import PorterStemmer

    stemmer = PorterStemmer()

    @functools.lru_cache(maxsize=1 << 20)
    def stem(word: str) -> str:
        return stemmer.stem(word) if word and "a" <= word[-1] <= "z" else word

    return stem


def meteor(predictions: TokenLists, references: TokenLists, *, alpha: float = METEOR_ALPHA,
           beta: float = METEOR_BETA, gamma: float = METEOR_GAMMA, stem: Callable[[str], str] | None = None,
           synonyms: Callable[[str], Iterable[str]] | None = None) -> list[float]:
    """METEOR per pair, as NLTK's ``meteor_score([reference], prediction)``: lower-cased tokens are aligned by
    exact match, then by stem (`stem`, NLTK's Porter stemmer by default), then by synonym (`synonyms(word)`
    returns a word's synonyms; none by default, the offline choice — NLTK would need WordNet). 0 when either
    side is empty or nothing matches.
    """
    _check_pairs(predictions, references)
    stem = stem or porter_stem()
    vocab: dict = {}
    hyp, ref = _Corpus(predictions, vocab), _Corpus(references, vocab)
    words = list(vocab)
    lower_vocab: dict = {}
    lower = np.fromiter((lower_vocab.setdefault(w.lower(), len(lower_vocab)) for w in words), dtype=np.int64,
                        count=len(words))
    lower_words = list(lower_vocab)
    stemmed = np.fromiter((lower_vocab.setdefault(stem(w), len(lower_vocab)) for w in lower_words),
                          dtype=np.int64, count=len(lower_words))
    lower_words = list(lower_vocab)  # now with the stems that are not corpus words
    word_h, word_r = lower[hyp.ids], lower[ref.ids]

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
        ih, ir = _align_from_end(hyp.item[left_h], w_h, ref.item[left_r], w_r)
        match(left_h[ih], left_r[ir])
    if synonyms is not None:
        left_h, left_r = np.flatnonzero(~matched_h), np.flatnonzero(~matched_r)
        cut_h = np.searchsorted(hyp.item[left_h], np.arange(len(predictions) + 1))
        cut_r = np.searchsorted(ref.item[left_r], np.arange(len(predictions) + 1))
        found_h, found_r = [], []
        for k in range(len(predictions)):
            item_h, item_r = left_h[cut_h[k]:cut_h[k + 1]], left_r[cut_r[k]:cut_r[k + 1]]
            if len(item_h) and len(item_r):
                # NLTK looks up synonyms of the stemmed forms left over by the stem stage.
                for i, j in _synonym_matches([lower_words[w] for w in stemmed[word_h[item_h]]],
                                             [lower_words[w] for w in stemmed[word_r[item_r]]], synonyms):
                    found_h.append(item_h[i])
                    found_r.append(item_r[j])
        match(np.array(found_h, dtype=np.int64), np.array(found_r, dtype=np.int64))

    index_h, index_r = np.concatenate(pairs_h), np.concatenate(pairs_r)
    order = np.argsort(index_h, kind="stable")  # hypothesis order, as NLTK sorts its matches
    index_h, index_r = index_h[order], index_r[order]
    item = hyp.item[index_h]
    n_items = len(predictions)
    matches = np.bincount(item, minlength=n_items).astype(float)
    # A chunk continues when the next match (same item) is one step further on both sides.
    continues = ((item[1:] == item[:-1]) & (np.diff(hyp.pos[index_h]) == 1) & (np.diff(ref.pos[index_r]) == 1))
    chunks = matches - np.bincount(item[1:][continues], minlength=n_items)
    scores = []
    for m, chunk_count, n_hyp, n_ref in zip(matches.tolist(), chunks.tolist(), hyp.lengths.tolist(),
                                             ref.lengths.tolist()):
        if m == 0 or n_hyp == 0 or n_ref == 0:
            scores.append(0.0)
            continue
        precision, recall = m / n_hyp, m / n_ref
        fmean = (precision * recall) / (alpha * precision + (1 - alpha) * recall)
        scores.append((1 - gamma * (chunk_count / m) ** beta) * fmean)
    return scores


# ---- CIDEr and CIDEr-D ----------------------------------------------------------------------------------------

def _ngram_ids(corpus: _Corpus, n: int):
    """For k = 1..n: (text index, k-gram id) of every k-gram that lies inside one text. Ids are dense per k and
    built from the (k-1)-gram id and the next token, so no tuple of tokens is ever formed."""
    out = []
    gram = corpus.ids
    for k in range(1, n + 1):
        if k > 1:
            width = int(corpus.ids.max()) + 1 if len(corpus.ids) else 1
            pair = gram[:-1] * width + corpus.ids[k - 1:]
            gram = np.unique(pair, return_inverse=True)[1] if len(pair) else pair
        inside = corpus.pos[:len(gram)] + k <= corpus.lengths[corpus.item[:len(gram)]]
        out.append((corpus.item[:len(gram)][inside], gram[inside]))
    return out


def _cider_per_n(predictions: TokenLists, references: TokenLists, *, n: int, clip: bool,
                 sigma: float | None) -> np.ndarray:
    """The (n, items) matrix of per-n similarities of each prediction to its reference, the one rule behind
    CIDEr and CIDEr-D (Vedantam et al. 2015).

    Each text is a vector of k-gram weights tf * idf, idf = log(number of items) - log(max(1, df)) with df the
    number of references holding the k-gram (the evaluated references are the corpus, one per item). The
    similarity is sum(h * r) / (|h| |r|), a cosine; `clip` takes sum(min(h, r) * r) instead, and `sigma`
    multiplies by the Gaussian length penalty exp(-(len_h - len_r)^2 / (2 sigma^2)), a text's length being its
    number of bigrams, as pycocoevalcap counts it. tf is the raw count: the paper's tf divides it by the text's
    number of k-grams, which rescales a whole vector and leaves a cosine unchanged, and pycocoevalcap's CIDEr-D
    clips raw counts.
    """
    _check_pairs(predictions, references)
    n_items = len(predictions)
    vocab: dict = {}
    corpus = _Corpus(list(predictions) + list(references), vocab)
    log_items = np.log(float(n_items))
    val = np.zeros((n, n_items))
    norms = np.zeros((n, 2 * n_items))
    for k, (text, gram) in enumerate(_ngram_ids(corpus, n)):
        width = int(gram.max()) + 1 if len(gram) else 1
        keys, tf = np.unique(text * width + gram, return_counts=True)
        text_of, gram_of = keys // width, keys % width
        is_ref = text_of >= n_items
        df = np.bincount(gram_of[is_ref], minlength=width)
        weight = tf * (log_items - np.log(np.maximum(1.0, df[gram_of])))
        norms[k] = np.sqrt(np.bincount(text_of, weights=weight * weight, minlength=2 * n_items))
        # Same item and n-gram on both sides: hypothesis keys are item*width+gram, reference keys are shifted
        # by n_items*width.
        hyp_keys, ref_keys = keys[~is_ref], keys[is_ref] - n_items * width  # both sorted, as np.unique returns
        ir = np.minimum(np.searchsorted(ref_keys, hyp_keys), max(len(ref_keys) - 1, 0))
        ih = np.flatnonzero(ref_keys[ir] == hyp_keys) if len(ref_keys) else np.empty(0, dtype=np.int64)
        ir = ir[ih]
        w_h, w_r = weight[~is_ref][ih], weight[is_ref][ir]
        product = (np.minimum(w_h, w_r) if clip else w_h) * w_r
        val[k] = np.bincount(text_of[~is_ref][ih], weights=product, minlength=n_items)
    norm_h, norm_r = norms[:, :n_items], norms[:, n_items:]
    both = (norm_h != 0) & (norm_r != 0)
    val[both] /= (norm_h * norm_r)[both]
    if sigma is not None:
        bigrams = np.maximum(corpus.lengths - 1, 0)
        delta = (bigrams[:n_items] - bigrams[n_items:]).astype(float)
        val *= np.exp(-(delta ** 2) / (2 * sigma ** 2))
    return val


def cider(predictions: TokenLists, references: TokenLists, *, n: int = CIDER_N) -> list[float]:
    """CIDEr per pair as Vedantam et al. 2015 define it (0-1): for k = 1..n the cosine of the tf-idf vectors of
    prediction and reference, document frequencies over the given references; the mean over k (uniform
    weights 1/n). No clipping, no length penalty. A pair scores 0 where either side has no k-gram of any
    order, and every pair of a single-item corpus scores 0 (every idf is log(1/1))."""
    return _cider_per_n(predictions, references, n=n, clip=False, sigma=None).mean(axis=0).tolist()


def cider_d(predictions: TokenLists, references: TokenLists, *, n: int = CIDER_N,
            sigma: float = CIDER_SIGMA) -> list[float]:
    """CIDEr-D per pair, as pycocoevalcap's ``Cider().compute_score`` with one reference per item (its 0-10
    scale): CIDEr's rule with clipped products sum(min(h, r) * r) and the Gaussian length penalty (sigma = 6),
    the mean over k, times 10."""
    return (_cider_per_n(predictions, references, n=n, clip=True, sigma=sigma).mean(axis=0) * 10.0).tolist()


def reference_digest(references: TokenLists) -> str:
    """A short digest (12 hex digits of sha256) of reference token lists: names the corpus CIDEr's document
    frequencies came from, so signatures tell scores over different reference sets apart."""
    digest = hashlib.sha256()
    for tokens in references:
        digest.update("\x1f".join(tokens).encode("utf-8", "surrogatepass") + b"\x1e")
    return digest.hexdigest()[:12]
