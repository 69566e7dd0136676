"""The decision list of a short text reference (a name, a term, a place): TEXT_RULES, in order, then the fallback
rules of stages_unmatched.py. The rules `when="found"` read an answer in which one of the reference's forms was
found (TextCase.found); those `when="missing"` one in which none was."""
from __future__ import annotations

import re
from functools import lru_cache

from chimdqa_eval.factual import (reading_answer, reading_claims, reading_kinds, reading_match, reading_places,
                                  reading_question, reading_reference, reading_text, rules, vocabulary)
from chimdqa_eval.factual.decision import Family, Verdict, rule, step
from chimdqa_eval.factual.stages_unmatched import UNMATCHED_RULES

_CITY_IN_ANSWER = re.compile(r"[\u4e00-\u9fff](?:市|县)")
_YEAR_IN = re.compile(r"\d|年")


@rule("text.yes_no", "CO/IN", "yes_no", "yes", ("没有。《百家姓》里并没有“草”这个姓", "否", ""))
def yes_no(case):
    """A yes / no reference and an answer whose first clause is a bare yes or no."""
    return reading_match._yes_no(case.ref, case.answer)


# ---- the reference's form found in the answer ----

@rule("text.longer_name", "IN", "longer_name", "no", ("制作人是冯骥才。", "冯骥", "制作人是谁？"), when="found")
def longer_name(case):
    """A person's short name found only as the start of a longer name that ends its clause."""
    if reading_match._longer_name(case.ref, case.affirmed, case.form, case.question):
        return Verdict("IN", False, "longer_name")


@rule("text.options_refused", "NA", "refusal", "yes", ("我不确定是火成岩还是沉积岩", "火成岩", "是火成岩还是沉积岩？"),
      when="found")
def options_refused(case):
    """The question's own options repeated in a refusal."""
    if case.other_option and case.other_option in case.key and case.refusal == "refusal":
        return Verdict("NA", True, "refusal")


@rule("text.alternatives", "IN/CO", "alternatives", "when short", ("陶渊明或李白", "陶渊明", ""), when="found")
def alternatives(case):
    """Another candidate offered beside the form in its clause: a short answer is wrong, a long one unsure."""
    form = case.form
    clauses = reading_claims._clauses_with(case.affirmed, lambda c: form in rules.key(c)) or [case.affirmed]
    if reading_claims._competing(case.ref, clauses, form):
        return Verdict("IN" if case.short else "CO", case.short, "alternatives")


@rule("text.noted_alternative", "IN", "attributed_alternative", "no", ('质量数（有的教材也说表示相对原子质量）。', '质量数', '元素符号左上角的数字表示什么？'),
      when="found")
def noted_alternative(case):
    """A note in brackets after the form attributes another candidate to others."""
    noted = " ".join(note for before, note in case.answer.notes if before.endswith(case.form))
    if noted and reading_text._has_content(rules.key(noted), case.question) \
            and not reading_answer._long_story(noted, case.question):
        return Verdict("IN", False, "attributed_alternative")


def _attributed_other(case) -> bool:
    """Beside the form, a claim attributed to others that does not name the reference, is no long story and no
    hearsay about it."""
    alternative = case.answer.alternative
    if not case.alternative_content:
        return False
    named = reading_match._text_match(case.ref, rules.key(alternative), alternative)
    return not (named and named[1]) and not reading_answer._long_story(alternative, case.question) \
        and not reading_answer._ABOUT_IT.search(alternative)


_RIVAL_REPORT = re.compile(rf"^\W*(?:{vocabulary.pattern('rival_reports')})")


@rule("text.hearsay_remark", "CO", "hearsay_remark", "no",
      ("是西班牙的传统节日，据说始于1620年。", "西班牙", "跳婴儿节是哪个国家的传统节日？"), when="found")
def hearsay_remark(case):
    """Beside the form, a report that offers no rival (据说…, 民间认为…, 很多人以为…; not 也有人说是…): a remark
    (10 of 11 such reports beside a right answer on the dev answers)."""
    if _attributed_other(case) and not _RIVAL_REPORT.search(case.answer.alternative):
        return Verdict("CO", False, "hearsay_remark")


