"""The release's dataset card, ``README.md``: ``huggingface_hub``'s ``DatasetCardData`` with the configs of
``tasks.release.hf_layout`` (the Hub and ``datasets`` read the folder as one dataset), and a body
(``templates/dataset_card.md.j2``) made from the build's own numbers. The machine-translated twin (``mtBBQ``) keeps
the release's sample IDs, so a model's answers on the two compare sample by sample.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import jinja2
import pyarrow.parquet as pq

from core.decisions import Decision
from core.paths import CARD_TEMPLATES
from core.profile import Profile
from core.release_folder import CARD
from tasks.release.check_child import ValidationReport
from tasks.release.hf_layout import TEST_SPLIT, Config
from tasks.release.write import lm_eval_task_name
from tasks.templates.load import NC, TemplateRow

# The Hub's size categories, by number of samples (upper bounds, exclusive).
SIZE_CATEGORIES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
                   (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"))
# What each stage does, in the order they run (the card lists the stages that recorded decisions in this order).
STAGE_WORK = {
    "labels": "each English BBQ template labelled (kept as is, target-modified, or removed), and newly-created "
              "templates added",
    "pretranslate": "machine pre-translation of the templates to keep",
    "postedit": "the translator's post-edit imported, with its cultural substitutions",
    "templates": "template groups and newly-created templates joined into one template file",
    "survey-export": "the survey questionnaire written for the survey company",
    "survey": "the survey results judged by the rules below",
    "release": "every surviving template row expanded into samples, validated, published",
}
# How every release this project builds was made (the Hub's vocabulary): BBQ's templates labelled by annotators,
# machine-translated and post-edited (or newly written) by translators, in one language.
LANGUAGE_CREATORS = ["expert-generated", "machine-generated"]
SOURCE_DATASETS = ["extended"]
SUBJECTS = {"bbq_template": "BBQ templates", "template": "templates", "template_row": "template rows",
            "stereotype": "survey questions"}


@dataclass(frozen=True)
class RuleCount:
    """One rule's effect in the decision log: subjects it kept and dropped, and how many were overrides."""

    stage: str
    subjects: str
    rule: str
    kept: int
    dropped: int
    overrides: int


def size_category(samples: int) -> str:
    return next((name for bound, name in SIZE_CATEGORIES if samples < bound), "n>100M")


def rule_counts(decisions: list[Decision]) -> list[RuleCount]:
    """Per keep/drop rule, in stage order: distinct subjects kept and dropped (a survey question, as ``funnel.md``
    counts them, dropped when any of its rows drops); rules that record a label or a link are the audit report's."""
    outcomes: dict[tuple[str, str, str], dict[str, bool]] = defaultdict(dict)  # key -> subject -> dropped
    overridden: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for d in decisions:
        key = (d.stage, d.subject_type, d.rule)
        subject = str(d.numbers.get("question_id") or d.subject) if d.subject_type == "stereotype" else d.subject
        if d.outcome in ("keep", "drop"):
            outcomes[key][subject] = outcomes[key].get(subject, False) or d.outcome == "drop"
            if d.override:
                overridden[key].add(subject)
    keys = sorted(outcomes, key=lambda k: (stage_rank(k[0]), k[1], k[2]))
    return [RuleCount(key[0], SUBJECTS.get(key[1], key[1]), key[2], sum(not d for d in outcomes[key].values()),
                      sum(outcomes[key].values()), len(overridden[key])) for key in keys]


def stages_run(decisions: list[Decision]) -> list[tuple[str, str, int]]:
    """The stages that recorded decisions, in pipeline order: name, what it does, decisions recorded."""
    counts = Counter(d.stage for d in decisions)
    return [(stage, STAGE_WORK.get(stage, stage), counts[stage]) for stage in sorted(counts, key=stage_rank)]


def stage_rank(stage: str) -> tuple[int, str]:
    """Pipeline order (``STAGE_WORK``'s); a stage it does not name last, by name."""
    order = list(STAGE_WORK)
    return (order.index(stage) if stage in order else len(order), stage)


def demoted(markdown: str, levels: int = 2) -> str:
    """A report's markdown with its headings moved down, to sit inside the card's sections."""
    return "\n".join("#" * levels + line if line.startswith("#") else line for line in markdown.strip().splitlines())


