"""Shared fixtures.

Caches: every test gets its own on-disk cache folder ($CHIMDQA_CACHE, inherited by the processes it starts), and so
does every test module's module-scoped fixtures (they are set up before any test's own): the suite never reads or
writes the user's caches, and no test is served what another test left there. The folder lies beside the test's
tmp_path, not in it, so a test may use tmp_path itself as an output folder. The one exception is opt-in:
`prebuilt_dictionary` puts CC-CEDICT's tables, built once per session, in the test's cache, for tests whose child
processes would otherwise each spend seconds building them (building and rebuilding them is test_judge_names's).

HTTP: `http_client` runs a test twice, once through each HTTP path of chimdqa_eval.llm: its own lean transport (plain
http:// without a proxy, the default) and httpx's (what https and proxies use; CHIMDQA_HTTP_CLIENT=httpx sends
every request there). The setting is in the environment, so the commands and child processes a test starts take it.

Plots: `unrendered_plots` describes every plot of a report or board but embeds a 1x1 image instead of its SVG, for
tests about something else (the queue's bookkeeping) that write many pages."""
import shutil

import pytest

# A 1x1 PNG: the plots are still described, their images are this.
TINY_PNG = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAAB"
            "JRU5ErkJggg==")


@pytest.fixture(autouse=True, scope="module")
def module_cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        path = tmp_path_factory.mktemp("module-cache")
        mp.setenv("CHIMDQA_CACHE", str(path))
        yield path


@pytest.fixture(params=["lean", "httpx"])
def http_client(request, monkeypatch):
    if request.param == "httpx":
        monkeypatch.setenv("CHIMDQA_HTTP_CLIENT", "httpx")
    else:
        monkeypatch.delenv("CHIMDQA_HTTP_CLIENT", raising=False)
    return request.param


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch):
    path = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("CHIMDQA_CACHE", str(path))
    return path


def _tables_file(tmp_path_factory, module, loader: str, builder: str, folder: str):
    """The tables file `module.<loader>()` saves under cache_dir(folder), built once (and, when this process has
    none loaded yet, loaded): with tables loaded already, those are saved as they are (no second build)."""
    cache = tmp_path_factory.mktemp(f"{folder}-tables")
    load = getattr(module, loader)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CHIMDQA_CACHE", str(cache))
        if load.cache_info().currsize:
            mp.setattr(module, builder, load)
            load.__wrapped__()
        else:
            load()
    (saved,) = (cache / folder).glob("*.tables")
    return saved


@pytest.fixture(scope="session")
def cedict_tables_file(tmp_path_factory):
    """CC-CEDICT's tables file (dictionary.py), built once per session."""
    from chimdqa_eval.factual import dictionary

    return _tables_file(tmp_path_factory, dictionary, "_tables", "_build_tables", "cedict")


@pytest.fixture(scope="session")
def pinyin_tables_file(tmp_path_factory):
    """pypinyin's readings as the judge's tables file (names.py), built once per session."""
    from chimdqa_eval.factual import names

    return _tables_file(tmp_path_factory, names, "_pinyin_tables", "_build_pinyin_tables", "pinyin")


@pytest.fixture
def prebuilt_dictionary(cedict_tables_file, pinyin_tables_file, private_cache):
    """The test's cache holds CC-CEDICT's and pypinyin's tables already (copies: nothing the test does reaches the
    session's)."""
    for saved in (cedict_tables_file, pinyin_tables_file):
        (private_cache / saved.parent.name).mkdir(exist_ok=True)
        shutil.copyfile(saved, private_cache / saved.parent.name / saved.name)


@pytest.fixture
def unrendered_plots(monkeypatch):
    from chimdqa_eval.report import html

    def image_data_uri(chart) -> str:
        assert chart.panels
        return TINY_PNG

    monkeypatch.setattr(html, "image_data_uri", image_data_uri)
