"""The embedded example through the whole pipeline: it waits for people, resumes, and ends in the release."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from core.errors import UserError
from core.paths import DEFAULT_CORRECTIONS, EXAMPLE_DIR, EXAMPLE_TEMPLATES, PROJECT_ROOT
from core.decisions import read_decisions
from core.pipeline_file import DONE, STALE, describe, read_state
from core.profile import load_profile
from tasks.pipeline.plan import pipeline_plan, templates_plan
from tasks.survey.inputs import SurveyInputs
from runs import run

SURVEY = PROJECT_ROOT / "survey" / "ko"  # the example's survey results
PROFILE_SURVEY = PROJECT_ROOT / "core" / "profiles" / "ko" / "survey"  # the ko profile's wording and overrides


def write_pipeline(folder: Path) -> Path:
    """The example's pipeline, except that the consensus and the returned workbooks have not arrived."""
    path = folder / "pipeline.toml"
    path.write_text(f'''
profile = "ko"
name = "KoBBQ"
test_split = "seeded"
[labels]
bbq = "{EXAMPLE_DIR / 'bbq'}"
annotations = ["{EXAMPLE_DIR / 'labels' / 'annotators'}/*.csv"]
consensus = "arrived/consensus.csv"
[translation]
cache = "{EXAMPLE_DIR / 'translation' / 'translation_cache.sqlite'}"
returned = "arrived/returned"
[templates]
groups = "{EXAMPLE_DIR / 'groups.csv'}"
newly_created = "{EXAMPLE_DIR / 'newly_created.tsv'}"
corrections = "{DEFAULT_CORRECTIONS}"
[survey]
results = "{SURVEY / 'example' / 'responses.csv'}"
reading = "{SURVEY / 'example' / 'reading_results.csv'}"
questions = "{SURVEY / 'example' / 'questions.csv'}"
overrides = "{PROFILE_SURVEY / 'overrides.csv'}"
''', encoding="utf-8")
    (folder / "arrived" / "returned").mkdir(parents=True)
    return path


@pytest.mark.flow
def test_pipeline_waits_for_people_then_resumes_to_the_release(tmp_path, prefect_harness):
    path = write_pipeline(tmp_path)
    out = tmp_path / "build"
    states = pipeline_plan(path, out).ctx.states
    work = pipeline_plan(path, out).ctx.work

    first = run(pipeline_plan(path, out))
    assert not first.finished and first.stage == "labels"
    assert "consensus" in first.message and "kobbq labels export" in first.message

    shutil.copyfile(EXAMPLE_DIR / "labels" / "consensus.csv", tmp_path / "arrived" / "consensus.csv")
    second = run(pipeline_plan(path, out))
    assert second.stage == "postedit"
    sent = sorted(p.name for p in (work / "pretranslate" / "postedit_out").glob("*.xlsx"))
    returned = sorted(p.name for p in (EXAMPLE_DIR / "translation" / "returned_chain").glob("*.xlsx"))
    assert sent == returned and all(name in second.message for name in sent)
    labelled_at = read_state(states, "labels").finished_at
    translated = read_state(states, "pretranslate")
    assert translated.counts["chars_billed"] == 0  # the recorded cache answers everything: nothing paid

    for name in returned:
        shutil.copyfile(EXAMPLE_DIR / "translation" / "returned_chain" / name, tmp_path / "arrived" / "returned" / name)
    third = run(pipeline_plan(path, out))
    assert third.finished
    assert read_state(states, "labels").finished_at == labelled_at  # finished work is not redone
    assert all(read_state(states, s).status == DONE for s in ("labels", "postedit", "survey"))

    # The chain reproduces the hand-written example templates: same release as building them directly.
    survey = SurveyInputs(SURVEY / "example" / "responses.csv", SURVEY / "example" / "reading_results.csv",
                          PROFILE_SURVEY / "overrides.csv", SURVEY / "example" / "questions.csv")
    direct = run(templates_plan(EXAMPLE_TEMPLATES, tmp_path / "direct", load_profile("ko"), None, DEFAULT_CORRECTIONS,
                                test_split="seeded", survey=survey))
    assert (third.samples, third.test_samples) == (direct.samples, direct.test_samples)
    pipeline_ids = (third.release_dir / "KoBBQ_all_samples.tsv").read_text(encoding="utf-8").splitlines()
    direct_ids = (direct.release_dir / "KoBBQ_all_samples.tsv").read_text(encoding="utf-8").splitlines()
    assert sorted(pipeline_ids) == sorted(direct_ids)

    # The unedited machine translation is expanded for the same surviving templates, same test fills.
    mt_test = (third.release_dir / "mtBBQ" / "mtBBQ_test_samples.tsv").read_text(encoding="utf-8").splitlines()
    ko_test = (third.release_dir / "KoBBQ_test_samples.tsv").read_text(encoding="utf-8").splitlines()
    adapted_ids = {line.split("\t")[0] for line in ko_test[1:] if line.split("\t")[1] in ("ST", "TM")}
    assert {line.split("\t")[0] for line in mt_test[1:]} == adapted_ids

    stages = {d.stage for d in read_decisions(third.release_dir / "decisions.csv")}
    assert {"labels", "pretranslate", "postedit", "survey", "release"} <= stages
    assert (third.release_dir / "audit.html").exists() and (third.release_dir / "funnel.md").exists()

    consensus = tmp_path / "arrived" / "consensus.csv"
    consensus.write_text(consensus.read_text(encoding="utf-8").replace("unanimous", "unanimously"), encoding="utf-8")
    checks = {check.stage.name: check for check in pipeline_plan(path, out).checks}
    labels = checks["labels"]
    assert describe(read_state(states, "labels"), labels.fingerprint, labels.parts)[:1] == (STALE,)
    assert describe(read_state(states, "labels"), labels.fingerprint, labels.parts)[1].startswith("inputs changed")
    # Every stage after the labels reads what they decide: stale too, while nothing before it ran again.
    assert all(not checks[name].current for name in ("pretranslate", "survey", "release"))

    # Without `test_split = "seeded"` the ko profile's official split is asked for, which the example cannot
    # produce: the release stage fails before the flow run, in one paragraph naming the list's line and the fix.
    path.write_text(path.read_text(encoding="utf-8").replace('test_split = "seeded"\n', ""), encoding="utf-8")
    published = (third.release_dir / "manifest.json").read_bytes()
    unsplit = run(pipeline_plan(path, out))  # the stages before the release run again (the consensus changed)
    assert unsplit.failed and unsplit.stage == "release"
    assert "KoBBQ_test_sample_ids.txt, row " in unsplit.message and "give --test-split seeded" in unsplit.message
    with pytest.raises(UserError) as early:  # every stage before it current: the release fails before the flow run
        pipeline_plan(path, out).prepare()
    assert "KoBBQ_test_sample_ids.txt, row " in str(early.value)
    assert read_state(states, "release").status == "failed"
    assert (third.release_dir / "manifest.json").read_bytes() == published  # the release is untouched
