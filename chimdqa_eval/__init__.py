"""ChiMDQA evaluation toolkit: the library behind chimdqa.py and the metrics/ modules."""

__version__ = "0.1.0"
