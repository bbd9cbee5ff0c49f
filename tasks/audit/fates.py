"""What became of every template, read back from a release's decision log (``decisions.csv``). The audit never
re-runs a rule: it groups the stages' decision rows by template, links each to its stereotype (the survey question
ID) and its BBQ source (the translation's link rows), and says whether it reached the release and, if not, which
decision dropped it. ``kobbq why`` and the HTML report are views of these fates.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from core.errors import UserError
from core.release_folder import DECISIONS, MANIFEST, require_manifest
from core.paths import DEFAULT_BUILD_DIR, EXAMPLE_PIPELINE, PROFILE_DIR
from core.profile import Profile, is_profile_path, load_profile
from core.pipeline_file import load_pipeline
from core.decisions import OUTCOME_DROP, Decision, read_decisions
from tasks.release.dataset_card import stage_rank
from tasks.survey.rule_table import RULE_TABLE

RELEASED_RULE = "expanded"  # the build's one row per released template row
LINK_PREFIX = "linked:"  # outcome of the post-edit link rows: "linked:bbq:<category>:<Q_id>"
LABEL_RULES = ("consensus-label", "reference-link", "newly-created", "reference-no-bbq-link")
_TEMPLATE_SUBJECT = re.compile(r"(?P<category>[^|:]+)\|(?P<id>\d+)(?:\|(?P<version>[^|]*))?")


def decision_order(decision: Decision) -> tuple[object, ...]:
    """Stage by stage, subject by subject, a subject's rules in the order they judge it (the paper's order)."""
    rules = [rule.name for rule in RULE_TABLE]
    rank = rules.index(decision.rule) if decision.rule in rules else len(rules)
    return (stage_rank(decision.stage), decision.subject, rank, decision.rule)


def template_of(subject: str) -> str | None:
    """``Religion|18|a`` and ``Religion|18`` -> ``Religion|18``; anything else -> None."""
    match = _TEMPLATE_SUBJECT.fullmatch(subject)
    return f"{match['category']}|{int(match['id'])}" if match else None


def stereotype_text(subject: str) -> tuple[str, str]:
    """``stereotype:<Category>:<text>`` -> (category, text)."""
    _, category, text = subject.split(":", 2)
    return category, text


@dataclass(frozen=True)
class Fate:
    """One template ID: its facts, its decisions, and whether (and why not) it is in the release."""

    subject: str  # Category|ID
    category: str
    template_id: int
    versions: tuple[str, ...]  # rows in the release (or, when dropped, rows the log mentions)
    label: str
    bbq: str  # bbq:<category>:<Q_id>, or "" for a newly-created / unlinked template
    stereotype: str  # stereotype:<Category>:<text>, or "" when no survey decision names it
    in_release: bool
    samples: int
    test_samples: int
    drops: tuple[Decision, ...]  # the decisions that dropped it, the deciding one first (``drop_rule``)
    decisions: tuple[Decision, ...]  # every decision about it, its rows, its stereotype and its BBQ source

    @property
    def status(self) -> str:
        if self.in_release:
            return "in the release"
        return "dropped" if self.drops else "not in the release"

    @property
    def drop_rule(self) -> str:
        """The deciding rule, as the log and ``funnel.md`` name it: the first failing one in the paper's order."""
        return f"{self.drops[0].stage}: {self.drops[0].rule}" if self.drops else ""


@dataclass
class AuditLog:
    """A release folder's decision log and manifest, indexed for lookups."""

    release_dir: Path
    decisions: list[Decision]
    manifest: dict[str, object]
    by_subject: dict[str, list[Decision]] = field(default_factory=dict)
    by_question: dict[str, list[Decision]] = field(default_factory=dict)  # stereotype rows by survey question ID
    linked_by_labelling: dict[str, str] = field(default_factory=dict)  # template subject -> BBQ subject
    fates: dict[str, Fate] = field(default_factory=dict)

    def bbq_links(self) -> dict[str, list[str]]:
        """BBQ subject -> the template subjects linked to it."""
        links: dict[str, list[str]] = defaultdict(list)
        for fate in self.fates.values():
            # A template's rows may link to more than one BBQ template (EsBBQ's proper-name versions).
            rows = (str(d.numbers["bbq"]) for d in fate.decisions
                    if d.subject_type == "template_row" and d.subject.startswith(f"{fate.subject}|")
                    and d.numbers.get("bbq"))
            for bbq in dict.fromkeys(b for b in (fate.bbq, *rows) if b):
                links[bbq].append(fate.subject)
        return dict(links)


def default_release(profile: str | None) -> Path:
    """The release a build of ``profile`` writes (build/<release name>); without one, ``kobbq build``'s example."""
    if profile is not None:
        return DEFAULT_BUILD_DIR / load_profile(profile).release.name
    example = load_pipeline(EXAMPLE_PIPELINE)
    return DEFAULT_BUILD_DIR / (example.config.name or load_profile(example.profile).release.name)


