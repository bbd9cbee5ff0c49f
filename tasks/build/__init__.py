"""What a command that builds decides before and around the one flow run: a pipeline's stages, their
fingerprints, which are current and what their inputs hold (``pipeline``), the release stage
(``release_stage``), and the build folder made ready (``folder``). Nothing here starts Prefect: an up-to-date
release or a bad input is found without it."""
