"""Model-based open-ended metrics: BERTScore and perplexity (torch and transformers stay in this file).

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
and torch versions. Deleting that folder only costs recomputation.

Perplexity follows the strided sliding-window method of the transformers documentation
("Perplexity of fixed-length models"), computed from per-token log-probabilities so that padding in a batch
cannot change a text's score.
"""
from __future__ import annotations

import functools
import hashlib
import json
import math
import numbers
import os
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import numpy as np

from chimdqa_eval.cache import cache_dir
from chimdqa_eval.schema import InputError, check_same_length, check_texts
from chimdqa_eval.signature import make_signature, package_version

# bert_score's own choice for Chinese (lang2model["zh"], model2layers["bert-base-chinese"] == 8).
DEFAULT_BERTSCORE_MODEL = "bert-base-chinese"
DEFAULT_BERTSCORE_LAYERS = 8
# A 12-layer GPT-2 pre-trained by UER on CLUECorpusSmall (Chinese web text), 1,024 positions, the
# bert-base-chinese character vocabulary: small enough for CPUs, long enough context for ChiMDQA answers, and
# the most widely used Chinese GPT-2 on the Hub.
DEFAULT_PERPLEXITY_MODEL = "uer/gpt2-chinese-cluecorpussmall"
# The bert_score release whose computation BertScorer reproduces (that release reports __version__ 0.3.12).
BERT_SCORE_COMPAT = "0.3.13"
LONG_TEXT_MODES = ("truncate", "window")
# Tokenizers without a limit report a huge placeholder (int(1e30)); anything above this is not a real limit.
_NO_LIMIT = 1_000_000
# Rough padded-token budget of one forward batch; keeps memory flat when texts are long.
_BATCH_TOKENS = 16_384
_PADDING = 0.05
_CHUNK_PAIRS = 512
# The libraries whose versions every model-based signature names (make_signature's packages).
MODEL_PACKAGES = ("transformers", "torch")


class ModelUnavailable(RuntimeError):
    """The model's weights are neither a local folder nor in the Hugging Face cache, and the Hub is not usable."""


# ----------------------------------------------------------------------------------------------- loading

def _hub_reachable() -> bool:
    """False when the user said offline; else one quick TCP connect to the Hub, because transformers itself
    retries for about a minute before giving up on an unreachable Hub."""
    if any(os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")
           for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")):
        return False
    url = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    return _can_connect(url.hostname, url.port or (443 if url.scheme == "https" else 80))


@functools.lru_cache(maxsize=None)
def _can_connect(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=3).close()
        return True
    except OSError:
        return False


def load_pretrained(loader, model: str, what: str, **kwargs):
    """loader.from_pretrained(model) from a local folder or the HF cache, or the Hub when it is reachable;
    ModelUnavailable (naming `what` model) when none of them has it. Every model of the library loads here."""
    from transformers.utils import logging

    offline = os.path.isdir(model) or not _hub_reachable()
    verbosity = logging.get_verbosity()
    # Loading fewer layers than were saved makes transformers print a report of every unused weight.
    logging.set_verbosity_error()
    try:
        return loader.from_pretrained(model, local_files_only=offline, **kwargs)
    except (OSError, ValueError, KeyError) as error:
        where_from = ("the local folder" if os.path.isdir(model) else
                      "the Hugging Face cache (the Hub is not reachable or HF_HUB_OFFLINE is set)" if offline else
                      "the Hugging Face Hub")
        # A Hub name is org/name; anything else path-like that is not a folder is a mistyped path.
        looks_like_path = model.startswith((os.sep, ".", "~")) or model.count("/") > 1
        reason = "no such folder" if looks_like_path else str(error).splitlines()[0].rstrip(".")
        raise ModelUnavailable(
            f"{what} model {model!r} could not be loaded from {where_from}: {reason}. "
            f"Pass a local folder, or download it once with `hf download {model}`.") from error
    finally:
        logging.set_verbosity(verbosity)


def torch_device(device):
    """The torch device named, else cuda when there is one, else cpu."""
    import torch

    return torch.device(device if device is not None else ("cuda" if torch.cuda.is_available() else "cpu"))


def max_input_length(tokenizer, config) -> int:
    """Longest input the model accepts, special tokens included.

    transformers 5 reports int(1e30) for tokenizers saved without a limit; the model's position table is the
    real one then (RoBERTa-style models reserve padding_idx + 1 of their positions).
    """
    limits = [tokenizer.model_max_length] if tokenizer.model_max_length < _NO_LIMIT else []
    positions = getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None)
    if positions:
        if config.model_type in ("roberta", "xlm-roberta", "camembert", "longformer"):
            positions -= (config.pad_token_id or 0) + 1
        limits.append(positions)
    if not limits:
        raise ModelUnavailable(f"cannot tell the maximum input length of {config.name_or_path!r}")
    return min(limits)


