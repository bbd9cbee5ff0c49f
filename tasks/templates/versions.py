"""The version convention of an explicit-versions format (KoBBQ's, ``docs/new-culture.md`` 0.5): the release's
``biased_answer`` is derived from it, so versions the wrong way round invert it for every sample; a row's groups
(``N1_info``, ``N2_info``, ``Target_group``) say which role its context plays."""

from __future__ import annotations

from core.decisions import Decision, template_subject
from core.findings import Finding
from core.profile import Profile
from tasks.templates.load import TemplateRow, rows_by_template
from core.text import normalise_text
from tasks.templates.slots import PERSON_SLOTS, SEPARATOR_LIKE, parse_text

BIASED, COUNTER_BIASED = "biased", "counter-biased"


def group_names(label: str) -> tuple[str, ...]:
    """A group label as its sorted names: "게이, 레즈비언" and "레즈비언, 게이" are the same group. A cell naming several
    groups ("미국인, 캐나다인", "アメリカ人、カナダ人") separates them with the list punctuation of any script."""
    return tuple(sorted(part.strip() for part in SEPARATOR_LIKE.split(normalise_text(label)[0]) if part.strip()))


def answer_person(template: TemplateRow) -> str | None:
    """The person slot the row's answer to the biased question names (N1 or N2); None when not exactly one."""
    # Only this text is parsed: ``template.parsed`` parses all six, and this runs twice a row before a build.
    answer = parse_text(template.texts["biased_answer"], template.separators)
    people = {slot.name for slot in answer.slots if slot.name in PERSON_SLOTS}
    return people.pop() if len(people) == 1 else None


def context_role(template: TemplateRow) -> str | None:
    """``biased`` when the answer to the biased question is the target-group person, ``counter-biased`` when it
    is the other person; None when the row's groups cannot tell (missing, or both or neither are targets)."""
    person = answer_person(template)
    target = set(group_names(template.target_group))
    if person is None or not target:
        return None
    other = PERSON_SLOTS[1 - PERSON_SLOTS.index(person)]
    answers_target = bool(set(group_names(template.columns.get(f"{person}_info", ""))) & target)
    other_is_target = bool(set(group_names(template.columns.get(f"{other}_info", ""))) & target)
    if answers_target == other_is_target:
        return None
    return BIASED if answers_target else COUNTER_BIASED


def expected_role(version: str, profile: Profile) -> str | None:
    if version in profile.templates.counter_biased_versions:
        return COUNTER_BIASED
    if version in profile.templates.swapped_versions:
        return BIASED
    return None


def partner_version(version: str, profile: Profile) -> str:
    pairs = dict(zip(profile.templates.counter_biased_versions, profile.templates.swapped_versions))
    pairs.update({b: a for a, b in pairs.items()})
    return pairs.get(version, "?")


def convention_text(profile: Profile) -> str:
    counter, biased = profile.templates.counter_biased_versions, profile.templates.swapped_versions
    return (f"versions {', '.join(counter)} carry the counter-biased disambiguating context and "
            f"{', '.join(biased)} the biased one")


def version_findings(templates: list[TemplateRow], profile: Profile) -> list[Finding]:
    """An error for every row whose context is the other role than its version's; a warning where the row's
    groups are given but cannot tell (both or neither person is of the target group)."""
    findings = []
    for template in templates:
        expected = expected_role(template.version, profile)
        if expected is None or not template.target_group.strip():
            continue
        role = context_role(template)
        person = answer_person(template)
        if role is None:
            if person is not None:
                findings.append(Finding("warning", template.where("Target_group"), "version-unchecked",
                                        f"{template.category} template {template.template_id} version "
                                        f"{template.version}: cannot check the version convention, since "
                                        f"N1_info and N2_info are both or neither of Target_group "
                                        f"{template.target_group!r}"))
            continue
        if role != expected:
            findings.append(Finding("error", template.where("version"), "version-convention",
                                    version_message(template, role, person or "?", profile)))
    return findings


def version_message(template: TemplateRow, role: str, person: str, profile: Profile) -> str:
    info = template.columns.get(f"{person}_info", "")
    partner = partner_version(template.version, profile)
    relation = "is" if role == BIASED else "is not"
    return (f"{template.category} template {template.template_id} version {template.version} carries the {role} "
            f"disambiguating context (the answer to its biased question, {person} = {info!r}, {relation} the target "
            f"group {template.target_group!r}), but {convention_text(profile)}. Fix: {exchange_fix(template.version, partner)}"
            ", or correct N1_info/N2_info/Target_group if the groups are what is wrong")


def exchange_fix(version: str, partner: str) -> str:
    """How to exchange two versions, in each place a template is written: one instruction for every template,
    whether its versions differ by their Names (most of BBQ) or by their texts (BBQ Disability_status 3)."""
    return (f"exchange versions {version} and {partner} of this template: in a template file, swap their version "
            f"letters; in a post-edit workbook, where the version cells are locked, exchange the Post-edit cells of "
            f"the two rows, every field (contexts, questions, answers, Names, Lexical_diversity, and Follows_version, "
            f"which tells the import that the rows were exchanged), and exchange the two rows of the groups file "
            f"(N1_info, N2_info, Target_group)")


def version_decisions(templates: list[TemplateRow], profile: Profile, stage: str,
                      sources: dict[tuple[str, int], str]) -> list[Decision]:
    """One decision per template: the role each version's context plays by its groups, so that "why is version a
    counter-biased?" has an answer in the log (rule ``version-convention``; outcome ``checked`` or ``unchecked``)."""
    decisions = []
    checked = [template for template in templates if expected_role(template.version, profile) is not None]
    for (category, template_id), rows in rows_by_template(checked).items():
        roles = {row.version: context_role(row) for row in rows}
        parts = []
        for row in rows:
            person = answer_person(row)
            info = row.columns.get(f"{person}_info", "") if person else ""
            role = roles[row.version]
            parts.append(f"{row.version} {role or 'not checked'}" + (
                f" (the biased question's answer, {person} {info!r}, {'is' if role == BIASED else 'is not'} the "
                f"target {row.target_group!r})" if role else ""))
        decisions.append(Decision(stage, "template", template_subject(category, template_id), "version-convention",
                                  "checked" if all(roles.values()) else "unchecked",
                                  f"versions by their groups: {'; '.join(parts)}; {convention_text(profile)}",
                                  {"roles": {v: r or "" for v, r in roles.items()}},
                                  source=sources.get((category, template_id), "")))
    return decisions
