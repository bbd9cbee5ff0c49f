"""``kobbq diff OLD NEW``: what changed between two template files or two releases. Template files are loaded as the
build loads them (a defect a recorded correction fixes is no change; each side's corrections are listed) and
expanded, so that a changed template says which samples were added, removed or changed; releases are compared by
their sample files and their decision logs (each template's fate, with the rule that decided it).
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from core.errors import UserError
from core.profile import Profile, WorkbookFormat
from tasks.audit.fates import load_audit_log, template_of
from tasks.templates.corrections import AppliedCorrection
from core.decisions import template_subject
from tasks.templates.kobbq_format import SAMPLE_COLUMNS
from tasks.release.write import all_samples_name
from tasks.templates.sample_ids import SAMPLE_ID
from tasks.templates.load import LoadedTemplates, TemplateRow, rows_by_template
from tasks.templates.validate import load_checked, template_format

ADDED, REMOVED, CHANGED = "added", "removed", "changed"
SHORT = 40  # cell values up to this length are shown old -> new; longer ones by column name only


@dataclass(frozen=True)
class TemplateChange:
    subject: str  # Category|ID
    status: str  # added | removed | changed
    details: tuple[str, ...]  # one line each: rows added/removed/changed and their columns, fates
    samples_old: int
    samples_new: int
    samples_added: int
    samples_removed: int
    samples_changed: int


@dataclass
class Diff:
    kind: str  # "template files" | "releases"
    old: Path
    new: Path
    summary_old: str
    summary_new: str
    changes: list[TemplateChange]
    unchanged: int  # templates in both with no change
    notes: list[str] = field(default_factory=list)  # corrections applied, schema differences

    def samples(self, what: str) -> int:
        return sum(getattr(c, f"samples_{what}") for c in self.changes)


SampleRecords = dict[str, tuple[str, ...]]  # sample ID -> its public columns


def _text(value: object) -> str:
    """A cell as compared: text as it is, anything else (a list, a number) as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=list)


def _records(columns: list[Sequence[object]]) -> SampleRecords:
    """Samples by ID (the first column's value), each with the other columns' values as compared."""
    return {str(row[0]): tuple(map(_text, row[1:])) for row in zip(*columns)}


def _sample_changes(old: SampleRecords, new: SampleRecords,
                    subject_of: Callable[[str], str]) -> dict[str, Counter[str]]:
    """Per template: samples added, removed and changed (same ID, different content), plus counts."""
    changes: dict[str, Counter[str]] = defaultdict(Counter)
    for sample_id, record in old.items():
        counter = changes[subject_of(sample_id)]
        counter["old"] += 1
        other = new.get(sample_id)
        if other is None:
            counter[REMOVED] += 1
        elif other != record:
            counter[CHANGED] += 1
    for sample_id in new:
        counter = changes[subject_of(sample_id)]
        counter["new"] += 1
        if sample_id not in old:
            counter[ADDED] += 1
    return changes


def _change(subject: str, status: str, details: list[str], samples: Counter[str]) -> TemplateChange:
    return TemplateChange(subject, status, tuple(details), samples["old"], samples["new"], samples[ADDED],
                          samples[REMOVED], samples[CHANGED])


# --- template files -------------------------------------------------------------------------------

def _generated_records(columns: dict[str, list[object]], fmt: WorkbookFormat) -> tuple[SampleRecords, dict[str, str]]:
    """A generated release's instances keyed by the category and the profile's de-duplication key, which names one
    instance in any build of the same templates (``instance_id`` shifts whenever an earlier row changes)."""
    category, number = fmt.output_of(fmt.category_column), fmt.number_output
    compared = [c for c in fmt.output_columns if c != number]
    records: SampleRecords = {}
    subjects: dict[str, str] = {}
    for index in range(len(columns[category])):
        row = {c: columns[c][index] for c in columns}
        key = json.dumps([row[category], *(row[k] for k in fmt.dedup_key)], ensure_ascii=False, default=str)
        records[key] = tuple(_text(row[c]) for c in compared)
        subjects[key] = template_subject(str(row[category]), int(row[fmt.output_of(fmt.id_column)]))
    return records, subjects


def _expanded_records(loaded: LoadedTemplates, profile: Profile) -> tuple[SampleRecords, dict[str, str]]:
    """Every sample of the file, and sample ID (a generated release: its key) -> template subject."""
    templates = loaded.templates
    fmt = template_format(profile)
    if fmt.generated:
        generated = fmt.expand(templates, profile, loaded.vocabulary)
        assert profile.templates.workbook is not None
        return _generated_records({k: list(v) for k, v in generated.columns.items()}, profile.templates.workbook)
    expansion = fmt.expand(templates, profile, None)
    ids = expansion.columns["sample_id"]
    rows = zip(expansion.row_keys, expansion.row_starts, expansion.row_fills)
    subjects = {ids[i]: template_of(key) or key for key, start, fills in rows for i in range(start, start + 4 * fills)}
    return _records([expansion.columns[name] for name in SAMPLE_COLUMNS]), subjects


