"""The rule judge on names written in another script: pinyin, CLDR country / language / currency names, and
transliterated foreign names (chimdqa_eval.factual.names)."""
import functools
from pathlib import Path

import pytest

from chimdqa_eval.factual import dictionary, names
from chimdqa_eval.factual.judge_rule import judge_answer
from chimdqa_eval.factual.version import NORMALIZER_VERSION


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
    ("Li Bai and Du Fu", "李白和杜甫", "被并称为“李杜”的是哪两位诗人？"),          # every item of a list
    ("China and Japan", "中国和日本", "《马关条约》是哪两个国家签订的？"),
])
def test_a_name_in_another_script_is_certainly_correct(answer, reference, question):
    assert tuple(judge_answer(answer, reference, question)) == ("CO", True, "match")


@pytest.mark.parametrize("answer, reference, question", [
    ("China, Japan and Korea", "中国和日本", "《马关条约》是哪两个国家签订的？"),     # a list with more
    ("The capital is Beijing.", "北京", "中华人民共和国的首都是哪里？"),
])
def test_a_romanized_name_in_an_english_sentence_is_not_certain(answer, reference, question):
    assert tuple(judge_answer(answer, reference, question)) == ("CO", False, "latin_sentence")


def test_an_english_denial_takes_the_name_back():
    assert judge_answer("Not Beijing, it is Shanghai.", "北京", "中华人民共和国的首都是哪里？").grade == "IN"
    assert judge_answer("It is not in Shanghai but in Beijing.", "北京", "中华人民共和国的首都是哪里？").grade == "CO"


def test_a_name_cldr_gives_two_places_adds_no_forms():
    """刚果 names both Congos in CLDR (刚果（布）, 刚果（金）): neither's other names are taken for it."""
    assert names.chinese_names("刚果") == frozenset() and names.latin_names("刚果") == (frozenset(), frozenset())
    assert "congobrazzaville" in names.latin_names("刚果布")[0]


def test_a_variant_name_inside_another_country_name_is_not_a_form():
    """Taiwan's 尼日 (Niger) is in 尼日利亚 (Nigeria): Nigeria is no answer for Niger; 尼日尔 still is."""
    assert judge_answer("尼日利亚", "Niger", "哪个国家的首都是尼亚美？").grade == "IN"
    assert tuple(judge_answer("尼日尔", "Niger", "哪个国家的首都是尼亚美？")) == ("CO", True, "match")
    assert "尼日" not in names.chinese_names("niger") and "中国" in names.chinese_names("china")
    assert names.chinese_names("centralamerica") == names.chinese_names("中美洲") == {"中美洲"}  # not 中美


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
    ("Geneva, Switzerland", "日内瓦", "红十字国际委员会总部设在哪座城市？"),      # the country beside it is context
])
def test_a_transliteration_that_sounds_alike_is_a_likely_alias(answer, reference, question, without_dictionary):
    assert tuple(judge_answer(answer, reference, question)) == ("CO", False, "transliteration_alias")


@pytest.fixture
def without_dictionary(monkeypatch):
    """The judge with an empty CC-CEDICT, to test the rules the dictionary would otherwise answer first."""
    monkeypatch.setattr(dictionary, "_tables", lambda: ({}, {}, {}, {}))
    for cached in (dictionary.english_names, dictionary.chinese_names, dictionary.synonyms):
        cached.cache_clear()
    yield
    for cached in (dictionary.english_names, dictionary.chinese_names, dictionary.synonyms):
        cached.cache_clear()


