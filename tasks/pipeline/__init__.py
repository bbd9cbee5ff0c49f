"""The runner, without Prefect (its parts: ``docs/developing.md``): an up-to-date release or a bad input is found
before anything starts, and a stage's module is imported only when it runs; ``flows.pipeline`` runs the same in
Prefect."""
