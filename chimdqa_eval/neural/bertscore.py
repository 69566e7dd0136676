"""BERTScore on chimdqa_eval.models (which holds every torch / transformers call); the arithmetic is here.

BERTScore reproduces bert_score 0.3.13 (Zhang et al., 2020) on the same model: texts are stripped and
tokenized with the model's special tokens ([CLS] ... [SEP]; an empty text is just the special tokens), the
hidden states of layer `num_layers` are L2-normalized, every candidate token is matched to its most similar
reference token (precision) and vice versa (recall), special tokens take part in the matching but carry weight
0, the weights are 1 or idf over the evaluated references, F1 = 2PR / (P + R), and an empty candidate or
reference scores 0. Two deliberate differences, both invisible on real BERT models whose token similarities
are positive: bert_score pads a batch before taking the maximum similarity, so a token whose best match is
negative gets 0 there and its true maximum here; and where bert_score's precision or recall is 0/0 (every
token of a text has idf 0) it returns NaN, we return 0 (its F1 is 0 in that case too).

It is faster than bert_score because texts are sorted by token length before batching (bert_score sorts by
the number of spaces, which for Chinese leaves batches padded to their longest member), each distinct text is
embedded once, only the first `num_layers` layers run, and references' embeddings are kept on disk:
float32 .npy files (3 KB per token for a 768-wide model) under cache_dir("bertscore")/<key>/, where the key
hashes the model's weights and tokenizer (not its path), the layer, the long-text mode and the transformers
and torch versions. Deleting that folder only costs recomputation."""
from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from chimdqa_eval.cache import cache_dir
from chimdqa_eval.models import (LOADED_PER_KIND, MODEL_PACKAGES, hidden_states, load_model,
                                 special_tokens_around)
from chimdqa_eval.schema import InputError, check_same_length, check_texts
from chimdqa_eval.signature import make_signature, package_version

# bert_score's own choice for Chinese (lang2model["zh"], model2layers["bert-base-chinese"] == 8).
DEFAULT_BERTSCORE_MODEL = "bert-base-chinese"
DEFAULT_BERTSCORE_LAYERS = 8
# The bert_score release whose computation BertScorer reproduces (that release reports __version__ 0.3.12).
BERT_SCORE_COMPAT = "0.3.13"
LONG_TEXT_MODES = ("truncate", "window")
_CHUNK_PAIRS = 512


# --------------------------------------------------------------------------------------------- BERTScore

@dataclass(frozen=True)
class BertScoreResult:
    """Per-item scores on bert_score's 0-1 scale (rescaled ones can be negative)."""
    precision: list[float]
    recall: list[float]
    f1: list[float]
    truncated: int  # items whose prediction or reference was cut at the model's maximum length
    signature: str


def greedy_match(candidate, reference, candidate_weights, reference_weights) -> tuple[float, float, float]:
    """BERTScore P, R, F1 of one pair from L2-normalized token embeddings (rows) and token weights."""
    sim = candidate @ reference.T
    precision = _weighted_mean(sim.max(axis=1), candidate_weights)
    recall = _weighted_mean(sim.max(axis=0), reference_weights)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def _weighted_mean(values, weights) -> float:
    total = float(np.sum(weights, dtype=np.float32))
    return float(np.dot(values, weights / np.float32(total))) if total else 0.0


def idf_weights(reference_tokens: list[list[int]]) -> tuple[dict, float]:
    """bert_score's idf over the N references: ({token: log((N + 1) / (df + 1))}, log(N + 1) for unseen tokens)."""
    counts = {}
    for tokens in reference_tokens:
        for token in set(tokens):
            counts[token] = counts.get(token, 0) + 1
    n = len(reference_tokens)
    return {token: math.log((n + 1) / (count + 1)) for token, count in counts.items()}, math.log(n + 1)


