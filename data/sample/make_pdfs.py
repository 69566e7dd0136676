"""Rebuild the sample PDFs from sources/<doc_id>.txt:  python data/sample/make_pdfs.py

Source format: paragraphs separated by blank lines; a line starting with '# ' is a heading; a line
'<<<page>>>' starts a new page. The document title (from documents.jsonl) heads the first page. Text is set
in PyMuPDF's built-in simplified-Chinese font, so no font file is needed.
"""
from __future__ import annotations

import json
from pathlib import Path

import pymupdf

HERE = Path(__file__).resolve().parent
PAGE = pymupdf.paper_rect("a4")
MARGIN = 56
FONT = "china-s"
SIZES = {"title": 16, "heading": 13, "body": 11}
GAP = 8  # points between paragraphs: keeps each paragraph its own text block when read back
FIXED_DATE = "D:20240101000000Z"  # fixed metadata dates keep rebuilt files byte-stable


def parse_source(text: str) -> list[list[tuple[str, str]]]:
    """Pages of (style, paragraph) pairs."""
    pages = []
    for page_text in text.split("<<<page>>>"):
        paragraphs = []
        for block in page_text.strip().split("\n\n"):
            for line in filter(None, (line.strip() for line in block.split("\n"))):
                style = "heading" if line.startswith("# ") else "body"
                paragraphs.append((style, line.removeprefix("# ")))
        pages.append(paragraphs)
    return pages


def write_pdf(path: Path, title: str, pages) -> None:
    document = pymupdf.open()
    for number, paragraphs in enumerate(pages):
        page = document.new_page(width=PAGE.width, height=PAGE.height)
        y = MARGIN
        for style, text in ([("title", title)] if number == 0 else []) + paragraphs:
            box = pymupdf.Rect(MARGIN, y, PAGE.width - MARGIN, PAGE.height - MARGIN)
            # No-break spaces: insert_textbox wraps at a space and drops it, and a reader joining the lines
            # of a Chinese block cannot tell that "7.0 mmol/L" had one. Extraction turns them back into spaces.
            left = page.insert_textbox(box, text.replace(" ", "\u00a0"), fontname=FONT, fontsize=SIZES[style])
            if left < 0:
                raise SystemExit(f"{path.name}: page {number + 1} overflows; move a <<<page>>> marker up")
            y = PAGE.height - MARGIN - left + GAP
    document.set_metadata({"title": title, "creator": "data/sample/make_pdfs.py", "producer": "PyMuPDF",
                           "creationDate": FIXED_DATE, "modDate": FIXED_DATE})
    document.save(path, garbage=4, deflate=True, no_new_id=True)


def main() -> None:
    for line in (HERE / "documents.jsonl").read_text(encoding="utf-8").splitlines():
        doc = json.loads(line)
        source = (HERE / "sources" / f"{doc['doc_id']}.txt").read_text(encoding="utf-8")
        target = HERE / doc["file"]
        target.parent.mkdir(parents=True, exist_ok=True)
        write_pdf(target, doc["title"], parse_source(source))
        print(f"wrote {target.relative_to(HERE)}")


if __name__ == "__main__":
    main()
