"""The translation stage: DeepL pre-translation and the translator's post-edit round trip.

``placeholders`` protects BBQ's slots (and glossary terms DeepL cannot apply) as XML tags; ``glossary`` holds the
profile's cultural substitutions; ``cache`` keeps every paid translation (never pay twice; resume; replay
without a key through ``deepl_client.ReplayTranslator``); ``cost`` is the dry run. ``pretranslate`` drafts the
translated templates (``translatable``: the ST/TM ones) and ``workbook`` exports one post-edit workbook per
category; ``postedit`` imports them back, checked by the template validation before anything is written (a
KoBBQ TSV, or a workbook format's ``<Category>.xlsx`` templates), with edit rates and the report;
``twin_templates`` writes the unedited drafts as the machine-translated twin; ``particles`` inflects Korean
particles with hgtk. Drafts use the target format's slots (KoBBQ's ``[N1]``, or BBQ's own ``{{NAME1}}`` for a
workbook format); DeepL's target languages are checked before anything is sent (no Catalan).

The stages (``pretranslate_stage``, ``postedit_stage``: in real-data mode the released template file is the
post-edit, linked to BBQ) and the commands call the same functions.
"""
