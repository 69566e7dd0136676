"""Where on-disk caches live: $CHIMDQA_CACHE, else ~/.cache/chimdqa. Each cache takes a subfolder."""
from __future__ import annotations

import os
from pathlib import Path


def cache_dir(subfolder: str = "") -> Path:
    """The cache folder (made where missing); OSError where there is none to be had."""
    root = Path(os.environ.get("CHIMDQA_CACHE") or _home() / ".cache" / "chimdqa")
    path = root / subfolder if subfolder else root
    path.mkdir(parents=True, exist_ok=True)
    return path


def _home() -> Path:
    try:
        return Path.home()
    except RuntimeError as error:  # no $HOME and no passwd entry (a container run under a bare uid)
        raise OSError(f"no cache folder: set $CHIMDQA_CACHE ({error})") from None