@rule("text.attributed_alternative", "IN", "attributed_alternative", "no",
      ("是蒲福，也有人认为是他的兄长丹尼尔·蒲福", "弗朗西斯·蒲福", ""), when="found")
def attributed_alternative(case):
    """Beside the form, another candidate attributed to others and left standing (not hearsay about it)."""
    if _attributed_other(case):
        return Verdict("IN", False, "attributed_alternative")


@rule("text.other_given_name", "IN", "other_given_name", "no", ("我记得是安德鲁·贝尔", "汤马斯·贝尔", ""), when="found")
def other_given_name(case):
    """A foreign surname with another given name: another person."""
    ref, (form, full) = case.ref, case.found
    if not full and form in ref.weak and any(reading_match._other_given_name(ref, case.answer, w) for w in ref.weak
                                             if w in case.key):
        return Verdict("IN", False, "other_given_name")


@rule("text.set_aside", "IN", "set_aside", "unless hedged or refused", ("雅卡尔只是后来的推广者", "雅卡尔", "谁发明了提花机？"),
      when="found")
def set_aside(case):
    """The answer names the form but sets it aside (只是, 其实是…的单位): sure unless hedged or refused (68 of 68
    right on the dev answers when it was never sure)."""
    if reading_claims._set_aside(case.affirmed, case.form, case.question):
        return Verdict("IN", not case.hedge and not case.refuses, "set_aside")


@rule("text.split_roles", "IN", "split_roles", "no", ("作曲是顾嘉辉，填词是黄霑", "黄霑", "作曲及填词者是谁？"),
      when="found")
def split_roles(case):
    """The asked roles are split between the form and another name."""
    if reading_claims._split_roles(case.affirmed, case.form, case.question):
        return Verdict("IN", False, "split_roles")


_ROLE_GIVEN = re.compile(rf"^({reading_claims._ROLE_WORDS})(?:者|一职)?(?:则|就|却|其实|实际上|才)?(?:是|为|由)(.+)$")


@rule("text.role_to_other", "IN", "role_to_other", "no",
      ("刘恒是这部电影的编剧，导演则是张艺谋。", "刘恒", "电影《菊豆》的导演是谁？"), when="found")
def role_to_other(case):
    """The asked role given to another name in a clause of its own (导演则是…), and the form's clauses never name
    that role: the form had another role."""
    asked = reading_claims._ASKED_ROLE.search(case.question)
    if not asked:
        return None
    form, clauses = case.form, [rules.key(c) for c in reading_text._split_clauses(case.affirmed)]
    own = [k for k in clauses if form in k]
    if not own or any(asked.group(0) in k for k in own):
        return None
    given = (_ROLE_GIVEN.match(k) for k in clauses if form not in k)
    if any(m and m.group(1) == asked.group(0) and reading_text._has_content(m.group(2), case.question) for m in given):
        return Verdict("IN", False, "role_to_other")


@rule("text.hedged_match", "CO", "hedged_match", "unless it also refuses or only the dictionary names it",
      ("应该是杜甫", "杜甫", ""), when="found")
def hedged_match(case):
    """One candidate, hedged in its own clause."""
    hedge = case.hedge
    if hedge and case.form in rules.key(reading_text._clause_at(case.whole, hedge.start())):
        return Verdict("CO", not case.refuses and case.found[1] is not None, "hedged_match")


@rule("text.other_lead_claim", "IN", "other_lead_claim", "no",
      ('是摩洛哥的东方省，靠近阿尔及利亚边境。', '阿尔及利亚', '凯尔迈镇位于哪个国家的奥兰省内？'), when="found")
def other_lead_claim(case):
    """The answer's first claim is another thing; the form comes only later (no bold answer)."""
    if not reading_text._BOLD.search(case.affirmed) \
            and reading_claims._other_lead_claim(case.ref, case.answer, case.form, case.question):
        return Verdict("IN", False, "other_lead_claim")


@rule("text.bold_sibling", "IN", "bold_sibling", "no", ("这种叫**低副**；高副指的是…", "高副", ""), when="found")
def bold_sibling(case):
    """One bold term, a sibling of the form (低副 / 高副), set before it: the bold one is the answer."""
    bold, form, affirmed = case.bold, case.form, case.affirmed
    if len(bold) == 1 and not case.bolded and reading_match._sibling(bold[0], form) \
            and affirmed.find("**") < affirmed.find(form[0]):
        return Verdict("IN", False, "bold_sibling")


