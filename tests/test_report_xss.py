"""Every string from a file is shown as text: a per-run report and a leaderboard page made from metadata and
results whose every string field holds a payload (script tags, event handlers, attribute breakers,
javascript: URLs, </style>, ]]>, template syntax) hold exactly the elements the pages themselves put there.

The pages are made through the real path where the input allows it (a metadata file -> `chimdqa evaluate
--metadata` -> report.html; those results -> write_leaderboard), and by handing report_html a results document
directly for the fields that validation upstream would refuse (a string where a number belongs, a javascript:
URL, a date that is none): the renderer is safe on its own. Each page is checked as written (html.parser), and
as Chromium builds it after its scripts ran (see browser.py for when a missing browser skips or fails)."""
import copy
import json
from collections import Counter
from html.parser import HTMLParser

import pytest

from browser import chromium, dump_dom
from chimdqa_eval import cli, release
from chimdqa_eval.report.html import report_html
from chimdqa_eval.report.leaderboard import write_leaderboard
from chimdqa_eval.report.results import read_results

# One string with every breakout at once, each calling pwn() (which the browser check defines) if it ever runs;
# 191 characters, within the 200 a model name or a dataset field may have.
PAYLOAD = ("</title></style><script>pwn()</script><img src=x onerror=pwn()><svg onload=pwn()>"
           "\" onmouseover=\"pwn()\" autofocus onfocus=\"pwn()\" x=\"' onfocus='pwn()' autofocus x='"
           "javascript:pwn() ]]> {{7*7}}")
# An http(s) address the metadata check accepts (printable, no spaces) that breaks out of a double-quoted href.
URL_PAYLOAD = 'https://x.test/"onmouseover="pwn()"autofocus/onfocus="pwn()"><img/src=x/onerror=pwn()>'
SPY = "<script>function pwn(){document.documentElement.setAttribute('data-pwned','yes')}</script>"

# What the pages themselves are made of; the data-* attributes are set by the page's own image check.
PAGE_TAGS = {"html", "head", "meta", "title", "style", "script", "body", "h1", "h2", "h3", "p", "b", "br", "code",
             "span", "div", "ul", "li", "a", "table", "thead", "tbody", "tr", "th", "td", "details", "summary",
             "section", "figure", "img", "figcaption"}
PAGE_ATTRIBUTES = {"lang", "charset", "name", "content", "class", "id", "title", "alt", "src", "href", "rel", "style",
                   "data-rendered", "data-ok", "data-total", "data-width"}


