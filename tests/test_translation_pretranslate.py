"""Pre-translation through the real deepl client against the fake DeepL server on 127.0.0.1."""

from __future__ import annotations

import re

import pytest

from core.paths import EXAMPLE_DIR
from core.profile import load_profile
from tasks.templates.bbq import load_bbq_templates
from tasks.translation.pretranslate import dry_run
from tasks.translation.deepl_client import DeepLTranslator, ReplayTranslator
from tasks.translation.glossary import profile_glossary
from tasks.translation.pretranslate import pretranslate
from fake_deepl import FAKE_KEY, FakeDeepLServer

EXAMPLE = EXAMPLE_DIR / "translation"


@pytest.fixture()
def server():
    fake = FakeDeepLServer().start()
    yield fake
    fake.stop()


@pytest.fixture()
def no_retries(monkeypatch):
    monkeypatch.setattr("deepl.http_client.max_network_retries", 0)  # the client, imported when used


@pytest.fixture(scope="module")
def example_templates():
    templates, findings = load_bbq_templates(EXAMPLE)
    assert not findings
    return templates


def distinct_english_characters(templates) -> int:
    """Independent of the code under test: each distinct English text once, without its placeholders (sent as
    XML tags, which DeepL does not bill)."""
    texts = set()
    for t in templates:
        texts.update(v for v in t.texts.values())
        texts.add(t.relevant_social_values)
        for cell in (t.names, t.lexical):
            for body in re.findall(r"\[([^\]]*)\]", cell):
                texts.update(i.strip() for i in body.split(","))
    texts.discard("")
    return sum(len(re.sub(r"\{\{\{?[A-Z]+[0-9]*\}\}\}?", "", x)) for x in texts)


def test_drafts_keep_placeholders_apply_glossary_and_never_pay_twice(server, example_templates, ko_profile, tmp_path):
    translator = DeepLTranslator(FAKE_KEY, server.url)
    glossary = profile_glossary(load_profile("ko"))
    cache = tmp_path / "cache.sqlite"
    estimate = dry_run(example_templates, cache, ko_profile, glossary)
    assert server.state.translate_requests == 0  # a dry run calls nothing
    first = pretranslate(example_templates, translator, cache, ko_profile, glossary)
    assert first.complete and first.stopped is None and first.glossary_mode == "deepl"
    assert first.chars_billed == server.state.billed_characters == estimate.characters_to_send
    assert first.chars_billed == distinct_english_characters(example_templates)
    assert not [f for f in first.flagged if f.code.startswith("placeholder")]
    row = next(d for d in first.drafts if d.template.q_id == "1" and d.template.version == "a")
    assert "이마트" in row.field("Ambiguous_context").draft and "카카오택시" in row.field("Ambiguous_context").draft
    assert row.field("Ambiguous_context").draft.count("[N1]") == 1
    assert re.fullmatch(r"N1: \[\S+, \S+\]; N2: \[\S+, \S+\]", row.field("Names").draft)
    subs = {d.subject: d.outcome for d in first.decisions if d.rule == "glossary-substitution"}
    assert subs["bbq:Age:1"] == "Uber -> 카카오택시; Walmart -> 이마트"
    assert "rugby -> 농구" in subs["bbq:Age:2"]
    # Second run: everything from the cache, nothing billed, identical drafts.
    requests = server.state.translate_requests
    second = pretranslate(example_templates, translator, cache, ko_profile, glossary)
    assert server.state.translate_requests == requests and second.chars_billed == 0
    assert second.chars_from_cache == first.chars_billed
    assert [d.fields for d in second.drafts] == [d.fields for d in first.drafts]
    assert dry_run(example_templates, cache, ko_profile, glossary).characters_to_send == 0


def test_without_deepl_glossary_support_terms_are_substituted_after(server, example_templates, ko_profile, tmp_path):
    server.state.glossary_pairs = []
    result = pretranslate(example_templates, DeepLTranslator(FAKE_KEY, server.url), tmp_path / "c.sqlite",
                          ko_profile, profile_glossary(load_profile("ko")))
    assert result.glossary_mode == "after" and not server.state.glossaries
    assert all("Walmart" not in t for t in server.state.texts_received)  # sent as a protected tag
    row = next(d for d in result.drafts if d.template.q_id == "1")
    assert "이마트" in row.field("Ambiguous_context").draft


