"""The one edge where model libraries meet the toolkit: the only module that imports torch and transformers.

Loading (a local folder, the Hugging Face cache, or — only when allowed — the Hub), the device, a content
fingerprint of the weights in use, token-budget batching with a progress bar, and the three forward passes the
metrics need: hidden states of an encoder (BERTScore), per-token log-probabilities of a causal LM (perplexity)
and the logits of a sequence-pair classifier (the NLI claim checker). The metrics on top of it (chimdqa_eval.neural,
chimdqa_eval.rag.checkers) hold only their own arithmetic, which is tested without a model.

Nothing here changes process-wide state: whether the Hub may be used is an argument (`download`), turned into
transformers' own `local_files_only`.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import socket
from dataclasses import dataclass
from urllib.parse import urlparse

import numpy as np
from huggingface_hub import constants as hf_constants  # paths and the endpoint only: a light module

# Tokenizers without a limit report a huge placeholder (int(1e30)); anything above this is not a real limit.
_NO_LIMIT = 1_000_000
# Rough padded-token budget of one forward batch; keeps memory flat when texts are long.
BATCH_TOKENS = 16_384
_PADDING = 0.05
# The libraries whose versions every model-based signature names (make_signature's packages).
MODEL_PACKAGES = ("transformers", "torch")
# How many scorers of each kind (BERTScore, perplexity, NLI) a process keeps loaded for reuse.
LOADED_PER_KIND = 2
KINDS = ("encoder", "causal-lm", "classifier")


class ModelUnavailable(RuntimeError):
    """The model's weights are neither a local folder nor in the Hugging Face cache, and the Hub is not usable."""


def hub_reachable() -> bool:
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


def _offline(model: str, download: bool | None) -> bool:
    """Whether transformers is to be told local_files_only: for a folder, when downloads are off, or (download
    None) when the Hub cannot be reached."""
    return os.path.isdir(model) or download is False or (download is None and not hub_reachable())


def _looks_like_path(model: str) -> bool:
    """A Hub name is org/name; anything else path-like that is not a folder is a mistyped path."""
    return model.startswith((os.sep, ".", "~")) or model.count("/") > 1


def _unavailable(model: str, what: str, download: bool | None, offline: bool, reason: str) -> ModelUnavailable:
    where_from = ("the local folder" if os.path.isdir(model) else
                  "the Hugging Face cache (downloads are off: --allow-download turns them on)"
                  if download is False else
                  "the Hugging Face cache (the Hub is not reachable or HF_HUB_OFFLINE is set)" if offline else
                  "the Hugging Face Hub")
    return ModelUnavailable(
        f"{what} model {model!r} could not be loaded from {where_from}: {reason}. "
        f"Pass a local folder, or download it once with `hf download {model}`.")


# A Hub repository id huggingface_hub accepts (org/name or name; no "--" or "..", at most 96 characters each).
_REPO_ID = re.compile(r"(?:[A-Za-z0-9](?:[\w.-]{0,94}[A-Za-z0-9])?/)?[A-Za-z0-9](?:[\w.-]{0,94}[A-Za-z0-9])?",
                      re.ASCII)


def _known_missing(model: str, download: bool | None) -> str | None:
    """Why transformers would fail to load `model` (the first line of its error, as _from_pretrained reports
    it), where that can be told from the file system alone, so that a model that is not there costs no import
    of torch and transformers (5-6 s); None where loading has to be tried.

    Told apart: offline, a path that is no folder or a folder without config.json (transformers reads the
    config first), and a Hub name with no folder in the Hugging Face cache (models--org--name under
    huggingface_hub's HF_HUB_CACHE, where transformers looks)."""
    if not _offline(model, download):
        return None  # the Hub may serve it
    if os.path.isdir(model):
        has_config = os.path.isfile(os.path.join(model, "config.json"))
        return "no such folder" if not has_config and _looks_like_path(model) else None
    if os.path.exists(model):
        return None  # a file: transformers decides what it makes of it
    if _looks_like_path(model):
        return "no such folder"
    if not _REPO_ID.fullmatch(model) or "--" in model or ".." in model or model.endswith(".git"):
        return None  # huggingface_hub's own message for a malformed name
    if os.path.exists(os.path.join(hf_constants.HF_HUB_CACHE, "models--" + model.replace("/", "--"))):
        return None
    # transformers.utils.hub.cached_file's error for a file neither cached nor downloadable
    return (f"We couldn't connect to '{hf_constants.ENDPOINT}' to load the files, and couldn't find them in the "
            "cached files")