@pytest.mark.parametrize("answer, reference, question, reason", [
    ("Einstein", "牛顿", "谁提出了三大运动定律？", "latin_name"),
    ("Dickens", "莎士比亚", "《麦克白》的作者是谁？", "latin_name"),
    ("Paris", "伦敦", "大英博物馆位于哪座城市？", "latin_name"),
    ("Zhou Enlai", "毛泽东", "1949年开国大典上宣告中华人民共和国成立的是谁？", "latin_name"),  # other pinyin
    ("Watson and Pauling", "沃森和克里克", "DNA双螺旋结构是哪两位科学家提出的？", "latin_name"),
    ("Li Bai and Wang Wei", "李白和杜甫", "被并称为“李杜”的是哪两位诗人？", "latin_name"),
    ("France", "德国", "柏林是哪个国家的首都？", "latin_name"),                 # another CLDR country
    ("It was in the United States.", "印度", "泰姬陵位于哪个国家？", "latin_name"),  # not a sound-alike of 印度
    ("福柯", "Jürgen Habermas", "《交往行为理论》的作者是谁？", "chinese_name"),
])
def test_a_different_name_in_another_script_stays_uncertain_in(answer, reference, question, reason):
    assert tuple(judge_answer(answer, reference, question)) == ("IN", False, reason)


def test_a_chinese_answer_for_a_latin_country_is_compared_with_its_chinese_name():
    """Switzerland has a Chinese name in CLDR (瑞士): another country is IN by the place rules, not an unknown
    Chinese name that might be its own."""
    verdict = judge_answer("奥地利", "Switzerland", "国际奥委会总部设在哪个国家？")
    assert verdict.grade == "IN" and verdict.reason == "place_level"


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