def test_quota_stop_keeps_work_and_a_rerun_resumes(server, example_templates, ko_profile, tmp_path, no_retries):
    profile = ko_profile.model_copy(update={"translation": ko_profile.translation.model_copy(update={"batch_size": 5})})
    cache = tmp_path / "c.sqlite"
    total = distinct_english_characters(example_templates)
    server.state.quota_characters = total // 2
    stopped = pretranslate(example_templates, DeepLTranslator(FAKE_KEY, server.url), cache, profile,
                           profile_glossary(load_profile("ko")))
    assert stopped.stopped and "quota" in stopped.stopped and not stopped.complete
    assert f"{stopped.segments_left} left" in stopped.stopped
    assert 0 < stopped.chars_billed <= total // 2
    assert any(d.outcome == "incomplete" for d in stopped.decisions)
    server.state.quota_characters = None
    resumed = pretranslate(example_templates, DeepLTranslator(FAKE_KEY, server.url), cache, profile,
                           profile_glossary(load_profile("ko")))
    assert resumed.complete
    assert stopped.chars_billed + resumed.chars_billed == total  # nothing paid twice


def test_wrong_key_stops_cleanly_without_showing_the_key(server, example_templates, ko_profile, tmp_path, no_retries):
    secret = "very-secret-key-123"
    result = pretranslate(example_templates, DeepLTranslator(secret, server.url), tmp_path / "c.sqlite",
                          ko_profile, profile_glossary(load_profile("ko")))
    assert result.stopped and "refused the key" in result.stopped and secret not in result.stopped
    assert result.segments_left == result.segments
    assert secret not in repr(DeepLTranslator(secret, server.url))


def test_rate_limit_and_server_error_are_retried(server, example_templates, ko_profile, tmp_path, monkeypatch):
    monkeypatch.setattr("deepl.http_client.max_network_retries", 2)
    server.state.fail(429, times=1)
    result = pretranslate(example_templates[:1], DeepLTranslator(FAKE_KEY, server.url), tmp_path / "a.sqlite",
                          ko_profile, profile_glossary(load_profile("ko")))
    assert result.complete and server.state.fail_times == 0
    server.state.fail(503, times=1)
    result = pretranslate(example_templates[2:3], DeepLTranslator(FAKE_KEY, server.url), tmp_path / "b.sqlite",
                          ko_profile, profile_glossary(load_profile("ko")))
    assert result.complete and server.state.fail_times == 0


def test_server_errors_beyond_retries_stop_cleanly(server, example_templates, ko_profile, tmp_path, no_retries):
    server.state.fail(503, times=100)
    result = pretranslate(example_templates, DeepLTranslator(FAKE_KEY, server.url), tmp_path / "c.sqlite",
                          ko_profile, profile_glossary(load_profile("ko")))
    assert result.stopped and "did not answer" in result.stopped


def test_slow_answers_are_waited_for(server, example_templates, ko_profile, tmp_path):
    server.state.delay_seconds = 0.3
    result = pretranslate(example_templates[:1], DeepLTranslator(FAKE_KEY, server.url), tmp_path / "c.sqlite",
                          ko_profile, profile_glossary(load_profile("ko")))
    assert result.complete


def test_a_dropped_placeholder_is_flagged_not_accepted(server, example_templates, ko_profile, tmp_path):
    server.state.drop_placeholder = True
    result = pretranslate(example_templates, DeepLTranslator(FAKE_KEY, server.url), tmp_path / "c.sqlite",
                          ko_profile, profile_glossary(load_profile("ko")))
    lost = [f for f in result.flagged if f.code == "placeholder-lost"]
    assert lost and all(f.severity == "error" for f in lost)
    assert {d.outcome for d in result.decisions if d.rule == "deepl-pretranslation"} == {"flagged"}


def test_replay_uses_only_the_recorded_cache(example_templates, ko_profile, tmp_path):
    result = pretranslate(example_templates, ReplayTranslator(), tmp_path / "empty.sqlite", ko_profile,
                          profile_glossary(load_profile("ko")))
    assert result.stopped and "not in the recorded translation cache" in result.stopped
    assert result.segments_left == result.segments and result.chars_billed == 0


def test_the_fake_serves_deepls_own_language_lists(server):
    """The fake answers what DeepL answers, so tests take production's path: Chinese is ZH, ZH-HANS and ZH-HANT as
    a target, and glossaries are listed by base language (en -> zh, never zh-hans)."""
    import deepl

    client = deepl.Translator(FAKE_KEY, server_url=server.url)
    targets = {language.code.upper() for language in client.get_target_languages()}
    assert {"ZH", "ZH-HANS", "ZH-HANT", "JA", "KO", "AR", "ES"} <= targets and "CA" not in targets
    pairs = {(p.source_lang, p.target_lang) for p in client.get_glossary_languages()}
    assert {("en", "zh"), ("en", "ar"), ("en", "ja"), ("zh", "en")} <= pairs
    assert not any("-" in source + target for source, target in pairs)


