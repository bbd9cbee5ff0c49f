"""Categorization labelling (paper step 1): annotators, agreement, consensus, NC templates, reference."""