class Elements(HTMLParser):
    """The start tags (with their attributes) and the text of a page as html.parser reads them; the text is
    what the page shows, not the source of its scripts and styles."""

    def __init__(self, page: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.texts: list[str] = []
        self.in_code = False
        self.feed(page)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self.in_code = tag in ("script", "style")

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        self.in_code = False

    def handle_data(self, data):
        if not self.in_code:
            self.texts.append(data)


def intruders(page: str, *, links=(), scripts=1) -> list[str]:
    """Whatever in `page` the page does not put there itself: other elements or attributes (event handlers
    above all), more scripts or styles, an image that is not one of its own SVG plots, a link other than
    `links` (the model's http(s) address)."""
    elements = Elements(page)
    problems = [f"<{tag}>" for tag, _ in elements.tags if tag not in PAGE_TAGS]
    problems += [f"<{tag} {name}=…>" for tag, attrs in elements.tags for name in attrs if name not in PAGE_ATTRIBUTES]
    count = Counter(tag for tag, _ in elements.tags)
    if (count["script"], count["style"]) != (scripts, 1):
        problems.append(f"{count['script']} <script> and {count['style']} <style> elements")
    images = [attrs.get("src") or "" for tag, attrs in elements.tags if tag == "img"]
    if len(images) != count["figure"] or not all(src.startswith("data:image/svg+xml;base64,") for src in images):
        problems.append(f"{len(images)} images in {count['figure']} figures: {[src[:40] for src in images]}")
    hrefs = [attrs.get("href") for tag, attrs in elements.tags if tag == "a"]
    if hrefs != list(links):
        problems.append(f"links {hrefs}, expected {list(links)}")
    return problems


def shown_text(page: str) -> str:
    return "".join(Elements(page).texts)


# ---- hostile input ---------------------------------------------------------------------------------------------

def hostile_metadata() -> dict:
    """A submission's metadata with a payload in every string field the metadata check lets through (the date
    must be an ISO date, the URL an http(s) address, the mode one of three); the numbers are numbers."""
    quality = {"hit_at_k": 50.0, "recall_at_k": 40.0, "n": 10}
    return {"model": PAYLOAD, "notes": PAYLOAD, "url": URL_PAYLOAD, "date": "2025-06-01",
            "generation": {"mode": "rag", "backend": PAYLOAD, "model": PAYLOAD, "api": [PAYLOAD],
                           "temperature": 0.0, "max_tokens": 64, "template": {"version": PAYLOAD, "sha256": PAYLOAD},
                           "context": {"max_context_tokens": 1000, "token_counter": PAYLOAD, "questions_truncated": 2},
                           "retrieval": {"method": PAYLOAD, "top_k": 3, "chunk_size": 500, "chunk_overlap": 50,
                                         "reranker": PAYLOAD},
                           "retrieval_quality": {"k": 3, **quality, "by": {"question_type": {PAYLOAD: quality}}}}}


def every_string(value):
    """`value` with every string in it replaced by the payload (keys kept)."""
    if isinstance(value, str):
        return PAYLOAD
    if isinstance(value, dict):
        return {k: every_string(v) for k, v in value.items()}
    if isinstance(value, list):
        return [every_string(v) for v in value]
    return value


def hostile_results(results: dict, run: str) -> dict:
    """The results with every string replaced by the payload, a metric, a breakdown column and a label named by
    it, and the model's URL and date the ones the results check accepts; `run` tells two such documents apart."""
    doc = every_string({k: v for k, v in results.items() if k != "_path"})
    factual = doc["metrics"]["factual"]
    factual[PAYLOAD] = copy.deepcopy(factual["F1"])
    factual["F1"]["by"][PAYLOAD] = {PAYLOAD: copy.deepcopy(factual["F1"]["by"]["domain"]["finance"])}
    doc["model"].update(url=URL_PAYLOAD, date="2025-06-01")
    doc["run_id"] = run + PAYLOAD
    return doc


def with_numbers_as_payload(doc: dict) -> dict:
    """`doc` (see hostile_results) with the payload also where the report shows a number as text, and in every
    field of the generation record; the metrics' own numbers stay numbers (check_results_values makes every
    reader refuse anything else, and the plots are drawn from them)."""
    doc = copy.deepcopy(doc)
    doc["generation"] = every_string(hostile_metadata()["generation"])  # the mode too
    generation = doc["generation"]
    for section, fields in (("context", ("max_context_tokens", "questions_truncated")),
                            ("retrieval", ("top_k", "chunk_size", "chunk_overlap")),
                            ("retrieval_quality", ("k", "hit_at_k", "recall_at_k", "n"))):
        generation[section].update(dict.fromkeys(fields, PAYLOAD))
    generation["retrieval_quality"]["by"]["question_type"][PAYLOAD] = dict.fromkeys(
        ("hit_at_k", "recall_at_k", "n"), PAYLOAD)
    generation.update(temperature=PAYLOAD, max_tokens=PAYLOAD)
    doc["submission"].update(n_scored=PAYLOAD, coverage=PAYLOAD)
    doc["dataset"]["n_questions"] = PAYLOAD
    calibration = doc["calibration"]
    calibration["n"] = PAYLOAD
    calibration["by"][PAYLOAD] = {PAYLOAD: dict(calibration["by"]["domain"]["finance"], n=PAYLOAD, ece=PAYLOAD,
                                                accuracy=PAYLOAD, mean_confidence=PAYLOAD)}
    doc["model"].update(url="javascript:pwn()", date=PAYLOAD)
    return doc


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """{name: (page file, the links it may hold)}: the report of an evaluation of hostile metadata, a board of
    two hostile results, and the report drawn directly from a results document with payloads in its numbers."""
    root = tmp_path_factory.mktemp("hostile")
    rows = [json.loads(line) for line in (release.SAMPLE_DIR / "predictions.jsonl").read_text(encoding="utf-8")
            .splitlines()]
    predictions = root / "predictions.jsonl"  # with confidences: the report's calibration section is drawn too
    predictions.write_text("".join(json.dumps({**r, "confidence": 70}, ensure_ascii=False) + "\n" for r in rows),
                           encoding="utf-8")
    metadata = root / "hostile.meta.json"
    metadata.write_text(json.dumps(hostile_metadata()), encoding="utf-8")
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    try:
        assert cli.main(["evaluate", "--predictions", str(predictions), "--metadata", str(metadata),
                         "--out", str(root / "run"), "--resamples", "0", "--metrics", "factual", "rouge_l"]) == 0
    finally:
        mp.undo()
    results = read_results(root / "run")
    assert results["model"]["model"] == PAYLOAD and results["generation"]["backend"] == PAYLOAD
    board = [hostile_results(results, "1"), hostile_results(results, "2")]
    write_leaderboard(root / "board", board, title=PAYLOAD, note=PAYLOAD)
    direct = root / "direct.html"
    direct.write_text(report_html(with_numbers_as_payload(board[0]), [board[1]]), encoding="utf-8")
    return {"evaluate --metadata": (root / "run" / "report.html", [URL_PAYLOAD]),
            "write_leaderboard": (root / "board" / "index.html", []),
            "report_html": (direct, [])}


@pytest.mark.parametrize("name", ["evaluate --metadata", "write_leaderboard", "report_html"])
def test_payloads_are_shown_as_text(pages, name):
    path, links = pages[name]
    page = path.read_text(encoding="utf-8")
    assert intruders(page, links=links) == []
    assert PAYLOAD in shown_text(page)  # shown, not dropped


SVG_TAGS = {"svg", "defs", "pattern", "g", "rect", "line", "polyline", "polygon", "circle", "text", "title"}


@pytest.mark.parametrize("name", ["evaluate --metadata", "write_leaderboard", "report_html"])
def test_the_plots_hold_payloads_as_text(pages, name):
    """Each plot is a well-formed SVG of the elements the plots are drawn with, no event handler, no link, and
    the payload (a model name in the legend or on an axis) in it as text."""
    import base64
    from xml.etree import ElementTree

    page = pages[name][0].read_text(encoding="utf-8")
    images = [attrs["src"] for tag, attrs in Elements(page).tags if tag == "img"]
    assert images
    texts = []
    for src in images:
        drawn = ElementTree.fromstring(base64.b64decode(src.split(",", 1)[1]))
        elements = list(drawn.iter())
        assert {e.tag.split("}")[1] for e in elements} <= SVG_TAGS
        assert not [a for e in elements for a in e.attrib if a.lower().startswith("on") or "href" in a.lower()]
        texts += ["".join(e.itertext()) for e in elements if e.tag.endswith("}text")]
    assert any(PAYLOAD in t for t in texts)  # e.g. "<payload> (RAG)"


def test_every_hostile_field_of_the_report_is_on_it_as_text(pages):
    """The fields the report shows are all there, as text (some 70 of them hold the payload)."""
    page = pages["report_html"][0].read_text(encoding="utf-8")
    text = shown_text(page)
    assert text.count(PAYLOAD) >= 60 and "javascript:pwn()" in text
    assert "hit@" + PAYLOAD in text  # the column heads of the retrieval table, where k was never escaped


@pytest.mark.parametrize("url, link", [
    ("https://example.org/model?a=1&b=2", True),
    (URL_PAYLOAD, True),
    ("javascript:pwn()", False),
    ("JavaScript:pwn()", False),
    (" javascript:pwn()", False),
    ("data:text/html,<script>pwn()</script>", False),
    ("//evil.test/x", False),
])
def test_only_http_addresses_become_links(pages, url, link):
    results = read_results(pages["evaluate --metadata"][0].parent)
    doc = dict(results, model=dict(results["model"], url=url),
               metrics={"factual": {"F1": dict(results["metrics"]["factual"]["F1"], by={})}})  # no plots: quicker
    page = report_html(doc)
    assert intruders(page, links=[url] if link else []) == []
    assert url in shown_text(page)


@pytest.mark.parametrize("name", ["evaluate --metadata", "write_leaderboard", "report_html"])
def test_payloads_run_nothing_in_chromium(pages, name, tmp_path):
    browser = chromium()
    path, links = pages[name]
    page = path.read_text(encoding="utf-8")
    spied = tmp_path / "page.html"  # pwn() records in the document that a payload ran
    spied.write_text(page.replace("<head>", "<head>" + SPY, 1), encoding="utf-8")
    dom = dump_dom(browser, spied, tmp_path / "profile")
    root_element = next(attrs for tag, attrs in Elements(dom).tags if tag == "html")
    assert "data-pwned" not in root_element  # no payload called pwn()
    assert intruders(dom, links=links, scripts=2) == []
    assert 'data-rendered="no"' not in dom and PAYLOAD in shown_text(dom)
