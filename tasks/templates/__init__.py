"""Template files and their formats (``validate``: the registry and the one way in), the expansion of rows into
samples (``engine``), and the English BBQ templates they come from.

The lowest of the ``tasks`` packages (``tests/test_layers.py``): every stage reads templates, so nothing here
imports another ``tasks`` package.
"""
