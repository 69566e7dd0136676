"""Headless Chromium for the page tests (the leaderboard's layout, the pages' safety with hostile input).

The browser is $CHIMDQA_BROWSER (a path or a command name), else the first of chromium, chromium-browser and
google-chrome on PATH. Without one a page test is skipped with the reason, unless CHIMDQA_REQUIRE_BROWSER=1
(.ci/run sets it after installing Debian's chromium): then it fails with that reason."""
import os
import shutil
import subprocess

import pytest

BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome")
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
                  "--virtual-time-budget=10000", "--dump-dom")


def find_browser(environ) -> tuple[str | None, str]:
    """(the browser's path, "") or (None, why there is none), looked up in `environ` (its CHIMDQA_BROWSER and
    PATH). A CHIMDQA_BROWSER that names nothing runnable is not replaced by another browser."""
    path = environ.get("PATH", os.defpath)
    chosen = environ.get("CHIMDQA_BROWSER")
    if chosen:
        found = shutil.which(chosen, path=path)
        return (found, "") if found else (None, f"CHIMDQA_BROWSER={chosen!r} is not an executable file or a "
                                                "command on PATH")
    for name in BROWSER_NAMES:
        found = shutil.which(name, path=path)
        if found:
            return found, ""
    return None, (f"no browser to check the HTML pages in: none of {', '.join(BROWSER_NAMES)} is on PATH "
                  "and CHIMDQA_BROWSER is not set (Debian: `apt-get install -y chromium`, as .ci/run does)")


def browser_or_outcome(environ) -> tuple[str, str]:
    """("run", browser path), or ("skip" | "fail", reason): a missing browser fails only where
    CHIMDQA_REQUIRE_BROWSER=1 says one must be there."""
    found, reason = find_browser(environ)
    if found:
        return "run", found
    return ("fail" if environ.get("CHIMDQA_REQUIRE_BROWSER") == "1" else "skip"), reason


def chromium() -> str:
    """The browser's path; skips (or fails) the calling test when there is none."""
    outcome, detail = browser_or_outcome(os.environ)
    if outcome == "fail":
        pytest.fail(detail + " (CHIMDQA_REQUIRE_BROWSER=1)")
    if outcome == "skip":
        pytest.skip(detail)
    return detail


def dump_dom(browser, page, profile, *flags) -> str:
    """The DOM of `page` (a file) once its scripts have run, as Chromium serializes it."""
    run = subprocess.run([browser, *CHROMIUM_FLAGS, *flags, f"--user-data-dir={profile}", page.resolve().as_uri()],
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "HOME": str(profile)})
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout
