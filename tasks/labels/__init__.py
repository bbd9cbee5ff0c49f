"""Categorization labelling (paper step 1): annotators, agreement, consensus, NC templates, reference.

Every BBQ template (``bbq:<BBQ category>:<Q_id>``, the category spelled as BBQ's file name,
e.g. ``Race_ethnicity``; the KoBBQ TSV's ``BBQ_category`` uses the same names) is labelled
ST (simply-transferred), TM (target-modified) or SR (sample-removed) by several annotators;
their disagreements are settled in a consensus file, and the final label of each template
is a Decision that later stages obey. Newly-created (NC) templates join in the KoBBQ format
(``tasks.templates.newly_created``).

Modules:
- ``template_set``: the unit of labelling (``LabelItem``), the template-set fingerprint,
  ``load_label_items(bbq_path, profile, categories=None) -> (rows, items)``.
- ``workbook``: ``write_workbook(items, path, annotator, profile)``: protected xlsx with an
  ST/TM/SR drop-down and a rationale cell; the fingerprint in a very hidden ``meta`` sheet.
- ``annotations``: ``import_annotations(paths, items, require_rationale) -> list[AnnotatorLabels]``
  (xlsx or CSV ``template,label,rationale``); all files or none (``FindingsError``).
- ``agreement``: ``agreement(annotators, items) -> AgreementReport`` (Fleiss' kappa, a small exact function,
  raw agreement, overall and per category; ``.text``; ``.disagreements`` with rationales).
- ``consensus``: ``load_consensus(path, bbq_templates, require_rationale=True, annotations=None)
  -> Consensus`` (``.labels[subject].label``, ``.label_of(subject)``, ``.decisions``: one
  ``consensus-label`` decision per template, plus a ``sample-removed``/``drop`` decision per SR);
  ``require_final_labels(bbq_templates, consensus)`` raises UserError naming every template
  without a final label; ``templates_to_adapt(bbq_templates, consensus)`` -> the ST/TM rows to translate.
- ``reference``: ``reference_labels(kobbq_templates, bbq_templates, profile) -> ReferenceLabels``
  (``decisions``: every BBQ template ``ST``/``TM`` (rule ``reference-link``) or ``unlinked``
  (rule ``reference-unlinked``: SR or dropped by the survey; the public files do not say
  which), plus one ``NC`` decision per unlinked released template; ``rows`` and ``.text``: per
  category the linked ST/TM counts beside the paper's Table 1 and the unlinked count beside SR).

- ``stage``: the stage's functions, the one path for the pipeline and the commands:
  ``final_labels(bbq, consensus, annotations, profile, categories=None) -> FinalLabels`` (items, consensus,
  agreement), ``write_labels(labels, folder)`` (``labels.csv`` by subject, ``agreement.txt``),
  ``labels_from_links(templates, bbq, profile)`` and ``write_reference(result, folder)`` (real-data mode).

The pipeline's labels stage (``labels_stage``) and the commands ``kobbq labels consensus`` / ``reference`` run
these functions through the one runner (``flows/pipeline.py``), which writes ``decisions_labels.csv`` beside them.
"""
