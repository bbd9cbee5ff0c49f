"""Fingerprints of input files: what `kobbq status` and every up-to-date check compute before anything runs."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from core.fingerprint import files_fingerprint


def test_a_device_or_a_pipe_given_as_an_input_is_not_read(tmp_path):
    """`/dev/zero` (found by the fuzzing suite, as a pipeline file's input) never ends: hashing it hung `kobbq
    status`. It counts as an input that is not a file, and differs from a missing one."""
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    result = {}
    worker = threading.Thread(target=lambda: result.update(
        zero=files_fingerprint({"results": Path("/dev/zero")}), pipe=files_fingerprint({"results": pipe})), daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive(), "hashing a device or a pipe did not return"
    assert result["zero"] == result["pipe"] != files_fingerprint({"results": tmp_path / "missing"})
    regular = tmp_path / "results.csv"
    regular.write_text("a\n", encoding="utf-8")
    assert files_fingerprint({"results": regular}) != result["zero"]


def test_an_input_hashed_then_parsed_is_read_once_and_a_changed_one_again(tmp_path):
    import sys

    from core.fingerprint import content_hash
    from core.text_files import read_text

    path = tmp_path / "templates.tsv"
    path.write_text("a\tb\n", encoding="utf-8")
    opened = []
    sys.addaudithook(lambda event, args: opened.append(args[0]) if event == "open" and args[0] == str(path) else None)
    digest = content_hash(path)
    assert read_text(path) == "a\tb\n" and opened == [str(path)]  # the bytes the hash read
    path.write_text("a\tc\n", encoding="utf-8")
    assert content_hash(path) != digest and read_text(path) == "a\tc\n"  # changed: hashed and read anew
    assert read_text(path) == "a\tc\n" and len(opened) == 4  # the write, the hash, then nothing kept for a second read