def special_tokens_around(tokenizer) -> tuple[list[int], list[int]]:
    """The ids the tokenizer puts before and after a single text ([CLS] and [SEP] for BERT).

    transformers 5 dropped build_inputs_with_special_tokens, so they are read off an encoded sample.
    """
    whole = list(tokenizer("a")["input_ids"])
    content = list(tokenizer("a", add_special_tokens=False)["input_ids"])
    for start in range(len(whole) - len(content) + 1):
        if whole[start:start + len(content)] == content:
            return whole[:start], whole[start + len(content):]
    raise ModelUnavailable(f"cannot tell where {type(tokenizer).__name__} puts its special tokens")


def model_fingerprint(model, tokenizer) -> str:
    """Content hash of the weights in use (dtype included) and of the tokenizer: the cache and the signature
    follow the model, not its path."""
    digest = hashlib.blake2b(digest_size=16)
    for name, tensor in model.state_dict().items():
        array = np.ascontiguousarray(tensor.detach().cpu().float().numpy())
        digest.update(f"{name}{tuple(array.shape)}{tensor.dtype}".encode())
        digest.update(memoryview(array).cast("B"))
    backend = getattr(tokenizer, "backend_tokenizer", None)
    vocab = backend.to_str() if backend is not None else json.dumps(sorted(tokenizer.get_vocab().items()))
    digest.update(vocab.encode())
    digest.update(type(tokenizer).__name__.encode())
    return digest.hexdigest()


