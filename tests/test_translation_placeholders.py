"""Placeholders, glossary terms and the cache key, on BBQ's own placeholder spellings."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import UserError
from core.profile import load_profile
from tasks.translation.cache import CachedTranslation, RequestSettings, TranslationCache
from tasks.translation.glossary import load_glossary, profile_glossary
from tasks.translation.pretranslate import KOBBQ_SLOTS, protect, restore


def test_protect_turns_every_placeholder_into_a_tag_and_escapes_xml():
    p = protect('The {{NAME1}} & the {{{NAME2}} said "<no>" to {{WORD1}}.')
    assert p.placeholders == ("NAME1", "NAME2", "WORD1")
    assert p.sent == 'The <ph n="NAME1"/> &amp; the <ph n="NAME2"/> said "&lt;no&gt;" to <ph n="WORD1"/>.'


def test_restore_gives_kobbq_slots_and_unescapes():
    p = protect("The {{NAME1}} & {{GEN1}}")
    r = restore(p, '<ph n="NAME1"></ph> 그리고 &amp; <ph n="GEN1"/>', {})
    assert r.text == "[N1] 그리고 & [GEN1]"
    assert r.missing == r.extra == ()


def test_restore_reports_a_lost_and_a_duplicated_placeholder():
    p = protect("{{NAME1}} met {{NAME2}}, and {{NAME1}} left.")
    r = restore(p, '<ph n="NAME1"/> <ph n="NAME1"/> <ph n="NAME1"/>', {})
    assert r.missing == ("NAME2",)
    assert r.extra == ("NAME1",)


def test_terms_protected_after_translation_come_back_as_their_substitute():
    p = protect("Outside the Walmart, a walmart-like store", ("Walmart",))
    assert p.terms == ("Walmart",)
    assert p.sent.count('<term n="0"/>') == 1  # "walmart-like" is not the whole word
    assert restore(p, '<term n="0"/> 밖에서', {"Walmart": "이마트"}).text == "이마트 밖에서"


def test_bbq_to_kobbq_slots():
    assert KOBBQ_SLOTS.source_text("The {{NAME1}} and {{WORD2}}") == "The [N1] and [W2]"


def test_shipped_glossary_has_the_papers_examples():
    entries = profile_glossary(load_profile("ko")).targets
    assert entries["Walmart"] == "이마트" and entries["Uber"] == "카카오택시" and entries["rugby"] == "농구"


def test_glossary_duplicate_term_is_a_user_error_with_its_row(tmp_path: Path):
    path = tmp_path / "g.csv"
    path.write_text("source,target,note\nUber,카카오택시,\nuber,택시,\n", encoding="utf-8")
    with pytest.raises(UserError) as info:
        load_glossary(path)
    assert "row 3" in str(info.value) and "column source" in str(info.value)


def test_cache_key_separates_glossaries_and_survives_reopening(tmp_path: Path):
    one = RequestSettings("EN", "KO", "g1", (("tag_handling", "xml"),))
    two = RequestSettings("EN", "KO", "g2", (("tag_handling", "xml"),))
    with TranslationCache(tmp_path / "c.sqlite") as cache:
        cache.put_many({"hello": CachedTranslation("안녕", 5)}, one)
    with TranslationCache(tmp_path / "c.sqlite") as cache:
        assert cache.get_many(["hello"], one) == {"hello": CachedTranslation("안녕", 5)}
        assert cache.get_many(["hello"], two) == {}
