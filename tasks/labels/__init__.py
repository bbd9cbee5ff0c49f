"""Categorization labelling (paper step 1): every BBQ template (``bbq:<BBQ category>:<Q_id>``) is labelled ST, TM or SR
by several annotators (``annotations``: their workbooks out and back; ``agreement``); their disagreements are settled in
a consensus file (``consensus``), whose final labels later stages obey. ``labels_stage`` is the one path for the
pipeline and the commands, real-data mode included (the released templates' BBQ links give the labels)."""
