"""Pure logic of every pipeline stage, and the thin Prefect tasks that wrap it.

Modules here import neither Prefect nor a server, except ``prefect_tasks``, so that the
rules can be imported, tested and reused without one.
"""
