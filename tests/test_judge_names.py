"""The rule judge on names written in another script: pinyin, CLDR country / language / currency names, and
transliterated foreign names (chimdqa_eval.factual.names)."""
import pytest

from chimdqa_eval.factual import names
from chimdqa_eval.factual.judge_rule import judge_answer
from chimdqa_eval.factual.rules import NORMALIZER_VERSION


@pytest.mark.parametrize("answer, reference, question", [
    ("Liu Xiang", "刘翔", "2004年雅典奥运会男子110米栏冠军是谁？"),
    ("Xiang Liu", "刘翔", "2004年雅典奥运会男子110米栏冠军是谁？"),           # given name first
    ("Sima Qian", "司马迁", "《史记》的作者是谁？"),
    ("Qian Sima", "司马迁", "《史记》的作者是谁？"),                         # a two-character surname, moved
    ("Lǚ Bù", "吕布", "“人中吕布，马中赤兔”说的是谁？"),                      # tone marks and ü
    ("Lyu Bu", "吕布", "“人中吕布，马中赤兔”说的是谁？"),
    ("Chongqing", "重庆", "中国哪座城市被称为山城？"),                        # 重: a heteronym
    ("Xi'an", "西安", "秦始皇陵位于哪座城市附近？"),                         # an apostrophe between syllables
    ("是Shenzhen。", "深圳", "中国第一个经济特区是哪座城市？"),
    ("Switzerland", "瑞士", "国际奥委会总部设在哪个国家？"),                   # CLDR, English for Chinese
    ("瑞士", "Switzerland", "国际奥委会总部设在哪个国家？"),                   # and the other way
    ("義大利", "意大利", "比萨斜塔位于哪个国家？"),                           # CLDR's traditional name 義大利
    ("南韓", "韩国", "2018年冬奥会在哪个国家举办？"),                         # zh_Hant's 南韓 for 韩国
    ("Italy", "意大利", "比萨斜塔位于哪个国家？"),
    ("German", "德语", "奥地利的官方语言是什么？"),
    ("Deutsch", "德语", "奥地利的官方语言是什么？"),                          # the language's own name
    ("Swiss Franc", "瑞士法郎", "列支敦士登使用哪种货币？"),
    ("CHF", "瑞士法郎", "列支敦士登使用哪种货币？"),                          # a currency code, as the whole answer
    ("李白", "Li Bai", "《静夜思》的作者是谁？"),                              # a Chinese answer for pinyin
])
def test_a_name_in_another_script_is_certainly_correct(answer, reference, question):
    assert tuple(judge_answer(answer, reference, question)) == ("CO", True, "match")


@pytest.mark.parametrize("answer, reference, question", [
    ("The capital is Beijing.", "北京", "中华人民共和国的首都是哪里？"),
    ("Not Beijing, it is Shanghai.", "北京", "中华人民共和国的首都是哪里？"),  # English the rules cannot read
])
def test_a_romanized_name_in_an_english_sentence_is_not_certain(answer, reference, question):
    assert tuple(judge_answer(answer, reference, question)) == ("CO", False, "latin_sentence")


def test_a_currency_code_inside_a_sentence_is_no_match():
    """ALL is Albania's lek and an English word: a code counts only as the whole answer."""
    verdict = judge_answer("All of them use the euro.", "阿尔巴尼亚列克", "阿尔巴尼亚的法定货币是什么？")
    assert verdict.grade == "IN"


@pytest.mark.parametrize("answer, reference, question", [
    ("Shakespeare", "莎士比亚", "《麦克白》的作者是谁？"),
    ("Newton", "牛顿", "谁提出了三大运动定律？"),
    ("London", "伦敦", "大英博物馆位于哪座城市？"),
    ("Isaac Newton", "艾萨克·牛顿", "谁提出了三大运动定律？"),
    ("Charles Darwin", "查尔斯·达尔文", "《物种起源》的作者是谁？"),
    ("Ludwig van Beethoven", "路德维希·凡·贝多芬", "《命运交响曲》的作者是谁？"),
    ("Mozart", "沃尔夫冈·阿马德乌斯·莫扎特", "歌剧《魔笛》的作曲者是谁？"),
    ("I believe it was Michael Faraday.", "迈克尔·法拉第", "谁发现了电磁感应现象？"),
    ("Watson and Crick", "沃森和克里克", "DNA双螺旋结构是哪两位科学家提出的？"),   # every item of the list
    ("哈贝马斯", "Jürgen Habermas", "《交往行为理论》的作者是谁？"),             # Chinese for a Latin name
    ("作者是托尔斯泰。", "Leo Tolstoy", "《安娜·卡列尼娜》的作者是谁？"),
])
def test_a_transliteration_that_sounds_alike_is_a_likely_alias(answer, reference, question):
    assert tuple(judge_answer(answer, reference, question)) == ("CO", False, "transliteration_alias")


@pytest.mark.parametrize("answer, reference, question, reason", [
    ("Einstein", "牛顿", "谁提出了三大运动定律？", "latin_name"),
    ("Dickens", "莎士比亚", "《麦克白》的作者是谁？", "latin_name"),
    ("Paris", "伦敦", "大英博物馆位于哪座城市？", "latin_name"),
    ("Zhou Enlai", "毛泽东", "1949年开国大典上宣告中华人民共和国成立的是谁？", "latin_name"),  # other pinyin
    ("Watson and Pauling", "沃森和克里克", "DNA双螺旋结构是哪两位科学家提出的？", "latin_name"),
    ("France", "德国", "柏林是哪个国家的首都？", "latin_name"),                 # another CLDR country
    ("福柯", "Jürgen Habermas", "《交往行为理论》的作者是谁？", "chinese_name"),
])
def test_a_different_name_in_another_script_stays_uncertain_in(answer, reference, question, reason):
    assert tuple(judge_answer(answer, reference, question)) == ("IN", False, reason)


def test_a_refusal_naming_someone_in_latin_letters_is_still_a_refusal():
    assert judge_answer("I don't know, sorry.", "艾萨克·牛顿", "谁提出了三大运动定律？").grade == "NA"


def test_pinyin_forms_cover_heteronyms_and_both_name_orders():
    forms = names.pinyin_forms("重庆")
    assert {"chongqing", "zhongqing"} <= forms
    assert {"yangliwei", "liweiyang"} <= names.pinyin_forms("杨利伟")
    assert names.pinyin_forms("安") == frozenset()          # one syllable is too often an English word
    assert names.pinyin_forms("Li Bai") == frozenset()


def test_sound_similarity_ranks_the_right_name_first():
    for han, right, wrong in [("阿姆斯特朗", "armstrong", "aldrin"), ("哈贝马斯", "habermas", "foucault"),
                              ("华盛顿", "washington", "jefferson"), ("牛顿", "newton", "einstein"),
                              ("莎士比亚", "shakespeare", "dickens")]:
        assert names.sound_similarity(han, right) >= names.SOUND_ALIKE > names.sound_similarity(han, wrong)


def test_is_pinyin_tells_romanized_chinese_from_other_latin_words():
    assert names.is_pinyin("zhouenlai") and names.is_pinyin("beijing")
    assert not names.is_pinyin("london") and not names.is_pinyin("shakespeare")


def test_the_signature_names_the_name_tables():
    assert "+pypinyin-" in NORMALIZER_VERSION and "+babel-" in NORMALIZER_VERSION