def _rows_by_template(templates: list[TemplateRow]) -> dict[str, dict[str, TemplateRow]]:
    return {template_subject(*key): {row.version: row for row in rows}
            for key, rows in rows_by_template(templates).items()}


def _row_details(old: dict[str, TemplateRow], new: dict[str, TemplateRow]) -> list[str]:
    details = []
    added = sorted(set(new) - set(old))
    removed = sorted(set(old) - set(new))
    if added:
        details.append(f"version(s) {', '.join(added)} added")
    if removed:
        details.append(f"version(s) {', '.join(removed)} removed")
    for version in sorted(set(old) & set(new)):
        a, b = old[version].columns, new[version].columns
        changed = [c for c in dict.fromkeys([*a, *b]) if a.get(c) != b.get(c)]
        if changed:
            cells = [f"{c} {a.get(c)!r} -> {b.get(c)!r}" if max(len(a.get(c) or ""), len(b.get(c) or "")) <= SHORT
                     else c for c in changed]
            details.append(f"version {version} (row {old[version].row} -> {new[version].row}) changed: "
                           f"{'; '.join(cells)}")
    return details


def _describe_corrections(old: list[AppliedCorrection], new: list[AppliedCorrection]) -> list[str]:
    """Corrections only one side needed, in full; those both needed, as one line."""
    keys = {label: {(c.row_key, c.column) for c in applied} for label, applied in (("old", old), ("new", new))}
    notes = []
    for label, applied, other in (("old", old, "new"), ("new", new, "old")):
        for c in applied:
            if (c.row_key, c.column) not in keys[other]:
                change = f"{c.old_value!r} -> {c.new_value!r}" if len(c.old_value) <= SHORT else "rewritten"
                notes.append(f"only the {label} file needed a correction: {c.file} row {c.row} {c.row_key} "
                             f"{c.column} {change} ({c.reason})")
    both = sorted(f"{c.row_key} {c.column}" for c in old if (c.row_key, c.column) in keys["new"])
    if both:
        notes.append(f"corrections applied to both files ({len(both)}): {'; '.join(both)}")
    return notes


def diff_template_files(old: Path, new: Path, profile: Profile, corrections: Path | None) -> Diff:
    """Compare two KoBBQ template files, each loaded and checked as the build does."""
    old_loaded, _ = load_checked(Path(old), corrections, profile)
    new_loaded, _ = load_checked(Path(new), corrections, profile)
    old_records, old_subjects = _expanded_records(old_loaded, profile)
    new_records, new_subjects = _expanded_records(new_loaded, profile)
    samples = _sample_changes(old_records, new_records, lambda s: old_subjects.get(s) or new_subjects[s])
    old_rows, new_rows = _rows_by_template(old_loaded.templates), _rows_by_template(new_loaded.templates)
    changes, unchanged = [], 0
    for subject in sorted(set(old_rows) | set(new_rows), key=_subject_order):
        if subject not in new_rows:
            changes.append(_change(subject, REMOVED, [f"{len(old_rows[subject])} row(s)"], samples[subject]))
        elif subject not in old_rows:
            changes.append(_change(subject, ADDED, [f"{len(new_rows[subject])} row(s)"], samples[subject]))
        elif details := _row_details(old_rows[subject], new_rows[subject]):
            changes.append(_change(subject, CHANGED, details, samples[subject]))
        else:
            unchanged += 1
    notes = _describe_corrections(old_loaded.corrections, new_loaded.corrections)
    only = sorted(set(old_loaded.columns) ^ set(new_loaded.columns))
    if only:
        notes.append(f"columns in only one file: {', '.join(only)}")
    return Diff("template files", Path(old), Path(new), _file_summary(old_loaded.templates, old_records),
                _file_summary(new_loaded.templates, new_records), changes, unchanged, notes)


def _subject_order(subject: str) -> tuple[str, int]:
    """Templates by category and ID; anything else (a sample no template claims) by name."""
    if template_of(subject) != subject:
        return (subject, 0)
    category, template_id = subject.rsplit("|", 1)
    return (category, int(template_id))


def _file_summary(templates: list[TemplateRow], records: SampleRecords) -> str:
    ids = {(t.category, t.template_id) for t in templates}
    return f"{len(templates)} rows, {len(ids)} template IDs, {len(records):,} samples"


