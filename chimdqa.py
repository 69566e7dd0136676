"""ChiMDQA: a Chinese long-document QA benchmark (60 PDFs, six domains, 6,068 QA pairs, ten question types),
and its sister benchmark Chinese SimpleQA, as a Hugging Face `datasets` builder.

    import chimdqa
    chimdqa.load("finance", split="retrieval")      # datasets.Dataset, on any datasets version
    chimdqa.load()                                   # DatasetDict of the `all` config, 13 splits

Configs: ``all`` (default) and one per domain (academic education finance law medical news) hold the QA
pairs (with ``evidence``, the pages holding the answer: a list of page numbers, empty where a question has
none); their splits are the ten question types, ``factual``, ``open_ended`` and ``test`` (everything).
``documents`` has one row per PDF page; ``chinese_simpleqa`` reads the Chinese SimpleQA jsonl given as
``data_files``. Without ``data_dir`` the small sample release in data/sample is used, so nothing is downloaded.

On datasets < 4 this file is also a classic loading script: ``load_dataset("chimdqa.py", "finance")``.
"""
from __future__ import annotations

import hashlib
from contextlib import contextmanager
from pathlib import Path

import datasets

from chimdqa_eval import release
from chimdqa_eval.schema import DOMAINS, QA_SPLITS, InputError, shown

_CITATION = """\
@article{chimdqa2025,
  title   = {ChiMDQA: Towards Comprehensive Chinese Document QA with Fine-grained Evaluation},
  journal = {arXiv preprint arXiv:2511.03656},
  year    = {2025}
}
"""
_HOMEPAGE = "https://arxiv.org/abs/2511.03656"
_LICENSE = "apache-2.0"

PLAIN_SPLITS = {"test": None}  # documents and chinese_simpleqa have one split

_List = getattr(datasets, "List", None) or datasets.Sequence  # `List` exists from datasets 4 on
# evidence: the pages (1-based) holding the answer, for retrieval hit@k / recall@k; [] where a question has none
QA_FEATURES = datasets.Features({**{c: datasets.Value("string") for c in release.QA_COLUMNS},
                                 "evidence": _List(datasets.Value("int32"))})
PAGE_FEATURES = datasets.Features({"doc_id": datasets.Value("string"), "domain": datasets.Value("string"),
                                   "title": datasets.Value("string"), "page": datasets.Value("int32"),
                                   "text": datasets.Value("string")})
SIMPLEQA_FEATURES = datasets.Features({**{c: datasets.Value("string") for c in release.SIMPLEQA_FIELDS[:-1]},
                                       "urls": _List(datasets.Value("string"))})


class ChiMDQAConfig(datasets.BuilderConfig):
    """kind is "qa", "documents" or "simpleqa"; domains are the domains a QA config keeps."""

    def __init__(self, *, kind: str, domains=(), **kwargs):
        super().__init__(version=datasets.Version("1.0.0"), **kwargs)
        self.kind = kind
        self.domains = tuple(domains)

    @property
    def splits(self) -> dict:
        """split name -> question types (None for the one-split configs)."""
        return QA_SPLITS if self.kind == "qa" else PLAIN_SPLITS


class ChiMDQA(datasets.GeneratorBasedBuilder):
    """ChiMDQA QA pairs by domain and question type, its documents page by page, and Chinese SimpleQA."""

    BUILDER_CONFIG_CLASS = ChiMDQAConfig
    BUILDER_CONFIGS = [
        ChiMDQAConfig(name="all", kind="qa", domains=DOMAINS, description="QA pairs of all six domains"),
        *(ChiMDQAConfig(name=d, kind="qa", domains=(d,), description=f"QA pairs of the {d} domain")
          for d in DOMAINS),
        ChiMDQAConfig(name="documents", kind="documents",
                      description="one row per non-empty PDF page, text extracted with PyMuPDF"),
        ChiMDQAConfig(name="chinese_simpleqa", kind="simpleqa",
                      description="Chinese SimpleQA (3,000 short factual questions); pass the jsonl as data_files"),
    ]
    DEFAULT_CONFIG_NAME = "all"

    def _info(self):
        features = {"qa": QA_FEATURES, "documents": PAGE_FEATURES, "simpleqa": SIMPLEQA_FEATURES}
        return datasets.DatasetInfo(description=__doc__, features=features[self.config.kind],
                                    homepage=_HOMEPAGE, license=_LICENSE, citation=_CITATION)

    def _split_generators(self, dl_manager):
        files = _data_files(self.config)
        if self.config.kind == "simpleqa":
            if not files:
                raise InputError("chinese_simpleqa: pass the Chinese SimpleQA jsonl as data_files=")
            self._rows = [row for path in files for row in release.read_simpleqa(path)]
        elif self.config.kind == "documents":
            if files:
                raise InputError("documents: data_files is not used; pass the release folder as data_dir=")
            self._rows = release.read_documents(self.config.data_dir)
        else:
            qa = release.read_qa(self.config.data_dir, files=files or None, evidence=True)
            self._rows = release.select_qa(qa, domains=self.config.domains)
        return [datasets.SplitGenerator(name=name, gen_kwargs={"question_types": types})
                for name, types in self.config.splits.items()]

    def _generate_examples(self, question_types):
        for row in release.select_qa(self._rows, question_types=question_types):  # None (one plain split): all
            yield row["id"] if "id" in row else f"{row['doc_id']}/{row['page']}", row


