"""Cost control: what a run would send to DeepL, and what it would cost, before any call. The count uses the same
segments, protection, glossary mode and cache keys as ``pretranslate``, and DeepL bills the characters it
translates, not the XML tags, so the dry run's number is what the real run is billed.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

from core.profile import Profile
from tasks.templates.bbq import BBQTemplate
from tasks.translation.cache import TranslationCache
from tasks.translation.glossary import Glossary
from tasks.translation.placeholders import billable_characters
from tasks.translation.pretranslate import choose_mode, protect_all, recorded_mode, request_settings


@dataclass(frozen=True)
class CostEstimate:
    rows: int
    segments: int  # distinct segments
    cached_segments: int
    segments_to_send: int
    characters_to_send: int
    characters_cached: int
    estimated_cost: float
    currency: str

    def render(self, dry_run: bool = True) -> str:
        """The estimate, said as a dry run's result or as what a real run is about to send."""
        lead = "dry run" if dry_run else "to translate"
        return (f"{lead}: {self.rows} rows, {self.segments} distinct segments, {self.cached_segments} already cached "
                f"({self.characters_cached} characters); {'would send' if dry_run else 'sending'} {self.segments_to_send} segments, "
                f"{self.characters_to_send} characters, estimated cost {self.estimated_cost:.2f} {self.currency}")


def dry_run(templates: list[BBQTemplate], cache_path: Path, profile: Profile, glossary: Glossary) -> CostEstimate:
    """Count without calling DeepL (the glossary mode as ``choose_mode`` takes it without DeepL)."""
    with contextlib.ExitStack() as stack:  # a cache that does not exist yet is not created by a dry run
        cache = stack.enter_context(TranslationCache(cache_path)) if Path(cache_path).exists() else None
        mode = choose_mode(profile, glossary, None, recorded_mode(cache, profile, glossary) if cache else None).mode
        sents = list(dict.fromkeys(p.sent for p in protect_all(templates, glossary, mode).values()))
        cached = cache.get_many(sents, request_settings(profile, glossary, mode)) if cache else {}
    to_send = [s for s in sents if s not in cached]
    characters = sum(map(billable_characters, to_send))
    price = characters * profile.translation.price_per_million_characters / 1_000_000  # without the plan's base fee
    return CostEstimate(len(templates), len(sents), len(cached), len(to_send), characters,
                        sum(map(billable_characters, cached)), price, profile.translation.currency)
