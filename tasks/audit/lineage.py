"""``kobbq why``: the lineage of one template, BBQ template, sample, stereotype or generated instance, from the
decision log (the IDs it accepts: ``docs/guides/audit-a-release.md``): the deciding drops first, then stage by
stage. An unknown ID is a ``UserError`` naming the closest known IDs (difflib), never an empty answer.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

import pandas as pd

from core.errors import UserError
from core.profile import Profile
from tasks.audit.fates import (RELEASED_RULE, AuditLog, Fate, decision_order, stage_rank, stereotype_text,
                               template_of)
from core.decisions import Decision, numbers_text, template_subject
from core.text import normalise_text
from tasks.release.write import all_samples_name
from tasks.templates.sample_ids import SAMPLE_ID

STAGE_TITLES = {
    "labels": "labels (label and rationale)",
    "pretranslate": "machine pre-translation",
    "postedit": "post-edit (draft vs post-edit, edit rate)",
    "templates": "templates (corrections of the input file, newly-created templates)",
    "survey-export": "survey questions (type of each)",
    "survey": "survey (numbers, each rule's outcome, reading comprehension)",
    "release": "expansion into the release",
}
MAX_MATCHES = 5
_TEMPLATE_ID = re.compile(r"(?P<prefix>[a-z_]+)-(?P<id>\d+)(?P<version>[a-z])?")
_BBQ_ID = re.compile(r"bbq:(?P<category>[^:]+):(?P<id>\d+)", re.IGNORECASE)
_INSTANCE_ID = re.compile(r"(?P<category>[A-Za-z_]+)#(?P<number>\d+)")


@dataclass(frozen=True)
class Lineage:
    """What ``kobbq why`` prints: a title, the status, facts, the deciding drops, then every decision."""

    title: str
    status: str
    facts: list[tuple[str, str]]
    first: list[Decision]  # the decisions that dropped it: shown before anything else
    decisions: list[Decision]  # everything else, in stage order
    related: list[str] = field(default_factory=list)  # linked templates, one line each


def display_id(fate: Fate, profile: Profile) -> str:
    """The sample-ID form of a template, ``race_ethnicity_nationality-027``."""
    category = profile.category(fate.category)
    prefix = category.sample_prefix if category else fate.category.lower()
    return f"{prefix}-{fate.template_id:03d}"


def explain(query: str, log: AuditLog, profile: Profile) -> Lineage:
    """Resolve ``query`` to one subject of the log and gather its lineage."""
    text = query.strip()
    if not text:
        raise UserError("give an ID: a template, a BBQ template, a sample ID or a stereotype")
    if sample := re.match(SAMPLE_ID, text.lower()):
        return _sample_lineage(text.lower(), sample, log, profile)
    if bbq := _BBQ_ID.fullmatch(text):
        return _bbq_lineage(text, bbq, log, profile)
    if instance := _INSTANCE_ID.fullmatch(text):
        return _instance_lineage(text, instance, log, profile)
    if text.lower().startswith("stereotype:"):
        return _stereotype_lineage(text, log, profile)
    template = _template_query(text, log, profile)
    if template is not None:
        subject, version = template
        return _template_lineage(_known_fate(subject, query, log, profile), version, profile)
    return _stereotype_lineage(text, log, profile)


def _categories(log: AuditLog, profile: Profile) -> dict[str, str]:
    """Lower-case category name -> the name as the log writes it."""
    names = {c.name for c in profile.categories} | {f.category for f in log.fates.values()}
    return {name.lower(): name for name in names}


def _template_query(text: str, log: AuditLog, profile: Profile) -> tuple[str, str | None] | None:
    if match := _TEMPLATE_ID.fullmatch(text.lower()):
        categories = {c.sample_prefix: c.name for c in profile.categories}
        if match["prefix"] in categories:
            return template_subject(categories[match["prefix"]], int(match["id"])), match["version"]
    if "|" in text and (subject := template_of(text.strip())) is not None:
        category, template_id = subject.rsplit("|", 1)
        name = _categories(log, profile).get(category.lower(), category)
        parts = text.split("|")
        return template_subject(name, template_id), parts[2].strip() if len(parts) == 3 else None
    return None


def candidates(log: AuditLog, profile: Profile) -> list[str]:
    """Every ID ``why`` knows in this log, as a user would type it."""
    known = set()
    for fate in log.fates.values():
        known.update({fate.subject, display_id(fate, profile)})
        if fate.bbq:
            known.add(fate.bbq)
    for decision in log.decisions:
        if decision.subject_type == "bbq_template":
            known.add(decision.subject)
        elif decision.subject_type == "stereotype":
            known.add(stereotype_text(decision.subject)[1])
    return sorted(known)


def unknown(query: str, log: AuditLog, profile: Profile, what: str = "ID") -> UserError:
    known = candidates(log, profile)
    by_lower = {k.lower(): k for k in known}
    close = difflib.get_close_matches(query.strip().lower(), list(by_lower), n=MAX_MATCHES, cutoff=0.5)
    hint = (f"; closest: {', '.join(by_lower[c] for c in close)}" if close
            else "; try a template (age-001, Age|1), bbq:<Category>:<Q_id>, a sample ID or a stereotype text")
    return UserError(f"{what} {query!r} is not in the decision log of {log.release_dir}{hint}")


def _known_fate(subject: str, query: str, log: AuditLog, profile: Profile) -> Fate:
    fate = log.fates.get(subject)
    if fate is None:
        raise unknown(query, log, profile, "template")
    return fate


def _facts(fate: Fate, profile: Profile) -> list[tuple[str, str]]:
    facts = [("template", f"{fate.subject} ({display_id(fate, profile)})"),
             ("label", fate.label or "(not in the log)"),
             ("BBQ source", fate.bbq or ("none (newly created)" if fate.label == "NC" else "(not in the log)"))]
    if fate.stereotype:
        facts.append(("stereotype", stereotype_text(fate.stereotype)[1]))
    facts.append(("versions", ", ".join(fate.versions) or "-"))
    split = f" ({fate.test_samples} in the evaluation split)" if fate.test_samples else ""
    facts.append(("samples", f"{fate.samples:,}{split}" if fate.in_release else "0: not in the release"))
    return facts


def _status(fate: Fate) -> str:
    if fate.in_release:
        return f"IN THE RELEASE ({fate.samples:,} samples)"
    if fate.drops:
        return f"DROPPED by {fate.drop_rule}"
    return "NOT IN THE RELEASE (no decision in the log dropped it)"


def _template_lineage(fate: Fate, version: str | None, profile: Profile) -> Lineage:
    if version is not None and version not in fate.versions and fate.in_release:
        raise UserError(f"{fate.subject} has no version {version!r} in the release; "
                        f"its versions are {', '.join(fate.versions)}")
    rest = [d for d in fate.decisions if all(d is not f for f in fate.drops)]
    if version is not None:  # one row: its own row decisions, and the template-level ones
        rest = [d for d in rest if d.subject_type != "template_row" or d.subject.endswith(f"|{version}")]
    title = f"{fate.subject}" + (f" version {version}" if version else "")
    return Lineage(title, _status(fate), _facts(fate, profile), list(fate.drops), rest)


def _sample_lineage(sample_id: str, match: re.Match[str], log: AuditLog, profile: Profile) -> Lineage:
    categories = {c.sample_prefix: c.name for c in profile.categories}
    if match["prefix"] not in categories:
        raise unknown(sample_id, log, profile, "sample ID")
    subject = template_subject(categories[match["prefix"]], int(match["number"]))
    fate = _known_fate(subject, sample_id, log, profile)
    version, fill = match["version"], int(match["fill"])
    lineage = _template_lineage(fate, version, profile)
    facts = [("sample", sample_id), *lineage.facts]
    if not fate.in_release:
        return Lineage(sample_id, f"NOT IN THE RELEASE: its template was {_status(fate).lower()}", facts,
                       lineage.first, lineage.decisions)
    row = next(d for d in fate.decisions if d.rule == RELEASED_RULE and d.subject == f"{subject}|{version}")
    fills, test_fill = int(row.numbers["fills"]), int(row.numbers["test_fill"])
    if not 1 <= fill <= fills:
        raise UserError(f"sample ID {sample_id!r} names fill {fill}, but {row.subject} has {fills} fill(s) "
                        f"(fill numbers 001-{fills:03d})")
    context = "ambiguous" if match["context"] == "amb" else "disambiguated"
    question = "biased" if match["question"] == "bsd" else "counter-biased"
    split = "in the evaluation split too" if fill == test_fill else f"not in the evaluation split (it uses fill {test_fill})"
    facts.insert(1, ("fill", f"{fill} of {fills} of row {row.subject}; {context} context, {question} question; {split}"))
    return Lineage(sample_id, "IN THE RELEASE", facts, [], lineage.decisions)


def _instance_lineage(text: str, match: re.Match[str], log: AuditLog, profile: Profile) -> Lineage:
    """One instance of a generated release: its row in the samples file, then its template row's lineage."""
    category = _categories(log, profile).get(match["category"].lower())
    path = log.release_dir / all_samples_name(str(log.manifest.get("release", profile.release.name)), ".parquet")
    if category is None or not path.exists():
        raise unknown(text, log, profile, "instance")
    frame = pd.read_parquet(path, filters=[("category", "==", category),
                                           ("instance_id", "==", int(match["number"]))])
    if frame.empty or "template_id" not in frame.columns:
        raise unknown(text, log, profile, "instance")
    row = frame.iloc[0]
    subject = template_subject(category, int(row["template_id"]))
    lineage = _template_lineage(_known_fate(subject, text, log, profile), str(row["version"]), profile)
    facts = [("instance", f"{category} #{match['number']}: flip {row['flipped']}, {row['question_polarity']} "
                          f"question, {row['context_condition']} context, label {row['label']}"),
             ("answers", " | ".join(str(row[f"ans{i}"]) for i in range(3))), *lineage.facts]
    return Lineage(f"{category}#{match['number']}", "IN THE RELEASE", facts, [], lineage.decisions)