def stitch_windows(parts, length: int, prefix: int, suffix: int) -> np.ndarray:
    """One embedding row per token of a long text (`length` tokens with `prefix` + `suffix` special ones) from
    its overlapping windows `parts` = [(start of the window's content in the text's content, window rows)]:
    each content token takes the row of the window where it sits farthest from an edge; the leading special
    tokens come from the first window, the trailing ones from the last."""
    n = length - prefix - suffix
    position = np.arange(n)
    best = np.full(n, -1)
    best_margin = np.full(n, -1)
    for k, (start, output) in enumerate(parts):
        width = output.shape[0] - prefix - suffix
        inside = (position >= start) & (position < start + width)
        margin = np.minimum(position - start, start + width - 1 - position)
        better = inside & (margin > best_margin)
        best[better], best_margin[better] = k, margin[better]
    rows = [parts[0][1][:prefix]]
    rows += [parts[best[i]][1][prefix + i - parts[best[i]][0]][None] for i in range(n)]
    rows.append(parts[-1][1][parts[-1][1].shape[0] - suffix:])
    return np.concatenate(rows)


def read_baseline(path) -> dict:
    """bert_score's baseline table (CSV with the header LAYER,P,R,F) as {layer: (P, R, F)}."""
    rows = {}
    with open(path, encoding="utf-8") as handle:
        header = handle.readline().strip().split(",")
        if header[:4] != ["LAYER", "P", "R", "F"]:
            raise InputError(f"{path} line 1: expected the header LAYER,P,R,F, got {','.join(header)}")
        for number, line in enumerate(handle, start=2):
            if line.strip():
                try:
                    layer, p, r, f = line.strip().split(",")[:4]
                    rows[int(layer)] = (float(p), float(r), float(f))
                except ValueError:
                    raise InputError(f"{path} line {number}: expected LAYER,P,R,F numbers, got {line.strip()!r}") \
                        from None
    return rows


def _baseline(rescale, model: str, num_layers: int):
    """(P, R, F baseline of the layer, or None; its name for the signature) for rescale_with_baseline."""
    if rescale is False or rescale is None:
        return None, "no"
    if rescale is True:
        import bert_score

        path = Path(bert_score.__file__).parent / "rescale_baseline" / "zh" / f"{model}.tsv"
        if not path.is_file():
            raise InputError(
                f"rescale_with_baseline: bert_score ships no Chinese baseline for {model!r} (looked for {path}); "
                "pass the path of a baseline file in its format instead, or rescale_with_baseline=False")
        name = "zh"
    else:
        path = Path(rescale)
        if not path.is_file():
            raise InputError(f"rescale_with_baseline: baseline file {str(path)!r} does not exist")
        name = "custom-" + hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    rows = read_baseline(path)
    if num_layers not in rows:
        raise InputError(f"{path}: no baseline row for layer {num_layers!r}")
    return np.array(rows[num_layers], dtype=np.float32), name


