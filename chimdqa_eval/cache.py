"""Where on-disk caches live: $CHIMDQA_CACHE, else ~/.cache/chimdqa. Each cache takes a subfolder."""
from __future__ import annotations

import os
from pathlib import Path


def cache_dir(subfolder: str = "") -> Path:
    root = Path(os.environ.get("CHIMDQA_CACHE") or Path.home() / ".cache" / "chimdqa")
    path = root / subfolder if subfolder else root
    path.mkdir(parents=True, exist_ok=True)
    return path
