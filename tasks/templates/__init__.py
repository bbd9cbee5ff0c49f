"""Template files and their formats, the expansion of rows into samples, and the English BBQ templates: the lowest
of the ``tasks`` packages (``tests/test_layers.py``), since every stage reads templates."""
