"""Unique stereotypes of the candidate templates, and the question type each one gets. The unit is the *question*:
(category, stereotype text, survey type) and, for type 2, the two groups compared, asked once however many templates
share it. Whether a template's reference names the non-target group (type 2) comes from its
``Reference_names_non_target`` column, else from the released ``Survey_stats`` it records (two groups: yes); group lists
and world regions: docs/new-culture.md."""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from core.decisions import Decision, stereotype_subject
from core.errors import Location, UserError
from core.findings import Finding, raise_if_errors
from core.profile import Profile
from core.tables import read_csv_table
from core.text import normalise_text
from tasks.survey.rules import RULE_TYPE, survey_type
from tasks.templates.load import TemplateRow
from tasks.templates.versions import group_names

GROUP_COLUMNS = ["category", "group", "world_region"]


def norm(text: str) -> str:
    """NFC + collapsed whitespace, the form in which stereotypes and groups are compared."""
    return normalise_text(text)[0]


group_key = group_names  # a group label as a set of names: "a, b" and "b, a" are one group


def row_groups(row: TemplateRow) -> tuple[set[str], set[str]]:
    """The groups a template row targets, and the other groups its two people (N1_info, N2_info) belong to."""
    targets = set(group_key(row.target_group))
    return targets, set().union(*(group_key(row.columns.get(c, "")) for c in ("N1_info", "N2_info"))) - targets


@dataclass(frozen=True)
class GroupList:
    category: str
    groups: tuple[str, ...]  # in questionnaire order
    world_region: dict[str, str]  # country -> the world-region option it belongs to

    @property
    def counted(self) -> tuple[str, ...]:
        return tuple(g for g in self.groups if not self.world_region.get(g))

    def counting_options(self, count_no_stereotype: bool) -> int:
        return len(self.counted) + (1 if count_no_stereotype else 0)


def type1_group_list(category: str, stereotype: str, lists: dict[str, GroupList], profile: Profile) -> GroupList:
    """A type-1 question offers its category's whole group list and the rule counts its options: without a list in the
    profile the question can be neither asked nor judged, which is a profile error, not a drop."""
    if category not in lists:
        raise UserError(f"type-1 stereotype '{stereotype}' in {category}, but the profile has no group list for "
                        f"{category}", profile.file("survey") / "groups.csv")
    return lists[category]


def load_group_lists(path: Path, profile: Profile) -> dict[str, GroupList]:
    ordered: dict[str, list[str]] = {}
    regions: dict[str, dict[str, str]] = {}
    for number, row in read_csv_table(path, GROUP_COLUMNS, "a group list file"):
        category, group, region = norm(row["category"]), norm(row["group"]), norm(row["world_region"])
        if profile.category(category) is None:
            raise UserError(f"unknown category {category!r}", Location(str(path), number, "category"))
        if not group:
            raise UserError("empty group name", Location(str(path), number, "group"))
        if group in ordered.get(category, []):
            raise UserError(f"group {group!r} listed twice for {category}", Location(str(path), number, "group"))
        ordered.setdefault(category, []).append(group)
        if region:
            regions.setdefault(category, {})[group] = region
    lists = {c: GroupList(c, tuple(g), regions.get(c, {})) for c, g in ordered.items()}
    for category, group_list in lists.items():
        for country, region in group_list.world_region.items():
            if region not in group_list.groups or group_list.world_region.get(region):
                raise UserError(f"{country!r} is placed under {region!r}, which is not a world-region option of {category}",
                                path)
    return lists


def profile_group_lists(profile: Profile) -> dict[str, GroupList]:
    return load_group_lists(profile.file("survey") / "groups.csv", profile)


MARKER_COLUMN = "Reference_names_non_target"
RELEASED_STATS_COLUMN = "Survey_stats"
TRUE_WORDS = {"yes", "y", "true", "1", "o"}
FALSE_WORDS = {"no", "n", "false", "0", "x", ""}


@dataclass(frozen=True)
class Stereotype:
    """One survey question. ``groups`` is (target, other) for type 2 and () for type 1."""

    category: str
    text: str
    survey_type: int
    type_reason: str
    groups: tuple[str, ...] = ()
    templates: tuple[tuple[str, int], ...] = ()  # (category, template ID), in input order
    targets: dict[tuple[str, int], str] = field(default_factory=dict)  # type 2: intended target per template

    @property
    def key(self) -> tuple:
        return question_key(self.category, self.text, self.survey_type, self.groups)

    @property
    def question_id(self) -> str:
        """Stable across runs and input order: a hash of the question, prefixed for readability."""
        digest = hashlib.sha1(repr(self.key).encode("utf-8")).hexdigest()[:8]
        return f"{self.category}-t{self.survey_type}-{digest}"

    @property
    def label(self) -> str:
        return f"{self.text} ({self.groups[0]} vs {self.groups[1]})" if self.survey_type == 2 else self.text


