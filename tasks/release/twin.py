"""The machine-translated twin of a release (``mtBBQ``): what it is, what the manifest and the card say of it.

The paper compares its benchmark with BBQ machine-translated into the language: the same templates, drafted
by DeepL and neither post-edited nor adapted. A pipeline build writes that twin beside the release, in its
own folder ``<release>/mtBBQ/`` (samples, test split, validation, a manifest of its own), for the templates
the release keeps that have a machine translation: its ST and TM templates whose version roles BBQ's own
answer info tells (``tasks.translation.twin_templates``). Its samples have the release's sample IDs, so a
model's answers on the two compare sample by sample.

A TM template's twin keeps BBQ's target group, which the release replaced with the culture's: on TM
samples the twin asks about the US stereotype, in the language. ``template_ids_by_label`` says how many
of each; compare the two on ST templates for the effect of translation alone.

The twin is evaluated as a release of its own: ``kobbq eval prepare --release <release>/mtBBQ``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from tasks.templates.load import NC, TemplateRow

WHAT = ("the release's templates as DeepL drafted them from BBQ, neither post-edited nor adapted (the machine-translated "
        "BBQ that the KoBBQ method compares its benchmark with), for the release's templates that have a machine "
        "translation; version roles by BBQ's own answer info; a TM template keeps BBQ's target group")


def evaluate_commands(release: str, name: str, split_option: str = "") -> list[str]:
    """How to evaluate the twin, as the card and the manifest say it (``release``: the release folder as the
    reader names it)."""
    return [f"kobbq eval prepare --release {release}/{name} --out prepared-{name}{split_option}",
            f"kobbq eval run --prepared prepared-{name} --endpoint http://127.0.0.1:8000/v1 --model MODEL "
            f"--out runs-{name} --score"]


def left_out(twin: list[TemplateRow], kept: list[TemplateRow]) -> dict[str, str]:
    """The release's templates without a twin, and why."""
    in_twin = {t.template_key for t in twin}
    reasons = {}
    for template in kept:
        subject = f"{template.category}|{template.template_id}"
        if template.template_key in in_twin or subject in reasons:
            continue
        reasons[subject] = ("newly created in the language: no machine translation" if template.label == NC else
                            "no machine-translated template (the pretranslate stage's mt-twin decision says why)")
    return reasons


def manifest_entry(name: str, release_name: str, twin: list[TemplateRow], kept: list[TemplateRow], samples: int,
                   test_samples: int, test_split: dict[str, object], validation: str) -> dict[str, object]:
    """The twin's entry of the release's manifest (and its own manifest's content)."""
    by_label = Counter(label for label in {(t.category, t.template_id): t.label for t in twin}.values())
    return {"published": True, "folder": name, "what": WHAT, "samples": samples, "test_samples": test_samples,
            "test_split": test_split, "template_ids": len({t.template_key for t in twin}),
            "template_ids_by_label": dict(sorted(by_label.items())), "left_out": left_out(twin, kept),
            "validation": validation, "evaluate": evaluate_commands(f"path/to/{release_name}", name)}


def not_published(name: str, why: str, progress: Callable[[str], None]) -> dict[str, object]:
    """The entry of a twin that failed its checks: not written, and said."""
    progress(f"warning: the machine-translated twin {name} is not published: {why.splitlines()[0]}")
    return {"published": False, "folder": None, "what": WHAT, "why": why}