# Transliterations written from general knowledge (people, cities, countries): Chinese name, Latin name (_ for a
# space). SOUND_ALIKE was chosen on them.
TRANSLITERATIONS = [tuple(pair.split()) for pair in """
    阿姆斯特朗 Armstrong, 莎士比亚 Shakespeare, 牛顿 Newton, 华盛顿 Washington, 哈贝马斯 Habermas, 伦敦 London,
    爱因斯坦 Einstein, 达尔文 Darwin, 巴黎 Paris, 柏林 Berlin, 罗马 Rome, 纽约 New_York, 狄更斯 Dickens, 贝多芬 Beethoven,
    莫扎特 Mozart, 巴赫 Bach, 肖邦 Chopin, 托尔斯泰 Tolstoy, 普希金 Pushkin, 雨果 Hugo, 歌德 Goethe, 康德 Kant, 黑格尔 Hegel,
    马克思 Marx, 尼采 Nietzsche, 柏拉图 Plato, 亚里士多德 Aristotle, 苏格拉底 Socrates, 哥白尼 Copernicus, 伽利略 Galileo,
    开普勒 Kepler, 居里 Curie, 诺贝尔 Nobel, 爱迪生 Edison, 特斯拉 Tesla, 林肯 Lincoln, 丘吉尔 Churchill, 拿破仑 Napoleon,
    凯撒 Caesar, 哥伦布 Columbus, 麦哲伦 Magellan, 弗莱明 Fleming, 巴斯德 Pasteur, 孟德尔 Mendel, 门捷列夫 Mendeleev,
    海明威 Hemingway, 马克吐温 Mark_Twain, 乔治华盛顿 George_Washington, 亚历山大弗莱明 Alexander_Fleming, 日内瓦 Geneva,
    维也纳 Vienna, 莫斯科 Moscow, 悉尼 Sydney, 墨尔本 Melbourne, 多伦多 Toronto, 温哥华 Vancouver, 洛杉矶 Los_Angeles,
    波士顿 Boston, 西雅图 Seattle, 迈阿密 Miami, 伊斯坦布尔 Istanbul, 开罗 Cairo, 雅典 Athens, 马德里 Madrid,
    巴塞罗那 Barcelona, 阿姆斯特丹 Amsterdam, 布鲁塞尔 Brussels, 斯德哥尔摩 Stockholm, 哥本哈根 Copenhagen, 赫尔辛基 Helsinki,
    华沙 Warsaw, 布拉格 Prague, 布达佩斯 Budapest, 里斯本 Lisbon, 加拿大 Canada, 澳大利亚 Australia, 意大利 Italy, 西班牙 Spain,
    葡萄牙 Portugal, 墨西哥 Mexico, 巴西 Brazil, 阿根廷 Argentina, 智利 Chile, 埃及 Egypt, 肯尼亚 Kenya, 伊朗 Iran, 伊拉克 Iraq,
    印度 India, 古巴 Cuba, 秘鲁 Peru, 瑞典 Sweden, 挪威 Norway, 丹麦 Denmark, 波兰 Poland, 乌克兰 Ukraine, 比利时 Belgium,
    奥地利 Austria, 匈牙利 Hungary, 罗素 Russell, 霍金 Hawking, 图灵 Turing, 诺伊曼 Neumann, 香农 Shannon, 费曼 Feynman,
    玻尔 Bohr, 普朗克 Planck, 薛定谔 Schrodinger, 海森堡 Heisenberg, 狄拉克 Dirac, 麦克斯韦 Maxwell, 法拉第 Faraday, 欧拉 Euler,
    高斯 Gauss, 莱布尼茨 Leibniz, 笛卡尔 Descartes, 帕斯卡 Pascal, 卢梭 Rousseau, 伏尔泰 Voltaire, 孟德斯鸠 Montesquieu,
    梵高 van_Gogh, 毕加索 Picasso, 达芬奇 da_Vinci, 米开朗基罗 Michelangelo, 拉斐尔 Raphael, 莫奈 Monet, 罗丹 Rodin,
    但丁 Dante, 塞万提斯 Cervantes, 荷马 Homer, 奥斯汀 Austen, 勃朗特 Bronte, 乔伊斯 Joyce, 卡夫卡 Kafka, 加缪 Camus,
    萨特 Sartre, 福克纳 Faulkner, 斯坦贝克 Steinbeck, 奥威尔 Orwell, 尤尔根哈贝马斯 Jurgen_Habermas, 阿恩奈斯 Arne_Naess,
    尼尔阿姆斯特朗 Neil_Armstrong, 奥尔德林 Aldrin, 加加林 Gagarin, 弗洛伊德 Freud, 荣格 Jung, 亚当斯密 Adam_Smith, 凯恩斯 Keynes,
    林奈 Linnaeus, 巴甫洛夫 Pavlov, 瓦特 Watt, 焦耳 Joule, 安培 Ampere, 欧姆 Ohm, 伏特 Volta, 哈勃 Hubble, 开尔文 Kelvin,
    卢瑟福 Rutherford, 汤姆孙 Thomson, 道尔顿 Dalton, 拉瓦锡 Lavoisier, 阿基米德 Archimedes, 毕达哥拉斯 Pythagoras,
    欧几里得 Euclid, 托勒密 Ptolemy, 希特勒 Hitler, 斯大林 Stalin, 列宁 Lenin, 肯尼迪 Kennedy, 奥巴马 Obama, 特朗普 Trump,
    撒切尔 Thatcher, 甘地 Gandhi, 曼德拉 Mandela, 乔布斯 Jobs, 比尔盖茨 Bill_Gates, 马斯克 Musk, 迪士尼 Disney, 卓别林 Chaplin,
    希区柯克 Hitchcock, 斯皮尔伯格 Spielberg, 披头士 Beatles, 堂吉诃德 Don_Quixote, 鲁滨逊 Robinson, 福尔摩斯 Holmes,
    俄罗斯 Russia, 芬兰 Finland, 爱尔兰 Ireland, 苏格兰 Scotland, 威尔士 Wales, 荷兰 Holland, 土耳其 Turkey, 叙利亚 Syria,
    以色列 Israel, 约旦 Jordan, 黎巴嫩 Lebanon, 利比亚 Libya, 突尼斯 Tunisia, 阿尔及利亚 Algeria, 摩洛哥 Morocco,
    尼日利亚 Nigeria, 埃塞俄比亚 Ethiopia, 索马里 Somalia, 坦桑尼亚 Tanzania, 赞比亚 Zambia, 津巴布韦 Zimbabwe,
    马达加斯加 Madagascar, 斐济 Fiji, 菲律宾 Philippines, 印度尼西亚 Indonesia, 马来西亚 Malaysia, 柬埔寨 Cambodia, 老挝 Laos,
    尼泊尔 Nepal, 巴基斯坦 Pakistan, 阿富汗 Afghanistan, 孟加拉 Bengal, 斯里兰卡 Sri_Lanka, 哈萨克斯坦 Kazakhstan,
    乌兹别克斯坦 Uzbekistan, 蒙古 Mongolia, 哥伦比亚 Colombia, 委内瑞拉 Venezuela, 玻利维亚 Bolivia, 乌拉圭 Uruguay,
    巴拉圭 Paraguay, 牙买加 Jamaica, 海地 Haiti, 巴拿马 Panama, 危地马拉 Guatemala, 尼加拉瓜 Nicaragua, 底特律 Detroit,
    休斯敦 Houston, 达拉斯 Dallas, 丹佛 Denver, 亚特兰大 Atlanta, 拉斯维加斯 Las_Vegas, 慕尼黑 Munich, 汉堡 Hamburg,
    法兰克福 Frankfurt, 科隆 Cologne, 米兰 Milan, 威尼斯 Venice, 佛罗伦萨 Florence, 那不勒斯 Naples, 马赛 Marseille, 里昂 Lyon,
    曼彻斯特 Manchester, 利物浦 Liverpool, 爱丁堡 Edinburgh, 都柏林 Dublin, 奥斯陆 Oslo, 基辅 Kyiv, 德黑兰 Tehran,
    巴格达 Baghdad, 迪拜 Dubai, 孟买 Mumbai, 加尔各答 Kolkata, 雅加达 Jakarta, 马尼拉 Manila, 乌兰巴托 Ulaanbaatar,
    内罗毕 Nairobi, 开普敦 Cape_Town, 约翰内斯堡 Johannesburg, 布宜诺斯艾利斯 Buenos_Aires, 利马 Lima, 圣地亚哥 Santiago,
    渥太华 Ottawa, 蒙特利尔 Montreal, 惠灵顿 Wellington, 堪培拉 Canberra
""".split(",")]


