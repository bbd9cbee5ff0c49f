"""How long the evaluation waits for a model server: light constants, also for ``kobbq eval run --help`` (which
imports neither the openai client nor pandas)."""

REQUEST_SECONDS = 30.0  # per request attempt: 30 new tokens take a few seconds, even on a busy server
# No response at all (every attempt timing out) for this many request timeouts: the server is stalled.
STALLED_AFTER_TIMEOUTS = 2
# A unit's run renews its lease before each request and every quarter of this while it waits: one that did
# not for this long is lost (--lost-after); the floor leaves a busy machine's slowest renewals room.
LOST_AFTER_SECONDS = 120
LOST_AFTER_FLOOR = 20
