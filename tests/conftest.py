"""Every test gets its own on-disk cache folder ($CHIMDQA_CACHE, inherited by the processes it starts): the suite
never reads or writes the user's caches, and no test is served what another test left there."""
import pytest


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CHIMDQA_CACHE", str(tmp_path / "cache"))
