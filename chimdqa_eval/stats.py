"""`chimdqa stats [NAME] [--data-dir D]`: the paper's Table 2 (QA pairs per domain and question type, question
and answer lengths) and Table 3 (document pages and lengths per domain) for any release.

Lengths are in characters, as in the paper; a document's length is the sum of its extracted page texts.
"""
from __future__ import annotations

from collections import Counter, defaultdict

from chimdqa_eval.schema import DOMAINS, LEVELS, QUESTION_TYPES


def spread(values) -> tuple:
    """(max, min, mean) of a non-empty list of numbers."""
    values = list(values)
    return max(values), min(values), sum(values) / len(values)


def qa_counts(rows) -> dict:
    """domain -> {question type, level or 'total' -> count}, over the domains present in rows."""
    table = defaultdict(Counter)
    for row in rows:
        cell = table[row["domain"]]
        cell[row["question_type"]] += 1
        cell[row["level"]] += 1
        cell["total"] += 1
    return {d: dict(table[d]) for d in DOMAINS if d in table}


def qa_lengths(rows) -> dict:
    """domain (and 'all') -> {'question': spread, 'answer': spread} of lengths in characters."""
    groups = defaultdict(list)
    for row in rows:
        groups[row["domain"]].append(row)
        groups["all"].append(row)
    return {group: {field: spread(len(r[field]) for r in members) for field in ("question", "answer")}
            for group, members in groups.items()}


def document_table(pages) -> dict:
    """domain -> {'documents': n, 'pages': spread, 'length': spread} over the documents' page rows."""
    page_counts, lengths, domain_of = Counter(), Counter(), {}
    for page in pages:
        page_counts[page["doc_id"]] += 1
        lengths[page["doc_id"]] += len(page["text"])
        domain_of[page["doc_id"]] = page["domain"]
    table = {}
    for domain in DOMAINS:
        docs = [d for d, dom in domain_of.items() if dom == domain]
        if docs:
            table[domain] = {"documents": len(docs), "pages": spread(page_counts[d] for d in docs),
                             "length": spread(lengths[d] for d in docs)}
    return table


def format_table(header, rows) -> str:
    """Plain aligned columns: the first left-aligned, the rest right-aligned."""
    cells = [list(map(str, header))] + [list(map(str, row)) for row in rows]
    widths = [max(_width(row[i]) for row in cells) for i in range(len(header))]
    lines = []
    for row in cells:
        first = row[0] + " " * (widths[0] - _width(row[0]))
        rest = [" " * (w - _width(c)) + c for c, w in zip(row[1:], widths[1:])]
        lines.append("  ".join([first, *rest]).rstrip())
    return "\n".join(lines)


def _width(text: str) -> int:
    # CJK characters take two terminal columns
    return sum(2 if ord(ch) > 0x2E7F else 1 for ch in text)


def _fmt(triple, digits=1) -> list[str]:
    high, low, mean = triple
    return [f"{high:,}", f"{low:,}", f"{mean:,.{digits}f}"]


def render(qa_rows, pages) -> str:
    counts = qa_counts(qa_rows)
    totals = Counter()
    for cell in counts.values():
        totals.update(cell)
    columns = [*counts.values(), totals]
    table2a = format_table(["", *counts, "all"],
                           [[key, *(cell.get(key, 0) for cell in columns)]
                            for key in (*QUESTION_TYPES, *LEVELS, "total")])
    lengths = qa_lengths(qa_rows)
    table2b = format_table(["domain", "Q max", "Q min", "Q avg", "A max", "A min", "A avg"],
                           [[g, *_fmt(v["question"], 2), *_fmt(v["answer"], 2)]
                            for g, v in sorted(lengths.items(), key=lambda kv: kv[0] == "all")])
    docs = document_table(pages)
    table3 = format_table(["domain", "docs", "pages max", "pages min", "pages avg", "len max", "len min", "len avg"],
                          [[d, v["documents"], *_fmt(v["pages"]), *_fmt(v["length"])] for d, v in docs.items()])
    return (f"Table 2: QA pairs by question type, level and domain\n{table2a}\n\n"
            f"Table 2 (cont.): question (Q) and answer (A) lengths in characters\n{table2b}\n\n"
            f"Table 3: documents, pages and lengths in characters\n{table3}")
