"""An independent check of the machine-translated twin's samples: does every biased answer name the right person?

Computed from the English BBQ files alone, never from the twin's templates: for each BBQ template, the
people of a stereotyped group (``NAME<k>_info`` among ``Known_stereotyped_groups``) and the others, their
fillers rendered as the fake DeepL (``tests/fake_deepl.py``) renders every segment. A twin sample with a
biased question must have a biased answer that names a target person; one with a counter-biased question, a
non-target person. A template whose version a is BBQ's biased one, carried over with BBQ's letters, breaks
this on every sample.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

import pandas as pd

from fake_deepl import fake_translate
from tasks.templates.bbq import load_bbq_templates
from tasks.translation.pretranslate import bbq_declarations


def _plain(group: str) -> str:
    return re.sub(r"[\s_\-]+", "", group).lower()


def people_words(bbq_folder: Path, target_lang: str, glossary: dict[str, str] | None = None
                 ) -> dict[tuple[str, str], tuple[set[str], set[str]]]:
    """(BBQ category, Q_id) -> (the target people's fillers, the other people's), as the fake DeepL writes them."""
    words: dict[tuple[str, str], tuple[set[str], set[str]]] = defaultdict(lambda: (set(), set()))
    templates, _ = load_bbq_templates(bbq_folder)
    for template in templates:
        targets = {_plain(g) for g in json.loads(template.known_stereotyped_groups or "[]")}
        for slot, items in bbq_declarations(template.names):
            info = template.columns.get(f"NAME{slot[1]}_info", "")
            if not info:
                continue
            side = 0 if _plain(info) in targets else 1
            words[(template.category, template.q_id)][side].update(
                fake_translate(item, glossary or {}, target_lang) for item in items)
    return dict(words)


def convention_breaks(samples: pd.DataFrame, words: dict[tuple[str, str], tuple[set[str], set[str]]]) -> list[str]:
    """The sample IDs whose biased answer names the wrong person (or no person the check knows)."""
    broken = []
    for row in samples.itertuples():
        targets, others = words[(row.bbq_category, str(row.bbq_id))]
        wanted = targets if row.sample_id.endswith("-bsd") else others
        if not any(word in row.biased_answer for word in wanted):
            broken.append(row.sample_id)
    return broken