def type_decision(stage: str, stereotype: Stereotype, numbers: dict[str, object]) -> Decision:
    """Why a stereotype is asked as a type-1 or a type-2 question."""
    return Decision(stage, "stereotype", stereotype_subject(stereotype.category, stereotype.text), RULE_TYPE,
                    f"type {stereotype.survey_type}", stereotype.type_reason, numbers, False, "")


def question_key(category: str, text: str, kind: int, groups: tuple[str, ...]) -> tuple:
    return (category, norm(text), kind, tuple(sorted(group_key(g) for g in groups)))


def _marker(template: TemplateRow, findings: list[Finding]) -> tuple[bool, str]:
    """Whether the template's reference names the non-target group, and where that was read."""
    if MARKER_COLUMN in template.columns:
        value = template.columns[MARKER_COLUMN].strip().lower()
        if value in TRUE_WORDS:
            return True, MARKER_COLUMN
        if value not in FALSE_WORDS:
            findings.append(Finding("error", template.where(MARKER_COLUMN), "bad-marker",
                                    f"{value!r} is not yes or no"))
        return False, MARKER_COLUMN
    if stats := template.columns.get(RELEASED_STATS_COLUMN, "").strip():
        try:
            parsed = ast.literal_eval(stats)
        except (ValueError, SyntaxError):
            findings.append(Finding("warning", template.where(RELEASED_STATS_COLUMN), "bad-survey-stats",
                                    "cannot read the released survey numbers; assuming the reference does not name the non-target"))
            return False, RELEASED_STATS_COLUMN
        if isinstance(parsed, dict):
            return len([g for g in parsed if g != "no_stereo"]) == 2, RELEASED_STATS_COLUMN
    return False, "default"


def _other_group(template: TemplateRow) -> str:
    target = group_key(template.target_group)
    infos = [template.columns.get(c, "") for c in ("N1_info", "N2_info")]
    others = [i for i in infos if i.strip() and group_key(i) != target]
    return norm(others[0]) if others else ""


def collect_stereotypes(templates: list[TemplateRow], profile: Profile) -> tuple[list[Stereotype], list[Finding]]:
    """Template rows grouped into unique questions (in order of first appearance), and the warnings; an error (a marker
    that is not yes/no, a type-2 template without its two groups) raises."""
    findings: list[Finding] = []
    data: dict[tuple, dict] = {}  # question key -> what the question is made of, in order of first appearance
    for template in templates:
        flag, marker_source = _marker(template, findings)
        kind, reason = survey_type(template.label, template.category, flag, profile.survey, profile.culture.adjective)
        if marker_source == RELEASED_STATS_COLUMN and template.category in profile.survey.type1_categories \
                and template.label != "TM":
            reason += f" [marker read from the release's {RELEASED_STATS_COLUMN} column]"
        groups: tuple[str, ...] = ()
        if kind == 2:
            target, other = norm(template.target_group), _other_group(template)
            if not target or not other:
                findings.append(Finding("error", template.where("Target_group" if not target else "N1_info"),
                                        "type2-groups-missing",
                                        "a type-2 stereotype needs its intended target (Target_group) and the "
                                        "other group (N1_info / N2_info)"))
                continue
            groups = (target, other)
        entry = data.setdefault(question_key(template.category, template.stereotype, kind, groups), {
            "category": template.category, "text": norm(template.stereotype), "kind": kind, "reason": reason,
            "groups": groups, "templates": [], "targets": {}})
        if template.template_key not in entry["templates"]:
            entry["templates"].append(template.template_key)
        if kind == 2:
            entry["targets"].setdefault(template.template_key, groups[0])
    # A template the survey cannot ask about is bad input: every one named, rather than treated or dropped silently.
    raise_if_errors("the templates the survey asks about", findings, "nothing was asked or filtered")
    return [Stereotype(d["category"], d["text"], d["kind"], d["reason"], d["groups"], tuple(d["templates"]),
                       d["targets"]) for d in data.values()], findings
