"""chimdqa_eval.porter equals NLTK's PorterStemmer (default mode, NLTK_EXTENSIONS) word for word: on every Latin
word of the judge validation sets and the sample release, on a generated English word list (the words of
Python's own documentation with English endings and prefixes), on random strings that reach the rules' corners,
and on the examples of Porter's paper. NLTK is a test dependency here only; METEOR no longer imports it."""
from __future__ import annotations

import random
import re
import string
from pathlib import Path

import pytest
from nltk.stem.porter import PorterStemmer

from chimdqa_eval import porter

ROOT = Path(__file__).resolve().parent.parent
NLTK = PorterStemmer()

# The endings Porter's steps act on (and a few common ones they do not), to grow a word list from base words.
ENDINGS = ("", "s", "es", "ies", "sses", "ss", "ed", "ied", "eed", "ing", "ings", "y", "ly", "ily", "er", "ers",
           "est", "ness", "nesses", "ful", "fully", "fulness", "fulli", "less", "ation", "ational", "ations",
           "tional", "ization", "ize", "izes", "izer", "izing", "ise", "ism", "isms", "ist", "ity", "ities", "iviti",
           "aliti", "biliti", "ive", "ively", "iveness", "ous", "ously", "ousness", "ousli", "al", "ally", "alli",
           "alism", "alize", "ical", "icate", "iciti", "ic", "ance", "ence", "anci", "enci", "ant", "ent", "ently",
           "entli", "ement", "ment", "ments", "able", "ably", "abli", "bli", "ible", "ion", "ions", "ate", "ated",
           "ator", "ative", "iti", "ou", "eli", "logi", "logy", "ll", "e", "at", "bl", "iz", "ling", "ting")
PREFIXES = ("", "un", "re", "dis", "over", "y", "yy")

PAPER = {  # Porter (1980)'s examples with NLTK's stems
    "caresses": "caress", "ponies": "poni", "ties": "tie", "caress": "caress", "cats": "cat", "feed": "feed",
    "agreed": "agre", "plastered": "plaster", "bled": "bled", "motoring": "motor", "sing": "sing",
    "conflated": "conflat", "troubled": "troubl", "sized": "size", "hopping": "hop", "tanned": "tan",
    "falling": "fall", "hissing": "hiss", "fizzed": "fizz", "failing": "fail", "filing": "file", "happy": "happi",
    "sky": "sky", "relational": "relat", "conditional": "condit", "rational": "ration", "generalization":
    "gener", "dying": "die", "flies": "fli", "dies": "die", "spied": "spi", "died": "die", "enjoy": "enjoy",
}


def latin_words(text: str) -> set[str]:
    """Every Latin word as written and lower-cased, every run of word characters holding a Latin letter (mixed
    with digits or Han, as a segmenter may leave it), and every whitespace-separated piece holding one."""
    words = set(re.findall(r"[A-Za-z]+", text))
    words |= {w.lower() for w in words}
    for piece in re.findall(r"\w+", text) + text.split():
        if re.search(r"[A-Za-z]", piece):
            words.update((piece, piece.lower()))
    return words


def data_files() -> list[Path]:
    files = sorted((ROOT / "data" / "judge_validation").glob("*.jsonl"))
    files += sorted(p for p in (ROOT / "data" / "sample").rglob("*") if p.is_file() and p.suffix != ".pdf")
    return files


# NLTK before 3.10 looks a word up in its table of irregular forms as given, not lower-cased (Dying -> dy, not
# die); ours does as NLTK 3.10 on. The two differ only there, never on the lower-case words METEOR stems.
CASE_BLIND_TABLE = NLTK.stem("Dying") == "die"


def comparable(word: str) -> bool:
    return CASE_BLIND_TABLE or word == word.lower() or word.lower() not in porter._IRREGULAR


def mismatches(words) -> list[tuple[str, str, str]]:
    return [(w, porter.stem(w), NLTK.stem(w)) for w in sorted(words)
            if comparable(w) and porter.stem(w) != NLTK.stem(w)]


def test_paper_examples():
    assert {w: porter.stem(w) for w in PAPER} == PAPER
    assert {w: NLTK.stem(w) for w in PAPER} == PAPER  # the table above is NLTK's


def test_every_latin_word_of_the_validation_sets_and_the_sample():
    files = data_files()
    assert len(files) >= 10 and any(p.name == "simpleqa_heldout.jsonl" for p in files)
    words = set().union(*(latin_words(p.read_text(encoding="utf-8")) for p in files))
    assert len(words) > 10_000
    assert mismatches(words) == []


@pytest.mark.slow
def test_a_generated_english_word_list():
    from pydoc_data.topics import topics  # the Python documentation's English text (standard library)

    base = {w.lower() for w in re.findall(r"[A-Za-z]+", " ".join(topics.values()))}
    base |= {w.lower() for w in re.findall(r"[A-Za-z]+", (ROOT / "data" / "judge_validation" /
                                                           "validation.jsonl").read_text(encoding="utf-8"))}
    assert len(base) > 3000
    words = {b + e for b in base for e in ENDINGS}
    words |= {p + b for b in base for p in PREFIXES}
    words |= {b[:-1] + e for b in base if len(b) > 3 for e in ("ies", "ied", "ying", "yed", "ll", "lli")}
    assert len(words) > 250_000
    assert mismatches(words) == []


def test_random_strings_reach_the_corners():
    """Short strings over a few letters (y's, doubled consonants, w x), other characters NLTK treats as
    consonants, upper case (lower-cased first), and the literal '*d' its step 1b rule list also matches."""
    rng = random.Random(27)
    alphabet = "aeiouyybcdlstwxzgn" + "*-'1é" + "LSY"
    words = {"".join(rng.choice(alphabet) for _ in range(rng.randint(0, 9))) for _ in range(60_000)}
    words |= {"".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(1, 14))) for _ in range(40_000)}
    words |= {"a*ded", "x*ding", "o*d", "yyyyyyyy", "yyyyying", "y", "", "ies", "ied", "eed", "ing", "ed", "ll",
              "İed", "İİing", "SKIES", "Dying", "ßing", "news", "innings", "howe"}
    assert mismatches(words) == []


@pytest.mark.parametrize("word", ["İ" * 3 + "ing", "İd", "ǅed"])
def test_length_is_the_word_as_given(word):
    """NLTK leaves words of two characters alone counting the word before lower-casing, which can lengthen it."""
    assert porter.stem(word) == NLTK.stem(word)