class BertScorer:
    """BERTScore with one model loaded once; see the module docstring for the exact computation.

    rescale_with_baseline: False; True for bert_score's shipped Chinese baseline of `model` (found by the
    name given, e.g. "bert-base-chinese"); or the path of a baseline file in bert_score's format.
    long_texts: "truncate" cuts texts at the model's maximum length as bert_score does (counted in
    `truncated`); "window" embeds a long text in windows of that length overlapping by half and gives each
    token the embedding from the window where it sits farthest from an edge ([CLS] from the first window, [SEP]
    from the last), so that away from the text's ends every token sees at least a quarter window of context
    on each side.
    """

    def __init__(self, model=DEFAULT_BERTSCORE_MODEL, num_layers=DEFAULT_BERTSCORE_LAYERS, idf=False,
                 rescale_with_baseline=False, long_texts="truncate", device=None, download=None):
        if long_texts not in LONG_TEXT_MODES:
            raise InputError(f"long_texts: expected one of {', '.join(LONG_TEXT_MODES)}, got {long_texts!r}")
        self.model_name, self.idf, self.long_texts = str(model), bool(idf), long_texts
        self.baseline, baseline_name = _baseline(rescale_with_baseline, self.model_name, num_layers)

        def check_layer(config):
            layers = config.num_hidden_layers
            if not isinstance(num_layers, int) or isinstance(num_layers, bool) or not 0 <= num_layers <= layers:
                raise InputError(f"num_layers: expected an integer from 0 to {layers} for {model!r}, "
                                 f"got {num_layers!r}")

        # Only the layers that are used are built: bert_score runs the same truncated stack.
        self.model = load_model("encoder", self.model_name, "BERTScore", device=device, num_layers=num_layers,
                                download=download, check_config=check_layer)
        self.tokenizer = self.model.tokenizer
        self.num_layers = num_layers
        self.max_length = self.model.max_length
        self._prefix_ids, self._suffix_ids = special_tokens_around(self.tokenizer)
        self._special_count = len(self._prefix_ids) + len(self._suffix_ids)
        self._room = self.max_length - self._special_count
        self._special_ids = {self.tokenizer.cls_token_id, self.tokenizer.sep_token_id}
        self.fingerprint = self.model.fingerprint
        self.signature = make_signature({
            "metric": "bertscore", "model": self.model_name.replace("|", "/"), "weights": self.fingerprint[:12],
            "layer": num_layers, "idf": "references" if self.idf else "no", "rescale": baseline_name,
            "long": long_texts, "max_len": self.max_length, "compat": f"bert_score-{BERT_SCORE_COMPAT}"},
            MODEL_PACKAGES)

    # -- tokens

    def _content_ids(self, texts: list[str]) -> list[list[int]]:
        """Token ids without special tokens, of the stripped texts, uncut."""
        stripped = [t.strip() for t in texts]
        ids = self.tokenizer(stripped, add_special_tokens=False, verbose=False)["input_ids"] if stripped else []
        return [list(i) if s else [] for i, s in zip(ids, stripped)]

    def _with_specials(self, content: list[int]) -> list[int]:
        return self._prefix_ids + content + self._suffix_ids

    def _scored_ids(self, content: list[int]) -> list[int]:
        """The tokens a text is scored on: cut to the model's length in truncate mode, whole in window mode."""
        if self.long_texts == "truncate":
            content = content[:self._room]
        return self._with_specials(content)

    # -- embeddings

    def _cache_folder(self) -> Path:
        # Everything the signature names that changes an embedding, library versions included.
        key = json.dumps({"model": self.fingerprint, "layer": self.num_layers, "long": self.long_texts,
                          "max_len": self.max_length, "compat": BERT_SCORE_COMPAT,
                          "libraries": {p: package_version(p) for p in MODEL_PACKAGES}}, sort_keys=True)
        folder = cache_dir("bertscore") / hashlib.sha256(key.encode()).hexdigest()[:32]
        folder.mkdir(exist_ok=True)
        return folder

    @staticmethod
    def _text_file(folder: Path, text: str) -> Path:
        return folder / f"{hashlib.sha256(text.encode('utf-8')).hexdigest()}.npy"

    def _embed(self, token_lists: list[list[int]]) -> list[np.ndarray]:
        """Normalized last-layer embeddings, one (tokens x hidden) float32 array per token list."""
        pieces, owners = [], []  # model inputs (whole texts or windows) and, for windows, their placement
        for index, content_and_specials in enumerate(token_lists):
            if len(content_and_specials) <= self.max_length:
                pieces.append(content_and_specials)
                owners.append((index, None))
            else:
                content = content_and_specials[len(self._prefix_ids):-len(self._suffix_ids) or None]
                for start in range(0, len(content), max(1, self._room // 2)):
                    pieces.append(self._with_specials(content[start:start + self._room]))
                    owners.append((index, start))
                    if start + self._room >= len(content):
                        break
        outputs = hidden_states(self.model, pieces)
        result = [None] * len(token_lists)
        windows = {}
        for (index, start), output in zip(owners, outputs):
            if start is None:
                result[index] = output
            else:
                windows.setdefault(index, []).append((start, output))
        for index, parts in windows.items():
            result[index] = stitch_windows(parts, len(token_lists[index]), len(self._prefix_ids),
                                           len(self._suffix_ids))
        return [r / np.linalg.norm(r, axis=1, keepdims=True) for r in result]

    def _embeddings(self, texts: list[str], token_lists: list[list[int]], cache: bool) -> dict:
        """{text: normalized token embeddings} for distinct texts; cache=True reads and writes the on-disk
        cache, whose entries are keyed by the model's content, layer, long-text mode and text."""
        found = {}
        folder = self._cache_folder() if cache else None
        if cache:
            for text, tokens in zip(texts, token_lists):
                path = self._text_file(folder, text)
                if path.is_file():
                    try:
                        array = np.load(path)
                    except (OSError, ValueError):
                        continue  # an unreadable entry is recomputed and rewritten
                    if array.shape[0] == len(tokens):
                        found[text] = array
        missing = [i for i, text in enumerate(texts) if text not in found]
        for i, array in zip(missing, self._embed([token_lists[i] for i in missing])):
            found[texts[i]] = array
            if cache:
                _save_atomic(self._text_file(folder, texts[i]), array)
        return found

    # -- scores

    def _weights(self, tokens: list[int], idf) -> np.ndarray:
        """Token weights: special tokens 0, the others 1 or their idf."""
        if idf is None:
            return np.array([0.0 if t in self._special_ids else 1.0 for t in tokens], dtype=np.float32)
        table, unseen = idf
        return np.array([0.0 if t in self._special_ids else table.get(t, unseen) for t in tokens], dtype=np.float32)

    def score(self, predictions, references) -> BertScoreResult:
        """Per-item BERTScore of predictions against references (one reference each).

        An empty (or whitespace-only) text scores 0. `truncated` counts the items whose prediction or
        reference is longer than the model's maximum length (always 0 in window mode). Raises InputError on
        a non-string item or different lengths.
        """
        predictions = check_texts("predictions", predictions)
        references = check_texts("references", references)
        check_same_length(predictions=predictions, references=references)
        distinct = list(dict.fromkeys(predictions + references))
        contents = dict(zip(distinct, self._content_ids(distinct)))
        tokens = {t: self._scored_ids(c) for t, c in contents.items()}
        truncated = sum(1 for p, r in zip(predictions, references)
                        if self.long_texts == "truncate" and max(len(contents[p]), len(contents[r])) > self._room)
        idf = idf_weights([tokens[r] for r in references]) if self.idf else None
        scores = []
        # Pairs go by chunks so that memory holds one chunk's embeddings, not the whole corpus's.
        for start in range(0, len(predictions), _CHUNK_PAIRS):
            chunk = slice(start, start + _CHUNK_PAIRS)
            scores += self._score_chunk(predictions[chunk], references[chunk], tokens, idf)
        precision, recall, f1 = (list(column) for column in zip(*scores))
        return BertScoreResult(precision, recall, f1, truncated, self.signature)

    def _score_chunk(self, predictions, references, tokens, idf) -> list[tuple[float, float, float]]:
        # Only references are cached: they repeat across submissions, predictions rarely do.
        distinct_refs = list(dict.fromkeys(references))
        embedding = self._embeddings(distinct_refs, [tokens[r] for r in distinct_refs], cache=True)
        new = [p for p in dict.fromkeys(predictions) if p not in embedding]
        embedding.update(self._embeddings(new, [tokens[p] for p in new], cache=False))
        out = []
        for p, r in zip(predictions, references):
            if len(tokens[p]) == self._special_count or len(tokens[r]) == self._special_count:
                scores = (0.0, 0.0, 0.0)
            else:
                scores = greedy_match(embedding[p], embedding[r],
                                      self._weights(tokens[p], idf), self._weights(tokens[r], idf))
            if self.baseline is not None:
                scores = tuple(float((s - b) / (1 - b)) for s, b in zip(np.float32(scores), self.baseline))
            out.append(tuple(float(s) for s in scores))
        return out


def _save_atomic(path: Path, array: np.ndarray) -> None:
    """Write then rename, so a concurrent or interrupted run never leaves a half-written entry. Not
    jsonio.write_atomic: that one lists the folder for stale temporaries on every write (quadratic in this folder of
    one entry per reference) and syncs to disk what is only a cache, whose unreadable entries are recomputed."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            np.save(out, array)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


@functools.lru_cache(maxsize=LOADED_PER_KIND)
def get_bert_scorer(model=DEFAULT_BERTSCORE_MODEL, num_layers=DEFAULT_BERTSCORE_LAYERS, idf=False,
                    rescale_with_baseline=False, long_texts="truncate", device=None, download=None) -> BertScorer:
    """The BertScorer for this configuration, kept loaded for reuse. Raises ModelUnavailable."""
    return BertScorer(model, num_layers, idf, rescale_with_baseline, long_texts, device, download)