@rule("text.closer_clause", "IN", "closer_clause", "no",
      ("李元吉是当时的太子，被射杀的齐王是李建成", "李元吉", "被射杀的齐王是谁？"), when="found")
def closer_clause(case):
    """Another clause, much closer to the question, answers it."""
    if case.closer == "closer_clause":
        return Verdict("IN", False, "closer_clause")


@rule("text.parallel_claims", "CO/IN", "parallel_claims", "no", ("李白被称为诗圣，杜甫被称为诗仙", "杜甫", "谁被称为诗仙？"),
      when="found")
def parallel_claims(case):
    """Claims of the same shape side by side: the one more like the question holds the answer (bold wins)."""
    parallel = reading_claims._parallel(case.answer, case.form, case.question)
    if parallel:
        return Verdict("CO" if case.bolded else parallel, False, "parallel_claims")


@rule("text.list_with_extras", "IN/CO", "list_with_extras", "no", ("魏、蜀、吴、晋", "魏、蜀、吴", ""), when="found")
def list_with_extras(case):
    """A list reference named with items it lacks: a short answer is wrong, a long one unsure."""
    if case.ref.listed > 1 and reading_claims._extra_items(case.ref, case.answer, case.form):
        return Verdict("IN" if case.short else "CO", False, "list_with_extras")


@rule("text.role_after_name", "IN", "role_after_name", "no", ("由孙仪作词、翁清溪作曲", "孙仪", "作曲者是谁？"),
      when="found")
def role_after_name(case):
    """The role said after the form is not the asked one."""
    if case.role == "other":
        return Verdict("IN", False, "role_after_name")


@rule("text.turn_after", "IN", "turn_after", "no", ('《论语》确实常被引用，但这句话其实出自《孟子·尽心上》。', '《论语》', '“民为贵，社稷次之，君为轻”出自哪本书？'),
      when="found")
def turn_after(case):
    """Another candidate of its kind, and the answer turns to it."""
    if case.others == "other_candidates" and not case.bolded \
            and reading_claims._turns_to_other(case.ref, case.answer, case.form, case.question):
        return Verdict("IN", False, "turn_after")


@rule("text.others_of_kind", "IN/CO", ("listed_with_others", "other_candidates"), "no",
      ("MedGuide和DocQA-Fin", "MedGuide", ""), when="found")
def others_of_kind(case):
    """The form listed with others (IN unless bold) or beside other things of its kind (CO, unsure)."""
    others = case.others
    if others:
        return Verdict("IN" if others == "listed_with_others" and not case.bolded else "CO", False, others)


@rule("text.frame", "CO/IN", ("competing_clause", "relative_of", "turn_after"), "no",
      ("恩斯特·马赫的儿子路德维希…", "恩斯特·马赫", ""), when="found")
def frame(case):
    """The form may be context, not the answer: a relative, a later turn, a clause as close to the question."""
    if case.doubt or case.bolded or case.whole_list:
        return None
    found = reading_claims._frame(case.answer, case.form, case.question) or case.closer
    if found:
        return Verdict("CO" if found == "competing_clause" else "IN", False, found)


@rule("text.match", "CO/IN", ("match", "hedged_elsewhere", "partial_name", "latin_sentence", "dictionary_name",
                              "negated_clause", "compared_to", "negated_sentence", "other_year"),
      "when the form names it fully, nothing doubts it and nothing is hedged", ("杜甫", "杜甫", ""), when="found")
def match(case):
    """The form found: CO, unless a doubt (negated, a point of comparison…) makes it likelier not the answer."""
    doubt, hedge = case.doubt, case.hedge
    return Verdict("IN" if doubt and not case.bolded else "CO", not doubt and not hedge and not case.partly,
                   doubt or ("hedged_elsewhere" if hedge else case.partly or "match"))


# ---- no form of the reference found ----

