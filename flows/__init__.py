"""Prefect flows that compose the stages in ``tasks``."""
