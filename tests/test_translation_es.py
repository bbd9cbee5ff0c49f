"""Pre-translation into Spanish for the es profile (EsBBQ's workbook format), through the real deepl client
against the fake DeepL server, and the Catalan profile's one clear error."""

from __future__ import annotations

import re

import pytest

from core.errors import UserError
from core.profile import load_profile
from tasks.templates.bbq import load_bbq_templates
from tasks.translation.cost import dry_run
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
