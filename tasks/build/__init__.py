"""What ``kobbq build`` decides before and around its flows: a direct build's request and checks
(``direct``), a pipeline's stages and when they are current (``pipeline``), and the build folder made
ready (``folder``). Nothing here starts Prefect: an up-to-date release or a bad input is found without it."""