def test_sound_alike_finds_most_transliterations_and_few_wrong_pairs():
    """Each Chinese name against its Latin name, and against the Latin names of the next 40 pairs (wrong)."""
    n = len(TRANSLITERATIONS)
    right = [names.sound_similarity(han, latin.replace("_", "")) for han, latin in TRANSLITERATIONS]
    wrong = [names.sound_similarity(han, TRANSLITERATIONS[(i + k) % n][1].replace("_", ""))
             for i, (han, _) in enumerate(TRANSLITERATIONS) for k in range(1, 41)]
    assert sum(s >= names.SOUND_ALIKE for s in right) / n >= 0.75
    assert sum(s >= names.SOUND_ALIKE for s in wrong) / len(wrong) <= 0.02


def test_is_pinyin_tells_romanized_chinese_from_other_latin_words():
    assert names.is_pinyin("zhouenlai") and names.is_pinyin("beijing")
    assert not names.is_pinyin("london") and not names.is_pinyin("shakespeare")


def test_the_signature_names_the_name_tables():
    assert "+pypinyin-" in NORMALIZER_VERSION and "+babel-" in NORMALIZER_VERSION


@pytest.mark.parametrize("answer, reference, grade", [
    ("Fields Medal.", "菲尔兹奖", "CO"), ("Kepler's laws", "开普勒定律", "CO"),
    ("University of Groningen", "格罗宁根大学", "CO"),
    ("Wolf Prize", "菲尔兹奖", "IN"), ("Newton laws", "开普勒定律", "IN"),
])
def test_a_latin_word_that_sounds_like_part_of_the_reference_is_a_likely_alias(answer, reference, grade):
    verdict = judge_answer(answer, reference, "这是什么？")
    assert (verdict.grade, verdict.certain) == (grade, False)