@rule("text.other_option", "IN", "other_option", "unless hedged", ('假体腔动物。', '无体腔动物', '吸虫是无体腔动物还是假体腔动物？'),
      when="missing", unless=("refusal", "apology"))
def other_option(case):
    """The question offers two options (A还是B？) and the answer picks the other one."""
    if case.other_option and case.other_option in case.key:
        return Verdict("IN", not case.hedge, "other_option")


@rule("text.attributed_match", "IN/CO", "attributed_match", "no", ("有人说是沈括", "沈括", ""), when="missing")
def attributed_match(case):
    """The reference only in a claim attributed to others: CO when nothing else is said, IN beside another
    candidate or a claim of the answer's own."""
    alternative = case.answer.alternative
    attributed = alternative and reading_match._text_match(case.ref, rules.key(alternative), alternative)
    if not attributed:
        return None
    starts = [m.start() for m in reading_answer._ATTRIBUTION_CUE.finditer(alternative)] + [len(alternative)]
    reports = [alternative[a:b] for a, b in zip(starts, starts[1:])]
    other = any(attributed[0] not in rules.key(c) and reading_answer._names_candidate(c, case.question)
                for c in reports)
    return Verdict("IN" if case.content or other else "CO", False, "attributed_match")


@rule("text.reference_rejected", "IN", "reference_rejected", "when something else is asserted, unhedged",
      ("常有人说是沈括，其实是苏轼", "沈括", ""), when="missing")
def reference_rejected(case):
    """The answer names the reference only to take it back, deny it or turn it down."""
    rejected = case.answer.rejected
    if rejected and reading_match._text_match(case.ref, rules.key(rejected), rejected) \
            and not reading_places._place_parts(case.ref, case.key):
        sure = case.content and not rules.REFUSAL.search(case.affirmed) and not case.hedge
        return Verdict("IN", sure, "reference_rejected")


@lru_cache(maxsize=4096)
def _suffix_variants(main: str) -> tuple:
    """The reference with its generic last word swapped for another of its group (vocabulary: generic_suffixes):
    三国时期 for 三国时代; () when it ends in none or nothing of two characters would be left."""
    for group in vocabulary.groups("generic_suffixes"):
        for suffix in group:
            if main.endswith(suffix) and len(main) - len(suffix) >= 2:
                return tuple(main[:-len(suffix)] + other for other in group if other != suffix)
    return ()


@rule("text.suffix_variant", "CO", "suffix_variant", "no", ("是三国时期的著作。", "三国时代", "这是哪个时期的著作？"),
      when="missing", unless="refusal", alone=True)
def suffix_variant(case):
    """The reference with another generic last word that names the same thing (牛痘接种法 for 牛痘接种术)."""
    if any(v in case.key for v in _suffix_variants(case.ref.main)):
        return Verdict("CO", False, "suffix_variant")


@rule("text.inside_a_word", "IN", "inside_a_word", "no", ("氢气", "氢", ""), when="missing", unless="refusal")
def inside_a_word(case):
    """A one-character reference only inside another word (氢 in 氢元素, 汉 in 东汉)."""
    main = case.ref.main
    if len(main) == 1 and "\u4e00" <= main <= "\u9fff" and main in case.key:
        return Verdict("IN", False, "inside_a_word")


@rule("text.partial_list", "NA/IN", "partial_list", "no", ("魏和蜀", "魏、蜀、吴", ""), when="missing")
def partial_list(case):
    """Some items of a list reference: NA when nothing else is said (or it says it cannot recall the rest)."""
    items = case.ref.items
    if items and any(g in case.key for forms in items for g in forms):
        incomplete = reading_claims._only_some_items(items, case.key) or case.refuses
        return Verdict("NA" if incomplete else "IN", False, "partial_list")


@rule("text.narrower_dynasty", "CO", "narrower_dynasty", "no", ("西汉", "汉代", ""), when="missing", unless="refusal",
      alone=True)
def narrower_dynasty(case):
    """One half of a split dynasty (西汉 for 汉代): more specific."""
    main = reading_reference._DYNASTY.match(case.ref.main)
    main = main.group(1) if main else case.ref.main
    if main in reading_kinds._HALVES and len(set(reading_kinds._half_in_text(main).findall(case.affirmed))) == 1:
        return Verdict("CO", False, "narrower_dynasty")


