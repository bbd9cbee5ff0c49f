"""Pre-translation into Spanish for the es profile (EsBBQ's workbook format), through the real deepl client
against the fake DeepL server, and the Catalan profile's one clear error."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from core.errors import UserError
from core.profile import load_profile
from tasks.templates.bbq import load_bbq_templates
from tasks.translation.pretranslate import dry_run
from tasks.translation.deepl_client import DeepLTranslator
from tasks.translation.glossary import profile_glossary
from tasks.translation.pretranslate import pretranslate
from fake_deepl import FAKE_KEY, FakeDeepLServer

# BBQ templates EsBBQ adapted (label t): Age 1 (Walmart -> El Corte Inglés), Religion 2, Nationality 1 (WORD1).
CHOSEN = {("Age", "1"), ("Religion", "2"), ("Nationality", "1")}


@pytest.fixture()
def server():
    fake = FakeDeepLServer().start()
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def bbq_rows(bbq_templates_dir):
    templates, _ = load_bbq_templates(bbq_templates_dir)
    return [t for t in templates if (t.category, t.q_id) in CHOSEN]


def test_spanish_drafts_keep_bbq_placeholders_and_the_es_glossary(server, bbq_rows, tmp_path):
    es = load_profile("es")
    glossary = profile_glossary(es)
    assert {e.source: e.target for e in glossary.entries}["Walmart"] == "El Corte Inglés"
    cache = tmp_path / "cache.sqlite"
    estimate = dry_run(bbq_rows, cache, es, glossary)
    result = pretranslate(bbq_rows, DeepLTranslator(FAKE_KEY, server.url), cache, es, glossary)
    assert result.complete and result.glossary_mode == "deepl"  # EN->ES has DeepL glossaries
    assert result.chars_billed == server.state.billed_characters == estimate.characters_to_send
    # The glossary went to DeepL as an EN->ES glossary, and it was applied.
    (uploaded,) = server.state.glossaries.values()
    assert (uploaded["info"]["source_lang"], uploaded["info"]["target_lang"]) == ("en", "es")
    age = next(d for d in result.drafts if d.template.subject == "bbq:Age:1" and d.template.version == "a")
    context = age.field("Ambiguous_context").draft
    assert "El Corte Inglés" in context and "Walmart" not in context
    # EsBBQ's own placeholder syntax, once each, never KoBBQ's [N1]; the fake's words are Latin (pseudo-Spanish).
    assert context.count("{{NAME1}}") == context.count("{{NAME2}}") == 1 and "[N1]" not in context
    assert re.fullmatch(r"[a-z .{}A-Z0-9ÉéÍí]+", context), context
    assert re.fullmatch(r"NAME1: \[[a-z]+, [a-z]+\]; NAME2: \[[a-z]+, [a-z]+\]", age.field("Names").draft)
    nationality = next(d for d in result.drafts if d.template.subject == "bbq:Nationality:1")
    assert re.fullmatch(r"WORD1: \[[a-z]+, [a-z]+, [a-z]+\]", nationality.field("Lexical_diversity").draft)
    assert "{{WORD1}}" in nationality.field("Ambiguous_context").draft
    assert nationality.field("Ambiguous_context").english == nationality.template.texts["ambiguous_context"]
    assert not [f for f in result.flagged if f.code.startswith("placeholder")]


def test_catalan_is_not_a_deepl_target_one_clear_error_nothing_sent(server, bbq_rows, tmp_path):
    ca = load_profile("ca")
    with pytest.raises(UserError) as error:
        pretranslate(bbq_rows, DeepLTranslator(FAKE_KEY, server.url), tmp_path / "cache.sqlite", ca,
                     profile_glossary(ca))
    assert "DeepL does not offer CA as a target language" in str(error.value)
    assert str(error.value).startswith(str(ca.path))
    assert server.state.translate_requests == 0 and server.state.billed_characters == 0


# BBQ templates EsBBQ translated as one row each (label t, no version): Religion 1, 2, 4 (EsBBQ 1, 2, 3) and
# Nationality 6 (EsBBQ 4). Their released rows are the post-edit the test writes into the workbooks.
ROUND_TRIP = {("Religion", "1"), ("Religion", "2"), ("Religion", "4"), ("Nationality", "6")}
# What the generator reads of a row besides its IDs (generation brief 1.5), as the released sheets name it.
GENERATOR_COLUMNS = ["label", "version", "bbq_template_id", "bbq_category", "esbbq_category", "ambiguous_context",
                     "disambiguating_context", "question_negative_stereotype", "question_non_negative",
                     "answer_negative", "answer_non_negative", "names", "lexical_diversity",
                     "relevant_social_values", "stereotyped_groups", "non_stereotyped_groups", "NAME1_info",
                     "NAME2_info", "stated_gender_info", "proper_nouns_only", "subcategory", "esbbq_source"]


def released_rows(templates_dir, category: str) -> dict[str, dict[str, str]]:
    """The released sheet read with openpyxl alone: bbq_template_id -> {column without _es: text}; no project code."""
    from openpyxl import load_workbook

    sheet = load_workbook(templates_dir / f"{category}.xlsx", read_only=True).worksheets[0]
    lines = list(sheet.iter_rows(values_only=True))
    out = {}
    for values in lines[1:]:
        row = {}
        for name, value in zip(lines[0], values):
            if name is None or str(name).endswith("_ca"):
                continue
            text = "" if value is None else str(int(value) if isinstance(value, float) else value).strip()
            row[str(name).removesuffix("_es")] = text
        if row.get("bbq_template_id"):
            out.setdefault(row["bbq_template_id"], row)
    return out


def return_with_released_rows(workbook: Path, esbbq: Path, returned: Path) -> Path:
    """A sent Religion workbook as the translator returns it, with the released EsBBQ rows in Post-edit, in
    ``returned`` beside the vocabulary workbooks (which an import takes from beside the workbooks)."""
    import shutil

    from openpyxl import load_workbook

    returned.mkdir(parents=True, exist_ok=True)
    for name in ("vocabulary.xlsx", "vocabulary_proper_names.xlsx"):
        shutil.copy(esbbq / name, returned / name)
    released = released_rows(esbbq, "Religion")
    book = load_workbook(workbook)
    for cells in book["templates"].iter_rows(min_row=2):
        cells[8].value = released[cells[3].value].get(cells[5].value, "")
    book.save(returned / workbook.name)
    return returned


def test_es_workbooks_round_trip_to_the_released_esbbq_rows(server, bbq_templates_dir, shared_data, tmp_path,
                                                            capsys):
    import shutil

    from openpyxl import load_workbook

    from kobbq.cli import main
    from tasks.translation.postedit import import_postedit
    from tasks.translation.workbook import export_postedit_workbooks

    es = load_profile("es")
    esbbq = shared_data / "esbbq" / "templates"
    templates, _ = load_bbq_templates(bbq_templates_dir)
    chosen = [t for t in templates if (t.category, t.q_id) in ROUND_TRIP]
    drafted = pretranslate(chosen, DeepLTranslator(FAKE_KEY, server.url), tmp_path / "c.sqlite", es,
                           profile_glossary(es))
    paths = export_postedit_workbooks(drafted.drafts, tmp_path / "sent", es, {t.subject: "t" for t in chosen})
    assert [p.name for p in paths] == ["postedit_Nationality.xlsx", "postedit_Religion.xlsx"]
    returned = tmp_path / "returned"
    returned.mkdir()
    for name in ("vocabulary.xlsx", "vocabulary_proper_names.xlsx"):
        shutil.copy(esbbq / name, returned / name)
    for path in paths:
        category = path.stem.removeprefix("postedit_")
        released = released_rows(esbbq, category)
        workbook = load_workbook(path)
        assert "stated_gender_info: m or f" in "\n".join(str(c.value) for c in workbook["Instructions"]["A"])
        sheet = workbook["templates"]
        header = [c.value for c in sheet[1]]
        fields = set()
        for cells in sheet.iter_rows(min_row=2):
            value = dict(zip(header, (c.value for c in cells)))
            fields.add(value["Field"])
            assert value["version"] in (None, "")  # the generator flips the people: no generated version b
            cells[header.index("Post-edit")].value = released[value["BBQ_id"]].get(value["Field"], "")
        assert fields == {*es.translation.fields.values(), *(c.name for c in es.translation.row_cells)}
        workbook.save(returned / path.name)
    result = import_postedit(sorted(returned.glob("postedit_*.xlsx")), es, tmp_path / "imported",
                             profile_glossary(es))
    assert not result.errors, [f.render() for f in result.errors]
    assert result.tsv_path == tmp_path / "imported" and len(result.rows) == 4
    assert main(["validate", "--profile", "es", str(result.tsv_path)]) == 0
    assert "0 error(s)" in capsys.readouterr().out
    for category, count in (("Religion", 3), ("Nationality", 1)):
        imported = released_rows(result.tsv_path, category)
        assert len(imported) == count
        for bbq_id, row in imported.items():
            want = released_rows(esbbq, category)[bbq_id]
            assert {c: row.get(c, "") for c in GENERATOR_COLUMNS} == {c: want.get(c, "") for c in GENERATOR_COLUMNS}
            assert row["esbbq_template_id"] == str(1 + sorted(imported, key=int).index(bbq_id))
    # And what the generator makes of them is the released instances of those templates, in order.
    import csv

    from tasks.templates.workbook_format import expand_workbook
    from tasks.templates.workbook import load_workbook_templates

    loaded = load_workbook_templates(result.tsv_path, es)
    columns = expand_workbook(loaded.templates, es, loaded.vocabulary).columns
    made = [r for r in (dict(zip(columns, values)) for values in zip(*columns.values())) if r["category"] == "Religion"]
    with (shared_data / "esbbq" / "released_dev" / "es" / "Religion.full.csv").open(encoding="utf-8") as handle:
        released = [r for r in csv.DictReader(handle) if r["template_id"] in ("1", "2", "3")]
    fields = ["instance_id", "template_id", "flipped", "context", "question", "ans0", "ans1", "ans2", "label"]
    assert len(released) == 36  # the released file's instances of Religion 1-3
    assert [[str(r[f]) for f in fields] for r in made] == [[r[f] for f in fields] for r in released]
    # A slot nobody declares is reported at the Post-edit cell it was written in; nothing is written.
    broken = returned / "postedit_Religion.xlsx"
    workbook = load_workbook(broken)
    sheet = workbook["templates"]
    row = next(r for r in sheet.iter_rows(min_row=2) if r[5].value == "ambiguous_context")
    row[8].value = row[8].value.replace("{{NAME2}}", "{{WORD9}}")
    workbook.save(broken)
    again = import_postedit(sorted(returned.glob("postedit_*.xlsx")), es, tmp_path / "again", profile_glossary(es))
    assert [(f.where.file, f.where.row, f.where.column, f.code) for f in again.errors] == [
        (str(broken), row[8].row, "Post-edit", "slot-undeclared")]
    assert again.tsv_path is None and not (tmp_path / "again").exists()


@pytest.mark.flow
def test_kobbq_translate_profile_es_then_postedit_export_and_import(prefect_harness, server, bbq_templates_dir,
                                                                     shared_data, tmp_path, monkeypatch, capsys):
    """The commands a team runs, against the fake server: drafts, cache, one workbook per category; then
    ``kobbq postedit export`` writes the same workbooks from the cache alone, nothing billed; then the
    returned workbook (filled with the released EsBBQ rows) imports as template workbooks."""
    from openpyxl import load_workbook

    from core.decisions import read_decisions

    from kobbq.cli import main

    labels = tmp_path / "labels.csv"
    labels.write_text("subject,label\nbbq:Religion:1,t\nbbq:Religion:2,t\nbbq:Religion:3,SR\n", encoding="utf-8")
    religion = bbq_templates_dir / "new_templates - Religion.csv"
    monkeypatch.setenv("DEEPL_AUTH_KEY", FAKE_KEY)
    monkeypatch.setenv("DEEPL_SERVER_URL", server.url)
    command = ["--profile", "es", "--bbq", str(religion), "--labels", str(labels)]
    assert main(["translate", *command, "--out", str(tmp_path / "t")]) == 0
    out = capsys.readouterr().out
    billed = server.state.billed_characters
    assert "2 rows, " in out and f"{billed} characters billed now" in out and billed > 0
    workbook = tmp_path / "t" / "postedit_Religion.xlsx"
    assert f"wrote {workbook}" in out and "mtBBQ" not in out  # the workbook format's twin needs its vocabulary
    fields = [r[5] for r in load_workbook(workbook)["templates"].iter_rows(min_row=2, values_only=True)]
    assert len(fields) == 2 * (9 + 8) and fields.count("stated_gender_info") == 2
    monkeypatch.delenv("DEEPL_AUTH_KEY")
    assert main(["postedit", "export", *command, "--out", str(tmp_path / "e"), "--cache",
                 str(tmp_path / "t" / "translation_cache.sqlite")]) == 0
    assert server.state.billed_characters == billed
    assert (tmp_path / "e" / "postedit_Religion.xlsx").read_bytes() == workbook.read_bytes()
    returned = return_with_released_rows(workbook, shared_data / "esbbq" / "templates", tmp_path / "returned")
    capsys.readouterr()
    assert main(["postedit", "import", "--profile", "es", str(returned / workbook.name), "--out",
                 str(tmp_path / "p")]) == 0
    out = capsys.readouterr().out
    assert "2 template rows imported" in out and f"wrote {tmp_path / 'p' / 'postedit_templates'}" in out
    assert sorted(p.name for p in (tmp_path / "p" / "postedit_templates").iterdir()) == [
        "Religion.xlsx", "vocabulary.xlsx", "vocabulary_proper_names.xlsx"]
    decisions = read_decisions(tmp_path / "p" / "decisions_postedit.csv")
    assert {(d.subject, d.outcome) for d in decisions if d.rule == "postedit-import"} == {
        ("Religion|1", "imported"), ("Religion|2", "imported")}


def test_kobbq_translate_profile_ca_is_one_clear_error(server, bbq_templates_dir, tmp_path, monkeypatch, capsys):
    """Before Prefect starts: one error line, no traceback, nothing sent."""
    from kobbq.cli import main

    labels = tmp_path / "labels.csv"
    labels.write_text("subject,label\nbbq:Religion:1,t\n", encoding="utf-8")
    monkeypatch.setenv("DEEPL_AUTH_KEY", FAKE_KEY)
    monkeypatch.setenv("DEEPL_SERVER_URL", server.url)
    code = main(["translate", "--profile", "ca", "--bbq", str(bbq_templates_dir / "new_templates - Religion.csv"),
                 "--labels", str(labels), "--out", str(tmp_path / "t")])
    err = capsys.readouterr().err
    assert code == 1 and err.count("error:") == 1 and "Traceback" not in err
    assert "DeepL does not offer CA as a target language" in err
    assert server.state.translate_requests == 0 and not (tmp_path / "t").exists()


def test_labels_compare_by_meaning_and_templates_get_the_profiles_own_label():
    """A labelling decision log says ST/TM (KoBBQ's terms); an EsBBQ labels file says t/m. Both select the same
    BBQ rows for es, and the es templates carry t/m whichever was given."""
    from tasks.templates.bbq import BBQTemplate
    from tasks.translation.pretranslate import own_label, translatable

    def row(q_id: str) -> BBQTemplate:
        return BBQTemplate("new_templates - Age.csv", int(q_id) + 1, "Age", q_id, "", {}, "", "", "", "")

    rows = [row("1"), row("2"), row("3"), row("4")]
    es, ko = load_profile("es"), load_profile("ko")
    from_log = {"bbq:Age:1": "ST", "bbq:Age:2": "TM", "bbq:Age:3": "SR"}
    from_file = {"bbq:Age:1": "t", "bbq:Age:2": "m", "bbq:Age:4": "n"}
    assert [t.q_id for t in translatable(rows, from_log, es)] == ["1", "2"]
    assert [t.q_id for t in translatable(rows, from_file, es)] == ["1", "2"]
    assert [t.q_id for t in translatable(rows, from_log, ko)] == ["1", "2"]
    assert [own_label(x, es) for x in ("ST", "TM", "t", "m", "")] == ["t", "m", "t", "m", ""]
    assert [own_label(x, ko) for x in ("ST", "TM", "")] == ["ST", "TM", ""]


def test_rows_that_only_exchange_the_people_are_not_sent_where_the_generator_flips():
    """BBQ's SES 1 b is SES 1 a with NAME1 and NAME2 swapped; EsBBQ has one row for it (version ""), KoBBQ keeps
    both. Age 3 b has other texts: both stay."""
    from tasks.templates.bbq import BBQTemplate
    from tasks.translation.pretranslate import Draft, DraftField
    from tasks.translation.workbook import export_rows

    def row(category: str, q_id: str, version: str, names: str, context: str) -> Draft:
        texts = {"ambiguous_context": context}
        return Draft(BBQTemplate(f"new_templates - {category}.csv", 2, category, q_id, version, texts, names, "", "",
                                 ""), (DraftField("Ambiguous_context", context, context),))

    drafts = [row("SES", "1", "a", "NAME1: [rich, wealthy]; NAME2: [poor]", "the {{NAME1}} and the {{NAME2}}"),
              row("SES", "1", "b", "NAME1: [poor]; NAME2: [rich, wealthy]", "the {{NAME1}} and the {{NAME2}}"),
              row("Age", "3", "a", "NAME1: [old]; NAME2: [young]", "the {{NAME1}} met the {{NAME2}}"),
              row("Age", "3", "b", "NAME1: [young]; NAME2: [old]", "a {{NAME1}} met a {{NAME2}}")]
    labels = {"bbq:SES:1": "t", "bbq:Age:3": "t"}
    es = {(r.category, r.bbq_id, r.version) for r in export_rows(drafts, load_profile("es"), labels)}
    assert es == {("SES", "1", ""), ("Age", "3", "a"), ("Age", "3", "b")}
    ko = {(r.category, r.bbq_id, r.version) for r in export_rows(drafts, load_profile("ko"), labels)}
    assert ko == {("SES", "1", "a"), ("SES", "1", "b"), ("Age", "3", "a"), ("Age", "3", "b")}
