"""Other names of the same entity, for the rule judge: people's other names from a table, the short names of
administrative divisions by rule.

- People: data/person_aliases.tsv lists, one person a row, the names a person is commonly called by (名, 字 with
  the surname, 号, 笔名, 本名, 尊称: 关羽 = 关云长, 陶渊明 = 陶潜, 鲁迅 = 周树人). Any name of a row stands for
  all of them. It is read once, on first use, and compared by rules.key, so traditional characters match too.
- Divisions: a division's short name is its name without the level word (省, 市, 自治区, 地区, 盟 …) and, for
  an autonomous division, without the ethnic groups it names (新疆维吾尔自治区 -> 新疆, 湘西土家族苗族自治州 ->
  湘西). A short name is kept only when two characters or more remain.

`TABLE_VERSION` names the table by its sha256, for the judge's signature.
"""
from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from pathlib import Path

from chimdqa_eval.factual import rules

PERSON_TABLE = Path(__file__).resolve().parent / "data" / "person_aliases.tsv"
TABLE_VERSION = f"aliases-1.{hashlib.sha256(PERSON_TABLE.read_bytes()).hexdigest()[:12]}"

# Level words of divisions, longest first (the first that ends a name is its level).
LEVELS = ("特别行政区", "自治区", "自治州", "自治县", "自治旗", "地区", "省", "市", "县", "区", "州", "盟", "旗", "镇",
          "乡", "村")
_AUTONOMOUS = ("自治区", "自治州", "自治县", "自治旗")
_LEVEL_CHARS = "".join(x for x in LEVELS if len(x) == 1)
# The 56 ethnic groups of China. In division names an ethnic name of two or more characters may drop 族
# (新疆维吾尔自治区, 伊犁哈萨克自治州, 博尔塔拉蒙古自治州); a one-character one never does (宁夏回族自治区).
ETHNIC_GROUPS = (
    "汉族 蒙古族 回族 藏族 维吾尔族 苗族 彝族 壮族 布依族 朝鲜族 满族 侗族 瑶族 白族 土家族 哈尼族 哈萨克族 傣族 黎族 傈僳族 佤族 "
    "畲族 高山族 拉祜族 水族 东乡族 纳西族 景颇族 柯尔克孜族 土族 达斡尔族 仫佬族 羌族 布朗族 撒拉族 毛南族 仡佬族 锡伯族 阿昌族 "
    "普米族 塔吉克族 怒族 乌孜别克族 俄罗斯族 鄂温克族 德昂族 保安族 裕固族 京族 塔塔尔族 独龙族 鄂伦春族 赫哲族 门巴族 珞巴族 "
    "基诺族").split()
_ETHNIC_END = re.compile("(?:" + "|".join(g if len(g) == 2 else f"{g}|{g[:-1]}" for g in ETHNIC_GROUPS) + ")$")
# What may follow a two-character alias in running text for it to be a word of its own (陶潜写的, 新疆的,
# 仲尼曰), rather than the start of a longer word (阿里巴巴 is not 阿里地区).
NAME_FOLLOWERS = frozenset("的是为在于和与及跟同或等所写作著撰编画创提说曰称被把将由从也都就还又乃即了吧呢啊呀啦哦嘛吗呗哈啰喔嘞咯噢哟耶"
                            "字号名氏先生人时年出生死逝卒任曾一首篇部本诗词集地境内东西南北中")
# 盟 and 旗 (the levels of Inner Mongolia) also end common nouns: 国际联盟 is no division 国际联.
_NOT_A_LEVEL = re.compile(r"[联同加结]盟$|[国红军锦彩党队会校战帅]旗$")
# A smaller division after a division's name, as in an address (安徽黄山市, 新疆喀什地区).
_SUBDIVISION = re.compile(rf"[\u4e00-\u9fff]{{2,6}}?(?:地区|[{_LEVEL_CHARS}])")


def division_short_names(name: str) -> set[str]:
    """The short names of a division's comparison key (新疆维吾尔自治区 -> {新疆维吾尔, 新疆}, 吉林省 -> {吉林});
    empty when the name has no level word or too little would remain."""
    level = next((x for x in LEVELS if name.endswith(x)), None)
    if level is None or len(name) - len(level) < 2 or _NOT_A_LEVEL.search(name):
        return set()
    short = {name[:-len(level)]}
    rest = name[:-len(level)]
    while level in _AUTONOMOUS:
        m = _ETHNIC_END.search(rest)
        if not m or m.start() < 2:
            break
        rest = rest[:m.start()]
        short.add(rest)
    return short


def level_of(name: str) -> str:
    """The level word a division's name ends with ('' if none)."""
    return next((x for x in LEVELS if name.endswith(x)), "")


def stands_as_name(text: str, form: str, level: str = "") -> bool:
    """Does `form`, a short name or alias, occur in cleaned `text` as the name itself? Not when another level word
    follows it (海南省 does not name 海南藏族自治州, nor 吉林省 吉林市), and, for two characters, only where it
    ends a word (陶潜的, 新疆。, 安徽黄山市, not 阿里巴巴). `level` is the reference's own level word, which may
    follow (延边州)."""
    start = text.find(form)
    if start < 0:
        return True  # written with separators (爱新觉罗·玄烨 for the key 爱新觉罗玄烨): the key's match stands
    while start >= 0:
        after = text[start + len(form):start + len(form) + 1]
        other_level = after and after in _LEVEL_CHARS and after not in level
        ends_word = len(form) > 2 or not after or not "\u4e00" <= after <= "\u9fff" or after in NAME_FOLLOWERS \
            or after in level or _SUBDIVISION.match(text, start + len(form)) is not None
        if ends_word and not other_level:
            return True
        start = text.find(form, start + 1)
    return False


def person_aliases(name: str) -> frozenset[str]:
    """The other names (comparison keys) of the person whose name, any of a row's, is the key `name`."""
    return _person_index().get(name, frozenset()) - {name}


@lru_cache(maxsize=1)
def _person_index() -> dict[str, frozenset[str]]:
    rows = parse_person_table(PERSON_TABLE.read_text(encoding="utf-8"), lambda s: rules.key(rules.clean(s)))
    return {name: names for names in rows for name in names}


def parse_person_table(text: str, normalize=lambda s: s) -> list[frozenset[str]]:
    """The rows of a person table (comments with #; canonical name TAB aliases separated by |) as sets of
    normalized names. ValueError naming the line for a row without a tab or name, or a name in two rows."""
    rows, seen = [], {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        canonical, tab, others = line.partition("\t")
        names = [normalize(n.strip()) for n in [canonical, *others.split("|")]]
        if not tab or not all(names):
            raise ValueError(f"person alias table line {number}: expected 'name<TAB>alias|alias…', got {line!r}")
        for name in names:
            if seen.setdefault(name, number) != number:
                raise ValueError(f"person alias table line {number}: {name!r} is also on line {seen[name]}")
        rows.append(frozenset(names))
    return rows