def _from_pretrained(loader, model: str, what: str, download: bool | None, **kwargs):
    """loader.from_pretrained(model) from a local folder or the HF cache, or the Hub when `download` allows it
    (None: when the Hub is reachable and not switched off); ModelUnavailable (naming `what` model) otherwise."""
    from transformers.utils import logging

    offline = _offline(model, download)
    verbosity = logging.get_verbosity()
    # Loading fewer layers than were saved makes transformers print a report of every unused weight.
    logging.set_verbosity_error()
    try:
        return loader.from_pretrained(model, local_files_only=offline, **kwargs)
    except (OSError, ValueError, KeyError) as error:
        reason = "no such folder" if _looks_like_path(model) else str(error).splitlines()[0].rstrip(".")
        raise _unavailable(model, what, download, offline, reason) from error
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
    """Content hash of the weights in use (dtype included) and of the tokenizer: caches and signatures follow
    the model, not its path."""
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


# ----------------------------------------------------------------------------------------------- batching

def token_budget_batches(lengths: list[int], max_items: int, budget: int = BATCH_TOKENS):
    """Index lists, longest first, of at most max_items sequences and about `budget` padded tokens, cut where
    padding would exceed _PADDING of the real tokens: on CPUs a padded token costs as much as a real one, and
    sorted neighbours are close in length."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batch, real = [], 0
    for i in order:
        padded = (len(batch) + 1) * (lengths[batch[0]] if batch else lengths[i])
        wasteful = padded > (1 + _PADDING) * (real + lengths[i])
        if batch and (len(batch) >= max_items or padded > budget or wasteful):
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


# ----------------------------------------------------------------------------------------------- models

@dataclass
class LoadedModel:
    """A model ready to run: network (eval mode, on `device`), its tokenizer and config, the longest input it
    takes, and the content fingerprint of weights + tokenizer."""
    name: str
    network: object
    tokenizer: object
    config: object
    device: object
    max_length: int
    fingerprint: str

    @property
    def pad_id(self) -> int:
        return self.tokenizer.pad_token_id or 0


def load_model(kind: str, name: str, what: str, *, device=None, num_layers: int | None = None,
               download: bool | None = None, check_config=None) -> LoadedModel:
    """Load an `encoder` (optionally only its first `num_layers` layers), a `causal-lm` or a (sequence-pair)
    `classifier`. `check_config(config)` may reject a config before the weights are read (raise InputError /
    ModelUnavailable). Raises ModelUnavailable when the weights cannot be had."""
    if kind not in KINDS:
        raise ValueError(f"unknown model kind {kind!r}; expected one of {', '.join(KINDS)}")
    name = str(name)
    missing = _known_missing(name, download)
    if missing is not None:  # decided without importing torch and transformers
        raise _unavailable(name, what, download, _offline(name, download), missing)
    from transformers import (AutoConfig, AutoModel, AutoModelForCausalLM, AutoModelForSequenceClassification,
                              AutoTokenizer)

    config = _from_pretrained(AutoConfig, name, what, download)
    if check_config is not None:
        check_config(config)
    tokenizer = _from_pretrained(AutoTokenizer, name, f"{what} tokenizer", download)
    max_length = max_input_length(tokenizer, config)
    if num_layers is not None:
        config.num_hidden_layers = num_layers  # only the layers that are used are built
    loader = {"encoder": AutoModel, "causal-lm": AutoModelForCausalLM,
              "classifier": AutoModelForSequenceClassification}[kind]
    network = _from_pretrained(loader, name, what, download, config=config)
    if kind == "encoder" and getattr(network, "pooler", None) is not None:
        network.pooler = None  # its output is never used
    device = torch_device(device)
    network = network.to(device).eval()
    return LoadedModel(name, network, tokenizer, config, device, max_length, model_fingerprint(network, tokenizer))


# ----------------------------------------------------------------------------------------------- forward passes

def hidden_states(model: LoadedModel, sequences: list[list[int]], *, max_items: int = 64,
                  desc: str = "BERTScore") -> list[np.ndarray]:
    """The last built layer's hidden states, one (tokens x hidden) float32 array per token-id sequence."""
    import torch

    outputs = [None] * len(sequences)
    with torch.inference_mode():
        for batch in progress(token_budget_batches([len(s) for s in sequences], max_items), len(sequences), desc):
            ids, mask = _pad([sequences[i] for i in batch], model.pad_id)
            hidden = model.network(input_ids=ids.to(model.device), attention_mask=mask.to(model.device))[0]
            hidden = hidden.float().cpu().numpy()
            for row, i in enumerate(batch):
                outputs[i] = hidden[row, :len(sequences[i])].copy()
    return outputs


