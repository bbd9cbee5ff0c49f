"""Template files and their formats: the row model, loading, slot syntax, corrections, checks, and the expansion
of rows into samples; also the English BBQ templates they come from.

The lowest of the ``tasks`` packages (``tests/test_layers.py``): every stage reads templates, so nothing here
imports another ``tasks`` package.

- ``formats``: the registry of template formats (the KoBBQ TSV, EsBBQ's workbooks), each its loader, checks and
  expansion; ``validate.load_checked(path, corrections, profile)`` is the one way in.
- ``engine``: the one expansion engine; ``kobbq_format`` and ``workbook_format`` are the two formats' adapters
  to it; ``hooks`` the workbook format's named hooks; ``sample_ids`` the KoBBQ sample-ID scheme.
"""
