"""The runner: what a command that builds decides and runs, without Prefect. Every stage's contract, what it reads
and the module that does its work (``stages``); a pipeline's stages, their fingerprints, which are current and what
their inputs hold (``plan``); the stages run in order and reported to an observer, with the build folder made ready
(``run``); and the release stage (``release_stage``). An up-to-date release or a bad input is found before anything
starts, and a stage's module is imported only when it runs; ``flows.pipeline`` runs the same in Prefect."""
