"""Heading-, paragraph- and page-aware chunking of a document's pages for retrieval.

A page's text (release.page_text) has one text block per line. A line that looks like a heading (numbered:
一、 / 第三章 / （二） / 2.1, or short and without any punctuation) opens a new section; chunks never span two
sections (a run of heading-like lines too long for a heading path, such as a table's cells one a line, is body
text). Chunks never span two pages either: a chunk holds the text of one page, the page it is cited by, so a
reader who follows a citation finds every line of it there. Inside a section and a page, paragraphs are packed
greedily up to `size` characters; a paragraph longer than that is cut at sentence ends (。！？；), and a sentence
longer than that at `size` characters. Consecutive chunks of a section on the same page share up to `overlap`
characters, and no more than the next piece leaves room for within `size`: the whole trailing paragraphs /
sentences of the previous chunk that fit, or else its last characters that fit from the first clause start
among them. A new page starts a chunk without overlap. Sizes are in characters (for Chinese about one token
each) and count the body, not the heading.

Each chunk is ranked with its section's heading in front (`search_text`), so a chunk says what it is about even
when its section began pages before; the text shown and cited (`text`) carries the heading only when the whole
heading stands on the chunk's own page.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_NUMBERED = re.compile(r"^(第[一二三四五六七八九十百零〇\d]+[章节篇部分]|[一二三四五六七八九十]+、|"
                       r"[（(][一二三四五六七八九十]+[)）]|\d+(\.\d+)*[、.\s])")
_PUNCTUATION = re.compile(r"[，,。；;：:！!？?、]")
_SENTENCE_END = re.compile(r"(?<=[。！？；!?;])")
_CLAUSE_END = re.compile(r"[。！？；!?;，,]")
HEADING_MAX_CHARS = 30
HEADING_PATH_MAX_CHARS = 2 * HEADING_MAX_CHARS


@dataclass(frozen=True)
class Chunk:
    doc_id: str
    index: int            # position in the document's chunk list
    page: int             # the one page all of `text` comes from (what a citation shows)
    heading: str          # the section heading ("" before the first heading)
    text: str             # the body, with the heading line in front when the heading stands on `page`
    search_text: str      # heading line (if any) + body: what retrieval ranks

    def context(self) -> dict:
        """The chunk as a submission's retrieved context."""
        return {"text": self.text, "doc_id": self.doc_id, "page": self.page}


def is_heading(line: str) -> bool:
    line = line.strip()
    if not line or len(line) > HEADING_MAX_CHARS or line[-1] in "。；;！!？?，,":
        return False
    return bool(_NUMBERED.match(line)) and len(_PUNCTUATION.findall(line)) <= 1 or not _PUNCTUATION.search(line)


def sections(pages) -> list[tuple[str, tuple, list[tuple[str, int, int]]]]:
    """(heading, the pages its lines stand on, [(paragraph, page, paragraph number)]) in document order, from
    (page number, text) pairs. Headings with nothing between them (a chapter, then its first section) join into
    one heading path; a run of heading-like lines longer than HEADING_PATH_MAX_CHARS (a table's cells, one a
    line) keeps its first line as the heading and the rest are paragraphs; a heading that ends the document with
    nothing under it becomes a paragraph."""
    lines = [(page, line.strip()) for page, text in pages for line in text.split("\n") if line.strip()]
    headings = [is_heading(line) for _, line in lines]
    start = 0
    while start < len(lines):
        end = start
        while end < len(lines) and headings[end]:
            end += 1
        if len(" ".join(line for _, line in lines[start:end])) > HEADING_PATH_MAX_CHARS:
            headings[start + 1:end] = [False] * (end - start - 1)  # a table's cells, a list: body text
        start = end + 1
    out = [("", (), [])]
    number = 0
    last_heading = None
    for (page, line), heading_like in zip(lines, headings):
        if heading_like:
            heading, heading_pages, paragraphs = out[-1]
            if heading and not paragraphs:
                out[-1] = (f"{heading} {line}", tuple(sorted({*heading_pages, page})), paragraphs)
            else:
                out.append((line, (page,), []))
            last_heading = page
        else:
            number += 1
            out[-1][2].append((line, page, number))
    heading, _, paragraphs = out[-1]
    if heading and not paragraphs:
        out[-1] = ("", (), [(heading, last_heading, number + 1)])
    return [s for s in out if s[2]]


def _pieces(paragraph: str, size: int) -> list[str]:
    """A paragraph as pieces of at most `size` characters, cut at sentence ends where possible."""
    if len(paragraph) <= size:
        return [paragraph]
    pieces = []
    for sentence in filter(None, _SENTENCE_END.split(paragraph)):
        pieces += [sentence[i:i + size] for i in range(0, len(sentence), size)]
    return pieces


def _join(units) -> str:
    """Pieces of one paragraph join directly, paragraphs with a line break."""
    text, previous = "", None
    for piece, _, number in units:
        text += ("" if previous in (None, number) else "\n") + piece
        previous = number
    return text


def _overlap(units, overlap: int) -> list:
    kept, total = [], 0
    for unit in reversed(units):
        if total + len(unit[0]) > overlap:
            break
        kept.insert(0, unit)
        total += len(unit[0])
    if not kept and overlap > 0:
        piece, page, number = units[-1]
        tail = piece[-overlap:]
        cut = _CLAUSE_END.search(tail[:-1])  # start after a clause end rather than inside a word or number
        kept = [(tail[cut.end():] if cut else tail, page, number)]
    return kept


def chunk_pages(doc_id: str, pages, size: int = 400, overlap: int = 80) -> list[Chunk]:
    """The chunks of one document; `pages` are (page number, text) pairs in order."""
    if size < 1 or not 0 <= overlap < size:
        raise ValueError(f"chunk size must be >= 1 and 0 <= overlap < size, got size {size}, overlap {overlap}")
    chunks = []
    for heading, heading_pages, paragraphs in sections(pages):
        units = [(piece, page, number) for text, page, number in paragraphs for piece in _pieces(text, size)]
        current, fresh = [], 0
        for unit in units:
            if current and unit[1] != current[-1][1]:  # a new page: the chunk so far ends, nothing carries over
                if fresh:
                    chunks.append(_chunk(doc_id, len(chunks), heading, heading_pages, current))
                current, fresh = [], 0
            elif fresh and sum(len(u[0]) for u in current) + len(unit[0]) > size:
                chunks.append(_chunk(doc_id, len(chunks), heading, heading_pages, current))
                # no more overlap than leaves room for the unit: a chunk stays within `size`
                current, fresh = _overlap(current, min(overlap, size - len(unit[0]))), 0
            current.append(unit)
            fresh += 1
        chunks.append(_chunk(doc_id, len(chunks), heading, heading_pages, current))
    return chunks


def _chunk(doc_id, index, heading, heading_pages, units) -> Chunk:
    body = _join(units)
    page = units[0][1]
    search_text = f"{heading}\n{body}" if heading else body
    return Chunk(doc_id, index, page, heading, search_text if heading_pages == (page,) else body, search_text)
