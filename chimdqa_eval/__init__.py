"""ChiMDQA evaluation toolkit: the library behind chimdqa.py and the metrics/ modules."""

__version__ = "0.1.0"


def load_metric(name: str, **kwargs):
    """The installed evaluate module ``chimdqa_factual``, ``chimdqa_open`` or ``chimdqa_rag`` (no checkout
    needed); kwargs go to evaluate.load."""
    from chimdqa_eval.hub.spaces import load_metric as _load_metric

    return _load_metric(name, **kwargs)
