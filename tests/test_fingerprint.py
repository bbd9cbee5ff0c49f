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