@rule("text.other_dynasty", "IN", "other_dynasty", "unless it refuses in any way", ("西汉", "东汉", ""), when="missing")
def other_dynasty(case):
    """The other half of the reference's dynasty (西汉 for 东汉)."""
    split, halves = case.dynasty
    if halves - {split.group(1) if split else ""}:
        return Verdict("IN", not case.refusal, "other_dynasty")


def _less_specific_dynasty(case) -> bool:
    return bool(case.dynasty[1]) or reading_kinds._less_specific_dynasty(case.ref, case.answer)


@rule("text.other_period", "IN", "other_period", "no", ("西晋咸宁年间", "西晋太始年间", ""), when="missing")
def other_period(case):
    """The reference's dynasty with another period of it (a reign, a year)."""
    split, main, affirmed = case.dynasty[0], case.ref.main, case.affirmed
    if not split or not _less_specific_dynasty(case) or len(main) <= len(split.group(0)):
        return None
    whole_era = _YEAR_IN.search(main[split.end():]) \
        and reading_text._compiled(rf"{split.group(0)}(?:时期|年间|期间)").search(affirmed) \
        and not rules.find_numbers(affirmed, periods=False)  # 东汉时期 for 东汉永平十一年: all of it
    if not whole_era and (reading_kinds._ERA.search(affirmed) or rules.find_numbers(affirmed, periods=False)):
        return Verdict("IN", False, "other_period")


@rule("text.less_specific_dynasty", "NA", "less_specific", "yes", ("晋朝", "西晋太始年间", ""), when="missing")
def less_specific_dynasty(case):
    """The dynasty without the reference's half or period (汉代 for 西汉, 西晋 for 西晋太始年间)."""
    if _less_specific_dynasty(case):
        return Verdict("NA", True, "less_specific")


@rule("text.less_specific_age", "NA", "less_specific", "no", ("在中国古代就有了", "唐朝", ""), when="missing",
      unless="guess")
def less_specific_age(case):
    """An age (古代, 中古时期, 7世纪) and no dynasty for a dynasty reference."""
    main, affirmed = case.ref.main, case.affirmed
    if (reading_reference._DYNASTY.match(main) or main in reading_reference._DYNASTY_NAMES) \
            and reading_kinds._AGE.search(affirmed) \
            and not reading_kinds._DYNASTY_IN_TEXT.search(reading_kinds._AGES.sub("", affirmed)):
        return Verdict("NA", False, "less_specific")


@rule("text.less_specific_period", "NA", "less_specific", "no", ("新石器时代", "新石器时代晚期", ""), when="missing",
      unless="guess")
def less_specific_period(case):
    """A period without the reference's part of it."""
    part = reading_kinds._PERIOD_PART.match(case.ref.main)
    if part and part.group(1) in case.key:
        return Verdict("NA", False, "less_specific")


@rule("text.place", "CO/NA/IN", ("place_alias", "broader_place", "other_place", "narrower_place"),
      "when the answer's places are one claim and nothing else is said", ("法国", "日内瓦", "国际奥委会总部在哪个城市？"),
      when="missing")
def place(case):
    """Known places (places.tsv): another name (CO), only places holding it (NA), another place (IN),
    places inside it (CO)."""
    if reading_question._PLACE_QUESTION.search(case.question) or case.ref.main.endswith(reading_match._SUFFIXES):
        return reading_places._place_verdict(case.ref, case.answer, case.question)


@rule("text.broader_province", "NA", "broader_place", "no", ('甘肃省。', '敦煌', '莫高窟位于哪座城市？'), when="missing",
      unless="any")
def broader_province(case):
    """A province for a city, county or district, and no city or county named."""
    if (case.ref.main.endswith(("市", "县", "区", "镇")) or reading_question._CITY_QUESTION.search(case.question)) \
            and reading_places._BROADER_PLACE.search(case.affirmed) and not _CITY_IN_ANSWER.search(case.affirmed):
        return Verdict("NA", False, "broader_place")


@rule("text.place_parts", "CO", "place_parts", "no", ("浙江省嘉兴市桐乡市乌镇", "浙江乌镇", ""), when="missing",
      unless="refusal", alone=True)
