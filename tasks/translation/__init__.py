"""The translation stage: DeepL pre-translation and the translator's post-edit round trip.

Modules: ``placeholders`` (protect/restore/verify ``{{NAME1}}``), ``glossary`` (cultural
substitutions, the profile folder's ``glossary.csv``), ``cache`` (SQLite; never pay twice;
resume), ``deepl_client`` (``Translator``: live DeepL or replay of a recorded cache),
``pretranslate``, ``pretranslate_stage``, ``cost`` (dry run), ``workbook`` (xlsx export/read), ``postedit``
(import, edit rates, and the post-edit as a workbook culture's ``<Category>.xlsx`` templates, validated before
publication), ``postedit_stage`` (and the released template file as the post-edit, linked to BBQ),
``twin_templates`` (the machine-translated twin's templates), ``particles`` (Korean particles with hgtk). Drafts use the
target format's slots (``placeholders.SlotStyle``: KoBBQ's ``[N1]``, or BBQ's own ``{{NAME1}}`` for a
workbook format); DeepL's target languages are checked before anything is sent (no Catalan).

Entry points for the build flow:
- ``pretranslate.pretranslate(templates: list[BBQTemplate], translator, cache_path, profile, glossary)
  -> PretranslationResult(drafts, decisions, chars_billed, chars_from_cache, flagged, segments,
  segments_left, stopped, glossary_mode, substitutions)``; ``result.complete`` is False after a stop.
  ``pretranslate.translatable(templates, labels, profile)`` keeps the ST/TM rows;
  ``pretranslate.load_labels(path)`` reads ``subject,label`` or a labelling decision log.
- ``deepl_client.translator_from_environment(key=None, server_url=None)`` (DEEPL_AUTH_KEY,
  DEEPL_SERVER_URL) or ``deepl_client.ReplayTranslator()``; ``glossary.profile_glossary(profile)``.
- ``cost.dry_run(templates, cache_path, profile, glossary) -> CostEstimate`` (no call).
- ``workbook.export_postedit_workbooks(drafts, out_dir, profile, labels) -> list[Path]``
  (``postedit_<Category>.xlsx``).
- ``postedit.import_postedit(workbook_paths, profile, out_path, glossary) -> ImportResult(rows,
  tsv_path (the TSV, or a workbook format's folder; None when errors; written atomically), decisions,
  findings, template_rates, category_rates, substitutions)``; ``postedit.render_report(result)`` is the
  post-edit report.
- ``twin_templates.write_machine_translation(drafts, profile, labels, out_path) -> ImportResult``: the
  unedited drafts as ``mtBBQ_templates.tsv``, versions in the convention by BBQ's own answer info, BBQ's
  groups on every row (the release expands it into its twin ``mtBBQ/``).
- ``reference.link_reference(templates: list[TemplateRow], bbq: list[BBQTemplate], profile, glossary)
  -> ReferenceLinks(decisions, linked, unlinked, rows_linked, rows, substitutions, shared)``: the
  release as the post-edit, without DeepL.
- ``particles.check_items(templates, pairs) -> ParticleReport``; ``particles.expand_shorthand``.
Stages: ``pretranslate_stage`` (``translatable_templates``, ``draft_and_export``, ``check_target_language``)
and ``postedit_stage`` (``import_returned``, ``link_released``); the flows in ``flows/translate.py``
(``translate_flow``, ``postedit_import_flow``, ``postedit_reference_flow``) call the same functions.
"""