WHAT = ("the release's templates as DeepL drafted them from BBQ, neither post-edited nor adapted (the machine-translated "
        "BBQ that the KoBBQ method compares its benchmark with), for the release's templates that have a machine "
        "translation; version roles by BBQ's own answer info; a TM template keeps BBQ's target group")


def evaluate_commands(release: str, name: str, split_option: str = "") -> list[str]:
    """How to evaluate the twin, as the card and manifest say it (``release``: the folder as the reader names it)."""
    return [f"kobbq eval prepare --release {release}/{name} --out prepared-{name}{split_option}",
            f"kobbq eval run --prepared prepared-{name} --endpoint http://127.0.0.1:8000/v1 --model MODEL "
            f"--out runs-{name} --score"]


def _left_out(twin: list[TemplateRow], kept: list[TemplateRow]) -> dict[str, str]:
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


def twin_manifest_entry(name: str, release_name: str, twin: list[TemplateRow], kept: list[TemplateRow], samples: int,
                   test_samples: int, test_split: dict[str, object], validation: str) -> dict[str, object]:
    """The twin's entry of the release's manifest (and its own manifest's content)."""
    by_label = Counter(label for label in {(t.category, t.template_id): t.label for t in twin}.values())
    return {"published": True, "folder": name, "what": WHAT, "samples": samples, "test_samples": test_samples,
            "test_split": test_split, "template_ids": len({t.template_key for t in twin}),
            "template_ids_by_label": dict(sorted(by_label.items())), "left_out": _left_out(twin, kept),
            "validation": validation, "evaluate": evaluate_commands(f"path/to/{release_name}", name)}


def twin_not_published(name: str, why: str, progress: Callable[[str], None]) -> dict[str, object]:
    """The entry of a twin that failed its checks: not written, and said."""
    progress(f"warning: the machine-translated twin {name} is not published: {why.splitlines()[0]}")
    return {"published": False, "folder": None, "what": WHAT, "why": why}


def write_dataset_card(folder: Path, profile: Profile, configs: list[Config], facts: dict[str, object], table1: str,
                       decisions: list[Decision], validation: ValidationReport | None,
                       twins: dict[str, dict[str, object]] | None = None,
                       twin_configs: tuple[Config, ...] = ()) -> None:
    """Write ``README.md``, the Hub's metadata then the body, once every other file but the manifest is staged
    (``configs``: the staged layout's, then the twins'; ``facts``: the manifest's; ``validation``: None if skipped)."""
    from huggingface_hub import DatasetCardData  # imported when a card is written, not for every command

    twins = twins or {}
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(CARD_TEMPLATES), autoescape=False,
                                     undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                                     keep_trailing_newline=True)
    environment.filters["thousands"] = lambda value: f"{int(value):,}"
    survey = profile.survey
    body = environment.get_template("dataset_card.md.j2").render(
        profile=profile, card=profile.card, name=profile.release.name, facts=facts, configs=configs,
        default_split=TEST_SPLIT, splits=list(configs[0].files), table1=demoted(table1),
        stages=stages_run(decisions), rules=rule_counts(decisions), overrides=sum(d.override for d in decisions),
        survey=survey if survey.enabled and any(d.stage == "survey" for d in decisions) else None,
        generated=profile.release.layout == "per-category-csv", validation=validation,
        columns=pq.ParquetFile(folder / configs[1].files[TEST_SPLIT]).schema_arrow.names,  # a category's, as loaded
        files=sorted([*(p.name for p in folder.iterdir() if p.is_file()), CARD]),
        task=lm_eval_task_name(profile.release.name), twins=twins,
        twin_commands={name: evaluate_commands(f"path/to/{profile.release.name}", name) for name in twins})
    card = profile.card
    metadata = DatasetCardData(
        pretty_name=card.pretty_name or profile.release.name, license=card.license,
        language=card.languages or [profile.language], task_categories=card.task_categories,
        task_ids=card.task_ids, tags=card.tags,
        size_categories=[size_category(int(facts["samples"]))],  # type: ignore[call-overload]
        annotations_creators=["expert-generated", *(["crowdsourced"] if profile.survey.enabled else [])],
        language_creators=LANGUAGE_CREATORS, multilinguality=["monolingual"], source_datasets=SOURCE_DATASETS,
        configs=[config.metadata() for config in (*configs, *twin_configs)])
    (folder / CARD).write_text(f"---\n{metadata.to_yaml()}\n---\n\n{body}", encoding="utf-8")