def place_parts(case):
    """The parts of a place reference named in order, perhaps with levels between them."""
    if reading_places._place_parts(case.ref, case.key):
        return Verdict("CO", False, "place_parts")


@rule("text.broader_region", "NA", "broader_place", "no", ("中国西北地区", "兰州", "在哪里？"), when="missing",
      unless="guess")
def broader_region(case):
    """A region (西北地区, 青藏高原上) for a place question, and no city named."""
    if reading_question._PLACE_QUESTION.search(case.question) and reading_places._REGION.search(case.affirmed) \
            and not reading_places._names_a_city(case.ref, case.key, case.question):
        return Verdict("NA", False, "broader_place")


@rule("text.description", "NA", "description", "no", ("一位英国剧作家", "莎士比亚", ""), when="missing", unless="refusal")
def description(case):
    """The kind of thing described, and no name."""
    if case.described and reading_kinds._nothing_else(case.answer, case.question):
        return Verdict("NA", False, "description")


@rule("text.book_not_chapter", "NA", "book_not_chapter", "no", ("出自《礼记》", "《礼记·学记》", ""), when="missing",
      unless="refusal")
def book_not_chapter(case):
    """The book of a chapter reference."""
    if reading_match._book_not_chapter(case.ref, case.answer):
        return Verdict("NA", False, "book_not_chapter")


@rule("text.work_of", "NA", "work_of", "no", ("出自东汉张仲景的著作", "伤寒杂病论", "出自哪本医学著作？"),
      when="missing", unless="refusal")
def work_of(case):
    """Whose work, not which (a book question answered with an author's work)."""
    if reading_kinds._WORK_OF.search(case.affirmed) and "《" not in case.affirmed \
            and reading_question._BOOK_QUESTION.search(case.question):
        return Verdict("NA", False, "work_of")


@rule("text.place_of_it", "NA", "place_of_it", "no", ('在湖北省。', '黄石国家矿山公园', '中国首座国家矿山公园是什么？'), when="missing",
      unless="refusal")
def place_of_it(case):
    """Where the reference is (its opening place), not which one."""
    if reading_places._place_of_it(case.ref.main, case.key, case.question):
        return Verdict("NA", False, "place_of_it")


@rule("text.japanese_form", "CO", "japanese_form", "no", ("高畑勲", "高畑勋", ""), when="missing", unless="refusal")
def japanese_form(case):
    """The reference in Japanese characters (高畑勲, 水の呼吸)."""
    japanese = rules.from_japanese(case.affirmed)
    if japanese != case.affirmed and reading_match._text_match(case.ref, rules.key(japanese), japanese):
        return Verdict("CO", False, "japanese_form")


@rule("text.transliteration_variant", "CO", "transliteration_variant", "no", ("北卡罗来纳大学", "北卡罗莱纳大学", ""),
      when="missing", unless="refusal")
def transliteration_variant(case):
    """The reference once interchangeable transliteration characters are folded (vocabulary: translit_classes)."""
    if reading_match._transliterated(case.ref, case.key) and not rules.ALTERNATIVES.search(case.key):
        return Verdict("CO", False, "transliteration_variant")


@rule("text.transliteration_alias", "CO/IN", "transliteration_alias", "no", ('哈贝马斯', 'Habermas', '交往行为理论是谁提出的？'),
      when="missing")
def transliteration_alias(case):
    """A name in the other script that sounds like the reference (IN beside another attributed candidate)."""
    if case.alias == "transliteration_alias":
        return Verdict("IN" if case.alternative_content else "CO", False, "transliteration_alias")


@rule("text.bold_near_match", "CO", "bold_near_match", "no", ("**国立筑波大学**", "日本国立筑波大学", ""),
      when="missing", unless="refusal")
def bold_near_match(case):
    """The bold answer is the reference reworded."""
    if reading_match._bold_near(case.ref.main, case.answer):
        return Verdict("CO", False, "bold_near_match")


@rule("text.partial_transliteration", "CO", "partial_transliteration", "no", ('Fields奖', '菲尔兹奖', '数学界的最高奖是什么？'),
      when="missing", unless="refusal")
