"""Chinese answer normalization for grading: comparison keys, Chinese numerals, numbers with their precision,
and the cue phrases of refusals, guesses and competing candidates.

Everything here is a pure function of strings. The rule judge's version (factual/version.py's
`NORMALIZER_VERSION`, in every signature) names this module's rules: bump it when any table or rule below
changes, because grades may change with it.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from operator import attrgetter

import opencc

from chimdqa_eval.factual import vocabulary  # the rule judge's word lists, data/*.txt and units.tsv
from chimdqa_eval.factual.gate import FromStarts, Hinted, Scanned, gated  # long cue lists: tried only where a cue can begin

# Traditional -> simplified by OpenCC's maintained phrase tables (t2s), on answers and references alike.
_T2S = opencc.OpenCC("t2s")
_JP2T = opencc.OpenCC("jp2t")  # Japanese shinjitai to traditional: 勲 -> 勳, then t2s -> 勋


def from_japanese(cleaned: str) -> str:
    """Cleaned text with Japanese kanji forms read as Chinese ones and の as 之 (高畑勲 -> 高畑勋, 水の呼吸 -> 水之呼吸)."""
    return _T2S.convert(_JP2T.convert(cleaned)).replace("の", "之")

# Unit spellings that mean the same thing; 千米 and 千克 become words of their own so that no numeral or
# multiplier reads their 千 (二十千米 is 20 km, not 20 + 1000).
_UNIT_SYNONYMS = (("千米", "公里"), ("千克", "公斤"), ("摄氏度", "°c"), ("华氏度", "°f"))

_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8,
           "九": 9}
_SMALL_UNITS = {"十": 10, "百": 100, "千": 1000}
# 一千二 is 1200, 三万五 35000: the unit of a final digit that follows one of these without a 零.
_ELIDED = {"百": 10, "千": 100, "万": 1000, "亿": 10 ** 7}
_CN_NUMERAL = gated(r"(百分之)?([零〇一二两三四五六七八九十百千万亿]+)(点[零〇一二三四五六七八九]+)?")
# A single numeral character is only a number standing alone, next to a measure word or unit or after 第 (not
# 一样, 统一, 十分).
# Longer runs of numeral characters are not read as numbers: no number is written so, and int() refuses
# beyond 4,300 digits.
_LONGEST_NUMERAL = 64
_NOT_A_COUNT = set("哪某每同这那任唯统之其")
MEASURE_CHARS = vocabulary.chars("measure_chars")  # data/counters.txt
_MEASURE_WORDS = set(MEASURE_CHARS)
# 一 before a counter after another word is the indefinite article (作为一个AI, 是一位诗人, 不止一座), not an
# answer of 1; after these characters (or none) it counts (有一个, 共一座, 只一次). Units and dates (一日) count.
_COUNT_BEFORE = set("是有共只仅约近达第")
_ARTICLE_COUNTERS = set("个位名座种本部条件只家所项篇首头匹张台辆架艘门场局枚颗粒支队份句")
# Units a number may carry: spelling -> (canonical unit, factor to it[, offset added first]). Two numbers with
# different canonical units never match (3小时 / 3分, 15英镑 / 15美元); a number without a listed unit matches
# any. Counters (个, 人, 次) and ambiguous words (度, 分) are not listed. Imperial units, °F and kelvin are
# converted (212°F = 100°C, 26.2英里 = 42.2公里), and a match through them is never certain (CONVERTED).
_UNITS, CONVERTED = vocabulary.units()  # data/units.tsv
_UNIT_WORDS = "|".join(sorted(map(re.escape, _UNITS), key=len, reverse=True))
# Arabic numbers (not in a code after a hyphen: GPT-3.5, F-16): thousands separators, decimals, a Chinese
# multiplier (1.2千, 3千万; not 5百分点), a percent sign. Digits glued to Latin letters (V08AA04, H2O, 5G) are codes, not quantities, unless the letters are a
# unit (see _LATIN_UNITS). 10亿1000万 is one number.
# (FromStarts: a match begins with its minus or a digit, which re cannot skip ahead to past the lookbehinds)
_ARABIC = FromStarts(re.compile(r"(?<![a-z0-9.√])(?<![a-z]-)(-)?(\d{1,3}(?:,\d{3})+(?!\d)|\d+)(\.\d+)?\s*"
                     r"(?:(万亿|千万|百万|亿|万|千(?![瓦赫焦卡])|百(?!分))(?:(?<=[亿万])(\d+)(千万|百万|万|千|百)?"
                     r"(?:(?<=亿\d\d\d\d万)(\d{1,4}(?:千|百)?)(?![\d.千百万亿]))?)?)?\s*(%)?"), r"[-\d]")
_MULTIPLIERS = {"万": 10 ** 4, "亿": 10 ** 8, "万亿": 10 ** 12, "千万": 10 ** 7, "百万": 10 ** 6, "千": 1000,
                "百": 100}
# Latin unit symbols after a number, rewritten in Chinese so that 10kg and 10公斤 read alike.
_LATIN_UNITS = {"km": "公里", "kg": "公斤", "mg": "毫克", "cm": "厘米", "mm": "毫米", "ml": "毫升", "°c": "°c",
                "kwh": "千瓦时", "kw": "千瓦", "mw": "兆瓦", "gw": "吉瓦", "hz": "赫兹", "khz": "千赫", "mhz": "兆赫",
                "ghz": "吉赫", "v": "伏特", "vrms": "伏特", "kv": "千伏", "kj": "千焦", "j": "焦耳"}
# (after lower-casing, mw / mhz are read as MW / MHz, the usual ones in factual QA)
_LATIN_UNIT = re.compile(r"(?<=\d)\s*(" + "|".join(_LATIN_UNITS) + r")(?![a-z0-9])"
                         r"|(?<=\d)\s+(m|g|k|w)(?![a-z/])")  # these letters only after a space: 5g is a code
# (v is listed above: 12V and 220V are volts glued or not, while 3v3 is no voltage)
_ONE_LETTER_UNITS = {"m": "米", "g": "克", "k": "开尔文", "w": "瓦"}
# Counters between a number and its qualifier (3500人左右, 3000名以上).
_COUNTERS = re.compile(r"\s*[个多余人名位次件家座所条本台辆只种项篇部届倍任对双]{0,2}")
# 元 in a word is no currency: 14个元字符, 元素, 元件
_UNIT = re.compile(r"\s*[个多余]{0,2}(" + _UNIT_WORDS + r")(?<!元(?=[字素件器音数组胞老首帅宵旦]))"
                   r"(?<!码(?=[位率字头元点数段表]))")  # 码位, 码率: code points and rates, not yards
_UNIT_AHEAD = re.compile(_UNIT_WORDS)
# What may follow a plain number without being a unit we do not know: counters, qualifiers, particles, verbs
# and prepositions that commonly follow a number in a sentence.
_PLAIN_FOLLOWERS = set("吧呢啊吗呀啦哦嘛号个多余人名位次件家座所条本台辆只种项篇部届倍任左右上下前后以至到和与或及的是在为了年月日号"
                       "起止之间内外中时期末初底来而并也就才都被由将向于从把对比点分成度")
_LATIN_AFTER = re.compile(r"\s?([a-z]{1,5})(?![a-z])")
# English words that follow a number in a sentence without being its unit (created in 2004 as a derivative…).
_ENGLISH_AFTER_NUMBER = frozenset("and or the in to by of at a s as for with when was is are were on from after "
                                  "until since which that it its he she they we but so into over while then "
                                  "than if has had have be been".split())
_UNKNOWN_UNIT = re.compile(r"[^\W\d的是在为了和与或及,。吧呢啊吗呀啦哦嘛]{1,4}")
# 2小时08分36秒, 1分15秒: one duration, in seconds.
# (?=[\d\s]): every match with a part starts with a digit or a space; without it the pattern, all of it optional,
# matched the empty string at every place of a text, and _durations looked at each of those matches. (Not
# (?=\s*\d): that looks over a whole run of spaces from each of its places, quadratic in the run's length.)
_DURATION = re.compile(r"(?=[\d\s])(?:(?<![\d.])(?:(\d+)\s*个?(?:小时|钟头))?\s*(?:(\d+)\s*分(多)?钟?)?\s*"
                       r"(?:(\d+(?:\.\d+)?)\s*秒)?|(?<![\d:])(\d{1,2}):(\d{2}):(\d{2}(?:\.\d+)?)(?![\d:]))")

_APPROX_BEFORE = re.compile(r"((?:大约|大概|差不多|估计|估算)(?:是|为|在|有)?|约为|约有|约|将近|接近|近|左右为)\s*$")
_LOWER_BEFORE = re.compile(r"(超过|多于|大于|高于|逾|至少|不少于|不低于|不止|不小于|以上的)\s*$")
_UPPER_BEFORE = re.compile(r"(不超过|不到|不足|少于|小于|低于|至多|最多|不多于|不大于|不高于)\s*$")
_APPROX_AFTER = re.compile(r"^\s*(左右|上下|前后)")
_LOWER_AFTER = re.compile(r"^\s*个?(多|余|出头|以上|\+)")
_UPPER_AFTER = re.compile(r"^\s*(以下|以内)")
# Whether any of the cues above is there at all (one of the patterns matches where this does).
_ANY_BEFORE = re.compile("|".join(f"(?:{p.pattern})" for p in (_APPROX_BEFORE, _LOWER_BEFORE, _UPPER_BEFORE)))
_ANY_AFTER = re.compile("|".join(f"(?:{p.pattern})" for p in (_APPROX_AFTER, _LOWER_AFTER, _UPPER_AFTER)))
# 1850年到1860年之间, 1850-1860年: a range. 19世纪90年代, 1890年代, 19世纪末: ranges of years.
_RANGE_JOIN = re.compile(r"\s*(到|至|~|～|-|—|–)\s*")
_RANGE_BETWEEN = re.compile(r"-?[\d.,]+\s*(?:万亿|千万|百万|亿|万|千|百)?\s*(?:%|" + _UNIT_WORDS + r")?\s*[到至~～\-—–]\s*")
_DECADE = FromStarts(re.compile(r"(?<!\d)(?:(公元前)?(\d{1,2})世纪(?:(\d)0年代|(头10年|最初10年|头十年|最初十年|初期|初|前期|上半叶|中叶|中期|下半叶|后期|末期|末))?"
                     r"|(\d{2,3}0)年代|(上个?世纪)?(\d)0年代)(初期|初|前期|中期|中叶|后期|末期|末)?"), r"[公上\d]")
# Parts of a decade, generous at their edges (readers differ on whether 1954 is 50年代初): 50年代初 = 1950..1954.
_DECADE_PART = {"初": (0, 4), "初期": (0, 4), "前期": (0, 4), "中期": (2, 7), "中叶": (2, 7), "后期": (5, 9),
                "末期": (5, 9), "末": (5, 9)}
_CENTURY_PART = {"头10年": (0, 10), "最初10年": (0, 10), "头十年": (0, 10), "最初十年": (0, 10), "初": (0, 30), "初期": (0, 30), "前期": (0, 40), "上半叶": (0, 50), "中叶": (30, 70),
                 "中期": (30, 70), "下半叶": (50, 100), "后期": (60, 100), "末": (70, 100), "末期": (70, 100)}

REFUSAL = Scanned(  # (gate.py: tried only where one of its alternatives can begin, each place with those alone)
    r"不知道|不(太|很|大|是很|能)?(清楚|确定(?!性)|了解|熟悉|记得|肯定)|不得而知|找不到|查不到|记不(清|得|住|太清|起来)|想不起"
    r"|答不(上|出)|回答不了|说不(准|好|清)|拿不准|没(有)?(能)?(查到|找到|检索到|搜到)"
    r"|超出(了)?(我的)?(知识|能力|所知|了解)|超出[^,.;!?，。；！？]{0,8}范围|知识(库|范围)[^,.;!?，。；！？]{0,6}(没有|不包含|未|不足)"
    r"|不(太|很|大)?有把握|不敢(肯定|确定|断言|说|猜)|乱说|乱猜|瞎猜|一概而论|忘(了|记)|只记得|没(有)?提(到|及)?"
    r"|不(作|予)(作答|回答|答复|置评|评论)|不作答|不便(回答|讨论|透露|评论|作答|谈论)|不回答|不想给你?一个错误"
    r"|(给|说|答|写|提供)不(出|了)|不(硬|瞎|乱)(答|说|猜|编)|(信息|记忆|印象|掌握|了解)[^,.;!?，。；！？]{0,6}不(太|够|很)?(可靠|准确|全面)"
    r"|(记|印象)不(准|深|太准)|not familiar|no reliable|don'?t have (reliable|enough|accurate)"
    r"|不好说|很难说|无可奉告|没听说过|没有?这方面的"
    # 无法确定, and with what it cannot be done from in between: 无法从文档中确定, 不能根据所给信息判断
    r"|(无法|不能|未能|难以|没法|没办法)[^,.;!?，。；！？]{0,12}?(确定|回答|得知|判断|提供|找到|确认|获知|查到|给出"
    r"|得出|核实|核对|验证|查证|获取|知道|考证|断定|计算|算出|保证|答复|作答|告诉|说出|说清|回忆|想起|下结论|断言"
    r"|说(?=是?哪|谁|具体|准))"  # 我没法说哪个是标准符号
    r"|一无所知|不晓得|说不上来|难住|不(太)?懂|(并)?不掌握|帮不了|超纲|我不会(?=[,.;!?，。；！？]|$)|(印象|记忆)(里|中)?没有"
    r"|no idea|don'?t recall|do not recall|beyond what i know|not something i know|(do not|don'?t) have\b"
    r"|没有?掌握|不好回答|乱讲|瞎说|瞎讲|不想给[^,.;!?，。；！？]{0,12}(错误|有误|不准确|不对)"
    r"|(最好|建议)(您|你)?[^,.;!?，。；！？]{0,6}(问一下|问问|请教|咨询)"
    r"|无从|不详|未知|(信息|资料|数据|材料)(不足|有限|缺乏)|缺乏(相关|足够|可靠)"
    r"|没有(相关|足够|具体|明确|可靠|确切)?的?(信息|资料|数据|记载|记录|提及|提到|找到|说明|提供|给出|涉及)"
    r"|(我|这里|手头|目前|中|里)[^,.;!?，。；！？]{0,4}没有[^,.;!?，。；！？]{0,16}(信息|资料|数据|记载|记录)"  # 我这里没有…的数据
    r"|未(提及|提到|找到|给出|提供|说明|记载|查到|涉及)|(文档|文中|材料|上下文|原文|资料)中?(没有|未|并未)"
    # asking for context: 请提供更多上下文, 需要更多背景信息, 您指的是哪一年？, 建议查阅相关资料
    r"|(请|能否|可否|能不能|麻烦)您?再?(提供|补充|说明|告知|明确)|更多的?(信息|上下文|背景|细节|资料|内容)"
    r"|请问|(您|你)(指的是|是指|说的是|问的是)|具体一(些|点)|建议(您|你)?(直接|最好|再)?(查阅|查询|咨询|参考|核实|查看|核对|查证|看)"
    r"|抱歉|对不起|暂(时)?(无|没有)|i don'?t know|i do not know|not sure|\bcannot\b|\bcan'?t\b|\bunknown\b|no information"
    r"|(do not|don'?t) have (any )?(information|data|details|knowledge)|unable to|not (able to|aware|certain)|^n/?a$"
    r"|not (entirely |completely |totally |quite |fully |100% )?(sure|certain|confident)"
    # The grammar of not knowing, beside the phrases: a verb with a negated result (查不出来, 答不好, 想不起),
    # knowledge said to be thin (了解得很有限, 知之甚少, 记忆模糊), confidence or grounds lacking (没有十足把握,
    # 缺少足够的依据), being beyond what one knows (超出了我目前的知识), and the English forms of the same.
    r"|(?:答|说|讲|查|找|搜|记|回忆|给)不(?:出|到|上|了|好|清|准|起|住)|想不(?:出|起)|难(?:倒|住)"
    r"|(?:了解|掌握|知道|所知|认识|印象|记忆)(?:得|的)?(?:很|非常|十分|比较|实在|太|极其|相当)?"
    r"(?:有限|不多|甚少|很少|太少|不深|模糊)|知之(?:甚少|不多)"
    r"|没有?(?:十足|足够|太大|很大|多大|完全|绝对|什么|多少)?的?把握|不想(?:随便|随意|贸然|轻易)"
    r"|(?:无法|没法|没办法|不能)给(?:你|您)?[^,.;!?，。；！？]{0,6}?(?:准确|确切|肯定|可靠)的?(?:答案|回答|信息)"
    r"|不(?:太|大|是很)?熟(?![练知])|下定论|妄下"
    r"|不(?:太|大)?敢[^,.;!?，。；！？]{0,3}(?:下结论|断定|保证|妄言|说|猜|答|回答|肯定|确定)"  # 不敢随便说
    r"|缺(?:少|乏)[^,.;!?，。；！？]{0,8}(?:依据|根据|资料|材料|信息|数据|知识|证据)"
    r"|超出[^,.;!?，。；！？]{0,8}(?:知识|能力|所知|了解|掌握)"
    r"|不(?:太|大|是很)?好(?:讲|判断|答|下判断|下结论|确定|给出|给|作答|下)"
    r"|没有?(?:任何|什么)?印象|没有?听(?:说)?过|(?:没有?|未)收录"
    r"|\b(?:don['’]?t|do not|doesn['’]?t|didn['’]?t|can['’]?t|cannot|couldn['’]?t|could not|not)\s+"
    r"(?:[a-z]+\s+){0,2}?(?:know|recall|remember|find|answer|say|tell|confirm|verify|sure|certain|confident|able)\b"
    r"|\b(?:beyond|outside) (?:my|what i)\b|\bno (?:clue|idea|record|records)\b|\brather not (?:guess|answer|say)"
    r"|\black(?:ing)? (?:the |any |enough |reliable )*(?:information|data|knowledge|details|sources)"
    r"|(?:记|记得|印象|记忆)(?:得)?不(?:太|很|大)?(?:准|清|牢)|不(?:太|很|大|是很)能(?:确定|肯定|回答|说清|判断)"
    r"|不在我的[^,.;!?，。；！？]{0,6}(?:知识|记忆|资料|数据|范围)"
    r"|(?:很|完全|比较|有些|有点|十分)陌生|没有?(?:研究|了解|接触|关注|读|看)过|尚无定论|没有定论|莫衷一是"
    r"|(?:对我来说|对我而言)[^,.;!?，。；！？]{0,4}太难|太难了"
    r"|(?:无法|不能|没法|没办法)[^,.;!?，。；！？]{0,6}?(?:背出|背下|列出|记住)"
    r"|不想?误导"
    r"|建议[^,.;!?，。；！？]{0,30}?(?:查阅|查询|核对|核实|查证|查看|确认一下|参考|查一下|查一查|搜一下|搜索一下|检索)"
    r"|(?:提供|给我|补充|多给)[^,.;!?，。；！？]{0,8}(?:背景|上下文|线索|细节)"
    r"|对不上号?|怕[^,.;!?，。；！？]{0,2}?(?:说|记|弄|答|搞|写|拼|给|算)错|(?:容易|常常|经常|总是|老是)(?:记|说|弄|搞|答)(?:错|混)"
    r"|(?:怕|担心|以免|免得|避免)(?:[^,.;!?，。；！？]{0,6}?误导"  # 以免误导, 怕拼错误导你, 怕给你错误的信息
    r"|[^,.;!?，。；！？]{0,8}?(?:错误|有误|不准确|不对)的?(?:信息|答案|说法|内容))"
    r"|\bnot in a position to\b|\bunsure\b|\bnot something i\b|\b(?:need|needs|have) to (?:check|verify|look it up)"
    r"|(?:确定|判断|确认|肯定|断定)不(?:了|下来)|没有?(?:准确|确切|精确|可靠)的?(?:数字|数值|答案|数据|信息|资料)"
    r"|需要先?(?:确认|核实|了解清楚)一下|答案(?:可能|也|就|会)*(?:不一样|不同)")
# A guess: the answer leans towards a candidate (可能是, 我记得是, 应该在).
_NOT_GUESSING = r"(?<![不别])(?<![不别没].)(?<![不别没]..)"  # 不乱猜, 不敢瞎猜, 不想瞎猜 refuse to guess
_GUESS = (r"(可能|也许|或许|大概|应该|估计|似乎|好像|印象中|(?<![不没只])(?<![不没].)记得|" + _NOT_GUESSING
          + r"猜测?|疑似)"
          r"(是|为|在|于|叫|属于|位于)|" + _NOT_GUESSING + r"猜|倾向于|i think|i believe|probably|maybe|perhaps|likely")
# (Hinted, gate.py: what every match of GUESS, HEDGE and ALTERNATIVES holds, which re skips ahead to; most texts
# hold none, and the gated patterns were tried at every place of them.)
_GUESS_WORDS = r"可能|也许|或许|大概|应该|估计|似乎|好像|印象中|记得|猜|疑似|倾向于|i think|i believe|probably|maybe|perhaps|likely"
GUESS = Hinted(gated(_GUESS), _GUESS_WORDS)
# A hedge around an answer, even a right one.
HEDGE = Hinted(gated(_GUESS + r"|不(太|很|大)?(确定(?!性)|肯定)|据我所知|如果我没记错|not sure|not certain"),
               _GUESS_WORDS + r"|确定|肯定|据我所知|如果我没记错|not sure|not certain")
# 或 starting an alias (或称, 或译), meaning "perhaps" (或许) or opening a bound (或以上, 或更早) does not offer a
# second candidate.
# Two named candidates (A和B二者之一, A和B两家之一, 不是2001年就是2006年, 两个都有可能), not one of a role (创办人之一).
NAMED_PAIR = (r"[、和与或][^,;。]{1,12}(?<![家员士手师])(?<![^二两2]者)(?<![^二两2]人)之一"
              r"|[、和与或][^,;。]{1,12}(?:两|二|2)[家个位者人种所座国支部本首条门]?(?:之一|中的?一[家个位种所座国支部本首条门者人])"
              r"|不是[^,;。]{1,12}就是|(?:两|二|2)(?:个|者)?都有可能")  # A和B两家之一, A和B两家中的一家
ALTERNATIVES = Hinted(gated(r"或是|抑或|亦或|还是|也可能|或(?!(?:[称译作名叫许]|者[称译名叫许]|者?以上|者?以下|者?更))|\bor\b"
                          r"|(?<=[\u4e00-\u9fff]{2})/(?=[\u4e00-\u9fff]{2})(?!小时|分钟|公里|千克|公斤|立方|平方|摩尔)"  # 千卡/千克: a rate
                          r"|(?<=\d{4})/(?=\d{4}(?![\d/]))"
                          r"|" + NAMED_PAIR + r"|(?:都|皆)有可能"),
                      r"或|还是|也可能|or|/|之一|中的?一|就是|有可能")
# A denial: 不是 / 并非 / 而非 / 不在 / 不属于 up to the end of its clause or the 而是 / 但 / 是 that turns it
# (他并不是北京人，而是上海人). 是不是 asks, it does not deny.
DENIAL = gated(r"(?<!是)(不是(?![^,;!?:、。\n]*就是)|并非|而非|不在|不属于)(?:(?!而|但|是)[^,;!?:、。\n])+"
                    r"|(?<![a-z])(?:not|isn'?t|wasn'?t)\s+(?!sure|certain|entirely|quite|fully|familiar|able|aware|confident"
                    r"|100%|only|just)[^,;!?:。.—\n]+?(?=\s+(?:but|rather)\b|[,;!?:。.—\n]|$)")  # Not Bsharri — …
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
    measured = (after in _MEASURE_WORDS or _UNIT_AHEAD.match(text, end) is not None
                or (after == "分" and text[end + 1:end + 2] in "钟零一二两三四五六七八九十"))  # 一分十五秒, not 十分重要
    if len(digits) == 1 and not (percent or fraction or alone or before == "第" or measured):
        return match.group(0)
    if digits == "一" and (before in _NOT_A_COUNT
                          or (after in _ARTICLE_COUNTERS and before.isalpha() and before not in _COUNT_BEFORE)):
        return match.group(0)  # 哪一年, 同一年, 唯一, 作为一个: "which / the same / only / a", not 1
    if before.isdigit() and digits[0] in "万亿":  # 1.2万 is handled with the Arabic number
        return match.group(0)
    if len(digits) > _LONGEST_NUMERAL:  # a row of numerals no number is written with (一一一…): kept as text
        return match.group(0)
    value = _cn_integer(digits)
    if value is None:
        return match.group(0)
    out = str(value)
    if fraction:
        out += "." + "".join(str(_DIGITS[ch]) for ch in fraction[1:])
    return out + ("%" if percent else "")


_NUMERAL_CHAR = re.compile("[零〇一二两三四五六七八九十百千万亿]")  # (百分之 begins with one too)


def chinese_numerals_to_arabic(text: str) -> str:
    """Rewrite Chinese numerals as Arabic ones: 三千五百 -> 3500, 百分之五 -> 5%, 三点五 -> 3.5, 第七届 -> 第7届.
    (_CN_NUMERAL.sub(_replace_numeral, text), each match found from the next numeral character, which re skips
    ahead to: a match begins at every numeral character and only there, and the gated pattern, opening with a
    lookahead, was tried at every place of the text. Most texts hold no numeral character at all.)"""
    at = _NUMERAL_CHAR.search(text)
    if at is None:
        return text
    pieces, done = [], 0
    while at is not None:
        m = _CN_NUMERAL.match(text, at.start())
        pieces += (text[done:m.start()], _replace_numeral(m))
        done = m.end()
        at = _NUMERAL_CHAR.search(text, done)
    pieces.append(text[done:])
    return "".join(pieces)


# (?<!\d): a match only starts where a digit run does (the same matches; a long run of digits is not rescanned
# from each of its digits, which took seconds on a 20,000-digit answer).
_SCIENTIFIC = re.compile(r"(?<![\d.])(?:(\d+(?:\.\d+)?)\s*[×x*]\s*)?10\s*\^\s*(-?\d{1,2})(?!\d)")  # 10^8 alone too
_MULTIPLIER_OF = {0: "", 4: "万", 8: "亿", 12: "万亿"}


def _scientific(m: re.Match) -> str:
    """9.46×10^12 -> 9.46万亿, 3×10^5 -> 30万, 1.6×10^-19 -> 0.00000000000000000016: the mantissa's digits keep
    their precision."""
    exponent, mantissa = int(m.group(2)), Decimal(m.group(1) or 1)
    if exponent > 15:
        return m.group(0)
    if exponent < 0:  # 6.62607015×10^-34: the decimal itself, its digits as written
        return format(mantissa.scaleb(exponent), "f")
    return format(mantissa.scaleb(exponent % 4), "f") + _MULTIPLIER_OF[exponent - exponent % 4]


# 十分之一, 万分之二, 四分之三: a share with an exact decimal (0.1; a percentage reference reads it as 10%). 百分之
# is read with the numerals; 三分之一 has no exact decimal and stays as written; only a share said as a share
# (十分之一以上, 四分之三的人), not 四分之一圈 or 四分之一决赛.
_SHARE = re.compile(r"(?<![零〇一二两三四五六七八九十百千万亿\d])([二四五十千万])分之([零〇一二两三四五六七八九十百千]+|\d+(?:\.\d+)?)"
                    r"(?=以上|以下|左右|的|多|强|弱|[^\u4e00-\u9fff]|$)")
_SHARE_OF = {"二": 2, "四": 4, "五": 5, "十": 10, "千": 1000, "万": 10000}
# 七成, 十成: tenths, when followed by what follows a share (七成的, 三成以上, 约两成。), not 一成不变 or 七成新.
_TENTHS = re.compile(r"(?<![零〇一二两三四五六七八九十百千万亿\d])([一二两三四五六七八九十])成(?=[以左上多的,;。!?\n]|$)")
# English scale words after a number (1.5 million, 3 bn): the Chinese multiplier. (A B glued to a number is
# not read as billions: 2B类, 2B铅笔.)
_SCALE_WORD = re.compile(r"(?<![a-z0-9.,])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)\s*"
                         r"(trillion|billion|million|thousand|bn)(?![a-z0-9])")  # 1,500 million
_SCALE_OF = {"trillion": (0, "万亿"), "billion": (1, "亿"), "bn": (1, "亿"), "million": (2, "万"), "thousand": (0, "千")}
_PER_MILLE = re.compile(r"(\d+(?:\.\d+)?)\s*‰")


_MONTH_OF = {name: i for i, names in enumerate(("jan january", "feb february", "mar march", "apr april", "may",
                                                  "jun june", "jul july", "aug august", "sep sept september",
                                                  "oct october", "nov november", "dec december"), 1)
             for name in names.split()}
_MONTH = r"(" + "|".join(sorted(_MONTH_OF, key=len, reverse=True)) + r")\.?"
# English dates: November 30, 2022 / 30 November 2022 / November 2022 -> 2022年11月30日 / 2022年11月.
_ENGLISH_DATES = (
    (re.compile(rf"\b{_MONTH}\s+([1-9]|[12]\d|3[01])(?:st|nd|rd|th)?,?\s+(\d{{4}})\b"),
     lambda m: f"{m[3]}年{_MONTH_OF[m[1]]}月{m[2]}日"),
    (re.compile(rf"\b([1-9]|[12]\d|3[01])(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH},?\s+(\d{{4}})\b"),
     lambda m: f"{m[3]}年{_MONTH_OF[m[2]]}月{m[1]}日"),
    (re.compile(rf"\b{_MONTH},?\s+(\d{{4}})\b"), lambda m: f"{m[2]}年{_MONTH_OF[m[1]]}月"),
    # October 16 / 16 October without a year: 10月16日 (not may or march, as often verbs or nouns: Long March 7)
    (re.compile(rf"\b(?!may\b|march\b){_MONTH}\s+([1-9]|[12]\d|3[01])(?:st|nd|rd|th)?\b(?![.,]?\d)"),
     lambda m: f"{_MONTH_OF[m[1]]}月{m[2]}日"),
    (re.compile(rf"\b([1-9]|[12]\d|3[01])(?:st|nd|rd|th)?\s+(?:of\s+)?(?!may\b|march\b){_MONTH}\b"),
     lambda m: f"{_MONTH_OF[m[2]]}月{m[1]}日"),
)


# English number words from two (one is as often a pronoun: one of the…).
_ENGLISH_NUMBER = {w: i for i, w in enumerate("two three four five six seven eight nine ten eleven twelve thirteen "
                                              "fourteen fifteen sixteen seventeen eighteen nineteen twenty".split(), 2)}
_ENGLISH_NUMBER_WORD = re.compile(r"(?<!-)\b(" + "|".join(_ENGLISH_NUMBER) + r")\b(?!-)")  # not twenty-two


# Every month name begins with one of these: a text without any has no English date for the patterns to read (the
# rewrites write digits, never a month name), and most texts are not scanned five times for one.
_MONTH_HINT = re.compile(r"jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec")


def _english_dates(text: str) -> str:
    if not _MONTH_HINT.search(text):
        return text
    for pattern, written in _ENGLISH_DATES:
        text = pattern.sub(written, text)
    return text


def _share(m: re.Match) -> str:
    numerator = m.group(2) if m.group(2)[0].isdigit() else _cn_integer(m.group(2))
    if numerator is None:
        return m.group(0)
    return format((Decimal(numerator) / _SHARE_OF[m.group(1)]).normalize(), "f")


def _scale_word(m: re.Match) -> str:
    shift, multiplier = _SCALE_OF[m.group(2)]
    return format(Decimal(m.group(1).replace(",", "")).scaleb(shift), "f") + multiplier


_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")
_SUPERSCRIPT_POWER = re.compile(r"(?<=[1１][0０])([⁻⁺]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+)")
_SPACED_DIGITS = re.compile(r"(?<![\d.,])\d{1,3}(?: \d{3})++(?:\.\d+)?(?: ?\d)?")  # one pass, no backtracking
# What every match of the two above holds: a superscript digit; a digit, a space and a digit. Both open with a
# lookbehind, which re tries at every place of a text; these plain classes it skips ahead to (the same texts are
# rewritten: a text without them has no match).
_SUPERSCRIPT_DIGIT = re.compile("[⁰¹²³⁴⁵⁶⁷⁸⁹]")
_SPACED_HINT = re.compile(r"\d \d")


_SPACED_DIGITS_RE1 = re.compile(r"(?: \d{3}|\.\d+)$")


def _spaced_digits(m: re.Match) -> str:
    """One number of space-grouped digits, unless more digits follow it (a list: 12 345 6)."""
    run = m.group(0)
    return run if run[-1:].isdigit() and (run[-2:-1] == " " or m.end() < len(m.string) and m.string[m.end()].isdigit()
                                          or not _SPACED_DIGITS_RE1.search(run)) else run.replace(" ", "")


# The full-width forms (，？（）：) and the ideographic space as NFKC writes them, replaced before NFKC: a character
# replaced by its own NFKC form leaves the text's NFKC as it was (both decompose alike), and a Chinese text
# without other such characters then passes NFKC's quick check instead of being decomposed and composed again.
_FULL_WIDTH = {code: unicodedata.normalize("NFKC", chr(code)) for code in (0x3000, *range(0xFF01, 0xFF5F))}
_FULL_WIDTH_CHAR = re.compile("[\u3000\uff01-\uff5e]")


def _half_width(text: str) -> str:
    """text.translate(_FULL_WIDTH), one str.replace per full-width character the text holds: translate looks each
    character of a Chinese text up in the table (an int made and hashed for each), a plain class scan finds the
    few there are. (No replacement is itself a full-width character: the order of the replacements is free.)"""
    for ch in set(_FULL_WIDTH_CHAR.findall(text)):
        text = text.replace(ch, _FULL_WIDTH[ord(ch)])
    return text


_CLEAN_RE1 = re.compile(r"(?<=\d)\s*°(?![cf])")
_CLEAN_RE2 = re.compile(r"(?<=[\d度%年月日])\s*~\s*(?=\d)")


@lru_cache(maxsize=4096)  # a reference and its question are cleaned by several readers of one answer
def clean(text: str) -> str:
    """NFKC (full width -> half width), lower case, traditional -> simplified, unit synonyms, Arabic numerals;
    a degree sign without C or F after a number is 度; shares (十分之一 -> 0.1, 5‰ -> 0.005, 七成 -> 70%), English
    scales (1.5 million), English dates (November 30, 2022) and number words (two) are written as the numbers they
    are."""
    if ("0" in text or "０" in text) and _SUPERSCRIPT_DIGIT.search(text):  # 3×10⁸, 10⁻³⁴: the exponent as written
        # with ^ (NFKC would read 10⁸ as 108)
        text = _SUPERSCRIPT_POWER.sub(lambda m: "^" + m.group(1).translate(_SUPERSCRIPTS), text)
    text = _T2S.convert(unicodedata.normalize("NFKC", _half_width(text)).lower()).replace("−", "-") \
        .replace("﹣", "-")
    if " " in text and _SPACED_HINT.search(text):  # 149 597 870 700: digits grouped by spaces (SI style) are one number
        text = _SPACED_DIGITS.sub(_spaced_digits, text)
    for variant, canonical in _UNIT_SYNONYMS:
        text = text.replace(variant, canonical)
    if "°" in text:  # 南纬50°: 50度; 50°c stays a temperature
        text = _CLEAN_RE1.sub("度", text)
    if "~" in text:  # 50度~60度 is 50度到60度 (a tilde between numbers is a range, never a code)
        text = _CLEAN_RE2.sub("到", text)
    if "月" in text:  # the lunar months with names: 正月十五 is 1月15, 腊月初八 is 12月8
        text = _NAMED_MONTH.sub(lambda m: _NAMED_MONTHS[m.group(1)], text)
    if "分之" in text:
        text = _SHARE.sub(_share, text)
    if "成" in text:  # 超过七成的选民: 70%
        text = _TENTHS.sub(lambda m: f"{_DIGITS.get(m.group(1), 10) * 10}%", text)
    if _ASCII_LETTER.search(text) and _NUMBER_WORD_HINT.search(text):  # two -> 2 (Two — the American League…)
        text = _ENGLISH_NUMBER_WORD.sub(lambda m: str(_ENGLISH_NUMBER[m.group(1)]), text)
    if _DIGIT.search(text):
        if "^" in text:  # (an exponent is always written with ^)
            text = _SCIENTIFIC.sub(_scientific, text)
        if _ASCII_LETTER.search(text):  # scale words, English dates and Latin units are all letters
            text = _SCALE_WORD.sub(_scale_word, text) if _SCALE_HINT.search(text) else text
            text = _english_dates(text) if _ASCII_LETTER.search(text) else text
            if _LATIN_UNIT_HINT.search(text):
                text = _LATIN_UNIT.sub(lambda m: _LATIN_UNITS[m.group(1)] if m.group(1) else _ONE_LETTER_UNITS[m.group(2)],
                                       text)
    text = chinese_numerals_to_arabic(text)
    if "‰" in text:
        text = _PER_MILLE.sub(lambda m: format((Decimal(m.group(1)) / 1000).normalize(), "f"), text)
    return text


_MONTHS_SPAN = re.compile(r"(?<![\d.第])(\d{1,6})\s*个月")


def whole_years(cleaned: str) -> str:
    """A span of whole years said in months written in years (12个月 -> 1年, 24个月 -> 2年; 18个月 and 第12个月
    stay): the judge reads answers so, and a reference both ways."""
    def in_years(m: re.Match) -> str:
        months = int(m.group(1))
        return f"{months // 12}年" if months and months % 12 == 0 else m.group(0)

    return _MONTHS_SPAN.sub(in_years, cleaned) if "个月" in cleaned else cleaned


_DIGIT = re.compile(r"\d")
# What every match of _ENGLISH_NUMBER_WORD, _SCALE_WORD and _LATIN_UNIT holds: patterns that begin with a
# lookbehind are tried at every place of a text, these plain ones skip ahead (the same texts are rewritten).
_NUMBER_WORD_HINT = re.compile("|".join(_ENGLISH_NUMBER))
_SCALE_HINT = re.compile(r"illion|thousand|bn")
_LATIN_UNIT_HINT = re.compile(r"\d\s*[a-z°]")
_ASCII_LETTER = re.compile(r"[a-z]")
_NAMED_MONTHS = {"正月": "1月", "冬月": "11月", "腊月": "12月"}
_NAMED_MONTH = re.compile(r"(?<![真修改纠公端方刚严])(正月|冬月|腊月)(?=初|[一二三四五六七八九十廿]|\d)")
# One character a match, not a run ([\W_]+): a pattern that opens with a class gives re that class to skip ahead
# to (a repeat gives it none: re tried the pattern at every place of the text); sub drops the same characters.
_NOT_KEY = re.compile(r"[\W_]")


@lru_cache(maxsize=8192)  # the rules take the key of one answer's texts about 16 times; 1 call in 4 is new
def key(cleaned: str) -> str:
    """The comparison key of cleaned text: no punctuation, symbols, separators (· • - /) or spaces."""
    # [\W_] is exactly what str.isalnum() refuses (both read Unicode's alpha / decimal / digit / numeric), so an
    # all-alphanumeric text is its own key: a third of the calls, without the regex
    return cleaned if cleaned.isalnum() else _NOT_KEY.sub("", cleaned)


_ONE = Decimal(1)


@dataclass(frozen=True, init=False)  # its own __init__, below
class Number:
    value: Decimal
    step: Decimal      # the unit of the last written digit: 3518.17 -> 0.01, 1.2万 -> 1000
    kind: str = "exact"  # exact | approx | lower (at least) | upper (at most) | range (value .. high)
    unit: str | None = None  # canonical unit (米, 元, 年, %); value and step are in it
    scale: Decimal = Decimal(1)  # the value of a written 1: 1.2万 -> 10000, 3.5厘米 -> 0.01 (米)
    loose: Decimal = Decimal(1)  # the precision its writer meant when it is approximate: 约1850 -> 10
    high: Decimal | None = None  # the upper end of a range
    start: int = 0          # where it is written in the text
    ordinal: bool = False   # 第3条
    unknown_unit: str = ""  # letters or a word after it that we do not know as a unit (100MW, 15新元)
    counter: str = ""       # the counter after it (3个, 5座)
    factor: Decimal = Decimal(1)  # its unit's factor to the canonical unit (公里 -> 1000 米)
    converted: bool = False  # from an imperial unit, °F or kelvin
    era: bool = False       # written as a year of the common era (公元750年, 公元前221年)

    def __init__(self, value, step, kind="exact", unit=None, scale=_ONE, loose=_ONE, high=None, start=0,
                 ordinal=False, unknown_unit="", counter="", factor=_ONE, converted=False, era=False):
        # the fields and their defaults above, set at once: a frozen dataclass's own __init__ sets each through
        # object.__setattr__ (4.6 µs a number, 1.4 µs so). The instance's attributes then live in a dict of its
        # own, which makes a read a little dearer; numbers are built (replace() included) often enough that the
        # whole still runs fewer instructions (callgrind, two runs each: 2,877-2,886M against 2,945-2,947M)
        self.__dict__.update(value=value, step=step, kind=kind, unit=unit, scale=scale, loose=loose, high=high,
                             start=start, ordinal=ordinal, unknown_unit=unknown_unit, counter=counter, factor=factor,
                             converted=converted, era=era)

    def same_unit(self, other: "Number") -> bool:
        return self.unit is None or other.unit is None or self.unit == other.unit

    def matches(self, reference: "Number") -> bool:
        """Equal at the coarser of the two precisions, the answer's counting only down to the reference's written
        units, and in the same unit when both name one. Reference 3518.17: 3518 and 3518.2 match, 3520 and 3.5千
        do not; reference 1.24亿: 1.2亿 matches, 1.2万 matches 12000 but not 12345."""
        if reference.kind == "range":  # 1985 or 20世纪80年代 for 20世纪80年代
            high = self.high if self.kind == "range" else self.value
            return self.same_unit(reference) and reference.value <= self.value and high <= reference.high
        if self.kind == "range":
            return False
        tolerance = max(reference.step, min(self.step, reference.scale)) / 2
        return self.same_unit(reference) and abs(self.value - reference.value) <= tolerance

    def consistent_with(self, reference: "Number") -> bool:
        """A vague statement (约 3500, 超过 3000, 1850到1860年, 19世纪90年代) the reference does not contradict. An
        approximate value must round to the reference at its own written precision: 约3500 for 3518 yes, 1850年左右
        for 1856 no, 约3.6万 for 39000 no."""
        if not self.same_unit(reference):
            return False
        low, high = reference.value, reference.high if reference.kind == "range" else reference.value
        if self.kind == "lower":  # a reference range must lie wholly inside the vague answer (50到80次 is not 60到100次)
            return low >= self.value - self.step / 2
        if self.kind == "upper":
            return high <= self.value + self.step / 2
        if self.kind == "range":
            return self.value - self.step / 2 <= low and high <= self.high + self.step / 2
        if self.guesses_a_year:  # 2000年前后, 1990年左右: a guess at one calendar year, not a range of years
            return self.matches(reference)  # (people grade it so)
        return self.rounds_to(reference)

    @property
    def guesses_a_year(self) -> bool:
        return self.kind == "approx" and self.unit == "年" and (1000 <= self.value <= 2999 or self.era)

    def rounds_to(self, reference: "Number") -> bool:
        """The reference rounds to this approximate value at its written precision (约3500 for 3518)."""
        return abs(self.value - reference.value) <= self.loose / 2 or self.matches(reference)


_ERA_WORDS = ("公元", "西元", "公元前", "西元前")


_QUALIFIER_RE1 = re.compile(r"(?:零下|负)\s*$")


def _qualifier(text: str, start: int, end: int, unit_end: int, framing: str) -> str:
    """From the words before the number and after it or after its unit (3000多人, 3500人左右); a bound word the
    question already uses (至少需要多少人？ -> 至少5人) frames the answer, it does not loosen it."""
    before = _QUALIFIER_RE1.sub("", text[max(0, start - 6):start])[-4:]  # 低于零下30度: the bound before the sign
    after, after_unit = text[end:end + 3], text[unit_end:unit_end + 3]
    if not (_ANY_BEFORE.search(before) or _ANY_AFTER.match(after) or _ANY_AFTER.match(after_unit)):
        return "exact"  # (most numbers: three searches instead of nine)
    afters = (after, after_unit)
    for kind, pair in (("upper", (_UPPER_BEFORE, _UPPER_AFTER)), ("lower", (_LOWER_BEFORE, _LOWER_AFTER)),
                       ("approx", (_APPROX_BEFORE, _APPROX_AFTER))):
        cue = pair[0].search(before) or next(filter(None, (pair[1].search(a) for a in afters)), None)
        if cue:
            if len(cue.group(1)) > 1 and cue.group(1) in framing:
                return "exact"
            return "some_more" if cue.group(1) in ("多", "余", "出头") and kind == "lower" else kind
    return "exact"


def _negative(text: str, start: int, unit: str | None) -> bool:
    """负5, 零下5度, and years before the common era: 公元前221年, 西元前221年, 前221年 (but not 在前3年)."""
    before = text[max(0, start - 3):start]
    if before.endswith(("负", "零下", "公元前", "西元前")):
        return True
    return unit == "年" and before.endswith("前") and (len(before) < 2 or not before[-2].isalnum()
                                                       or before[-2] in "是于为约")


# Chinese dynasties and periods as ranges of years (common reference dates): 明朝 for 1420 is less specific,
# 汉代 for 2016 is wrong.
_DYNASTY_YEARS = {"夏": (-2070, -1600), "商": (-1600, -1046), "周": (-1046, -256), "西周": (-1046, -771),
                  "东周": (-770, -256), "秦": (-221, -207), "汉": (-202, 220), "西汉": (-202, 8), "东汉": (25, 220),
                  "晋": (266, 420), "西晋": (266, 316), "东晋": (317, 420), "隋": (581, 618), "唐": (618, 907),
                  "宋": (960, 1279), "北宋": (960, 1127), "南宋": (1127, 1279), "元": (1271, 1368),
                  "明": (1368, 1644), "清": (1636, 1912), "民国": (1912, 1949), "春秋": (-770, -476),
                  "战国": (-475, -221), "三国": (220, 280), "南北朝": (420, 589)}
_DYNASTY_PERIOD = gated(r"(?<![东西南北])(?:(西周|东周|西汉|东汉|西晋|东晋|北宋|南宋|[夏商周秦汉晋隋唐宋元明清])(?:朝|代)"
                             r"|(西周|东周|西汉|东汉|西晋|东晋|北宋|南宋)|(民国)(?:时期|年间)?"
                             r"|(?<!《)(?:(春秋|三国)(?=时期|时代|年间|初年|末年|初期|中期|末期|早期|晚期)"
                             r"|(战国|南北朝)(?![策演志》])))")  # not 《春秋》, 春秋两季, 中日韩三国, 战国策


# (every alternative begins with a plain character: re then skips to where one can begin)
_ERA_HINT = re.compile(r"世纪|西周|东周|西汉|东汉|西晋|东晋|北宋|南宋|民国|春秋|战国|三国|代|朝")


# Reign eras (年号) and the Republic of China / Japanese eras whose year numbers answer "which year": name ->
# (the first year, how many years it ran; None while it runs or ran on). 洪武8年 = 1368 + 8 - 1 = 1375; 元年 = 1.
_REIGN_ERAS = {
    # Han, Tang and Song eras that are often named
    "建安": (196, 25), "武德": (618, 9), "贞观": (627, 23), "永徽": (650, 6), "开元": (713, 29), "天宝": (742, 15),
    "元和": (806, 15), "建隆": (960, 4), "太平兴国": (976, 9), "庆历": (1041, 8), "皇祐": (1049, 6),
    "嘉祐": (1056, 8), "熙宁": (1068, 10), "元丰": (1078, 8), "元祐": (1086, 9), "绍圣": (1094, 5),
    "崇宁": (1102, 5), "政和": (1111, 8), "宣和": (1119, 7), "靖康": (1126, 2), "建炎": (1127, 4),
    "绍兴": (1131, 32), "淳熙": (1174, 16), "嘉定": (1208, 17),
    # Ming
    "洪武": (1368, 31), "建文": (1399, 4), "永乐": (1403, 22), "洪熙": (1425, 1), "宣德": (1426, 10),
    "正统": (1436, 14), "景泰": (1450, 8), "天顺": (1457, 8), "成化": (1465, 23), "弘治": (1488, 18),
    "正德": (1506, 16), "嘉靖": (1522, 45), "隆庆": (1567, 6), "万历": (1573, 48), "泰昌": (1620, 1),
    "天启": (1621, 7), "崇祯": (1628, 17),
    # Later Jin and Qing
    "天命": (1616, 11), "天聪": (1627, 10), "崇德": (1636, 8), "顺治": (1644, 18), "康熙": (1662, 61),
    "雍正": (1723, 13), "乾隆": (1736, 60), "嘉庆": (1796, 25), "道光": (1821, 30), "咸丰": (1851, 11),
    "同治": (1862, 13), "光绪": (1875, 34), "宣统": (1909, 3),
    # the Republic of China (民国纪年, still used in Taiwan) and Japan
    "民国": (1912, None), "明治": (1868, 45), "大正": (1912, 15), "昭和": (1926, 64), "平成": (1989, 31),
    "令和": (2019, None),
}
_REIGN_YEAR = re.compile("(" + "|".join(sorted(_REIGN_ERAS, key=len, reverse=True)) + r")(元|\d{1,3})年")


# Characters that do not end a reign era's name (第3年, 在5年, 用了8年, 历时4年, 近10年; terms of punishment,
# office and validity: 监禁1年, 徒刑3年, 任期4年, 有效期5年).
_NOT_ERA = set("第在于是为约近共有了到从和与及的年月日前后过满达历时用经计仅只才已每逾超再又这那该其之头末初中隔间来内"
               "最第多少几个禁刑役期限判处任服龄")


def _maybe_era(cleaned: str, start: int) -> bool:
    """Two characters right before a small year number that may name a reign era we do not list (至元8年)."""
    before = cleaned[max(0, start - 2):start]
    return len(before) == 2 and all("\u4e00" <= ch <= "\u9fff" and ch not in _NOT_ERA for ch in before)


_ROMAN = gated(r"(?:(?<=第)|(?<![a-z]))([ivxl]{1,7})(?=[届章条卷号代期任次世])")
_ROMAN_HINT = re.compile(r"[ivxl][届章条卷号代期任次世]")  # where every match of _ROMAN ends
_ROMAN_VALUES = {"i": 1, "v": 5, "x": 10, "l": 50}


def _roman_numbers(cleaned: str) -> list[tuple[Number, int]]:
    """(number, end) for Roman numerals before a counter: 第vii届 -> 第7届, xiv世 -> 14 (clean() lower-cases)."""
    out = []
    for m in _ROMAN.finditer(cleaned):
        digits = [_ROMAN_VALUES[ch] for ch in m.group(1)]
        value = sum(-d if i + 1 < len(digits) and d < digits[i + 1] else d for i, d in enumerate(digits))
        if value > 0:
            out.append((Number(Decimal(value), Decimal(1), start=m.start(), ordinal=cleaned[m.start() - 1:m.start()] == "第",
                               counter=cleaned[m.end():m.end() + 1]), m.end()))
    return out


def _reign_years(cleaned: str) -> list[tuple[Number, int]]:
    """(year, end) for 洪武8年 -> 1375, 雍正元年 -> 1723, 民国35年 -> 1946, 昭和61年 -> 1986: a year of a reign era
    it ran (洪武40年 is no year: 洪武 ran 31)."""
    out = []
    for m in _REIGN_YEAR.finditer(cleaned):
        first, length = _REIGN_ERAS[m.group(1)]
        n = 1 if m.group(2) == "元" else int(m.group(2))
        if 1 <= n and (length is None or n <= length):
            out.append((Number(Decimal(first + n - 1), Decimal(1), "exact", "年", start=m.start()), m.end()))
    return out


def _year_ranges(cleaned: str, periods: bool = True) -> list[tuple[Number, int]]:
    """(range, end) for 19世纪90年代 -> 1890..1899, 19世纪 -> 1800..1900, 19世纪末 -> 1870..1900, 1890年代 and
    上世纪90年代 / 90年代 -> 1890..1899 / 1990..1999, 公元前3世纪 -> -300..-201."""
    out = []
    for m in _DECADE.finditer(cleaned):
        bce, century, decade, part, decade_only, last_century, short_decade, decade_part = m.groups()
        if decade_only:
            low = int(decade_only)
        elif short_decade:
            low = 1900 + int(short_decade) * 10  # 90年代, 上世纪90年代: the 20th century's, as in common use
        else:
            base = (int(century) - 1) * 100
            if bce:
                low, high = -(base + 100), -(base + 1)
            else:
                span = (int(decade) * 10, int(decade) * 10 + 10) if decade else _CENTURY_PART.get(part, (0, 100))
                # a century's last year is 1900 by strict count (1801..1900) and 1899 in common use (1800..1899):
                # 19世纪 and 19世纪末 agree with both
                low, high = base + span[0], base + span[1] - (0 if span[1] == 100 and not decade else 1)
        if decade_only or short_decade:
            high = low + 9
        if decade_part and (decade or decade_only or short_decade):  # 50年代初 = 1950..1953, 80年代末 = 1986..1989
            first, last = _DECADE_PART[decade_part]
            low, high = low + first, low + last
        out.append((Number(Decimal(low), Decimal(1), "range", "年", high=Decimal(high), start=m.start()), m.end()))
    for m in _DYNASTY_PERIOD.finditer(cleaned) if periods else ():
        low, high = _DYNASTY_YEARS[next(g for g in m.groups() if g)]
        out.append((Number(Decimal(low), Decimal(1), "range", "年", high=Decimal(high), start=m.start()), m.end()))
    return out


# 前 or 以前 after a year: before it, or years ago (not 前后 = about, nor 前往, 前身, 前夕 …).
_BEFORE_YEAR = re.compile(r"以?前(?![后往进来夕身任期半者面方线沿列台景提途辈人奏锋卫额哨缀置])")
_PLACE_VALUES = {"十": 10, "百": 100, "千": 1000, "万": 10 ** 4, "亿": 10 ** 8}
# Counts said vaguely: 几千 / 数百 / 好几百 (1000..9999, 100..999), 十几 (11..19), 20几 (21..29), 上万 (10000 or more);
# clean() has already written some numerals as digits (几10, 20几, 几100000).
_VAGUE_COUNT = FromStarts(re.compile(r"(?:好)?(?:几|数)((?:[十百千万亿]|10+)+)|(十|(?<![\d.])[1-9]0)几(?![十百千万亿\d])|上([百千万亿])"
                          r"|(?:(?<=[曾有过了获很是,;。\s])|^)(好几|多|数)(?=[次位个名届部座项种家本条首篇](?!式|数))"))
# (曾多次, 有好几位: at least 2; not 斐多篇, a name)


_ANY_MINOR = re.compile(r"(?<![\d.])(\d+)\.x(?![a-z])")  # a version 1.x: any minor version of 1


def _minor_versions(cleaned: str) -> list[tuple[Number, int]]:
    """(range, end) for 1.x: 1.00 .. 1.99."""
    return [(Number(Decimal(m.group(1)), Decimal("0.01"), "range", None, Decimal(1), Decimal("0.01"),
                    Decimal(m.group(1)) + Decimal("0.99"), start=m.start()), m.end())
            for m in _ANY_MINOR.finditer(cleaned)]


_VAGUE_COUNTS_RE1 = re.compile(r"[十百千万亿]|10+")


def _vague_counts(cleaned: str) -> list[tuple[Number, int]]:
    """(range or bound, end) for 几千人, 数百米, 十几个, 20几岁, 上万人, in the unit written after them."""
    out = []
    for m in _VAGUE_COUNT.finditer(cleaned):
        places, tens, floor, several = m.groups()
        if several:
            value, high, kind = Decimal(2), None, "lower"
        elif places:
            low = 1
            for part in _VAGUE_COUNTS_RE1.findall(places):
                low *= _PLACE_VALUES.get(part) or int(part)
            value, high, kind = Decimal(low), Decimal(low * 10 - 1), "range"
        elif tens:
            base = 10 if tens == "十" else int(tens)
            value, high, kind = Decimal(base + 1), Decimal(base + 9), "range"
        else:
            value, high, kind = Decimal(_PLACE_VALUES[floor]), None, "lower"
        spelled = _UNIT.match(cleaned, m.end())
        unit, factor, end = None, Decimal(1), m.end()
        if spelled:
            unit, factor_, *offset = _UNITS[spelled.group(1)]
            factor, end = Decimal(factor_), spelled.end()
        counter = "" if spelled else cleaned[m.end():_COUNTERS.match(cleaned, m.end()).end()].strip()
        out.append((Number(value * factor, factor, kind, unit, factor, factor, high * factor if high is not None else None,
                           start=m.start(), counter=counter, factor=factor), end))
    return out


def _durations(cleaned: str) -> list[tuple[Number, int]]:
    """(seconds, end) for durations in two or three parts: 2小时08分36秒 -> 7716, 1分15秒 -> 75."""
    out = []
    for m in _DURATION.finditer(cleaned):
        hours, minutes, more, seconds, *clock = m.groups()
        if clock[0]:
            hours, minutes, seconds = clock
        parts = (hours, minutes, seconds)
        if sum(p is not None for p in parts) < 2 and not more:
            continue
        step = Decimal(1).scaleb(-len(seconds.split(".")[1])) if seconds and "." in seconds else \
            Decimal(1) if seconds else Decimal(60) if minutes else Decimal(3600)
        value = sum((Decimal(p) * f for p, f in zip(parts, (3600, 60, 1)) if p), Decimal(0))
        more = more or _LOWER_AFTER.match(cleaned, m.end())  # 2小时08分多, 1分多钟: up to one more of its last unit
        out.append((Number(value, step, "range" if more else "exact", "秒", high=value + step if more else None,
                           start=m.start()), m.end()))
    return out


def find_numbers(cleaned: str, framing: str = "", periods: bool = True) -> list[Number]:
    """See _find_numbers; a fresh list each call (the rules ask for the same text's numbers many times). A question
    that frames no number is no framing: the text's numbers come from the same memo with and without it."""
    return list(_find_numbers(cleaned, _framing(framing) if framing else "", periods))


# The first two characters of every cue of two characters or more that _qualifier's patterns find (group 1 of
# _APPROX_BEFORE … _UPPER_AFTER): a framing reads only such a cue (`cue.group(1) in framing`, longer than one
# character), and one that holds none of these holds none of them.
_FRAMING_CUES = ("大约", "大概", "差不", "估计", "估算", "约为", "约有", "将近", "接近", "左右", "超过", "多于", "大于",
                 "高于", "至少", "不少", "不低", "不止", "不小", "以上", "不超", "不到", "不足", "少于", "小于", "低于",
                 "至多", "最多", "不多", "不大", "不高", "上下", "前后", "出头", "以下", "以内")


@lru_cache(maxsize=4096)  # a question frames every number of its answers
def _framing(framing: str) -> str:
    """framing, or '' when it holds no cue _qualifier could read in it (then the numbers are the same without it)."""
    return framing if any(cue in framing for cue in _FRAMING_CUES) else ""


def _written_numbers(cleaned: str, periods: bool) -> list[tuple[Number, int]]:
    """(number, end) of what is written otherwise than in Arabic digits alone: reign years, periods and ranges of
    years, durations, vague counts, Roman numerals, minor versions (2.x)."""
    reigns = _reign_years(cleaned) if "年" in cleaned else []
    ranges = _year_ranges(cleaned, periods) if _ERA_HINT.search(cleaned) else []
    ranges = reigns + [(n, end) for n, end in ranges if not any(r.start <= n.start < r_end for r, r_end in reigns)]
    ranges += _durations(cleaned) if "分" in cleaned or ":" in cleaned else []
    ranges += _vague_counts(cleaned) if "几" in cleaned or "数" in cleaned or "上" in cleaned or "多" in cleaned else []
    ranges += _roman_numbers(cleaned) if _ROMAN_HINT.search(cleaned) else []
    ranges += _minor_versions(cleaned) if ".x" in cleaned else []
    return ranges


def _magnitude(m: re.Match) -> tuple[Decimal, Decimal, Decimal, Decimal]:
    """(value, step, scale, loose) of an Arabic number with its multipliers (10亿1000万, 3万5000, 14亿1177万8724):
    as precise as its last part; loose: the step of its trailing zeros (3000 may be 3000 to the thousand)."""
    _, integer, fraction, multiplier, tail, tail_multiplier, last, _ = m.groups()
    value = Decimal(integer.replace(",", "") + (fraction or ""))
    step = Decimal(1).scaleb(-(len(fraction) - 1)) if fraction else Decimal(1)
    if multiplier:
        value *= _MULTIPLIERS[multiplier]
        step *= _MULTIPLIERS[multiplier]
    if tail:
        low = Decimal(_MULTIPLIERS[tail_multiplier]) if tail_multiplier else Decimal(1)
        value, step = value + Decimal(tail) * low, low
    if last:  # a third part, in ones, thousands or hundreds
        low = Decimal(_MULTIPLIERS[last[-1]]) if last[-1] in "千百" else Decimal(1)
        value, step = value + Decimal(last.rstrip("千百")) * low, low
    scale = Decimal(_MULTIPLIERS[multiplier]) if multiplier else Decimal(1)
    written = integer.replace(",", "")
    loose = step * (10 ** (len(written) - len(written.rstrip("0"))) if not fraction and not tail else 1)
    return value, step, scale, loose


def _unit_after(cleaned: str, m: re.Match, latin) -> tuple:
    """(unit, where it ends, the unit's match or None, a unit word the rules do not know) after an Arabic number."""
    if m.group(8):  # %
        return "%", m.end(), None, ""
    spelled = _UNIT.match(cleaned, m.end())
    if spelled:
        unit = _UNITS[spelled.group(1)][0]
        return ("个月" if unit == "月" and "个" in spelled.group(0) else unit), spelled.end(), spelled, ""
        # (两个月: a length of time, never the month of a date, 1月)
    follower = cleaned[m.end():m.end() + 1]
    unknown = ""
    if latin and latin.group(1) not in _ENGLISH_AFTER_NUMBER:
        unknown = latin.group(1)  # 100 MW, 2.4 GHz
    elif "\u4e00" <= follower <= "\u9fff" and follower not in _PLAIN_FOLLOWERS:
        unknown = _UNKNOWN_UNIT.match(cleaned, m.end()).group(0)  # 500兆瓦, 2250万千瓦时
    return None, _COUNTERS.match(cleaned, m.end()).end(), None, unknown


def _year_side(cleaned: str, m: re.Match, unit, unit_end: int, value: Decimal, unknown: str) -> tuple:
    """(unit, unknown, side) for a number of years: 两千多年前 and 300年前 are years ago (no year), 2000年前 a year
    bound (before it), 太平3年 a year of an era the rules do not list."""
    if unit == "年" and _BEFORE_YEAR.match(cleaned, unit_end):
        if "多" in cleaned[m.end():unit_end] or value < 1000 or value > 2100:
            return None, "年前", None
        return unit, unknown, "upper"
    if unit == "年" and not m.group(3) and value < 100 and _maybe_era(cleaned, m.start()):
        return unit, "年号", None
    return unit, unknown, None


def _arabic_number(cleaned: str, m: re.Match, latin, framing: str) -> Number:
    value, step, scale, loose = _magnitude(m)
    unit, unit_end, spelled, unknown = _unit_after(cleaned, m, latin)
    unit, unknown, side = _year_side(cleaned, m, unit, unit_end, value, unknown)
    if m.group(1) or _negative(cleaned, m.start(), unit):
        value = -value
    factor = Decimal(1)
    if spelled:
        _, factor, *offset = _UNITS[spelled.group(1)]
        value += Decimal(offset[0]) if offset else 0
        times = Decimal(factor)
        value, step, scale, loose = value * times, step * times, scale * times, loose * times
    counter = cleaned[m.end():unit_end].strip() if unit is None else ""
    kind = _qualifier(cleaned, m.start(), m.end(), unit_end, framing)
    kind = side if side and kind == "exact" else kind
    high = None
    if kind == "some_more":  # 3000多 is 3000 to 4000, 500多米 500 to 600 metres, 两个多小时 2 to 3 hours
        kind, high = "range", value + max(loose, step)
    return Number(value, step, kind, unit, scale, loose, high, start=m.start(),
                  ordinal=cleaned[m.start() - 1:m.start()] == "第", unknown_unit=unknown, counter=counter,
                  factor=Decimal(factor), converted=bool(spelled) and spelled.group(1) in CONVERTED,
                  era=unit == "年" and cleaned[max(0, m.start() - 3):m.start()].endswith(_ERA_WORDS))


@lru_cache(maxsize=2048)  # asked again for one answer by several rules
def _find_numbers(cleaned: str, framing: str = "", periods: bool = True) -> tuple[Number, ...]:
    """The numbers in cleaned text with their precision, unit and qualifier, in order; a leading minus, 负, 零下
    or 公元前 is a sign. `framing` is the question: bound words it uses are not qualifiers of the answer.
    `periods`: read dynasties (明朝) as ranges of years too (in answers; a reference 唐朝 is a name)."""
    ranges = _written_numbers(cleaned, periods)
    out = [n for n, _ in ranges]
    spans = [(n.start, end) for n, end in ranges]
    first = _DIGIT.search(cleaned)  # a match starts at a digit or at the minus right before one; the lookbehinds
    for m in _ARABIC.finditer(cleaned, max(0, first.start() - 1)) if first else ():  # still see the text before
        start = m.start()
        if spans and any(lo <= start < hi for lo, hi in spans) or _list_index(cleaned, start):
            continue
        glued = start + len(m.group(0).rstrip())
        latin = _LATIN_AFTER.match(cleaned, glued)
        if latin and glued < len(cleaned) and cleaned[glued] != " ":
            continue  # 5g, 3m, V08AA04: letters glued to the number that are not a unit we know
        out.append(_arabic_number(cleaned, m, latin, framing))
    return tuple(_join_ranges(sorted(out, key=_START) if len(out) > 1 else out, cleaned))


_START = attrgetter("start")


_LIST_INDEX = re.compile(r"\d{1,2}[.、)](?=\s*[^\d\s])")


def _list_index(cleaned: str, start: int) -> bool:
    """1. / 2、 / (3) opening an item of a list (四个阶段：1. …；2. …): a numbering, not a number."""
    return _LIST_INDEX.match(cleaned, start) is not None \
        and cleaned[max(0, start - 8):start].rstrip(" (*")[-1:] in ("", "\n", ":", ";", "。")


def _join_ranges(numbers: list[Number], cleaned: str) -> list[Number]:
    """Two numbers joined by 到 / 至 / - (1850年到1860年, 1850-1860年) are one range when the second is larger and
    in the same unit (2023-09 is a date, not a range)."""
    out = []
    for n in numbers:
        prev = out[-1] if out else None
        if (prev is not None and prev.kind in ("exact", "approx") and n.kind in ("exact", "approx")
                and (prev.unit is None or prev.unit == n.unit)):
            between = cleaned[prev.start:n.start]
            join = _RANGE_JOIN.search(between)
            join = join if _RANGE_BETWEEN.fullmatch(between) else None  # not 1405年出发,到1433年
            # 3到5万公里: the first number takes the second's unit, and its multiplier when it has none
            low = prev.value * (n.scale if prev.scale == 1 else n.factor) if prev.unit is None else prev.value
            dash = join is not None and join.group(1) in "-—–"
            if (join and join.end() == len(between) and n.value > low
                    and (not dash or len(str(int(abs(prev.value)))) == len(str(int(abs(n.value)))))):
                out[-1] = Number(low, n.step, "range", n.unit, n.scale, n.loose, n.value, prev.start)
                continue
        out.append(n)
    return out


# --- chemical formulas ----------------------------------------------------------------------------------------------
# The element symbols of the periodic table (1-118), to read a formula written with its case (not rules.clean text).
ELEMENT_SYMBOLS = frozenset(
    "H He Li Be B C N O F Ne Na Mg Al Si P S Cl Ar K Ca Sc Ti V Cr Mn Fe Co Ni Cu Zn Ga Ge As Se Br Kr Rb Sr Y Zr Nb Mo "
    "Tc Ru Rh Pd Ag Cd In Sn Sb Te I Xe Cs Ba La Ce Pr Nd Pm Sm Eu Gd Tb Dy Ho Er Tm Yb Lu Hf Ta W Re Os Ir Pt Au Hg Tl "
    "Pb Bi Po At Rn Fr Ra Ac Th Pa U Np Pu Am Cm Bk Cf Es Fm Md No Lr Rf Db Sg Bh Hs Mt Ds Rg Cn Nh Fl Mc Lv Ts Og".split())
_FORMULA_UNIT = r"(?:[A-Z][a-z]?\d*|\((?:[A-Z][a-z]?\d*)+\)\d*)"
# A formula of two or more symbols, with the water or other parts of a hydrate after a dot (Na2SO4·10H2O).
FORMULA = re.compile(rf"(?<![A-Za-z\d])\d*{_FORMULA_UNIT}{{2,}}(?:[·•]\d*{_FORMULA_UNIT}+)*(?![A-Za-z\d])")
_FORMULA_PART = re.compile(r"\(((?:[A-Z][a-z]?\d*)+)\)(\d*)|([A-Z][a-z]?)(\d*)")


_FORMULA_COUNTS_RE1 = re.compile(r"[·•]")
_FORMULA_COUNTS_RE2 = re.compile(r"\d*")


def formula_counts(formula: str) -> tuple[tuple[str, int], ...] | None:
    """The atoms of each element in a formula written with its case (NFKC: subscripts are digits), sorted:
    C6H5COONa and C7H5NaO2 -> ((C, 7), (H, 5), (Na, 1), (O, 2)); Be3Al2(SiO3)6 = Be3Al2Si6O18; a hydrate counts its
    water (Na2SO4·10H2O). None when it is no formula (an unknown symbol, one element alone, text around it)."""
    formula = unicodedata.normalize("NFKC", formula.strip())
    if not FORMULA.fullmatch(formula):
        return None
    counts: dict[str, int] = {}
    for part in _FORMULA_COUNTS_RE1.split(formula):  # Na2SO4·10H2O: the salt and ten waters
        lead = _FORMULA_COUNTS_RE2.match(part).group(0)
        for group, times, symbol, count in _FORMULA_PART.findall(part[len(lead):]):
            for _, _, element, number in _FORMULA_PART.findall(group) if group else [("", "", symbol, count)]:
                if element not in ELEMENT_SYMBOLS:
                    return None
                counts[element] = counts.get(element, 0) + int(number or 1) * int(times or 1) * int(lead or 1)
    return tuple(sorted(counts.items())) if len(counts) >= 2 else None
