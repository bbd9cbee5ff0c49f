"""Any culture by its invariants: a generated culture in a script the project ships no profile for (Georgian,
Devanagari, Thai, Ethiopic; with or without spaces between words and sentence-final marks, with or without its own
choice labels, with odd spaces typed by its translator) goes from its consensus through DeepL's drafts (recorded),
the post-edit import and the templates stage, run by the runner without Prefect, to a release, ``eval prepare``
and the scoring of an oracle that answers right in every form the profile declares.

Whatever the culture: every template keeps the version convention (a counter-biased, b biased), every row has the
samples its lists make, the release holds no format character, no control character and no space but the plain
one, nothing of another shipped culture, and every answer form scores accuracy 1 with no out-of-choice answer.
The fast run builds the samples with the release's own expansion; the slow run builds the release as ``kobbq
build --templates`` does (its checks included), for more cultures.
"""

from __future__ import annotations

import csv
import json
import re
import tempfile
import tomllib
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from openpyxl import load_workbook

from core.pipeline_file import DONE, load_pipeline
from core.profile import PROFILE_DIR, load_profile
from kobbq.cli import main
from synthetic_culture import EXAMPLE, EXCHANGED, Culture, cultures, post_edit, write_team, writer_for
from tasks.pipeline.plan import Plan, context, stages_for, templates_plan
from tasks.pipeline.release_stage import expansion
from tasks.pipeline.run import execute
from tasks.release.assemble import write_sample_sets

UP_TO_TEMPLATES = 4  # labels, pretranslate, postedit, templates: the survey is not generated
# Another shipped culture: its scripts' letters, its names, its own words for the unknown option.
OTHER_SCRIPTS = re.compile(r"[\u1100-\u11ff\u3000-\u30ff\u3130-\u318f\u4e00-\u9fff\uac00-\ud7a3\uff00-\uffef]")


@dataclass(frozen=True)
class Built:
    """A generated culture built up to its template file."""

    profile: Path
    templates: Path
    decisions: list  # the post-edit's and the templates stage's
    report: str  # the post-edit report


def build_templates(culture: Culture, root: Path) -> Built:
    """The culture's chain up to its template file, as ``kobbq build --pipeline`` runs it, without Prefect: the
    runner waits for the translator, the translator returns the workbooks, the runner goes on."""
    writer = writer_for(culture)
    pipeline = write_team(root / "team", culture, writer)
    stages = stages_for(load_pipeline(pipeline))[:UP_TO_TEMPLATES]
    waiting = execute(Plan.of(context(load_pipeline(pipeline), root / "out"), stages))
    assert (waiting.stage, waiting.failed) == ("postedit", False), waiting.message
    ctx = context(load_pipeline(pipeline), root / "out")
    assert post_edit(ctx.work / "pretranslate" / "postedit_out", root / "team" / "returned", writer) > 0
    done = execute(Plan.of(ctx, stages))
    assert done.finished, done.message
    assert {stage.name: ctx.state(stage.name).status for stage in stages} == dict.fromkeys(
        (s.name for s in stages), DONE)
    report = ctx.output("postedit", "report:postedit_report.md")
    assert report is not None
    return Built(root / "team" / "sy" / "sy.toml", ctx.output("templates", "templates"),
                 ctx.decisions("postedit") + ctx.decisions("templates"), report.read_text(encoding="utf-8"))


def expanded_release(built: Built, out: Path) -> Path:
    """The release's samples as its expansion writes them, without the checks' child (the fast run)."""
    plan = templates_plan(built.templates, out, load_profile(str(built.profile)))
    folder = out / "SyBBQ"
    folder.mkdir(parents=True)
    write_sample_sets(folder, "SyBBQ", expansion(plan.ctx), ("tsv",))
    (folder / "manifest.json").write_text(json.dumps({"profile": "sy", "release": "SyBBQ"}), encoding="utf-8")
    return folder


def built_release(built: Built, out: Path) -> Path:
    """The release as ``kobbq build --templates`` makes it: expansion, checks, card, published."""
    result = execute(templates_plan(built.templates, out, load_profile(str(built.profile))))
    assert result is not None and result.finished, result and result.message
    return out / "SyBBQ"


