"""Every error a user can cause or meet is one ``error:`` line naming the file (and its line and column), and
every message tells the truth (issue 25, findings 3 and 4). Each is decided before Prefect starts, so the
command runs in-process here, in the fast suite; the full disk and the signals are in test_release_safety.py.
"""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from core.errors import UserError, describe_os_error
from core.interrupt import stop_message
from core.paths import EXAMPLE_DIR, EXAMPLE_PIPELINE, EXAMPLE_TEMPLATES, PROFILE_DIR
from core.pipeline_file import load_pipeline, check_states, read_state
from tasks.pipeline.stages import STAGES
from core.text_files import line_and_column, read_bytes, read_json, read_text
from kobbq.cli import main
from tasks.release.check_child import os_error_from, os_error_line
from test_release import built_example


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith("error: ") and err.count("\n") == 1, err
    return err


def example_pipeline(folder: Path, replace: tuple[str, str] | None = None) -> Path:
    """The example's pipeline file, its paths made absolute, written into ``folder`` (optionally one edit)."""
    text = EXAMPLE_PIPELINE.read_text(encoding="utf-8")
    for line in text.splitlines():
        key, _, value = line.partition(" = ")
        if value.startswith('"') and key.strip() not in ("profile", "name", "description", "test_split"):
            text = text.replace(line, f'{key} = "{(EXAMPLE_DIR / value.strip(chr(34))).resolve()}"')
    text = text.replace('annotations = ["labels/', f'annotations = ["{EXAMPLE_DIR}/labels/')
    if replace:
        assert replace[0] in text
        text = text.replace(*replace)
    path = folder / "pipeline.toml"
    path.write_text(text, encoding="utf-8")
    return path


# --- positions: line and column, counted from the file's start ----------------------------------------

def test_an_invalid_byte_deep_in_a_template_file_is_reported_at_its_line_and_column(tmp_path, capsys):
    # Reported as "byte 524" before: an offset into the reader's buffer, not into the file, and no row.
    lines = EXAMPLE_TEMPLATES.read_bytes().split(b"\n")
    lines[11] = lines[11][:20] + b"\xff" + lines[11][20:]
    bad = tmp_path / "templates.tsv"
    bad.write_bytes(b"\n".join(lines))
    column = len(lines[11][:20].decode("utf-8")) + 1
    assert main(["validate", "--profile", "ko", str(bad)]) == 1
    err = one_error_line(capsys)
    assert f"{bad}, row 12, column {column}: not UTF-8 text (byte 0xff)" in err


def test_line_and_column_count_characters_not_bytes():
    data = "가나\n다라마\n".encode("utf-8") + b"\xff"
    assert line_and_column(data, data.index(b"\xff")) == (3, 1)
    assert line_and_column(data, data.index("마".encode())) == (2, 3)


def test_a_pipeline_or_profile_file_that_is_not_utf8_is_one_located_error(tmp_path, capsys):
    pipeline = tmp_path / "pipeline.toml"
    pipeline.write_bytes('profile = "ko"\nname = "한국"\n'.encode("cp949"))
    assert main(["build", "--pipeline", str(pipeline), "--out", str(tmp_path / "out")]) == 1
    assert f"{pipeline}, row 2, column 9: not UTF-8 text" in one_error_line(capsys)
    assert main(["status", "--pipeline", str(pipeline), "--out", str(tmp_path / "out")]) == 1
    assert f"{pipeline}, row 2, column 9: not UTF-8 text" in one_error_line(capsys)
    profile = tmp_path / "xx.toml"
    shipped = (PROFILE_DIR / "ko" / "ko.toml").read_bytes()
    profile.write_bytes(shipped + "# 한국\n".encode("cp949"))
    assert main(["validate", "--profile", str(profile), str(EXAMPLE_TEMPLATES)]) == 1
    line = shipped.count(b"\n") + 1
    assert f"{profile}, row {line}, column 3: not UTF-8 text" in one_error_line(capsys)
    assert not (tmp_path / "out").exists()


# --- sizes: counted in bytes read; devices and folders refused ---------------------------------------

def test_validate_dev_zero_stops_at_once(capsys):
    assert main(["validate", "--profile", "ko", "/dev/zero"]) == 1  # read without limit before: the size it reports is 0
    assert "/dev/zero: is a device, not a file" in one_error_line(capsys)


