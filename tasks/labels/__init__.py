"""Categorization labelling (paper step 1): annotators, agreement, consensus, NC templates, reference.

Every BBQ template (``bbq:<BBQ category>:<Q_id>``, the category spelled as BBQ's file name,
e.g. ``Race_ethnicity``; the KoBBQ TSV's ``BBQ_category`` uses the same names) is labelled
ST (simply-transferred), TM (target-modified) or SR (sample-removed) by several annotators;
their disagreements are settled in a consensus file, and the final label of each template
is a Decision that later stages obey. Newly-created (NC) templates join in the KoBBQ format
(``tasks.templates.templates_stage``).

``template_set`` is the unit of labelling and its fingerprint; ``workbook`` the annotator's protected xlsx;
``annotations`` reads the filled workbooks (or CSVs), all of them or none; ``agreement`` computes Fleiss' kappa
and raw agreement; ``consensus`` reads the final labels into decisions. ``labels_stage`` is the one path for the
pipeline and the commands (``kobbq labels consensus`` / ``reference``), real-data mode included: there the
released templates' BBQ links give the labels, and BBQ templates nobody links to are ``unlinked`` (SR or
dropped by the survey; the public files do not say which).
"""