def _batches(lengths: list[int], max_items: int):
    """Index lists, longest first, of at most max_items sequences and about _BATCH_TOKENS padded tokens,
    cut where padding would exceed _PADDING of the real tokens: on CPUs a padded token costs as much as a real
    one, and sorted neighbours are close in length."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batch, real = [], 0
    for i in order:
        padded = (len(batch) + 1) * (lengths[batch[0]] if batch else lengths[i])
        wasteful = padded > (1 + _PADDING) * (real + lengths[i])
        if batch and (len(batch) >= max_items or padded > _BATCH_TOKENS or wasteful):
            yield batch
            batch, real = [], 0
        batch.append(i)
        real += lengths[i]
    if batch:
        yield batch


def progress(batches, total_items: int, desc: str):
    """A tqdm bar over batches (index lists), advancing by the items each holds; silent when not on a
    terminal, so logs and tests stay clean."""
    from tqdm.auto import tqdm

    with tqdm(total=total_items, desc=desc, unit="text", disable=None, leave=False) as bar:
        for batch in batches:
            yield batch
            bar.update(len(batch))


def _pad(sequences: list[list[int]], pad_id: int):
    import torch

    width = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(sequences), width), dtype=torch.long)
    for row, seq in enumerate(sequences):
        ids[row, :len(seq)] = torch.tensor(seq, dtype=torch.long)
        mask[row, :len(seq)] = 1
    return ids, mask


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
                    raise InputError(f"{path} line {number}: expected LAYER,P,R,F numbers, got {line.strip()!r}")
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
                 rescale_with_baseline=False, long_texts="truncate", device=None):
        from transformers import AutoConfig, AutoModel, AutoTokenizer

        if long_texts not in LONG_TEXT_MODES:
            raise InputError(f"long_texts: expected one of {', '.join(LONG_TEXT_MODES)}, got {long_texts!r}")
        self.model_name, self.idf, self.long_texts = str(model), bool(idf), long_texts
        self.baseline, baseline_name = _baseline(rescale_with_baseline, self.model_name, num_layers)
        config = load_pretrained(AutoConfig, self.model_name, "BERTScore")
        self.tokenizer = load_pretrained(AutoTokenizer, self.model_name, "BERTScore tokenizer")
        layers = config.num_hidden_layers
        if not isinstance(num_layers, int) or isinstance(num_layers, bool) or not 0 <= num_layers <= layers:
            raise InputError(f"num_layers: expected an integer from 0 to {layers} for {model!r}, got {num_layers!r}")
        self.num_layers = num_layers
        # Only the layers that are used are built: bert_score runs the same truncated stack.
        config.num_hidden_layers = num_layers
        network = load_pretrained(AutoModel, self.model_name, "BERTScore", config=config)
        if getattr(network, "pooler", None) is not None:
            network.pooler = None  # its output is never used
        self.device = torch_device(device)
        self.model = network.to(self.device).eval()
        self.max_length = max_input_length(self.tokenizer, config)
        self._prefix_ids, self._suffix_ids = special_tokens_around(self.tokenizer)
        self._special_count = len(self._prefix_ids) + len(self._suffix_ids)
        self._room = self.max_length - self._special_count
        self._special_ids = {self.tokenizer.cls_token_id, self.tokenizer.sep_token_id}
        self.fingerprint = model_fingerprint(self.model, self.tokenizer)
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
        outputs = self._forward(pieces)
        result = [None] * len(token_lists)
        windows = {}
        for (index, start), output in zip(owners, outputs):
            if start is None:
                result[index] = output
            else:
                windows.setdefault(index, []).append((start, output))
        for index, parts in windows.items():
            result[index] = self._stitch(parts, len(token_lists[index]))
        return [r / np.linalg.norm(r, axis=1, keepdims=True) for r in result]

    def _stitch(self, parts, length: int) -> np.ndarray:
        """One embedding per token of a long text from its overlapping windows (see the class docstring)."""
        prefix, suffix = len(self._prefix_ids), len(self._suffix_ids)
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

    def _forward(self, sequences: list[list[int]]) -> list[np.ndarray]:
        import torch

        outputs = [None] * len(sequences)
        pad_id = self.tokenizer.pad_token_id or 0
        with torch.inference_mode():
            for batch in progress(_batches([len(s) for s in sequences], 64), len(sequences), "BERTScore"):
                ids, mask = _pad([sequences[i] for i in batch], pad_id)
                hidden = self.model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device))[0]
                hidden = hidden.float().cpu().numpy()
                for row, i in enumerate(batch):
                    outputs[i] = hidden[row, :len(sequences[i])].copy()
        return outputs

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

    def _idf(self, reference_tokens: list[list[int]]) -> dict:
        """bert_score's idf over the N references: log((N + 1) / (df + 1)); unseen tokens get log(N + 1)."""
        counts = {}
        for tokens in reference_tokens:
            for token in set(tokens):
                counts[token] = counts.get(token, 0) + 1
        n = len(reference_tokens)
        return {token: math.log((n + 1) / (count + 1)) for token, count in counts.items()}, math.log(n + 1)

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
        idf = self._idf([tokens[r] for r in references]) if self.idf else None
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
    """Write then rename, so a concurrent or interrupted run never leaves a half-written entry."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            np.save(out, array)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


@functools.lru_cache(maxsize=None)
def get_bert_scorer(model=DEFAULT_BERTSCORE_MODEL, num_layers=DEFAULT_BERTSCORE_LAYERS, idf=False,
                    rescale_with_baseline=False, long_texts="truncate", device=None) -> BertScorer:
    """The BertScorer for this configuration, loaded once per process. Raises ModelUnavailable."""
    return BertScorer(model, num_layers, idf, rescale_with_baseline, long_texts, device)


# -------------------------------------------------------------------------------------------- perplexity

@dataclass(frozen=True)
class PerplexityResult:
    per_item: list[float]
    signature: str


def perplexity_from_logprobs(logprobs) -> list[float]:
    """exp(-mean log-probability) per item, from per-token natural-log probabilities as APIs return them."""
    if logprobs is None or isinstance(logprobs, (str, bytes)):
        raise InputError(f"logprobs: expected a list of lists of numbers, got {type(logprobs).__name__}")
    out = []
    for i, item in enumerate(logprobs):
        if item is None or isinstance(item, (str, bytes)) or not hasattr(item, "__len__"):
            raise InputError(f"logprobs[{i}]: expected a list of numbers, got {type(item).__name__}")
        if len(item) == 0:
            raise InputError(f"logprobs[{i}]: empty list; perplexity needs at least one token")
        for j, value in enumerate(item):
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or math.isnan(value):
                raise InputError(f"logprobs[{i}][{j}]: expected a number, got {value!r:.60}")
            if value > 0:
                raise InputError(f"logprobs[{i}][{j}]: a log-probability cannot be positive, got {value!r}")
        out.append(math.exp(-math.fsum(float(v) for v in item) / len(item)))
    return out


class PerplexityScorer:
    """Perplexity under a causal LM, loaded once.

    A text is tokenized without special tokens and preceded by the tokenizer's start token (bos, else cls)
    when it has one, so that its first token is scored too. Texts longer than the model's context are scored
    in windows of the full context advanced by `stride` tokens (default half the context); each window
    scores only the tokens the previous window did not, with the rest of the window as context.
    """

    def __init__(self, model=DEFAULT_PERPLEXITY_MODEL, device=None, batch_size=8, stride=None):
        from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise InputError(f"batch_size: expected a positive integer, got {batch_size!r}")
        self.model_name, self.batch_size = str(model), batch_size
        config = load_pretrained(AutoConfig, self.model_name, "perplexity")
        self.tokenizer = load_pretrained(AutoTokenizer, self.model_name, "perplexity tokenizer")
        self.device = torch_device(device)
        self.model = load_pretrained(AutoModelForCausalLM, self.model_name, "perplexity").to(self.device).eval()
        self.window = max_input_length(self.tokenizer, config)
        self.fingerprint = model_fingerprint(self.model, self.tokenizer)
        if stride is None:
            stride = max(1, self.window // 2)
        if not isinstance(stride, int) or isinstance(stride, bool) or not 1 <= stride < self.window:
            raise InputError(f"stride: expected an integer from 1 to {self.window - 1}, got {stride!r}")
        self.stride = stride
        # GPT-2 tokenizers have a bos token; BERT-vocabulary Chinese GPT-2s (UER's) start texts with [CLS].
        start = self.tokenizer.bos_token_id
        self.start_id = start if start is not None else self.tokenizer.cls_token_id
        start_token = "none" if self.start_id is None else self.tokenizer.convert_ids_to_tokens(self.start_id)
        self.signature = make_signature({
            "metric": "perplexity", "model": self.model_name.replace("|", "/"), "weights": self.fingerprint[:12],
            "context": self.window, "stride": stride, "start": start_token}, MODEL_PACKAGES)

    def token_ids(self, texts: list[str]) -> list[list[int]]:
        """The start token (if any) then the text's tokens, uncut."""
        ids = self.tokenizer(list(texts), add_special_tokens=False, verbose=False)["input_ids"] if texts else []
        prefix = [] if self.start_id is None else [self.start_id]
        return [prefix + list(i) for i in ids]

    def windows(self, length: int) -> list[tuple[int, int, int]]:
        """(begin, end, first scored position) of each window over a sequence of `length` tokens."""
        out, scored_until = [], 1  # position 0 has no context to be predicted from
        for begin in range(0, length, self.stride):
            end = min(begin + self.window, length)
            out.append((begin, end, scored_until))
            scored_until = end
            if end == length:
                break
        return out

    def score(self, texts) -> PerplexityResult:
        texts = check_texts("texts", texts)
        sequences = self.token_ids(texts)
        pieces, owners = [], []
        for i, sequence in enumerate(sequences):
            if len(sequence) < 2:
                raise InputError(f"texts[{i}]: no tokens to score (empty text); perplexity is undefined")
            for begin, end, first in self.windows(len(sequence)):
                pieces.append(sequence[begin:end])
                owners.append((i, first - begin))
        sums = [0.0] * len(texts)
        for (i, _), total in zip(owners, self._logprob_sums(pieces, [first for _, first in owners])):
            sums[i] += total
        per_item = [math.exp(-s / (len(seq) - 1)) for s, seq in zip(sums, sequences)]
        return PerplexityResult(per_item, self.signature)

    def _logprob_sums(self, pieces: list[list[int]], firsts: list[int]) -> list[float]:
        """Sum of log p(token | preceding tokens of the piece) over positions firsts[k]: of each piece."""
        import torch

        sums = [0.0] * len(pieces)
        pad_id = self.tokenizer.pad_token_id or 0
        with torch.inference_mode():
            for batch in progress(_batches([len(p) for p in pieces], self.batch_size), len(pieces), "perplexity"):
                ids, mask = _pad([pieces[k] for k in batch], pad_id)
                logits = self.model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device)).logits
                for row, k in enumerate(batch):
                    targets = ids[row, firsts[k]:len(pieces[k])].to(self.device)
                    scores = torch.log_softmax(logits[row, firsts[k] - 1:len(pieces[k]) - 1].double(), dim=-1)
                    sums[k] = float(scores.gather(1, targets[:, None]).sum())
        return sums


@functools.lru_cache(maxsize=None)
def get_perplexity_scorer(model=DEFAULT_PERPLEXITY_MODEL, device=None, batch_size=8, stride=None) -> PerplexityScorer:
    """The PerplexityScorer for this configuration, loaded once per process. Raises ModelUnavailable."""
    return PerplexityScorer(model, device, batch_size, stride)