def with_target(profile, language: str, deepl_code: str):
    return profile.model_copy(update={"language": language, "translation": profile.translation.model_copy(
        update={"deepl_target_lang": deepl_code})})


def test_a_variant_target_uses_deepls_glossary_for_its_base_language(server, example_templates, ko_profile, tmp_path):
    """ZH-HANS: DeepL lists the glossary pair en -> zh; the variant is no reason to substitute terms after."""
    zh = with_target(ko_profile, "zh", "ZH-HANS")
    result = pretranslate(example_templates, DeepLTranslator(FAKE_KEY, server.url), tmp_path / "c.sqlite", zh,
                          profile_glossary(load_profile("ko")))
    assert result.complete and result.glossary_mode == "deepl"
    assert [g["info"]["target_lang"] for g in server.state.glossaries.values()] == ["zh"]
    mode = next(d for d in result.decisions if d.rule == "glossary-mode")
    assert mode.outcome == "deepl" and "en->zh-hans" in mode.reason


def test_what_auto_chose_is_replayed_offline(server, example_templates, ko_profile, tmp_path):
    """A live run chose "after" (no glossary pair); a replay, a dry run and a run whose DeepL answers the other way
    read the choice the cache recorded, so they find every paid segment and pay nothing again."""
    glossary = profile_glossary(load_profile("ko"))
    server.state.glossary_pairs = []
    cache = tmp_path / "c.sqlite"
    paid = pretranslate(example_templates, DeepLTranslator(FAKE_KEY, server.url), cache, ko_profile, glossary)
    assert paid.complete and paid.glossary_mode == "after" and paid.chars_billed == server.state.billed_characters
    replayed = pretranslate(example_templates, ReplayTranslator(), cache, ko_profile, glossary)
    assert replayed.complete and replayed.glossary_mode == "after" and replayed.stopped is None
    assert [d.fields for d in replayed.drafts] == [d.fields for d in paid.drafts]
    assert "recorded with the translation cache" in next(d.reason for d in replayed.decisions
                                                         if d.rule == "glossary-mode")
    assert dry_run(example_templates, cache, ko_profile, glossary).characters_to_send == 0
    server.state.glossary_pairs = [("en", "ko")]
    requests = server.state.translate_requests
    again = pretranslate(example_templates, DeepLTranslator(FAKE_KEY, server.url), cache, ko_profile, glossary)
    assert again.glossary_mode == "after" and server.state.translate_requests == requests


def test_a_replay_counts_what_is_missing_and_says_running_again_cannot_help(server, example_templates, ko_profile,
                                                                              tmp_path):
    profile = ko_profile.model_copy(update={"translation": ko_profile.translation.model_copy(update={"batch_size": 3})})
    glossary = profile_glossary(load_profile("ko"))
    cache = tmp_path / "c.sqlite"
    pretranslate(example_templates[:2], DeepLTranslator(FAKE_KEY, server.url), cache, profile, glossary)
    result = pretranslate(example_templates, ReplayTranslator(), cache, profile, glossary)
    assert result.segments_left > 3  # more than a batch: the message must count them, not the batch
    assert result.stopped.startswith(f"{result.segments_left} of {result.segments} segment(s) are not in the "
                                     "recorded translation cache")
    assert "cannot translate them" in result.stopped and "DEEPL_AUTH_KEY" in result.stopped


def test_the_dry_run_estimates_what_deepl_bills_in_either_glossary_mode(server, example_templates, ko_profile,
                                                                        tmp_path):
    glossary = profile_glossary(load_profile("ko"))
    for mode in ("deepl", "after"):
        profile = ko_profile.model_copy(update={"translation": ko_profile.translation.model_copy(
            update={"glossary_mode": mode})})
        cache = tmp_path / f"{mode}.sqlite"
        estimate = dry_run(example_templates, cache, profile, glossary)
        before = server.state.billed_characters
        result = pretranslate(example_templates, DeepLTranslator(FAKE_KEY, server.url), cache, profile, glossary)
        assert result.chars_billed == server.state.billed_characters - before == estimate.characters_to_send, mode
