"""What contains what among places: the table data/places.tsv (its header says what it covers and how it was
made), read once on first use, and pure functions over it.

    >>> contains("瑞士", "日内瓦"), contains("法国", "日内瓦"), contains("吉林", "长春")
    (True, False, None)

A name is the table's name or alias of a place, compared after rules.clean. A name that two rows share (吉林:
吉林省 and 吉林市) or that the table marks as also meaning a place outside it (德州) is ambiguous: `place` gives
None for it, and `contains` answers only where all its readings agree.
"""
from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from importlib import resources
from typing import NamedTuple

from chimdqa_eval.factual import rules

TABLE = "places.tsv"
LEVELS = ("country", "province", "prefecture", "city", "district")
# How broad a level is: a prefecture-level city and a city are the same size of thing.
RANK = {"country": 0, "province": 1, "prefecture": 2, "city": 2, "district": 3}
# What may follow a place name in another word: 青海湖, 中山路, 印度洋, 朝鲜半岛, 四川盆地, 哥伦比亚大学, 蒙古族.
_CONTINUES = re.compile(r"大学|学院|大道|公园|半岛|高原|盆地|平原|沙漠|[山路街湖河江海洋岛港湾峰寺庙宫桥站塔族语]")
# A name whose last character begins a common word with the next one (海地 in 加勒比海地区) is no name there.
_ENDS_IN_A_WORD = frozenset({"地区", "地带", "地方", "地域", "地点", "地理", "南部", "北部", "东部", "西部", "中部"})
_FOREIGN_NAME_MARKS = "·•"  # 乔治·华盛顿, 简·奥斯汀: part of a person's name


class Place(NamedTuple):
    name: str
    parent: str       # '' for a country
    level: str        # one of LEVELS
    aliases: tuple
    note: str


def _table_bytes() -> bytes:
    return resources.files("chimdqa_eval.factual").joinpath("data").joinpath(TABLE).read_bytes()


# The table's version for the judge's signature (version.NORMALIZER_VERSION): a hash of its bytes, cheap to take.
TABLE_VERSION = hashlib.sha256(_table_bytes()).hexdigest()[:12]


def parse_table(text: str) -> list[Place]:
    """The rows of a places table; ValueError naming the line for a row that does not parse."""
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) < 3 or len(fields) > 5 or not fields[0] or fields[2] not in LEVELS:
            raise ValueError(f"{TABLE} line {number}: expected name, parent, level ({'/'.join(LEVELS)}), "
                             f"optional aliases and note, TAB-separated: {line!r}")
        name, parent, level, *rest = fields
        aliases = tuple(a for a in (rest[0].split("|") if rest else ()) if a)
        out.append(Place(name, parent, level, aliases, rest[1] if len(rest) > 1 else ""))
    return out


_HOMONYMS_RE1 = re.compile(r"homonym:(\S+)")


def homonyms(row: Place) -> set[str]:
    """The names of a row that its note marks as also meaning a place outside the table."""
    m = _HOMONYMS_RE1.match(row.note)
    return set(m.group(1).split(",")) if m else set()


@lru_cache(maxsize=65536)
def _name_key(name: str) -> str:
    return rules.key(rules.clean(name))


@lru_cache(maxsize=1)
def _loaded() -> tuple[dict, dict, dict]:
    """(name key -> the rows it names, with None for a place outside the table; row name -> row; first
    character of a name -> the lengths of the names starting with it, longest first)."""
    rows = parse_table(_table_bytes().decode("utf-8"))
    index: dict[str, list] = {}
    for row in rows:
        outside = homonyms(row)
        for name in (row.name, *row.aliases):
            readings = index.setdefault(_name_key(name), [])
            if row not in readings:
                readings.append(row)
            if name in outside:
                readings.append(None)
    by_name = {row.name: row for row in rows}
    lengths: dict[str, set] = {}
    for k in index:
        lengths.setdefault(k[0], set()).add(len(k))
    return ({k: tuple(v) for k, v in index.items()}, by_name,
            {ch: tuple(sorted(v, reverse=True)) for ch, v in lengths.items()})


def readings(name: str) -> tuple:
    """Every place a name may mean: () when the table does not know it; None among them for a place outside the
    table."""
    return _loaded()[0].get(_name_key(name), ())


def place(name: str) -> Place | None:
    """The one place a name means, or None when it is unknown or ambiguous."""
    found = readings(name)
    return found[0] if len(found) == 1 else None


def _chain(row: Place) -> tuple[Place, ...]:
    """The row's ancestors, nearest first."""
    by_name = _loaded()[1]
    out, seen = [], {row.name}
    while row.parent and row.parent in by_name and row.parent not in seen:
        row = by_name[row.parent]
        seen.add(row.name)
        out.append(row)
    return tuple(out)


def ancestors(name: str) -> tuple[str, ...]:
    """The names of the places that contain the place `name` means, nearest first (拉萨 -> 西藏自治区, 中国); ()
    when the name is unknown or ambiguous."""
    row = place(name)
    return tuple(r.name for r in _chain(row)) if row else ()


def within(broader: Place, narrower: Place) -> bool:
    """`broader` is `narrower` or contains it."""
    return broader == narrower or broader in _chain(narrower)


def contains(broader: str, narrower: str) -> bool | None:
    """Whether the place `broader` names is or contains the place `narrower` names; None when either name is
    unknown, or ambiguous with readings that disagree (吉林 / 长春)."""
    outer, inner = readings(broader), readings(narrower)
    if not outer or not inner or None in outer or None in inner:
        return None
    answers = {within(o, i) for o in outer for i in inner}
    return answers.pop() if len(answers) == 1 else None


def _starts_name(text: str, i: int) -> bool:
    """A name of the table starts at text[i] (天津河北区: 河北区 after 天津, not a river)."""
    index, _, lengths = _loaded()
    return any(text[i:i + length] in index for length in lengths.get(text[i:i + 1], ()))


def place_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, name) of the table's names in cleaned text, left to right, each the longest name starting
    where it starts and not inside a longer word that goes on after it (not 青海 in 青海湖, 哥伦比亚 in
    哥伦比亚大学) or a foreign person's name (not 华盛顿 in 乔治·华盛顿)."""
    return list(_place_spans(text))


@lru_cache(maxsize=4096)  # the rules ask again of the same answer, its key and the reference
def _place_spans(text: str) -> tuple[tuple[int, int, str], ...]:
    index, _, lengths = _loaded()
    out, i = [], 0
    while i < len(text):
        for length in lengths.get(text[i], ()):
            name = text[i:i + length]
            before, after = text[i - 1:i] if i else " ", text[i + length:i + length + 1] or " "
            if len(name) == length and name in index and before not in _FOREIGN_NAME_MARKS \
                    and after not in _FOREIGN_NAME_MARKS \
                    and (not _CONTINUES.match(text, i + length) or _starts_name(text, i + length)) \
                    and text[i + length - 1:i + length + 1] not in _ENDS_IN_A_WORD:
                out.append((i, i + length, name))
                i += length
                break
        else:
            i += 1
    return tuple(out)


def places_in(text: str) -> list[str]:
    """The table's names in cleaned text, as place_spans finds them."""
    return [name for _, _, name in place_spans(text)]
