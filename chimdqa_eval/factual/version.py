"""The rule judge's version, in every signature of its grades: the rules' own name (`zh-rule-N`, bumped with
factual/rules.py) and every table they read, each by its version or a hash of its bytes — OpenCC's phrase tables,
pypinyin's readings, babel's CLDR names (factual/names.py), the alias and place tables, CC-CEDICT
(factual/dictionary.py) and the word lists (factual/vocabulary.py) — so a changed table shows in results.json."""
from __future__ import annotations

from importlib.metadata import version

import opencc

from chimdqa_eval.factual import vocabulary
from chimdqa_eval.factual.aliases import TABLE_VERSION as _ALIASES_VERSION
from chimdqa_eval.factual.dictionary import VERSION as _CEDICT_VERSION
from chimdqa_eval.factual.places import TABLE_VERSION as _PLACES_VERSION

RULES = "zh-rule-10"
NORMALIZER_VERSION = (f"{RULES}+opencc-{opencc.__version__}+pypinyin-{version('pypinyin')}+babel-{version('babel')}"
                      f"+{_ALIASES_VERSION}+places-{_PLACES_VERSION}+{_CEDICT_VERSION}+{vocabulary.VERSION}")
