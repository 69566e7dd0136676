"""Chinese answer normalization for grading: comparison keys, Chinese numerals, numbers with their precision,
and the cue phrases of refusals, guesses and competing candidates.

Everything here is a pure function of strings. `NORMALIZER_VERSION` goes into every signature: bump it when
any table or rule below changes, because grades may change with it.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from decimal import Decimal

NORMALIZER_VERSION = "zh-rule-3"

# Common traditional characters and their simplified forms, two characters per pair. Only characters whose
# simplified form is unambiguous in running text are listed (not 乾/干, 後/后 is safe, 髮/發 both map to 发).
_TRADITIONAL_PAIRS = (
    "國国會会學学們们來来時时個个說说為为這这對对過过發发髮发後后開开經经長长動动機机關关現现實实點点業业與与"
    "體体麼么還还頭头從从當当問问題题員员無无東东車车電电話话見见書书愛爱區区縣县號号歲岁陽阳陰阴雲云華华漢汉"
    "語语義义門门間间聞闻馬马鳥鸟魚鱼龍龙龜龟麗丽齊齐萬万億亿兩两術术醫医藥药療疗銀银錢钱鐵铁鋼钢礦矿氣气質质"
    "類类總总統统計计設设論论議议認认識识讀读寫写畫画圖图圓圆團团園园場场報报紙纸線线紅红綠绿藍蓝黃黄顏颜風风"
    "飛飞雞鸡獸兽蟲虫劇剧藝艺樂乐歷历曆历傳传記记詩诗詞词範范護护權权憲宪選选舉举軍军戰战勝胜敗败僅仅條条約约"
    "幾几際际島岛灣湾臺台廣广嶺岭蘇苏遼辽寧宁陝陕貴贵滬沪濟济應应該该達达運运進进遠远邊边將将專专導导師师帥帅"
    "歸归寶宝審审憶忆聽听聲声響响讓让變变決决沒没況况減减滿满漁渔濃浓溫温燈灯熱热爾尔狀状獨独猶犹環环產产畢毕"
    "異异盡尽監监盤盘眾众礎础確确禮礼種种稱称穩稳築筑簡简糧粮級级紀纪納纳細细組组結结給给絡络維维網网編编練练"
    "縮缩織织聯联職职腦脑臨临興兴舊旧莊庄葉叶蓮莲蘭兰處处裝装製制複复規规視视親亲覺觉觀观訂订訓训許许試试詳详"
    "誌志誤误調调談谈請请諸诸證证譯译財财貨货費费資资賽赛趙赵軟软輕轻載载輪轮輸输農农遊游適适鄉乡鄭郑錄录鏡镜"
    "陸陆隊队階阶隨随險险雖虽雙双難难離离靈灵韓韩頁页項项順顺預预領领頻频顯显願愿餘余館馆驗验鬥斗魯鲁鮮鲜麥麦"
    "黨党齒齿壽寿夢梦奪夺婦妇媽妈孫孙寬宽層层屬属嚴严劉刘吳吴張张陳陈楊杨馮冯鄧邓蕭萧謝谢羅罗鄒邹湯汤蔣蒋韋韦"
    "賈贾劍剑獅狮禪禅燒烧礙碍蓋盖歐欧亞亚瑪玛絲丝紐纽倫伦聖圣殺杀鐘钟鍾钟錦锦鑽钻針针釋释遺遗邏逻輯辑齡龄歲岁"
    "衛卫軌轨鄰邻紡纺織织廠厂價价錶表較较賓宾檔档腳脚鹽盐鹼碱氫氢鈉钠鎂镁鈣钙鋁铝鉀钾銅铜鋅锌"
)
_TRADITIONAL = str.maketrans(_TRADITIONAL_PAIRS[0::2], _TRADITIONAL_PAIRS[1::2])

# Unit spellings that mean the same thing.
_UNIT_SYNONYMS = (("公里", "千米"), ("公斤", "千克"), ("摄氏度", "°c"))

_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8,
           "九": 9}
_SMALL_UNITS = {"十": 10, "百": 100, "千": 1000}
# 一千二 is 1200, 三万五 35000: the unit of a final digit that follows one of these without a 零.
_ELIDED = {"百": 10, "千": 100, "万": 1000, "亿": 10 ** 7}
_CN_NUMERAL = re.compile(r"(百分之)?([零〇一二两三四五六七八九十百千万亿]+)(点[零〇一二三四五六七八九]+)?")
# A single numeral character is only a number standing alone, next to a measure word or after 第 (not 一样,
# 统一, 十分).
_NOT_A_COUNT = set("哪某每同这那任唯统之其")
_MEASURE_WORDS = set("年月日号届个次人岁位名条章节倍元米克吨种项座层期代世纪度天周")
# Arabic numbers: thousands separators, decimals, a Chinese multiplier (1.2千, 3千米 = 3000米; not 5百分点), a
# percent sign. Digits glued to Latin letters (V08AA04, H2O, 5G) are codes, not quantities, unless the letters
# are a unit (see _LATIN_UNITS).
_ARABIC = re.compile(r"(?<![a-z0-9.])(-)?(\d{1,3}(?:,\d{3})+(?!\d)|\d+)(\.\d+)?\s*(万亿|千万|百万|亿|万|千|百(?!分))?"
                     r"\s*(%)?")
_MULTIPLIERS = {"万": 10 ** 4, "亿": 10 ** 8, "万亿": 10 ** 12, "千万": 10 ** 7, "百万": 10 ** 6, "千": 1000,
                "百": 100}
# Latin unit symbols after a number, rewritten in Chinese so that 10kg and 10公斤 read alike.
_LATIN_UNITS = {"km": "千米", "kg": "千克", "mg": "毫克", "cm": "厘米", "mm": "毫米", "ml": "毫升"}
_LATIN_UNIT = re.compile(r"(?<=\d)\s*(" + "|".join(_LATIN_UNITS) + r")(?![a-z])")
# Units a number may carry: spelling -> (canonical unit, factor to it). Two numbers with different canonical
# units never match (3小时 / 3分钟, 15英镑 / 15美元); a number without a listed unit matches any. Counters (个, 人,
# 次) and ambiguous words (度, 分) are not listed. 千米 and 千克 arrive as the multiplier 千 and 米 / 克.
_UNITS = {
    "米": ("米", 1), "厘米": ("米", "0.01"), "毫米": ("米", "0.001"), "微米": ("米", "1e-6"),
    "纳米": ("米", "1e-9"), "克": ("克", 1), "毫克": ("克", "0.001"), "微克": ("克", "1e-6"), "吨": ("克", 10 ** 6),
    "升": ("升", 1), "毫升": ("升", "0.001"), "平方米": ("平方米", 1), "平方千米": ("平方米", 10 ** 6),
    "公顷": ("平方米", 10 ** 4), "°c": ("°c", 1),
    "元": ("元", 1), "块": ("元", 1), "人民币": ("元", 1), "美元": ("美元", 1), "美金": ("美元", 1),
    "英镑": ("英镑", 1), "欧元": ("欧元", 1), "日元": ("日元", 1), "日圆": ("日元", 1), "港元": ("港元", 1),
    "港币": ("港元", 1), "韩元": ("韩元", 1), "卢布": ("卢布", 1), "新台币": ("台币", 1), "台币": ("台币", 1),
    "年": ("年", 1), "月": ("月", 1), "日": ("日", 1), "号": ("日", 1), "天": ("日", 1), "周": ("周", 1),
    "星期": ("周", 1), "小时": ("小时", 1), "钟头": ("小时", 1), "分钟": ("分钟", 1), "秒": ("秒", 1),
    "毫秒": ("秒", "0.001"), "岁": ("岁", 1), "周岁": ("岁", 1), "周年": ("年", 1), "克拉": ("克拉", 1),
}
# Counters between a number and its qualifier (3500人左右, 3000名以上).
_COUNTERS = re.compile(r"\s*[个多余人名位次件家座所条本台辆只种项篇部届倍]{0,2}")
_UNIT = re.compile(r"\s*[个多余]{0,2}(" + "|".join(sorted(map(re.escape, _UNITS), key=len, reverse=True)) + ")")

_APPROX_BEFORE = re.compile(r"(大约|大概|约为|约有|约|将近|接近|近|差不多|估计|估算)\s*$")
_LOWER_BEFORE = re.compile(r"(超过|多于|大于|高于|逾|至少|不少于|不低于|以上的)\s*$")
_UPPER_BEFORE = re.compile(r"(不超过|不到|不足|少于|小于|低于|至多|最多|不多于)\s*$")
_APPROX_AFTER = re.compile(r"^\s*(左右|上下|前后)")
_LOWER_AFTER = re.compile(r"^\s*(多|余|以上|\+)")
_UPPER_AFTER = re.compile(r"^\s*(以下|以内)")

REFUSAL = re.compile(
    r"不知道|不清楚|不确定|不了解|不得而知|找不到|查不到"
    # 无法确定, and with what it cannot be done from in between: 无法从文档中确定, 不能根据所给信息判断
    r"|(无法|不能|未能|难以)[^,.;!?，。；！？]{0,12}?(确定|回答|得知|判断|提供|找到|确认|获知|查到|给出|得出)"
    r"|无从|不详|未知|(信息|资料|数据|材料)不足"
    r"|没有(相关|足够|具体|明确)?的?(信息|资料|数据|记载|记录|提及|提到|找到|说明|提供|给出|涉及)"
    r"|未(提及|提到|找到|给出|提供|说明|记载|查到|涉及)|(文档|文中|材料|上下文|原文|资料)中?(没有|未|并未)"
    # asking for context: 请提供更多上下文, 需要更多背景信息, 您指的是哪一年？
    r"|(请|能否|可否|能不能|麻烦)您?再?(提供|补充|说明|告知|明确)|更多的?(信息|上下文|背景|细节|资料|内容)"
    r"|请问|(您|你)(指的是|是指|说的是)|具体一(些|点)"
    r"|抱歉|对不起|暂无|i don'?t know|i do not know|not sure|cannot|can'?t|unknown|no information|^n/?a$")
GUESS = re.compile(r"可能是|也许是|或许是|大概是|应该是|估计是|猜|似乎是|好像是|i think|probably|maybe")
# 或 starting an alias (或称, 或译), meaning "perhaps" (或许) or opening a bound (或以上, 或更早) does not offer a
# second candidate.
ALTERNATIVES = re.compile(r"或是|抑或|亦或|还是|也可能|或(?!者?(?:[称译作名叫许]|以上|以下|更))|\bor\b")
# A denial: 不是 / 并非 / 而非 / 不在 / 不属于 up to the end of its clause or the 而是 / 但 / 是 that turns it
# (他并不是北京人，而是上海人). 是不是 asks, it does not deny.
DENIAL = re.compile(r"(?<!是)(不是|并非|而非|不在|不属于)(?:(?!而|但|是)[^,;!?:、。\n])+")
LIST_SEPARATORS = re.compile(r"以及|和|与|及|、|,|;")


def _cn_integer(text: str) -> int | None:
    """三千五百 -> 3500, 十五 -> 15, 一亿五千万 -> 150000000, 一九一九 -> 1919, 一千二 -> 1200 (a final digit
    right after 百/千/万/亿 counts in the next lower unit; 一千零二 is 1002); None when it is not a number."""
    if all(ch in _DIGITS for ch in text):
        return int("".join(str(_DIGITS[ch]) for ch in text))
    if text[0] in "百千万亿":
        return None  # 万一, 千万 (as in "千万不要"): not numbers
    if len(text) >= 2 and text[-1] in _DIGITS and text[-1] not in "零〇" and text[-2] in _ELIDED:
        return _cn_integer(text[:-1]) + _DIGITS[text[-1]] * _ELIDED[text[-2]]
    total = section = number = 0
    for ch in text:
        if ch in _DIGITS:
            number = _DIGITS[ch]
        elif ch in _SMALL_UNITS:
            section += (number or 1) * _SMALL_UNITS[ch]
            number = 0
        elif ch == "万":
            section = (section + number) * 10 ** 4
            number = 0
        else:  # 亿
            total = (total + section + number) * 10 ** 8
            section = number = 0
    return total + section + number


def _replace_numeral(match: re.Match) -> str:
    percent, digits, fraction = match.groups()
    text, start, end = match.string, match.start(), match.end()
    before, after = text[start - 1:start], text[end:end + 1]
    alone = not (before.isalnum() and before not in "是为") and not after.isalnum()  # 十, 答案是三。
    if len(digits) == 1 and not (percent or fraction or alone or before == "第" or after in _MEASURE_WORDS):
        return match.group(0)
    if digits == "一" and before in _NOT_A_COUNT:  # 哪一年, 同一年, 唯一: "which / the same / only", not 1
        return match.group(0)
    if before.isdigit() and digits[0] in "万亿":  # 1.2万 is handled with the Arabic number
        return match.group(0)
    value = _cn_integer(digits)
    if value is None:
        return match.group(0)
    out = str(value)
    if fraction:
        out += "." + "".join(str(_DIGITS[ch]) for ch in fraction[1:])
    return out + ("%" if percent else "")


def chinese_numerals_to_arabic(text: str) -> str:
    """Rewrite Chinese numerals as Arabic ones: 三千五百 -> 3500, 百分之五 -> 5%, 三点五 -> 3.5, 第七届 -> 第7届."""
    return _CN_NUMERAL.sub(_replace_numeral, text)


def clean(text: str) -> str:
    """NFKC (full width -> half width), lower case, traditional -> simplified, unit synonyms, Arabic numerals."""
    text = unicodedata.normalize("NFKC", text).lower().translate(_TRADITIONAL)
    for variant, canonical in _UNIT_SYNONYMS:
        text = text.replace(variant, canonical)
    if any(ch.isdigit() for ch in text):
        text = _LATIN_UNIT.sub(lambda m: _LATIN_UNITS[m.group(1)], text)
    return chinese_numerals_to_arabic(text)


_NOT_KEY = re.compile(r"[\W_]+")


def key(cleaned: str) -> str:
    """The comparison key of cleaned text: no punctuation, symbols, separators (· • - /) or spaces."""
    return _NOT_KEY.sub("", cleaned)


@dataclass(frozen=True)
class Number:
    value: Decimal
    step: Decimal      # the unit of the last written digit: 3518.17 -> 0.01, 1.2万 -> 1000
    kind: str = "exact"  # exact | approx | lower (at least) | upper (at most)
    unit: str | None = None  # canonical unit (米, 元, 年, %); value and step are in it
    scale: Decimal = Decimal(1)  # the value of a written 1: 1.2万 -> 10000, 3.5厘米 -> 0.01 (米)

    def same_unit(self, other: "Number") -> bool:
        return self.unit is None or other.unit is None or self.unit == other.unit

    def matches(self, reference: "Number") -> bool:
        """Equal at the coarser of the two precisions, the answer's counting only down to the reference's written
        units, and in the same unit when both name one. Reference 3518.17: 3518 and 3518.2 match, 3520 and 3.5千
        do not; reference 1.24亿: 1.2亿 matches, 1.2万 matches 12000 but not 12345."""
        tolerance = max(reference.step, min(self.step, reference.scale)) / 2
        return self.same_unit(reference) and abs(self.value - reference.value) <= tolerance

    def consistent_with(self, reference: "Number") -> bool:
        """A vague statement (约 3500, 超过 3000) that the reference does not contradict."""
        if not self.same_unit(reference):
            return False
        if self.kind == "lower":
            return reference.value >= self.value - self.step / 2
        if self.kind == "upper":
            return reference.value <= self.value + self.step / 2
        return abs(self.value - reference.value) <= abs(reference.value) / 10 or self.matches(reference)


def _qualifier(text: str, start: int, end: int, unit_end: int) -> str:
    """From the words before the number and after it or after its unit (3000多人, 3500人左右)."""
    before, afters = text[max(0, start - 4):start], (text[end:end + 3], text[unit_end:unit_end + 3])
    if _UPPER_BEFORE.search(before) or any(_UPPER_AFTER.search(a) for a in afters):
        return "upper"
    if _LOWER_BEFORE.search(before) or any(_LOWER_AFTER.search(a) for a in afters):
        return "lower"
    if _APPROX_BEFORE.search(before) or any(_APPROX_AFTER.search(a) for a in afters):
        return "approx"
    return "exact"


def _negative(text: str, start: int, unit: str | None) -> bool:
    """负5, 零下5度, and years before the common era: 公元前221年, 西元前221年, 前221年 (but not 在前3年)."""
    before = text[max(0, start - 3):start]
    if before.endswith(("负", "零下", "公元前", "西元前")):
        return True
    return unit == "年" and before.endswith("前") and (len(before) < 2 or not before[-2].isalnum()
                                                       or before[-2] in "是于为约")


def find_numbers(cleaned: str) -> list[Number]:
    """The numbers in cleaned text with their precision, unit and qualifier; a leading minus, 负, 零下 or 公元前
    is a sign."""
    out = []
    for m in _ARABIC.finditer(cleaned):
        glued = len(cleaned[m.start():m.end()].rstrip())
        if m.start() + glued < len(cleaned) and "a" <= cleaned[m.start() + glued] <= "z":
            continue  # 5g, 3m: letters glued to the number that are not a unit we know (1998 the: a number)
        sign, integer, fraction, multiplier, percent = m.groups()
        digits = integer.replace(",", "") + (fraction or "")
        value = Decimal(digits)
        step = Decimal(1).scaleb(-(len(fraction) - 1)) if fraction else Decimal(1)
        if multiplier:
            value *= _MULTIPLIERS[multiplier]
            step *= _MULTIPLIERS[multiplier]
        scale = Decimal(_MULTIPLIERS[multiplier]) if multiplier else Decimal(1)
        unit, unit_end = ("%", m.end()) if percent else (None, _COUNTERS.match(cleaned, m.end()).end())
        spelled = None if percent else _UNIT.match(cleaned, m.end())
        if spelled:
            unit, factor = _UNITS[spelled.group(1)]
            value, step, scale = value * Decimal(factor), step * Decimal(factor), scale * Decimal(factor)
            unit_end = spelled.end()
        if sign or _negative(cleaned, m.start(), unit):
            value = -value
        out.append(Number(value, step, _qualifier(cleaned, m.start(), m.end(), unit_end), unit, scale))
    return out