# --- releases -------------------------------------------------------------------------------------

def _release_records(folder: Path, manifest: dict[str, object], profile: Profile
                     ) -> tuple[SampleRecords, dict[str, str]]:
    """Samples by ID (a generated release: by its de-duplication key), and the template each belongs to."""
    import pandas as pd

    name = all_samples_name(str(manifest.get("release", "")), ".parquet")
    path = folder / name
    if not path.exists():
        raise UserError(f"no {name} in this release folder", folder)
    frame = pd.read_parquet(path)
    if "sample_id" not in frame.columns and profile.templates.workbook is not None:
        return _generated_records({c: frame[c].tolist() for c in frame.columns}, profile.templates.workbook)
    return _records([frame[c].tolist() for c in SAMPLE_COLUMNS if c in frame.columns]), {}


def diff_releases(old: Path, new: Path, profile: Profile) -> Diff:
    """Compare two release folders: samples by ID, template fates from their decision logs."""
    old, new = Path(old), Path(new)
    old_log, new_log = load_audit_log(old), load_audit_log(new)
    old_manifest, new_manifest = old_log.manifest, new_log.manifest
    prefixes = {c.sample_prefix: c.name for c in profile.categories}

    def subject_of(sample_id: str) -> str:
        match = re.match(SAMPLE_ID, sample_id)
        if match is None or match["prefix"] not in prefixes:
            return sample_id
        return template_subject(prefixes[match["prefix"]], int(match["number"]))

    (old_records, old_subjects), (new_records, new_subjects) = (_release_records(old, old_manifest, profile),
                                                                _release_records(new, new_manifest, profile))
    subjects = {**old_subjects, **new_subjects}
    samples = _sample_changes(old_records, new_records, lambda key: subjects.get(key) or subject_of(key))
    changes, unchanged = [], 0
    for subject in sorted(set(old_log.fates) | set(new_log.fates) | set(samples), key=_subject_order):
        before, after = old_log.fates.get(subject), new_log.fates.get(subject)
        counts = samples.get(subject, Counter())
        was, now = bool(before and before.in_release), bool(after and after.in_release)
        details = []
        if before and after and before.status != after.status:
            details.append(f"{before.status} -> {after.status}")
        for label, fate in (("old", before), ("new", after)):
            if fate is not None and fate.drops:
                details.append(f"{label}: dropped by {fate.drop_rule}: {fate.drops[0].reason}")
        if was and not now:
            changes.append(_change(subject, REMOVED, details, counts))
        elif now and not was:
            changes.append(_change(subject, ADDED, details, counts))
        elif counts[ADDED] or counts[REMOVED] or counts[CHANGED]:
            changes.append(_change(subject, CHANGED, details, counts))
        elif was:
            unchanged += 1
    notes = [f"{name}: {old_manifest.get(name)} -> {new_manifest.get(name)}" for name in ("build_fingerprint", "seed")
             if old_manifest.get(name) != new_manifest.get(name)]
    return Diff("releases", old, new, _release_summary(old_manifest), _release_summary(new_manifest), changes,
                unchanged, notes)


def _release_summary(manifest: dict[str, object]) -> str:
    return (f"{manifest.get('template_rows', 0)} rows, {manifest.get('template_ids', 0)} template IDs, "
            f"{int(manifest.get('samples', 0)):,} samples")


# --- output ---------------------------------------------------------------------------------------

def render_diff(diff: Diff) -> str:
    lines = [f"Comparing {diff.kind}:", f"  old: {diff.old} ({diff.summary_old})",
             f"  new: {diff.new} ({diff.summary_new})", ""]
    if diff.notes:
        lines.append("Notes:")
        lines.extend(f"  {note}" for note in diff.notes)
        lines.append("")
    for status in (ADDED, REMOVED, CHANGED):
        changed = [c for c in diff.changes if c.status == status]
        lines.append(f"Templates {status}: {len(changed)}")
        for change in changed:
            delta = change.samples_new - change.samples_old
            lines.append(f"  {change.subject}: samples {change.samples_old:,} -> {change.samples_new:,} ({delta:+,}; "
                         f"{change.samples_added:,} added, {change.samples_removed:,} removed, "
                         f"{change.samples_changed:,} changed)")
            lines.extend(f"    {detail}" for detail in change.details)
    lines.append(f"Templates unchanged: {diff.unchanged}")
    lines.append("")
    lines.append(f"Samples: {diff.samples('added'):,} added, {diff.samples('removed'):,} removed, "
                 f"{diff.samples('changed'):,} changed")
    return "\n".join(lines) + "\n"