def oracle_answers(requests: list[dict], profile: dict) -> list[dict]:
    """The right answer to every request in each form the profile declares, one model per form: the letter, a
    marker before it, bracketed, the choice's text (alone, after the copula, after a marker, ending its sentence),
    the culture's own label (alone and after a marker) and the other phrasing of the unknown option."""
    evaluation, release = profile["evaluation"], profile["release"]
    marker, prefix = evaluation["answer_markers"][0], evaluation["answer_prefixes"][0]
    space = " " if profile["writing"]["spaces_between_words"] else ""
    forms = {"letter": "{L}", "marker": marker + " {L}", "marker-2": evaluation["answer_markers"][1] + "{L}", "bracketed": "({L})", "text": "{T}",
             "copula": prefix + space + "{T}", "marker-text": marker + " {T}", "sentence": "{T}" +
             evaluation["sentence_ends"][-1], "unknown-phrasing": "{U}"}
    if evaluation.get("choice_labels"):
        forms |= {"label": "{N}", "marker-label": marker + " {N}", "presented": "{N}) {T}"}
    else:
        forms |= {"presented": "{L}) {T}"}
    labels = dict(zip("ABC", evaluation.get("choice_labels", [])))
    answers = []
    for request in requests:
        letter = request["answer"]
        text = request["choices"][letter]
        other = release["unknown_expressions"][1] if text == release["unknown_expression"] else text
        answers += [{"id": request["id"], "prompt_id": request["prompt_id"], "model": name,
                     "raw": form.format(L=letter, T=text, N=labels.get(letter, ""), U=other)}
                    for name, form in forms.items()]
    return answers


def scored(release: Path, built: Built, root: Path) -> pd.DataFrame:
    """``eval prepare`` and ``eval score`` of the oracle: each form's overall row, per prompt."""
    prepared, answers, profile = root / "prepared", root / "answers.jsonl", str(built.profile)
    assert main(["eval", "prepare", "--release", str(release), "--profile", profile, "--out", str(prepared)]) == 0
    requests = [json.loads(line) for line in (prepared / "requests.jsonl").read_text(encoding="utf-8").splitlines()]
    settings_ = tomllib.loads(built.profile.read_text(encoding="utf-8"))
    answers.write_text("".join(json.dumps(a, ensure_ascii=False) + "\n" for a in oracle_answers(requests, settings_)),
                       encoding="utf-8")
    assert main(["eval", "score", "--release", str(release), "--profile", profile, "--prepared", str(prepared),
                 str(answers), "--bootstrap", "0", "--no-figures", "--out", str(root / "scored")]) == 0
    results = pd.read_csv(root / "scored" / "results.tsv", sep="\t")
    return results[results["category"] == "overall"]


def expected_samples() -> dict[tuple[str, int, str], int]:
    """(category, ID, version) -> its samples, from the Japanese example's lists alone: four a fill, a fill one item
    of each list."""
    counts = {}
    for path in sorted((EXAMPLE / "translation" / "returned").glob("*.xlsx")):
        category = path.stem.removeprefix("postedit_")
        for row in load_workbook(path, read_only=True)["templates"].iter_rows(min_row=2, values_only=True):
            if row[5] in ("Names", "Lexical_diversity"):
                key = (category, int(row[0]), row[1])
                for body in re.findall(r"\[([^\]]*)\]", row[8] or ""):
                    counts[key] = counts.get(key, 4) * len(body.split("、"))
    return counts


def odd_characters(text: str) -> set[str]:
    """Format, control (but tab and line end), surrogate and private-use characters, and spaces but the plain one."""
    return {f"U+{ord(c):04X}" for c in set(text) if (unicodedata.category(c) in ("Cf", "Cs", "Co", "Zl", "Zp")
                                                     or unicodedata.category(c) == "Cc" and c not in "\t\n\r"
                                                     or unicodedata.category(c) == "Zs" and c != " ")}


