"""Audit: answer "why is this in the release, or why was it dropped?" from data the pipeline already has, never
by running a rule again: every template's fate from the decision log (``fates``), ``kobbq why`` (``lineage``),
the HTML report the build writes into the release (``report``, its charts in ``charts``) and ``kobbq diff``
(``diff``)."""