def _bbq_lineage(text: str, match: re.Match[str], log: AuditLog, profile: Profile) -> Lineage:
    by_lower = {d.subject.lower(): d.subject for d in log.decisions if d.subject_type == "bbq_template"}
    by_lower.update({f.bbq.lower(): f.bbq for f in log.fates.values() if f.bbq})
    subject = by_lower.get(f"bbq:{match['category']}:{int(match['id'])}".lower())
    if subject is None:
        raise unknown(text, log, profile, "BBQ template")
    own = sorted(log.by_subject.get(subject, []), key=lambda d: (stage_rank(d.stage), d.rule))
    linked = [log.fates[s] for s in sorted(log.bbq_links().get(subject, []))]
    drops = [d for d in own if d.outcome == "drop"]
    rest = [d for d in own if d.outcome != "drop"]
    released = [f for f in linked if f.in_release]
    if released:
        status = f"IN THE RELEASE through {', '.join(f.subject for f in released)}"
    elif drops:
        status = f"DROPPED by {drops[0].stage}: {drops[0].rule}"
    else:
        status = "NOT IN THE RELEASE" + (": every linked template was dropped" if linked else ": no template links to it")
    related = [f"{f.subject} ({display_id(f, profile)}, {f.label or '?'}): {_status(f).lower()}"
               + (f" - {f.drops[0].reason}" if f.drops else "") for f in linked]
    facts = [("BBQ template", subject), ("templates made from it", str(len(linked))),
             ("samples", f"{sum(f.samples for f in linked):,}")]
    return Lineage(subject, status, facts, drops, rest, related)