def logprob_sums(model: LoadedModel, pieces: list[list[int]], firsts: list[int], *, max_items: int = 8,
                 desc: str = "perplexity") -> list[float]:
    """Sum of log p(token | the piece's preceding tokens) over positions firsts[k]: of each piece (float64)."""
    import torch

    sums = [0.0] * len(pieces)
    with torch.inference_mode():
        for batch in progress(token_budget_batches([len(p) for p in pieces], max_items), len(pieces), desc):
            ids, mask = _pad([pieces[k] for k in batch], model.pad_id)
            logits = model.network(input_ids=ids.to(model.device), attention_mask=mask.to(model.device)).logits
            for row, k in enumerate(batch):
                targets = ids[row, firsts[k]:len(pieces[k])].to(model.device)
                scores = torch.log_softmax(logits[row, firsts[k] - 1:len(pieces[k]) - 1].double(), dim=-1)
                sums[k] = float(scores.gather(1, targets[:, None]).sum())
    return sums


def pair_logits(model: LoadedModel, pairs: list[tuple[str, str]], *, max_items: int = 32,
                desc: str = "NLI checks") -> np.ndarray:
    """(n, n_classes) logits of a sequence-pair classifier for (first, second) text pairs, in order; pairs of
    similar length are batched together, each cut to the model's maximum length."""
    import torch

    order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
    out = np.zeros((len(pairs), model.config.num_labels), dtype=np.float32)
    batches = (order[start:start + max_items] for start in range(0, len(order), max_items))
    with torch.inference_mode():
        for batch in progress(batches, len(order), desc):
            encoded = model.tokenizer([pairs[i][0] for i in batch], [pairs[i][1] for i in batch], padding=True,
                                      truncation=True, max_length=model.max_length, return_tensors="pt")
            out[batch] = model.network(**encoded.to(model.device)).logits.float().cpu().numpy()
    return out


# ----------------------------------------------------------------------------------------------- chimdqa generate

def load_tokenizer(name: str, what: str, *, download: bool | None = None):
    """A tokenizer alone (e.g. to count a long-context prompt's tokens the way the served model does)."""
    from transformers import AutoTokenizer

    return _from_pretrained(AutoTokenizer, str(name), what, download)


def greedy_generate(model: LoadedModel, sequences: list[list[int]], *, max_new_tokens: int,
                    with_logprobs: bool = False, max_items: int = 8, desc: str = "generate") -> list[tuple]:
    """(new token ids up to and including the first EOS, their natural-log probabilities or None) for each prompt
    of token ids: greedy decoding in left-padded batches of prompts of similar length."""
    import torch

    eos = model.network.generation_config.eos_token_id
    eos = set(eos if isinstance(eos, list) else [eos]) - {None}
    outputs: list = [None] * len(sequences)
    order = sorted(range(len(sequences)), key=lambda i: len(sequences[i]))
    batches = [order[start:start + max_items] for start in range(0, len(order), max_items)]
    with torch.inference_mode():
        for batch in progress(batches, len(order), desc):
            width = max(len(sequences[i]) for i in batch)
            ids = torch.full((len(batch), width), model.pad_id, dtype=torch.long)
            mask = torch.zeros_like(ids)
            for row, i in enumerate(batch):
                ids[row, width - len(sequences[i]):] = torch.tensor(sequences[i], dtype=torch.long)
                mask[row, width - len(sequences[i]):] = 1
            out = model.network.generate(input_ids=ids.to(model.device), attention_mask=mask.to(model.device),
                                         do_sample=False, max_new_tokens=max_new_tokens, pad_token_id=model.pad_id,
                                         return_dict_in_generate=True, output_scores=with_logprobs)
            scores = (model.network.compute_transition_scores(out.sequences, out.scores, normalize_logits=True)
                      if with_logprobs else None)
            for row, i in enumerate(batch):
                tokens = out.sequences[row, width:].tolist()
                length = next((j + 1 for j, t in enumerate(tokens) if t in eos), len(tokens))
                logprobs = [float(x) for x in scores[row, :length]] if scores is not None else None
                outputs[i] = (tokens[:length], logprobs)
    return outputs


def load_sentence_encoder(name: str, what: str, *, device=None, download: bool | None = None):
    """A sentence-transformers encoder (the `rag` extra); a plain Hugging Face encoder folder gets mean pooling."""
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise ModelUnavailable(f"{what} model {name!r} needs sentence-transformers: "
                               "pip install 'chimdqa-eval[rag]'") from None

    class Loader:  # _from_pretrained's offline rule and error messages, for sentence-transformers
        @staticmethod
        def from_pretrained(model, local_files_only, **kwargs):
            return SentenceTransformer(model, device=str(torch_device(device)), local_files_only=local_files_only)

    return _from_pretrained(Loader, str(name), what, download)


def encode_sentences(encoder, texts: list[str], *, batch_size: int = 32) -> np.ndarray:
    """(n, dim) float32 L2-normalized embeddings of the texts."""
    return np.asarray(encoder.encode(list(texts), batch_size=batch_size, normalize_embeddings=True,
                                     convert_to_numpy=True, show_progress_bar=None), dtype=np.float32)
