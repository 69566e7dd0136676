"""ChiMDQA evaluation toolkit: the library behind chimdqa.py and the metrics/ modules."""

__version__ = "0.1.0"


def load_metric(name: str, **kwargs):
    """The installed evaluate module ``chimdqa_factual``, ``chimdqa_open`` or ``chimdqa_rag`` (no checkout
    needed); kwargs go to evaluate.load."""
    from chimdqa_eval.hub.spaces import load_metric as _load_metric

    return _load_metric(name, **kwargs)


def __getattr__(name: str):
    """`chimdqa_eval.evaluate`, `EvalConfig`, `prepare`, `Run`: imported when first used, so that importing the
    package (as every command does) loads no metric."""
    if name in ("evaluate", "EvalConfig", "prepare", "Run"):
        from chimdqa_eval import evaluation

        return getattr(evaluation, name)
    raise AttributeError(f"module 'chimdqa_eval' has no attribute {name!r}")
