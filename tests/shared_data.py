"""Where the team's shared data lives, for the few tests that also check against real public data: $CHIMDQA_SHARED,
else the `shared/` folder beside the checkout (as CI lays it out), else /work/shared. Those tests are skipped when
the file is absent; the rest of the suite never needs it."""
import os
from pathlib import Path

_CANDIDATES = [Path(os.environ["CHIMDQA_SHARED"])] if os.environ.get("CHIMDQA_SHARED") else []
_CANDIDATES += [Path(__file__).resolve().parents[2] / "shared", Path("/work/shared")]
SHARED = next((p for p in _CANDIDATES if p.is_dir()), _CANDIDATES[-1])

CHINESE_SIMPLEQA = SHARED / "data" / "chinese_simpleqa" / "chinese_simpleqa.jsonl"
RAGCHECKER_EXAMPLE = SHARED / "data" / "ragchecker" / "checking_outputs.json"
