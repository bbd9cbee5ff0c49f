"""The translation stage: DeepL pre-translation and the translator's post-edit round trip.

Entry points for the build flow (see the modules for details):
- ``pretranslate.pretranslate(templates, translator, cache_path, profile, glossary) -> PretranslationResult``
  (drafts, decisions, chars_billed, chars_from_cache, flagged, segments_left, stopped).
- ``cost.dry_run(templates, cache_path, profile, glossary) -> CostEstimate``: characters and cost, no call.
- ``deepl_client.translator_from_environment()`` (live, DEEPL_AUTH_KEY / DEEPL_SERVER_URL) or
  ``deepl_client.ReplayTranslator()`` (recorded cache only).
- ``glossary.profile_glossary(profile.name)``: ``templates_raw/glossary/<profile>.csv``.
"""
