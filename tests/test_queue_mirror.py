"""The queue's trust model, tried as a hostile participant would: the requests mirror (a folder standing in for
the Hub repo that every participant can write to) is untrusted input. Each test is one attack from issue 22; the
maintainer's processor must keep its own settings, statuses and paths whatever the mirror says, and one bad
submission must stop no one else's."""
import csv
import json
from pathlib import Path

import pytest

from chat_server import ChatServer
from chimdqa_eval import cli
from chimdqa_eval.queue.board_config import load_board_config
from chimdqa_eval.queue.store import Queue
from test_queue import BOARD, SAMPLE, variant

SECRET_TOKEN = "sk-maintainer-secret-0123456789"


@pytest.fixture(autouse=True)
def offline(monkeypatch, unrendered_plots):
    """Offline, with the maintainer's secret in the environment; the pages' plots are not rasterised (every test
    here scores and publishes a board or two, and none is about the plots)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("MAINTAINER_TOKEN", SECRET_TOKEN)


@pytest.fixture
def board(tmp_path):
    """(the maintainer's queue folder with its own leaderboard.yaml, results, board, the public mirror)."""
    queue, mirror = tmp_path / "queue", tmp_path / "mirror"
    queue.mkdir()
    mirror.mkdir()
    for folder in (queue, mirror):
        (folder / "leaderboard.yaml").write_text(BOARD, encoding="utf-8")
    return queue, tmp_path / "results", tmp_path / "board", mirror


def submit(mirror: Path, tmp_path: Path, predictions: Path, submitter: str, *extra) -> dict:
    """A participant's honest `chimdqa queue submit` through the mirror; the request it wrote there."""
    own = tmp_path / f"participant-{submitter}"
    assert cli.main(["queue", "submit", str(predictions), "--queue", str(own), "--submitter", submitter,
                     "--hub-requests", str(mirror), *map(str, extra)]) == 0
    newest = max((mirror / "requests").glob("*.json"), key=lambda p: p.stat().st_mtime_ns)
    return json.loads(newest.read_text(encoding="utf-8"))


def process(queue, results, board_dir, mirror) -> int:
    return cli.main(["queue", "process", "--queue", str(queue), "--results", str(results), "--board",
                     str(board_dir), "--hub-requests", str(mirror)])


def board_models(board_dir: Path) -> list[str]:
    path = board_dir / "leaderboard.csv"
    rows = csv.DictReader(path.open(encoding="utf-8")) if path.exists() else []
    return sorted(r["model"].removeprefix("'") for r in rows)  # the CSV's guard against formulas (`-x` -> `'-x`)


def local(queue) -> dict:
    return {r["id"]: r for r in Queue(queue).requests()}


def rewrite(path: Path, **changes) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc.update(changes)
    path.write_text(json.dumps(doc), encoding="utf-8")


def test_a_mirror_cannot_change_the_boards_settings(board, tmp_path):
    """The mirror's leaderboard.yaml asks for an LLM judge on the attacker's server with the maintainer's token:
    no request reaches that server, the processor scores with its own rule judge, and its settings are
    published back over the mirror's."""
    queue, results, board_dir, mirror = board
    request = submit(mirror, tmp_path, SAMPLE, "alice")
    with ChatServer(lambda body: "结论：正确") as attacker:
        (mirror / "leaderboard.yaml").write_text(
            f"scoring:\n  judge: llm\n  judge_model: x\n  api_base: {attacker.api_base}\n"
            "  api_key_env: MAINTAINER_TOKEN\n  resamples: 0\n", encoding="utf-8")
        assert process(queue, results, board_dir, mirror) == 0
        # the next run starts from whatever the first left behind
        submit(mirror, tmp_path, variant(tmp_path, "bob-model", {"aca-ret-001": "不知道"}), "bob")
        assert process(queue, results, board_dir, mirror) == 0
        assert attacker.requests == [] and attacker.gets == []
    assert (queue / "leaderboard.yaml").read_text(encoding="utf-8") == BOARD
    published = load_board_config(mirror / "leaderboard.yaml")  # the maintainer's settings, published back
    assert published.scoring == load_board_config(queue / "leaderboard.yaml").scoring
    doc = json.loads((results / request["id"] / "results.json").read_text(encoding="utf-8"))
    assert doc["settings"]["judge"] == "rule" and doc["settings"]["resamples"] == 20
    assert SECRET_TOKEN not in json.dumps(doc)


def test_a_forged_finished_request_is_not_on_the_board(board, tmp_path):
    """A request file that claims FINISHED with a results folder the attacker uploaded is never ranked."""
    queue, results, board_dir, mirror = board
    honest = submit(mirror, tmp_path, SAMPLE, "alice")
    assert process(queue, results, board_dir, mirror) == 0
    forged_results = mirror / "uploads" / "forged"
    forged_results.parent.mkdir()
    # a real results folder, renamed to the attacker's model
    import shutil

    shutil.copytree(results / honest["id"], forged_results)
    doc = json.loads((forged_results / "results.json").read_text(encoding="utf-8"))
    doc["model"]["model"] = "forged-model"
    (forged_results / "results.json").write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    forged_id = "20990101T000000-forged-model-0123abcd"
    forged = {**honest, "id": forged_id, "model": "forged-model", "status": "FINISHED",
              "results": str(forged_results), "sha256": "0" * 64, "predictions": f"predictions/{forged_id}.jsonl"}
    (mirror / "requests" / f"{forged_id}.json").write_text(json.dumps(forged), encoding="utf-8")
    # a second honest submission makes the processor rebuild the board
    submit(mirror, tmp_path, variant(tmp_path, "bob-model", {"aca-ret-001": "不知道"}), "bob")
    assert process(queue, results, board_dir, mirror) == 0
    assert board_models(board_dir) == ["bob-model", "sample-system"]
    assert forged_id not in local(queue)  # its predictions never arrived: it is not a request yet
    # published back: the mirror's copy of the honest requests says what the processor decided
    assert json.loads((mirror / "requests" / f"{honest['id']}.json").read_text())["status"] == "FINISHED"


def test_tampered_predictions_fail_as_changed_since_submission(board, tmp_path):
    """Rewriting another participant's predictions in the mirror before the processor takes them in FAILs
    the request (the sha256 recorded at submission differs) instead of scoring the attacker's answers."""
    queue, results, board_dir, mirror = board
    request = submit(mirror, tmp_path, SAMPLE, "alice")
    sabotaged = variant(tmp_path, "sabotage", {}).read_text(encoding="utf-8")
    sabotaged = "\n".join(line.replace('"prediction": "', '"prediction": "不知道') for line in sabotaged.splitlines())
    (mirror / request["predictions"]).write_text(sabotaged + "\n", encoding="utf-8")
    assert process(queue, results, board_dir, mirror) == 0
    taken = local(queue)[request["id"]]
    assert taken["status"] == "FAILED" and "changed since submission" in taken["reason"]
    assert not (results / request["id"]).exists()


def test_edits_after_intake_change_nothing(board, tmp_path):
    """Once taken in, a request is the processor's: rewriting its predictions or its status in the mirror
    neither re-scores it nor changes the board, and the processor's copy is published back."""
    queue, results, board_dir, mirror = board
    request = submit(mirror, tmp_path, SAMPLE, "alice")
    assert process(queue, results, board_dir, mirror) == 0
    before = (results / request["id"] / "results.json").read_bytes()
    (mirror / request["predictions"]).write_text("garbage\n", encoding="utf-8")
    rewrite(mirror / "requests" / f"{request['id']}.json", status="PENDING")
    assert process(queue, results, board_dir, mirror) == 0
    assert local(queue)[request["id"]]["status"] == "FINISHED"
    assert (results / request["id"] / "results.json").read_bytes() == before
    assert json.loads((mirror / "requests" / f"{request['id']}.json").read_text())["status"] == "FINISHED"


def test_a_competitor_set_to_failed_in_the_mirror_is_still_scored(board, tmp_path):
    queue, results, board_dir, mirror = board
    request = submit(mirror, tmp_path, SAMPLE, "alice")
    rewrite(mirror / "requests" / f"{request['id']}.json", status="FAILED", reason="disqualified",
            history=[{"status": "FAILED", "at": "2026-01-01", "by": "maintainer"}])
    assert process(queue, results, board_dir, mirror) == 0
    assert local(queue)[request["id"]]["status"] == "FINISHED"
    assert board_models(board_dir) == ["sample-system"]
    assert json.loads((mirror / "requests" / f"{request['id']}.json").read_text())["status"] == "FINISHED"


def test_a_request_naming_an_absolute_path_reads_nothing_there(board, tmp_path):
    """`predictions: /maintainer/secret.jsonl` is refused: the processor reads only predictions/<id>.jsonl."""
    queue, results, board_dir, mirror = board
    secret = tmp_path / "maintainer-only" / "secret.jsonl"
    secret.parent.mkdir()
    text = SAMPLE.read_text(encoding="utf-8").replace("sample", "SECRET-ANSWER")
    secret.write_text(text, encoding="utf-8")
    request = submit(mirror, tmp_path, SAMPLE, "mallory")
    rewrite(mirror / "requests" / f"{request['id']}.json", predictions=str(secret))
    assert process(queue, results, board_dir, mirror) == 0
    taken = local(queue)[request["id"]]
    assert taken["status"] == "FAILED" and "names no other path" in taken["reason"]
    assert not any("SECRET-ANSWER" in p.read_text(encoding="utf-8", errors="replace")
                   for folder in (queue, results) if folder.exists() for p in folder.rglob("*") if p.is_file())


def test_one_bad_submission_stops_no_one_else(board, tmp_path):
    """A model named `-x` (once read as an option and blamed on leaderboard.yaml) and metadata with a string where
    a number belongs each settle their own request; the honest one after them is scored and the run exits 0."""
    queue, results, board_dir, mirror = board
    dash = Queue(tmp_path / "direct").add(variant(tmp_path, "dash", {"aca-ret-001": "1"}), model="-x",
                                          submitter="mallory")
    (mirror / "predictions").mkdir(parents=True, exist_ok=True)
    (mirror / "requests").mkdir(parents=True, exist_ok=True)
    (mirror / dash["predictions"]).write_bytes((tmp_path / "direct" / dash["predictions"]).read_bytes())
    (mirror / "requests" / f"{dash['id']}.json").write_text(json.dumps(dash), encoding="utf-8")
    meta = tmp_path / "bad.meta.json"
    meta.write_text(json.dumps({"model": "bad-meta", "generation": {"retrieval_quality": {"k": "five"}}}),
                    encoding="utf-8")
    bad = variant(tmp_path, "bad-meta", {"aca-ret-001": "2"})
    hand = Queue(tmp_path / "direct").add(bad, model="bad-meta", submitter="mallory", metadata=meta)
    for name in (hand["predictions"], hand["metadata"]):
        (mirror / name).write_bytes((tmp_path / "direct" / name).read_bytes())
    (mirror / "requests" / f"{hand['id']}.json").write_text(json.dumps(hand), encoding="utf-8")
    honest = submit(mirror, tmp_path, SAMPLE, "alice")
    assert process(queue, results, board_dir, mirror) == 0
    states = local(queue)
    assert states[honest["id"]]["status"] == "FINISHED"
    assert states[dash["id"]]["status"] == "FINISHED"  # a strange name is still a name
    assert states[hand["id"]]["status"] == "FAILED"
    assert "retrieval_quality" in states[hand["id"]]["reason"] and "leaderboard.yaml" not in \
        states[hand["id"]]["reason"]
    assert board_models(board_dir) == ["-x", "sample-system"]


def test_a_broken_request_file_is_reported_and_skipped(board, tmp_path, capsys):
    """A truncated request file in the queue stops neither status, submit nor process."""
    queue, results, board_dir, mirror = board
    first = Queue(queue).add(SAMPLE, model="sample-system", submitter="alice")
    truncated = queue / "requests" / "20260101T000000-broken-0123abcd.json"
    truncated.write_text(json.dumps(first)[:40], encoding="utf-8")
    incomplete = queue / "requests" / "20260101T000001-incomplete-0123abcd.json"
    incomplete.write_text(json.dumps({"id": incomplete.stem, "status": "PENDING"}), encoding="utf-8")
    assert cli.main(["queue", "status", "--queue", str(queue)]) == 0
    out = capsys.readouterr().out
    assert truncated.name in out and incomplete.name in out and first["id"] in out
    assert cli.main(["queue", "submit", str(variant(tmp_path, "two", {"aca-ret-001": "9"})), "--queue",
                     str(queue), "--submitter", "bob"]) == 0
    assert cli.main(["queue", "process", "--queue", str(queue), "--results", str(results), "--board",
                     str(board_dir)]) == 0
    assert truncated.name in capsys.readouterr().err
    assert sorted(r["status"] for r in Queue(queue).requests()) == ["FINISHED", "FINISHED"]


def test_finished_results_gone_still_builds_the_board(board, tmp_path, capsys):
    queue, results, board_dir, mirror = board
    a = submit(mirror, tmp_path, SAMPLE, "alice")
    b = submit(mirror, tmp_path, variant(tmp_path, "bob-model", {"aca-ret-001": "不知道"}), "bob")
    assert process(queue, results, board_dir, mirror) == 0
    import shutil

    shutil.rmtree(results / a["id"])
    c = submit(mirror, tmp_path, variant(tmp_path, "carol-model", {"aca-ret-001": "3"}), "carol")
    capsys.readouterr()
    assert process(queue, results, board_dir, mirror) == 0
    out = capsys.readouterr().out
    assert f"{a['id']} is FINISHED but its results cannot be read" in out
    assert board_models(board_dir) == ["bob-model", "carol-model"]
    assert local(queue)[c["id"]]["status"] == "FINISHED" and b["id"] in local(queue)
    assert cli.main(["queue", "status", "--queue", str(queue), "--results", str(results)]) == 0
    assert "FINISHED (results missing)" in capsys.readouterr().out


def test_rows_scored_under_old_settings_are_scored_again(board, tmp_path, capsys):
    """When the maintainer changes leaderboard.yaml, no row stays ranked under the sentence that it was scored
    with the new settings: finished requests go back to the queue and are scored again."""
    queue, results, board_dir, mirror = board
    request = submit(mirror, tmp_path, SAMPLE, "alice")
    assert process(queue, results, board_dir, mirror) == 0
    old_page = (board_dir / "index.html").read_text(encoding="utf-8")
    (queue / "leaderboard.yaml").write_text(BOARD.replace("seed: 7", "seed: 8"), encoding="utf-8")
    assert process(queue, results, board_dir, mirror) == 0
    done = local(queue)[request["id"]]
    assert done["status"] == "FINISHED" and done["history"][-3]["note"].startswith("the board's settings changed")
    doc = json.loads((results / request["id"] / "results.json").read_text(encoding="utf-8"))
    assert doc["settings"]["seed"] == 8
    page = (board_dir / "index.html").read_text(encoding="utf-8")
    assert page != old_page and done["board"] in page
    assert load_board_config(mirror / "leaderboard.yaml").scoring["seed"] == 8


def mirror_request(mirror: Path, tmp_path: Path, name: str, **fields) -> dict:
    """A request as `Queue.add` writes it, with `fields` changed, put in the mirror by hand (as an attacker can)."""
    doc = Queue(tmp_path / f"hand-{name}").add(variant(tmp_path, name, {"aca-ret-001": name}), model=name,
                                               submitter="mallory")
    for folder in ("predictions", "requests"):
        (mirror / folder).mkdir(parents=True, exist_ok=True)
    (mirror / doc["predictions"]).write_bytes((tmp_path / f"hand-{name}" / doc["predictions"]).read_bytes())
    doc.update(fields)
    (mirror / "requests" / f"{doc['id']}.json").write_text(json.dumps(doc), encoding="utf-8")
    return doc


def test_strange_request_files_are_reported_and_skipped(board, tmp_path, capsys):
    """A lone surrogate or terminal escape in a field, a request that is a link to the maintainer's settings:
    each is left out with a line in the log; the honest request is scored and the run exits 0."""
    queue, results, board_dir, mirror = board
    surrogate = mirror_request(mirror, tmp_path, "sur", model="x\ud800y")
    escape = mirror_request(mirror, tmp_path, "esc", date="\u001b]0;pwned\u0007")
    honest = submit(mirror, tmp_path, SAMPLE, "alice")
    linked = mirror_request(mirror, tmp_path, "lnk")
    link = mirror / "requests" / f"{linked['id']}.json"
    link.unlink()
    link.symlink_to(queue / "leaderboard.yaml")
    assert process(queue, results, board_dir, mirror) == 0
    out = capsys.readouterr().out
    assert local(queue).keys() == {honest["id"]} and local(queue)[honest["id"]]["status"] == "FINISHED"
    assert surrogate["id"] in out and escape["id"] in out and linked["id"] in out
    assert (queue / "leaderboard.yaml").read_text(encoding="utf-8") == BOARD  # nothing written through the link


def test_links_and_folders_in_the_mirror_are_replaced_not_written_through(board, tmp_path):
    queue, results, board_dir, mirror = board
    honest = submit(mirror, tmp_path, SAMPLE, "alice")
    record = mirror / "requests" / f"{honest['id']}.json"
    victim = tmp_path / "victim.txt"
    victim.write_text("the maintainer's file", encoding="utf-8")
    (mirror / "leaderboard.yaml").unlink()
    (mirror / "leaderboard.yaml").symlink_to(victim)
    assert process(queue, results, board_dir, mirror) == 0
    assert victim.read_text(encoding="utf-8") == "the maintainer's file"
    assert not (mirror / "leaderboard.yaml").is_symlink()
    # a request record turned into a link to the maintainer's settings, a folder where a file was published
    record.unlink()
    record.symlink_to(queue / "leaderboard.yaml")
    (mirror / "leaderboard.yaml").unlink()
    (mirror / "leaderboard.yaml").mkdir()
    settings = tmp_path / "board-settings.yaml"  # bob's copy of the board's settings: the mirror's is broken
    settings.write_text(BOARD, encoding="utf-8")
    submit(mirror, tmp_path, variant(tmp_path, "bob-model", {"aca-ret-001": "不知道"}), "bob", "--config", settings)
    assert process(queue, results, board_dir, mirror) == 0
    assert (queue / "leaderboard.yaml").read_text(encoding="utf-8") == BOARD
    assert json.loads(record.read_text(encoding="utf-8"))["status"] == "FINISHED" and not record.is_symlink()
    assert board_models(board_dir) == ["bob-model", "sample-system"]


def test_a_linked_requests_folder_is_not_read(board, tmp_path, capsys):
    queue, results, board_dir, mirror = board
    elsewhere = tmp_path / "elsewhere"
    mirror_request(elsewhere, tmp_path, "far")
    (mirror / "requests").symlink_to(elsewhere / "requests", target_is_directory=True)
    assert process(queue, results, board_dir, mirror) == 0
    assert local(queue) == {} and "is a link" in capsys.readouterr().out


def test_the_daily_limit_counts_what_the_processor_received(board, tmp_path):
    """Requests that name alice as submitter and back-date submitted_at do not use up her day before she
    submits: the processor counts by when it received each request."""
    queue, results, board_dir, mirror = board
    honest = submit(mirror, tmp_path, SAMPLE, "alice")
    assert process(queue, results, board_dir, mirror) == 0  # received first
    for name in ("f1", "f2"):
        mirror_request(mirror, tmp_path, name, submitter="alice", submitted_at=honest["submitted_at"] - 10)
    assert process(queue, results, board_dir, mirror) == 0
    states = {r["model"]: r["status"] for r in local(queue).values()}
    assert states["sample-system"] == "FINISHED"
    assert sorted(states.values()).count("FAILED") == 1  # the board allows alice 2 a day: the third is refused


def test_a_failed_file_can_be_submitted_again(board, tmp_path):
    queue, results, board_dir, mirror = board
    request = submit(mirror, tmp_path, SAMPLE, "alice")
    with (mirror / request["predictions"]).open("a", encoding="utf-8") as f:
        f.write("\n")
    assert process(queue, results, board_dir, mirror) == 0
    assert local(queue)[request["id"]]["status"] == "FAILED"
    again = submit(mirror, tmp_path, SAMPLE, "alice")
    assert again["id"] != request["id"] or again["submitted_at"] != request["submitted_at"]
    assert process(queue, results, board_dir, mirror) == 0
    assert "FINISHED" in {r["status"] for r in local(queue).values()}


def test_maintainer_details_are_not_published(tmp_path):
    """The endpoint's route and credentials and local paths stay on the maintainer's machine: the mirror's
    settings, request records and the board show scheme://host:port and names only."""
    queue, results, board_dir, mirror = tmp_path / "queue", tmp_path / "results", tmp_path / "board", \
        tmp_path / "mirror"
    queue.mkdir()
    secret = "route-TOKEN123"
    with ChatServer(lambda body: "我无法判断") as server:
        base = server.api_base + f"/{secret}"  # (a user:password in it is refused: tests/test_llm.py)
        (queue / "leaderboard.yaml").write_text(
            f"scoring:\n  judge: llm\n  judge_model: j\n  api_base: {base}\n  llm_cache: {tmp_path}/cache.sqlite\n"
            "  resamples: 0\nmax_attempts: 1\n", encoding="utf-8")
        submit(mirror, tmp_path, SAMPLE, "alice", "--config", queue / "leaderboard.yaml")
        process(queue, results, board_dir, mirror)  # the judge cannot grade: the board's problem
    published = "".join(p.read_text(encoding="utf-8", errors="replace") for p in mirror.rglob("*") if p.is_file())
    for leak in (secret, str(tmp_path)):
        assert leak not in published
    assert "127.0.0.1" in (mirror / "leaderboard.yaml").read_text(encoding="utf-8")