def partial_transliteration(case):
    """A Latin word that sounds like a transliterated part of a Chinese reference."""
    if not case.alias and not case.ref.items and not reading_match._other_foreign_name(case.ref, case.answer) \
            and reading_match._partly_sounds_like(case.ref.main, case.answer):
        return Verdict("CO", False, "partial_transliteration")


@rule("text.kind_of", "NA", "kind_of", "no", ("属于锥体的一种", "圆锥", ""), when="missing", unless="refusal")
def kind_of(case):
    """What the reference is a kind of (…的一种, a broader taxon, a code's prefix)."""
    said = [c for c in reading_text._split_clauses(case.affirmed) if rules.key(c)]
    one_of = len(said) == 1 and reading_kinds._ONE_OF.search(said[0]) and len(case.key) <= 12 and "《" not in said[0]
    if reading_kinds._KIND_OF.search(case.affirmed) or one_of \
            or reading_kinds._broader_rank(case.ref.main, case.affirmed) \
            or reading_kinds._code_prefix(case.ref.main, case.affirmed):
        return Verdict("NA", False, "kind_of")


@rule("text.broader_head", "NA", "broader_head", "no", ("佛教", "藏传佛教", ""), when="missing", unless="refusal")
def broader_head(case):
    """The head of the reference's compound."""
    if reading_kinds._broader_head(case.ref, case.answer, case.question):
        return Verdict("NA", False, "broader_head")


@rule("text.owner_only", "NA", "owner_only", "no", ("凤凰卫视", "凤凰卫视资讯台", ""), when="missing", unless="refusal")
def owner_only(case):
    """The reference's opening words, its owner."""
    if reading_kinds._owner_only(case.ref, case.answer, case.question):
        return Verdict("NA", False, "owner_only")


@rule("text.kind_only", "NA", "kind_only", "no", ("是英国作家", "莎士比亚", ""), when="missing", unless="refusal")
def kind_only(case):
    """A kind of thing and where, no name."""
    if reading_kinds._kind_only(case.answer, case.question):
        return Verdict("NA", False, "kind_only")


@rule("text.latin_core", "CO", "latin_core", "no", ("tvN", "tvN频道", ""), when="missing",
      unless=("refusal", "guess"), alone=True)
def latin_core(case):
    """The Latin core of a mixed-script reference."""
    main = case.ref.main
    core = reading_match._LATIN_RUN.findall(main)
    if core and reading_text._CJK.search(main) and core[-1] in reading_match._LATIN_RUN.findall(case.key) \
            and not reading_match._other_words_before(main, case.key, core[-1]):
        return Verdict("CO", False, "latin_core")


TEXT_RULES = (yes_no, longer_name, options_refused, alternatives, noted_alternative, hearsay_remark,
              attributed_alternative, other_given_name, set_aside, split_roles, role_to_other, hedged_match,
              other_lead_claim, bold_sibling, closer_clause, parallel_claims, list_with_extras, role_after_name,
              turn_after, others_of_kind, frame, match, other_option, attributed_match, reference_rejected,
              suffix_variant, inside_a_word, partial_list, narrower_dynasty, other_dynasty, other_period,
              less_specific_dynasty, less_specific_age, less_specific_period, place, broader_province, place_parts,
              broader_region, description, book_not_chapter, work_of, place_of_it, japanese_form,
              transliteration_variant, transliteration_alias, bold_near_match, partial_transliteration, kind_of,
              broader_head, owner_only, kind_only, latin_core)


def _settle(case, decision):
    """Where the question already uses another name of the reference, a match by another name is not sure."""
    if case.alias_question and decision.certain and case.only_alias():
        return decision._replace(certain=False, rule=ALIAS_QUESTION.name)
    return decision


ALIAS_QUESTION = step("text.alias_in_question", "CO/NA/IN", "(the rule's)", "no",
                      "the question already uses another name of the reference, or asks for a name of some kind, "
                      "and the answer names it only by another name: the verdict stands, unsure",
             examples=(('杜子美', '杜甫', '被称为“诗圣”的唐代诗人是谁？'),))
TEXT = Family("text", TEXT_RULES + UNMATCHED_RULES, _settle, (ALIAS_QUESTION,))