def other_cultures_words() -> set[str]:
    """Every shipped profile's own words: its unknown option's phrasings and its culture's names."""
    words = set()
    for toml in PROFILE_DIR.glob("*/*.toml"):
        if toml.stem == toml.parent.name:
            data = tomllib.loads(toml.read_text(encoding="utf-8"))
            words |= set(data["release"].get("unknown_expressions", [])) | {data["release"]["unknown_expression"]}
            words |= {data.get("culture", {}).get("name", ""), data.get("culture", {}).get("adjective", "")} - {""}
    return {word for word in words if not (word.isascii() and word.islower())}  # "unknown": English, everyone's


def check_invariants(culture: Culture, built: Built, release: Path, results: pd.DataFrame) -> None:
    roles = {d.subject: d.numbers["roles"] for d in built.decisions if d.rule == "version-convention"}
    assert roles and all(r == {"a": "counter-biased", "b": "biased"} for r in roles.values()), roles
    exchanged = [d.numbers["versions"] for d in built.decisions if d.rule == "version-exchange"]
    assert exchanged == ([["a", "b"]] * len(EXCHANGED) if culture.marks_exchanges else [])
    if culture.odd_space:  # every odd space typed is a warning naming its code point, and none is released
        assert f"U+{ord(culture.odd_space):04X} {unicodedata.name(culture.odd_space)}" in built.report
    samples = pd.read_csv(release / "SyBBQ_all_samples.tsv", sep="\t", quoting=csv.QUOTE_NONE, dtype=str,
                          keep_default_na=False)
    rows = samples["sample_id"].str.extract(r"^(?P<prefix>[a-z_]+)-(?P<id>\d+)(?P<version>[a-d])-")
    found = rows.groupby(["prefix", "id", "version"]).size().to_dict()
    prefixes = {"Age": "age", "Religion": "religion", "SES": "ses"}
    expected = {(prefixes[c], f"{i:03d}", v): n for (c, i, v), n in expected_samples().items()}
    assert found == {key: n for key, n in expected.items() if key in found} and len(found) == len(roles) * 2
    test = pd.read_csv(release / "SyBBQ_test_samples.tsv", sep="\t", quoting=csv.QUOTE_NONE, dtype=str,
                       keep_default_na=False)
    assert len(test) == 4 * len(found)
    texts = {path.name: path.read_text(encoding="utf-8") for path in release.rglob("*")
             if path.suffix in (".tsv", ".jsonl", ".json", ".md", ".csv", ".txt")}
    assert {name: odd_characters(text) for name, text in texts.items() if odd_characters(text)} == {}
    assert [name for name, text in texts.items() if not unicodedata.is_normalized("NFC", text)] == []
    others = other_cultures_words()
    assert {name: OTHER_SCRIPTS.findall(text)[:3] for name, text in texts.items() if OTHER_SCRIPTS.search(text)} == {}
    assert {name: sorted(w for w in others if w in text) for name, text in texts.items()
            if any(w in text for w in others)} == {}
    assert samples["context"].map(lambda t: any(c in culture.script.consonants for c in t)).all()
    wrong = results[(results["out-of-choice ratio"] != 0) | (results["accuracy in ambiguous contexts"] != 1)
                    | (results["accuracy in disambiguated contexts"] != 1)]
    assert wrong.empty, wrong[["model", "prompt", "out-of-choice ratio", "accuracy in ambiguous contexts",
                               "accuracy in disambiguated contexts"]].to_string()


def keeps_every_invariant(culture: Culture, release_of: Callable[[Built, Path], Path]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        built = build_templates(culture, root)
        release = release_of(built, root / "release")
        check_invariants(culture, built, release, scored(release, built, root))


@settings(max_examples=1, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cultures())
def test_a_generated_culture_keeps_every_invariant_to_its_scored_samples(culture: Culture) -> None:
    keeps_every_invariant(culture, expanded_release)


@pytest.mark.slow
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cultures())
def test_a_generated_culture_keeps_every_invariant_to_its_built_release(culture: Culture) -> None:
    keeps_every_invariant(culture, built_release)
