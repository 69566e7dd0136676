"""Text normalization and tokenization: the one place where Chinese text is cleaned or split into tokens."""
from __future__ import annotations

import re
import unicodedata

_SPACE = re.compile(r"[ \t\u3000\u00a0]+")
_BLANK_LINES = re.compile(r"\n\s*\n+")


def normalize_text(text: str) -> str:
    """NFKC (full-width forms become half-width: ＡＢ１２ -> AB12, ，？（ -> ,?( ; 。、《》 have no half-width form
    and stay), collapsed runs of spaces, trimmed lines, at most one blank line in a row."""
    text = unicodedata.normalize("NFKC", text).replace("\r\n", "\n").replace("\r", "\n")
    lines = [_SPACE.sub(" ", line).strip() for line in text.split("\n")]
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()