def _data_files(config) -> list[str]:
    """All files passed as data_files (datasets resolves them into a dict keyed by split)."""
    return [str(f) for files in (config.data_files or {}).values() for f in files]


def _given_files(data_files) -> list[Path]:
    """The paths passed as data_files (a path, a list, or a dict of them); InputError for a folder among them
    (datasets would report it as a missing file)."""
    groups = data_files.values() if isinstance(data_files, dict) else [data_files]
    paths = [Path(p) for group in groups for p in ([group] if isinstance(group, (str, Path)) else group)]
    for path in paths:
        if path.is_dir():
            raise InputError(f"data_files: {path} is a folder; expected a jsonl file (or pass a release folder "
                             "as data_dir=)")
    return paths


def _inputs_hash(name: str, data_dir, data_files) -> str:
    """Cache key over this builder's code and the content of the input files (names and bytes, never sizes or
    modification times, which an edit can leave as they were), so an edited release is rebuilt instead of
    served stale from the datasets cache."""
    digest = hashlib.sha256(Path(__file__).read_bytes() + Path(release.__file__).read_bytes())
    if data_files is not None:
        digest.update(release.fingerprint(files=_given_files(data_files)).encode())
    elif name == "documents":
        digest.update(release.documents_fingerprint(data_dir).encode())
    else:  # QA rows are checked against the document index: an edit there can turn them into an error
        index = release.release_dir(data_dir) / release.DOCUMENT_INDEX
        digest.update((release.fingerprint(data_dir) + release.files_digest([("index", index)])).encode())
    return digest.hexdigest()[:16]


def load(name: str = "all", split: str | None = None, data_dir=None, data_files=None):
    """A DatasetDict of the config (or one Dataset when split is given), built from local files only.

    data_dir: a release folder laid out like data/sample (default: the bundled sample).
    data_files: QA jsonl file(s) for the QA configs, or the Chinese SimpleQA jsonl for chinese_simpleqa."""
    configs = {c.name: c for c in ChiMDQA.BUILDER_CONFIGS}
    if name not in configs:
        raise InputError(f"unknown config {shown(name)}; expected one of {', '.join(configs)}")
    if split is not None and split not in configs[name].splits:
        raise InputError(f"config {name} has no split {shown(split)}; its splits are {', '.join(configs[name].splits)}")
    data_dir = str(Path(data_dir).resolve()) if data_dir is not None else None
    builder = ChiMDQA(config_name=name, dataset_name="chimdqa", data_dir=data_dir, data_files=data_files,
                      hash=_inputs_hash(name, data_dir, data_files))
    with quiet_progress():
        builder.download_and_prepare()
    if split is not None:
        return _split(builder, split)
    return datasets.DatasetDict({name: _split(builder, name) for name in builder.config.splits})


def _split(builder, split: str) -> datasets.Dataset:
    # datasets cannot read back a split with no rows (a domain of a partial release may lack a type)
    if builder.info.splits[split].num_examples == 0:
        return rows_to_dataset([], builder.info.features, split=split)
    return builder.as_dataset(split=split)


@contextmanager
def quiet_progress():
    """No per-split progress bars: building even the full release takes about a second."""
    was_enabled = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        if was_enabled:
            datasets.enable_progress_bars()


def rows_to_dataset(rows: list[dict], features, split=None) -> datasets.Dataset:
    """A Dataset with exactly these features, also for no rows (where Dataset.from_list fails)."""
    return datasets.Dataset.from_dict({c: [row[c] for row in rows] for c in features}, features=features,
                                      split=split)
