"""Template files: the row model and loader, slot syntax, corrections, validation, and the English BBQ
templates they come from.

The lowest of the ``tasks`` packages (``tests/test_layers.py``): every stage reads templates, so nothing here
imports another ``tasks`` package. ``newly_created``: ``import_newly_created(path, profile, corrections=None,
others=None) -> NewlyCreated(loaded, findings, decisions)``: label must be NC, no BBQ link, same validation as any
template (``validate.validate_loaded``), no ID clash with ``others``.
"""
