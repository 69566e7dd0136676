"""chimdqa_eval.jsonio.write_atomic: a file is replaced whole or not at all, keeps its permission bits, and the
rename is synced to its folder."""
from __future__ import annotations

import os
import stat

import pytest

from chimdqa_eval import jsonio


def test_a_file_is_replaced_whole_from_text_bytes_or_pieces(tmp_path):
    path = tmp_path / "out.jsonl"
    jsonio.write_atomic(path, "第一版\n")
    assert path.read_text(encoding="utf-8") == "第一版\n"
    jsonio.write_atomic(path, (f'{{"id": {i}}}\n' for i in range(3)))
    assert path.read_text(encoding="utf-8").splitlines() == ['{"id": 0}', '{"id": 1}', '{"id": 2}']
    jsonio.write_atomic(path, b"raw")
    assert path.read_bytes() == b"raw"
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]  # no temporary file left


def test_an_error_while_the_pieces_are_made_leaves_the_old_file(tmp_path):
    path = tmp_path / "out.jsonl"
    path.write_text("old\n", encoding="utf-8")

    def rows():
        yield "new 1\n"
        raise ValueError("row 2 is bad")

    with pytest.raises(ValueError, match="row 2"):
        jsonio.write_atomic(path, rows())
    assert path.read_text(encoding="utf-8") == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]


@pytest.mark.skipif(os.name != "posix", reason="POSIX permission bits")
def test_a_replaced_file_keeps_its_permission_bits_and_a_new_one_follows_the_umask(tmp_path):
    kept = tmp_path / "kept.json"
    kept.write_text("{}", encoding="utf-8")
    kept.chmod(0o640)
    jsonio.write_atomic(kept, '{"a": 1}')
    assert stat.S_IMODE(kept.stat().st_mode) == 0o640
    umask = os.umask(0o027)
    try:
        jsonio.write_atomic(tmp_path / "new.json", "{}")
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "new.json").stat().st_mode) == 0o640  # 0o666 less the umask 0o027


@pytest.mark.skipif(os.name != "posix", reason="folders are opened for fsync on POSIX only")
def test_the_rename_is_synced_to_its_folder(tmp_path, monkeypatch):
    synced = []
    real_fsync = os.fsync

    def fsync(descriptor):
        synced.append(stat.S_ISDIR(os.fstat(descriptor).st_mode))
        real_fsync(descriptor)

    monkeypatch.setattr(os, "fsync", fsync)
    jsonio.write_atomic(tmp_path / "out.json", "{}")
    assert synced == [False, True]  # the file's bytes, then the folder's entry
