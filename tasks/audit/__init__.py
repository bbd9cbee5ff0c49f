"""Audit: "why is this in the release, or why was it dropped?" answered from the data the pipeline already has,
never by running a rule again."""