def _stereotype_lineage(text: str, log: AuditLog, profile: Profile) -> Lineage:
    wanted, _ = normalise_text(text.strip())
    category = None
    if wanted.lower().startswith("stereotype:") and wanted.count(":") >= 2:
        _, category, wanted = wanted.split(":", 2)
    subjects = sorted({d.subject for d in log.decisions if d.subject_type == "stereotype"
                       and stereotype_text(d.subject)[1] == wanted
                       and (category is None or stereotype_text(d.subject)[0].lower() == category.lower())})
    if not subjects:
        raise unknown(text, log, profile)
    own = sorted((d for s in subjects for d in log.by_subject[s]), key=decision_order)
    linked = sorted((f for f in log.fates.values() if f.stereotype in subjects), key=lambda f: f.subject)
    drops = [d for d in own if d.outcome == "drop"]
    released = [f for f in linked if f.in_release]
    status = (f"IN THE RELEASE through {len(released)} template(s)" if released
              else f"DROPPED by {drops[0].stage}: {drops[0].rule}" if drops else "NOT IN THE RELEASE")
    related = [f"{f.subject} ({display_id(f, profile)}): {_status(f).lower()}" for f in linked]
    facts = [("stereotype", ", ".join(subjects)), ("templates", str(len(linked))),
             ("samples", f"{sum(f.samples for f in linked):,}")]
    return Lineage(wanted, status, facts, drops, [d for d in own if d.outcome != "drop"], related)


def _decision_lines(decision: Decision, indent: str, tag: str = "") -> list[str]:
    outcome = decision.outcome if len(decision.outcome) <= 60 else decision.outcome[:57] + "..."
    lines = [f"{indent}{tag}{decision.rule} -> {outcome}{' (OVERRIDE)' if decision.override else ''}  "
             f"[{decision.subject}]", f"{indent}  {decision.reason}"]
    if numbers := numbers_text(decision):
        lines.append(f"{indent}  numbers: {numbers}")
    if decision.source:
        lines.append(f"{indent}  source: {decision.source}")
    return lines


def render_lineage(lineage: Lineage) -> str:
    """Plain text for the terminal: status and the deciding drops first, then stage by stage."""
    lines = [f"{lineage.title}: {lineage.status}"]
    if lineage.first:
        lines += ["", "Dropped by:"]
        for decision in lineage.first:
            lines += _decision_lines(decision, "  ", f"{decision.stage}: ")
    width = max(len(name) for name, _ in lineage.facts)
    lines += ["", *(f"  {name.ljust(width)}  {value}" for name, value in lineage.facts)]
    if lineage.related:
        lines += ["", "Templates:", *(f"  {line}" for line in lineage.related)]
    for stage in sorted({d.stage for d in lineage.decisions}, key=stage_rank):
        lines += ["", f"{stage}: {STAGE_TITLES.get(stage, stage)}"]
        for decision in (d for d in lineage.decisions if d.stage == stage):
            lines += _decision_lines(decision, "  ")
    return "\n".join(lines) + "\n"