def test_the_dictionary_tables_are_cached_on_disk_and_a_broken_cache_is_rebuilt(tmp_path, monkeypatch):
    """CC-CEDICT's tables are built once and kept under $CHIMDQA_CACHE/cedict, named by the dictionary's version,
    this module's source and the byte order: a later process loads the same tables; a damaged file is rebuilt."""
    # What _build_tables makes, taken from the tables this process loaded (building them again takes seconds).
    made = tuple({key: value for key, value in table.items()} for table in dictionary._tables())
    monkeypatch.setenv("CHIMDQA_CACHE", str(tmp_path))
    # A cache of the test's own: the tables this process has loaded stay loaded for the tests after it.
    tables = functools.lru_cache(maxsize=1)(dictionary._tables.__wrapped__)
    monkeypatch.setattr(dictionary, "_tables", tables)
    builds = []

    def build():
        builds.append(1)
        return made

    monkeypatch.setattr(dictionary, "_build_tables", build)
    built = tables()
    (saved,) = (tmp_path / "cedict").glob("*.tables")
    assert dictionary.VERSION in saved.name and len(builds) == 1
    tables.cache_clear()
    assert tables() == built and len(builds) == 1  # loaded from the file
    saved.write_bytes(b"not a table")
    tables.cache_clear()
    assert tables() == built and "poissondistribution" in built[1]["泊松分布"] and len(builds) == 2
    assert saved.read_bytes() != b"not a table"  # rewritten
    data = bytearray(saved.read_bytes())
    data[len(data) // 2] ^= 1  # one flipped bit in the records: the checksum notices
    saved.write_bytes(bytes(data))
    tables.cache_clear()
    assert tables() == built and saved.read_bytes() != bytes(data) and len(builds) == 3
    tables.cache_clear()
    assert tables() == built and len(builds) == 3  # the rebuilt file loads


def test_the_dictionary_tables_are_looked_up_in_place_as_the_dicts_they_hold():
    tables = ({"泊松分布": frozenset({"poissondistribution", "poisson"}), "a": frozenset({"b"}), "\ud800x": frozenset({""})},
              {}, {f"k{i}": frozenset({str(i), "x"}) for i in range(1000)}, {"松下": frozenset({"panasonic"})})
    decoded = dictionary._decode_tables(dictionary._encode_tables(tables))
    for table, original in zip(decoded, tables):
        assert table == original and len(table) == len(original) and dict(table.items()) == original
        for key, value in original.items():
            assert key in table and table[key] == table.get(key) == value
        assert "missing" not in table and table.get("missing", ()) == () and table.get(3) is None
        with pytest.raises(KeyError):
            table["missing"]
    with pytest.raises(ValueError):
        dictionary._decode_tables(dictionary._encode_tables(tables)[:-1])


def test_a_table_whose_checksum_holds_but_whose_structure_does_not_is_refused():
    """The checksum catches damage, not a file made to pass it: a table with no empty slot (a lookup of a missing
    key would never end) or a slot pointing outside its records is refused (ValueError: rebuilt by
    cached_tables), never looked up."""
    import struct

    from chimdqa_eval.factual import tables

    record = struct.pack("<II", 1, 1) + b"ab"
    full = struct.pack("<III", 1, 1, len(record)) + struct.pack("<I", 1) + record
    outside = struct.pack("<III", 2, 1, len(record)) + struct.pack("<II", 0, 99) + record
    too_many = struct.pack("<III", 2, 2, len(record)) + struct.pack("<II", 0, 1) + record
    for forged in (full, outside, too_many, struct.pack("<III", 0, 0, 0)):
        with pytest.raises(ValueError):
            tables.Table.decode(memoryview(forged))
    good = struct.pack("<III", 2, 1, len(record)) + struct.pack("<II", 0, 1) + record
    assert tables.Table.decode(memoryview(good))[0].text("a") == "b"


def test_the_tables_file_name_follows_the_code_and_the_unicode_that_build_it(tmp_path, monkeypatch):
    """Tables built by another version of any module the builder calls, or under another Unicode database (what
    \\w and NFKD mean differs between Python versions), are other files; no cache folder at all (no
    $CHIMDQA_CACHE, no home folder) means building in memory, not a crash."""
    import unicodedata

    from chimdqa_eval.factual import rules, tables

    monkeypatch.setenv("CHIMDQA_CACHE", str(tmp_path))
    builder = tmp_path / "builder.py"
    builder.write_text("x = 1\n")
    name = tables.cache_file("t", "v1", str(builder), rules.__file__)
    assert name.parent == tmp_path / "t" and name.name.startswith("v1-")
    assert tables.cache_file("t", "v1", str(builder), rules.__file__) == name
    assert tables.cache_file("t", "v1", str(builder)) != name  # the modules it calls count
    monkeypatch.setattr(unicodedata, "unidata_version", "99.0.0")
    assert tables.cache_file("t", "v1", str(builder), rules.__file__) != name
    monkeypatch.delenv("CHIMDQA_CACHE")
    monkeypatch.delenv("HOME", raising=False)
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: (_ for _ in ()).throw(RuntimeError("no home"))))
    assert tables.cache_file("t", "v1", str(builder)) is None