def test_the_size_limit_counts_the_bytes_read_not_the_size_reported():
    maps = Path("/proc/self/maps")
    assert maps.stat().st_size == 0 and len(read_bytes(maps)) > 64  # what /proc reports, and what it holds
    with pytest.raises(UserError, match="more than 64 bytes .counted while reading."):
        read_bytes(maps, limit=64)


@pytest.mark.parametrize("command", [["build", "--pipeline", "{dir}"], ["status", "--pipeline", "{dir}"],
                                     ["eval", "prepare", "--release", "{release}", "--prompt-table", "{dir}",
                                      "--out", "{tmp}/prepared"]])
def test_a_folder_given_as_an_input_file_is_named_as_a_folder(tmp_path, tmp_path_factory, capsys, command,
                                                              ko_profile):
    folder = tmp_path / "inputs"
    folder.mkdir()
    release = built_example(tmp_path_factory, ko_profile) if "prepare" in command else None
    assert main([part.format(dir=folder, tmp=tmp_path, release=release) for part in command]) == 1
    err = one_error_line(capsys)
    assert f"{folder}: is a folder; expected a" in err and "free space" not in err


def test_an_os_error_is_described_by_what_it_is():
    assert "the disk is full" in describe_os_error(OSError(errno.ENOSPC, "No space left on device", "out/x.parquet"))
    assert "the disk is full" in describe_os_error(OSError("IOError: No space left on device"))  # pyarrow's form
    folder = describe_os_error(IsADirectoryError(errno.EISDIR, "Is a directory", "data"))
    assert folder.startswith("data: Is a directory") and "free space" not in folder


def test_a_full_disk_while_a_pipeline_copies_its_recorded_cache_names_the_copy_being_written(tmp_path, monkeypatch):
    """Before: the recorded cache in the checkout was named (a copy's error names its source first). The disk
    fills in the kernel's copy (os.sendfile), under shutil's own handling of it."""
    import os

    from tasks.pipeline.plan import pipeline_plan
    from tasks.translation.pretranslate_stage import CACHE_FILE, translation_cache

    ctx = pipeline_plan(example_pipeline(tmp_path), tmp_path / "out").ctx

    def full(*args: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "sendfile", full)
    with pytest.raises(OSError) as error:
        translation_cache(ctx)
    said = describe_os_error(error.value)
    assert said.startswith(f"{ctx.folder.work / CACHE_FILE}: No space left on device; the disk is full"), said
    assert not [path.name for path in ctx.folder.work.iterdir() if "translation_cache" in path.name]  # no half copy


def test_a_full_disk_in_the_validation_child_reaches_the_command_as_the_same_error():
    sent = OSError(errno.ENOSPC, "No space left on device", "staging/validation.json")
    again = os_error_from("GX warnings\n" + os_error_line(sent) + "\n")
    assert (again.errno, again.strerror, again.filename) == (sent.errno, sent.strerror, sent.filename)
    assert "the disk is full" in describe_os_error(again)


# --- state on disk ------------------------------------------------------------------------------------

@pytest.mark.parametrize("content", [b'{"stage": "labels", "status": "do', b"\x00\x00", b"[]",
                                     b'{"stage": "labels", "status": "done", "outputs": 5}',
                                     b'{"stage": "survey", "status": "done"}'])
def test_a_corrupt_stage_state_is_reported_by_status_and_build_and_removed_by_force(tmp_path, capsys, content):
    from tasks.pipeline.plan import context

    pipeline = example_pipeline(tmp_path)
    out = tmp_path / "out"
    states = context(load_pipeline(pipeline), out).states  # this pipeline's own folder of states
    states.mkdir(parents=True)
    (states / "labels.json").write_bytes(content)
    assert main(["status", "--pipeline", str(pipeline), "--out", str(out)]) == 1
    err = one_error_line(capsys)
    assert f"{states / 'labels.json'}" in err and "kobbq build --force" in err
    assert main(["build", "--pipeline", str(pipeline), "--out", str(out)]) == 1
    assert f"{states / 'labels.json'}" in one_error_line(capsys)
    with pytest.raises(UserError):
        read_state(states, "labels")
    assert check_states(states, STAGES, rewrite=True) == [states / "labels.json"]  # what --force does first
    assert read_state(states, "labels") is None and check_states(states, STAGES) == []


