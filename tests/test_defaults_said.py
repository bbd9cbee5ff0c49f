"""No silent defaults: where a command falls back on the default profile or on the embedded example's files, it
takes them from what its inputs record, or says in one line which default it used."""

from __future__ import annotations

from core.paths import PROJECT_ROOT
from kobbq.cli import main


def test_a_command_without_profile_says_it_uses_the_default(tmp_path, capsys):
    assert main(["labels", "export", "--annotator", "ann", "--out", str(tmp_path)]) == 0
    said = capsys.readouterr().out
    assert "profile: ko (the default; --profile NAME or --profile path/to/xx.toml for another culture)" in said
    assert "--bbq: templates_raw/example/bbq (the embedded example's four English BBQ templates; --bbq FILE for yours)" in said


def test_a_given_profile_and_given_files_are_used_without_a_word(tmp_path, capsys):
    assert main(["labels", "export", "--profile", "ja", "--bbq", str(PROJECT_ROOT / "templates_raw" / "example_ja" / "bbq"),
                 "--annotator", "ann", "--out", str(tmp_path)]) == 0
    said = capsys.readouterr().out
    assert "the default" not in said and "--bbq:" not in said


def test_survey_export_says_it_reads_the_korean_example_when_given_no_templates(tmp_path, capsys, monkeypatch):
    from kobbq.commands import survey

    def stop(*_args, **_kwargs):
        raise SystemExit(0)  # stop where the stage would run: the defaults are said before

    monkeypatch.setattr(survey, "run_alone", stop)
    try:
        main(["survey", "export", "--profile", "ko", "--out", str(tmp_path)])
    except SystemExit:
        pass
    said = capsys.readouterr().out
    assert "--templates: templates_raw/example/kobbq_example_templates.tsv (the embedded example's Korean templates" in said


def test_why_and_publish_say_which_release_they_read_when_given_none(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no build/ here: the command then reports the folder it looked for
    for argv in (["why", "bbq:Age:1", "--profile", "ja"], ["publish", "--to-hub", "someone/x", "--dry-run"]):
        main(argv)
        said = capsys.readouterr().out
        release = "build/JaBBQ" if "why" in argv else "build/KoBBQ-example"
        assert said.startswith(f"--release: {release} (the release `kobbq build` writes for this profile;"), said


def test_eval_score_takes_the_release_its_prepared_folder_names(tmp_path, capsys):
    """`eval score --prepared <a zh folder>` looked for build/KoBBQ although prepared.json names the release."""
    import json

    from kobbq.arguments import release_of
    from kobbq.cli import build_parser

    release = tmp_path / "elsewhere" / "ZhBBQ"
    prepared = tmp_path / "prepared"
    prepared.mkdir()
    (prepared / "prepared.json").write_text(json.dumps({"release": str(release), "profile": "zh"}), encoding="utf-8")
    args = build_parser("eval").parse_args(["eval", "score", "x.jsonl", "--prepared", str(prepared)])
    assert release_of(args, args.prepared) == release
    assert capsys.readouterr().out == ""  # taken from what the inputs record: nothing to say
    args = build_parser("eval").parse_args(["eval", "score", "x.jsonl", "--release", str(tmp_path)])
    assert release_of(args, args.prepared) == tmp_path