def test_the_pinyin_tables_read_text_as_pypinyin_does():
    """names._lazy_pinyin and names._readings answer from tables built from pypinyin (its dictionaries as objects
    take ~55 MB): the same syllables for its long phrases, for mixes of phrases and characters (where its
    segmentation decides), for the transliterations above and for text the tables do not hold (Latin, symbols)."""
    import random

    from pypinyin import Style, lazy_pinyin, pinyin
    from pypinyin.constants import PHRASES_DICT, PINYIN_DICT

    phrases = sorted(p for p in PHRASES_DICT if len(p) >= 4)
    characters = sorted(chr(c) for c in PINYIN_DICT if 0x4E00 <= c <= 0x9FFF)
    rng = random.Random(23)
    mixes = ["".join(rng.choice(phrases) if rng.random() < 0.5 else rng.choice(characters)
                     for _ in range(rng.randint(1, 4))) for _ in range(3000)]
    texts = phrases[::4] + mixes + [m[1:] for m in mixes] + [han for han, _ in TRANSLITERATIONS] \
        + ["重庆", "长江大桥", "北京·", "abc", "", "〇一", "安娜·卡列尼娜x"]
    assert [names._lazy_pinyin(t) for t in texts] == [lazy_pinyin(t, style=Style.NORMAL) for t in texts]
    sample = rng.sample(characters, 2000) + ["重", "长", "行"]
    assert [names._readings.__wrapped__(c) for c in sample] == \
        [tuple(pinyin(c, style=Style.NORMAL, heteronym=True)[0]) for c in sample]
    assert names._pinyin_syllables() >= {"chong", "qing", "lv", "lu", "zhuang"}


def test_the_pinyin_tables_are_cached_on_disk_and_a_broken_cache_is_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv("CHIMDQA_CACHE", str(tmp_path))
    tables = functools.lru_cache(maxsize=1)(names._pinyin_tables.__wrapped__)
    made = ({"重庆": "chong qing", "重": "\x00"}, {"重": "zhong", "庆": "qing"}, {"重": "zhong\x1fchong"},
            {"": frozenset({"zhong", "chong", "qing"})})
    builds = []
    monkeypatch.setattr(names, "_build_pinyin_tables", lambda: builds.append(1) or made)
    built = tables()
    (saved,) = (tmp_path / "pinyin").glob("*.tables")
    assert "pypinyin-" in saved.name and len(builds) == 1 and built[0].text("重庆") == "chong qing"
    tables.cache_clear()
    assert tables() == built and len(builds) == 1  # mapped from the file
    data = bytearray(saved.read_bytes())
    data[-3] ^= 1  # one flipped bit in the records: the checksum notices
    saved.write_bytes(bytes(data))
    tables.cache_clear()
    assert tables() == built and len(builds) == 2 and saved.read_bytes() != bytes(data)


def test_grading_a_name_needs_no_pypinyin_once_its_tables_are_built(tmp_path, prebuilt_dictionary, private_cache):
    """The tables are mapped from the cache: a new process grades a transliterated name without importing pypinyin
    (whose dictionaries are ~55 MB resident)."""
    import os
    import subprocess
    import sys

    code = ("import sys; from chimdqa_eval.factual import judge_answer as j;"
            "print(j('阿恩·奈斯', 'Arne Næss', '深层生态学是由哪位哲学家提出的？').grade, 'pypinyin' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**os.environ, "CHIMDQA_CACHE": str(private_cache)})
    assert done.stdout.split() == ["CO", "False"]
