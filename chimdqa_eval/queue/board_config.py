"""leaderboard.yaml: what a board scores (benchmark, config, split, release) and how (the pinned settings of
`chimdqa evaluate`). Every row of the board is scored with it, and its digest is the board's signature.

    title: ChiMDQA leaderboard
    benchmark: chimdqa            # or chinese_simpleqa (then data_files names its jsonl)
    config: all
    split: test
    release: null                 # release folder, relative to this file; null: the bundled sample
    data_files: null
    scoring:                      # any `chimdqa evaluate` option, spelled with underscores
      judge: rule
      tokenizer: jieba
      resamples: 1000
      seed: 0
    limits:
      per_submitter_per_day: 3    # null: no limit
    stale_after: 900              # seconds without a heartbeat before a RUNNING request is taken over
    max_attempts: 3               # processors that may die on one request before it is FAILED
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from chimdqa_eval.evaluation import EvalConfig
from chimdqa_eval.llm import origin
from chimdqa_eval.schema import InputError, read_yaml_mapping
from chimdqa_eval.signature import make_signature

CONFIG_FILE = "leaderboard.yaml"
BENCHMARKS = {"chimdqa": "ChiMDQA", "chinese_simpleqa": "Chinese SimpleQA"}
TOP_KEYS = ("title", "benchmark", "config", "split", "release", "data_files", "scoring", "limits", "stale_after",
            "max_attempts")
LIMIT_KEYS = ("per_submitter_per_day",)
# evaluate options the queue sets per request or per board (top level); `scoring:` cannot pin them
PER_REQUEST = ("predictions", "out", "metadata", "model", "config", "split", "data_dir", "data_files", "rag_pair",
               "allow_partial")
PINNABLE = tuple(f.name for f in dataclasses.fields(EvalConfig) if f.name not in PER_REQUEST)


@dataclass(frozen=True)
class BoardConfig:
    title: str = "ChiMDQA leaderboard"
    benchmark: str = "chimdqa"
    config: str = "all"
    split: str = "test"
    release: str | None = None          # absolute path once loaded
    data_files: tuple = ()
    scoring: dict = field(default_factory=dict)
    per_submitter_per_day: int | None = None
    stale_after: float = 900.0
    max_attempts: int = 3
    source: str = "defaults"

    @property
    def evaluation(self) -> EvalConfig:
        """How every request is scored: the selection plus the pinned settings (null: the default)."""
        selection = {"config": "chinese_simpleqa" if self.benchmark == "chinese_simpleqa" else self.config,
                     "split": self.split, "data_dir": self.release, "data_files": self.data_files or None}
        pinned = {key: value for key, value in self.scoring.items() if value is not None}
        try:
            return EvalConfig(**selection, **pinned)
        except InputError as err:
            raise InputError(f"{self.source}: scoring: {err}") from None

    def signature(self, revision: str) -> str:
        """`board:<digest>|revision:…`: the digest covers the selection, the release revision and the scoring
        settings, so two boards with equal signatures scored every row the same way."""
        pinned = {"benchmark": self.benchmark, "config": self.config, "split": self.split, "revision": revision,
                  "scoring": self.scoring}
        digest = hashlib.sha256(json.dumps(pinned, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:12]
        shown = public_scoring(self.scoring)
        settings = ",".join(f"{k}={v}" for k, v in sorted(shown.items()) if v is not None) or "defaults"
        return make_signature({"board": digest, "benchmark": self.benchmark, "config": self.config,
                               "split": self.split, "revision": revision, "scoring": settings.replace("|", "/")})


# settings that may name a place on the maintainer's machine: shown by their last part only
LOCAL_PATHS = ("judge_prompt", "llm_cache", "bertscore_model", "perplexity_model", "nli_model")


def _public_value(key: str, value):
    if key == "api_base" and value:  # scheme://host:port: no user, password or route (a token can hide there)
        return [origin(v) for v in ([value] if isinstance(value, str) else value)]
    if key in LOCAL_PATHS and isinstance(value, str) and (Path(value).is_absolute() or value.startswith(".")):
        return Path(value).name
    return value


def public_scoring(scoring: dict) -> dict:
    """The pinned settings as participants and the board page see them."""
    return {key: _public_value(key, value) for key, value in scoring.items()}


def public_yaml(config: BoardConfig) -> str:
    """A leaderboard.yaml for participants: the selection, limits and pinned settings without the maintainer's
    paths and endpoint routes (a release is named by its folder: participants pass --data-dir)."""
    import yaml

    doc = {"title": config.title, "benchmark": config.benchmark, "config": config.config, "split": config.split,
           "release": Path(config.release).name if config.release else None,
           "data_files": [Path(f).name for f in config.data_files] or None,
           "scoring": public_scoring(config.scoring),
           "limits": {"per_submitter_per_day": config.per_submitter_per_day},
           "stale_after": config.stale_after, "max_attempts": config.max_attempts}
    return ("# published by `chimdqa queue process`; the maintainer's own settings file is not this one\n"
            + yaml.safe_dump({k: v for k, v in doc.items() if v is not None}, allow_unicode=True, sort_keys=False))


def load_board_config(path) -> BoardConfig:
    """Read and check leaderboard.yaml; every problem is an InputError naming the file and the key."""
    path = Path(path)
    doc, _ = read_yaml_mapping(path, str(path), expected="a mapping of settings", empty={},
                               missing_hint=" (the board's leaderboard.yaml: see the README's `chimdqa queue`)")
    unknown = sorted(set(doc) - set(TOP_KEYS))
    if unknown:
        raise InputError(f"{path}: unknown key(s) {', '.join(unknown)}; expected {', '.join(TOP_KEYS)}")
    benchmark = doc.get("benchmark", "chimdqa")
    if benchmark not in BENCHMARKS:
        raise InputError(f"{path}: benchmark: expected one of {', '.join(BENCHMARKS)}, got {benchmark!r}")
    scoring = doc.get("scoring") or {}
    if not isinstance(scoring, dict):
        raise InputError(f"{path}: scoring: expected a mapping of evaluate options")
    for key in scoring:
        if key not in PINNABLE:
            hint = " (set per board in the top level)" if key in PER_REQUEST else ""
            raise InputError(f"{path}: scoring.{key}: not a `chimdqa evaluate` option that a board can pin{hint}; "
                             f"expected one of {', '.join(sorted(PINNABLE))}")
    limits = doc.get("limits") or {}
    if not isinstance(limits, dict) or set(limits) - set(LIMIT_KEYS):
        raise InputError(f"{path}: limits: expected a mapping with {', '.join(LIMIT_KEYS)}")
    per_day = limits.get("per_submitter_per_day")
    if per_day is not None and (not isinstance(per_day, int) or isinstance(per_day, bool) or per_day < 1):
        raise InputError(f"{path}: limits.per_submitter_per_day: expected a positive whole number, got {per_day!r}")
    release = doc.get("release")
    if release is not None:
        release = str((path.parent / str(release)).resolve())
    data_files = doc.get("data_files") or ()
    if isinstance(data_files, str):
        data_files = (data_files,)
    data_files = tuple(str((path.parent / str(f)).resolve()) for f in data_files)
    if benchmark == "chinese_simpleqa" and len(data_files) != 1:
        raise InputError(f"{path}: benchmark chinese_simpleqa needs its jsonl as data_files")
    numbers = {}
    for key, default, low in (("stale_after", 900.0, 1), ("max_attempts", 3, 1)):
        value = doc.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < low:
            raise InputError(f"{path}: {key}: expected a number ≥ {low}, got {value!r}")
        numbers[key] = value
    config = BoardConfig(title=str(doc.get("title") or BENCHMARKS[benchmark] + " leaderboard"), benchmark=benchmark,
                         config=str(doc.get("config", "all")), split=str(doc.get("split", "test")),
                         release=release, data_files=data_files, scoring=dict(scoring), per_submitter_per_day=per_day,
                         stale_after=float(numbers["stale_after"]), max_attempts=int(numbers["max_attempts"]),
                         source=str(path))
    config.evaluation  # the selection and the pinned settings are checked now, not per request
    return config