def release_profile(release_dir: Path, given: str | None = None) -> Profile:
    """The profile a release was built with, from its manifest; ``given`` (a command's ``--profile``), when set,
    must be that one, and is how a profile kept outside the project is found (the manifest records its name)."""
    built_with = str(require_manifest(release_dir).get("profile", ""))
    if given is not None:
        profile = load_profile(given)
        if profile.name != built_with:
            raise UserError(f"this release was built with profile {built_with!r}, not {profile.name!r}; drop --profile "
                            "or give the release of that profile", release_dir / MANIFEST)
        return profile
    if not is_profile_path(built_with) and not (PROFILE_DIR / built_with / f"{built_with}.toml").exists():
        raise UserError(f"this release was built with profile {built_with!r}, which is not a shipped profile; give "
                        f"its file with --profile path/to/{built_with}.toml", release_dir / MANIFEST)
    return load_profile(built_with)


def load_audit_log(release_dir: Path) -> AuditLog:
    """Every template's fate from a release folder's ``decisions.csv`` and ``manifest.json``."""
    release_dir = Path(release_dir)
    if not release_dir.is_dir():
        raise UserError("release folder does not exist", release_dir)
    path = release_dir / DECISIONS
    if not path.exists():
        raise UserError(f"no {DECISIONS} here; expected a release folder written by `kobbq build`", release_dir)
    return build_audit_log(release_dir, read_decisions(path), require_manifest(release_dir))


def build_audit_log(release_dir: Path, decisions: list[Decision], manifest: dict[str, object]) -> AuditLog:
    log = AuditLog(release_dir, decisions, manifest)
    by_template: dict[str, list[Decision]] = defaultdict(list)  # a template's own rows, its versions' included
    for decision in decisions:
        log.by_subject.setdefault(decision.subject, []).append(decision)
        template = template_of(decision.subject) if decision.subject_type in ("template", "template_row") else None
        if template is not None:
            by_template[template].append(decision)
        question = decision.numbers.get("question_id")
        if decision.subject_type == "stereotype" and question:
            log.by_question.setdefault(str(question), []).append(decision)
        if decision.subject_type == "bbq_template":  # the labelling reference names the linked templates
            for template in decision.numbers.get("templates") or []:
                log.linked_by_labelling.setdefault(str(template), decision.subject)
    log.fates = {subject: _fate(subject, rows, log) for subject, rows in by_template.items()}
    return log


def _question_ids(decision: Decision) -> list[object]:
    """The survey questions a template decision names (``question_id`` when dropped, ``question_ids`` when kept)."""
    single = decision.numbers.get("question_id")
    return [single] if single else list(decision.numbers.get("question_ids") or [])


def _bbq_link(own: list[Decision], log: AuditLog, subject: str) -> str:
    for decision in own:
        if decision.outcome.startswith(LINK_PREFIX):
            return decision.outcome[len(LINK_PREFIX):]
        if decision.numbers.get("bbq"):
            return str(decision.numbers["bbq"])
    return log.linked_by_labelling.get(subject, "")


def _label(own: list[Decision], bbq_rows: list[Decision]) -> str:
    for decision in own:
        if decision.numbers.get("label"):
            return str(decision.numbers["label"])
        if decision.rule in LABEL_RULES:
            return decision.outcome
    for decision in bbq_rows:
        if decision.rule in LABEL_RULES and decision.outcome != "conflict":
            return decision.outcome
    return ""


def _once(*groups: list[Decision]) -> list[Decision]:
    """Each decision once: one a later stage restates (the survey's question types) shown as the later stage's."""
    latest: dict[tuple[str, str, str], Decision] = {}
    for decision in sorted({id(d): d for group in groups for d in group}.values(), key=lambda d: stage_rank(d.stage)):
        latest[(decision.subject, decision.rule, decision.outcome)] = decision
    return list(latest.values())


def _fate(subject: str, own: list[Decision], log: AuditLog) -> Fate:
    category, template_id = subject.rsplit("|", 1)
    questions = {str(q) for d in own for q in _question_ids(d)}
    stereotype_rows = [d for q in sorted(questions) for d in log.by_question.get(q, [])]
    stereotype = stereotype_rows[0].subject if stereotype_rows else ""
    bbq = _bbq_link(own, log, subject)
    bbq_rows = log.by_subject.get(bbq, []) if bbq else []
    released = [d for d in own if d.rule == RELEASED_RULE and d.outcome != OUTCOME_DROP]
    versions = sorted({d.subject.rsplit("|", 1)[1] for d in (released or own) if d.subject.count("|") == 2})
    in_release = bool(released)
    drops: list[Decision] = []
    if not in_release:
        own_drops = [d for d in own if d.outcome == OUTCOME_DROP]
        # Of its stereotype's drops, the rule its own decision names (the first failing one), not every rule that
        # failed (each rule is logged even after an earlier one dropped the stereotype).
        named = {d.numbers.get("stereotype_rule") for d in own_drops}
        drops = sorted([*(d for d in bbq_rows if d.outcome == OUTCOME_DROP),
                        *(d for d in stereotype_rows if d.outcome == OUTCOME_DROP and d.rule in named), *own_drops],
                       key=lambda d: stage_rank(d.stage))  # stable: the deciding decision first
    everything = sorted(_once(own, stereotype_rows, bbq_rows), key=decision_order)
    return Fate(
        subject=subject, category=category, template_id=int(template_id), versions=tuple(versions),
        label=_label(own, bbq_rows), bbq=bbq, stereotype=stereotype, in_release=in_release,
        samples=sum(int(d.numbers.get("samples", 0)) for d in released),
        test_samples=4 * sum(1 for d in released if "test_fill" in d.numbers),  # generated releases have no split
        drops=tuple(drops), decisions=tuple(everything))