def test_a_truncated_stage_state_names_its_line_and_column(tmp_path):
    (tmp_path / "labels.json").write_text('{\n  "stage": "labels",\n  "status": "do', encoding="utf-8")
    with pytest.raises(UserError, match="not valid JSON") as error:
        read_state(tmp_path, "labels")
    assert error.value.render().startswith(f"{tmp_path / 'labels.json'}, row 3, column 13: ")
    with pytest.raises(UserError, match="row 1, column 1"):
        read_json(_write(tmp_path / "empty.json", b""))


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


# --- pipeline files: a mistyped path is an error before anything runs -----------------------------------

@pytest.mark.parametrize("key", ["bbq", "cache", "corrections"])
def test_a_mistyped_start_input_in_a_pipeline_file_is_an_error_before_prefect_starts(tmp_path, capsys, key):
    text = EXAMPLE_PIPELINE.read_text(encoding="utf-8")
    value = next(line.split(" = ")[1].strip('"') for line in text.splitlines() if line.startswith(f"{key} = "))
    typo = value.replace("/", "/x", 1) if "/" in value else value + "x"
    pipeline = example_pipeline(tmp_path, (str((EXAMPLE_DIR / value).resolve()), str(EXAMPLE_DIR / typo)))
    assert main(["build", "--pipeline", str(pipeline), "--out", str(tmp_path / "out")]) == 1  # exit 0 "waiting" before
    err = one_error_line(capsys)
    assert f"{pipeline}: " in err and f".{key} = " in err and "does not exist" in err
    assert not (tmp_path / "out").exists()


def test_inputs_people_deliver_later_may_be_missing(tmp_path):
    from core.pipeline_file import load_pipeline, missing_start_inputs

    pipeline = example_pipeline(tmp_path, ('consensus = "', f'consensus = "{tmp_path}/arrived/'))
    assert missing_start_inputs(load_pipeline(pipeline)) == []  # the consensus has not arrived: a stage waits


def test_a_folder_where_one_file_is_read_is_an_error_but_a_reference_may_be_a_folder(tmp_path):
    """The survey results are one file: a folder there is refused before anything runs. A reference release may be
    a folder of templates (EsBBQ's is), so a folder there is accepted."""
    from core.pipeline_file import check_start_inputs, load_pipeline

    (tmp_path / "results").mkdir()
    pipeline = example_pipeline(tmp_path, ('results = "', f'results = "{tmp_path}/results"\n# "'))
    with pytest.raises(UserError, match=r"survey.results = .*: a folder, where the pipeline reads one file"):
        check_start_inputs(load_pipeline(pipeline))
    reference = example_pipeline(tmp_path, ("[translation]\n", f'[translation]\nreference = "{tmp_path}/results"\n'))
    check_start_inputs(load_pipeline(reference))


# --- signals -------------------------------------------------------------------------------------------

def test_a_signal_after_publication_says_the_release_was_published(tmp_path):
    assert "nothing was published" in stop_message("SIGINT", [])
    said = stop_message("SIGINT", [tmp_path / "KoBBQ"])
    assert f"after {tmp_path / 'KoBBQ'} was published" in said and "nothing was published" not in said


def test_read_text_drops_a_byte_order_mark(tmp_path):
    assert read_text(_write(tmp_path / "bom.csv", b"\xef\xbb\xbfa,b\n")) == "a,b\n"


def test_a_full_disk_while_staging_names_the_release_not_the_removed_staging_folder(tmp_path):
    from tasks.release.publish import release_os_error

    staging, target = tmp_path / ".staging-KoBBQ-1", tmp_path / "KoBBQ"
    pyarrow = release_os_error(OSError("IOError: No space left on device"), staging, target)
    assert (pyarrow.errno, pyarrow.filename) == (errno.ENOSPC, str(target))
    inside = release_os_error(OSError(errno.ENOSPC, "No space left on device", str(staging / "a.tsv")), staging, target)
    assert inside.filename == str(target)
    elsewhere = OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "cache.sqlite"))
    assert release_os_error(elsewhere, staging, target) is elsewhere


def test_a_damaged_translation_cache_is_one_error_and_is_kept(tmp_path):
    from tasks.translation.cache import TranslationCache

    cache = _write(tmp_path / "translation_cache.sqlite", b"not a database, but paid for" * 200)
    with pytest.raises(UserError, match="not a readable translation cache .* left as it is") as error:
        TranslationCache(cache)
    assert error.value.where == cache and cache.read_bytes() == b"not a database, but paid for" * 200


def test_a_translation_cache_that_cannot_grow_is_one_error_and_keeps_what_it_stored(tmp_path):
    """Before: SQLite's "database or disk is full" as a traceback from the stage. SQLite's own limit on the
    database's pages gives the error a full disk gives (SQLITE_FULL)."""
    from tasks.translation.cache import CachedTranslation, RequestSettings, TranslationCache

    path, settings = tmp_path / "translation_cache.sqlite", RequestSettings("EN", "KO")
    with TranslationCache(path) as cache:
        cache.put_many({"paid": CachedTranslation("지불함", 4)}, settings)
        pages = cache.fetch_one("PRAGMA page_count")[0]
        cache.fetch_one(f"PRAGMA max_page_count = {pages}")
        with pytest.raises(UserError, match=r"the translation cache cannot grow: the disk is full \(database or disk "
                                            r"is full\); every translation stored before is kept") as error:
            cache.put_many({f"text {n}": CachedTranslation("번역" * 500, 1000) for n in range(50)}, settings)
        assert error.value.where == path
        assert cache.get_many(["paid", "text 1"], settings) == {"paid": CachedTranslation("지불함", 4)}


# --- inputs a pipeline names: bad ones are one line before Prefect starts -------------------------------------

def _binary(path: Path) -> bytes:
    return b"\x00\x01\xff\xfe" * 64


def _latin1_row(path: Path) -> bytes:
    return path.read_bytes() + "\nAge,1,a,context,x,\xe9t\xe9\n".encode("latin-1")


@pytest.mark.parametrize("key, damage, said", [
    ("cache", None, "translation.cache = "),  # a folder where the cache file goes
    ("cache", _binary, "not a readable translation cache"),  # named as given, not as the work folder's copy
    ("groups", _binary, "not UTF-8 text"),
    ("corrections", _latin1_row, "not UTF-8 text (byte 0xe9)"),
])
def test_a_bad_input_a_pipeline_names_stops_before_prefect_starts(tmp_path, key, damage, said):
    from fuzzing import run_in_process

    original = next(line.split(" = ")[1].strip('"') for line in EXAMPLE_PIPELINE.read_text(encoding="utf-8")
                    .splitlines() if line.startswith(f"{key} = "))
    original_path = (EXAMPLE_DIR / original).resolve()
    if damage is None:
        bad = tmp_path / "a-folder"
        bad.mkdir()
    else:
        bad = tmp_path / original_path.name
        bad.write_bytes(damage(original_path))
    pipeline = example_pipeline(tmp_path, (f'{key} = "{original_path}"', f'{key} = "{bad}"'))
    outcome = run_in_process(["build", "--pipeline", str(pipeline), "--out", str(tmp_path / "out")], tmp_path)
    assert not outcome.reached_prefect and outcome.code == 1, outcome.err
    assert outcome.err.count("\n") == 1 and said in outcome.err and str(bad) in outcome.err, outcome.err


def test_a_survey_export_whose_templates_lack_a_target_stops_before_prefect_starts(tmp_path):
    from fuzzing import run_in_process

    lines = EXAMPLE_TEMPLATES.read_text(encoding="utf-8").splitlines()
    header = lines[0].split("\t")
    rows = [line.split("\t") for line in lines[1:]]
    for row in rows:
        row[header.index("Target_group")] = ""
    templates = tmp_path / "templates.tsv"
    templates.write_text("\n".join("\t".join(r) for r in [header, *rows]) + "\n", encoding="utf-8")
    outcome = run_in_process(["survey", "export", "--profile", "ko", "--templates", str(templates),
                              "--out", str(tmp_path / "out")], tmp_path)
    assert not outcome.reached_prefect and outcome.code == 1, outcome.err
    assert "needs its intended target (Target_group)" in outcome.err and str(templates) in outcome.err
