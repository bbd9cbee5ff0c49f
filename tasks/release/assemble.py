"""Assembling a release folder: the pure steps the build flow runs, in order (``expand_release``, then
``write_release_files``: every file but the audit report and the manifest, which ``tasks.audit.report`` adds from
what the build holds). The build flow wraps each step in a Prefect task; tests and benchmarks call them directly.
"""

from __future__ import annotations

import itertools
import shutil
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import TypeVar

import pandas as pd

import core
from core import interrupt
from core.profile import Profile
from core.decisions import (Decision, portable_text, sort_decisions, template_subject, write_decisions_csv,
                            write_decisions_parquet)
from tasks.templates.engine import Expansion
from tasks.templates.kobbq_format import (CHUNK_SAMPLES, evaluation_fills, evaluation_indices, expand_templates,
                                          fill_count, row_chunks)
from tasks.templates.workbook import Vocabulary
from core.findings import Finding
from core.fingerprint import sha256_file
from core.errors import UserError
from core.tables import write_csv_rows
from core.release_folder import (CORRECTIONS_APPLIED, DECISIONS, DECISIONS_PARQUET, INPUT_WARNINGS,
                                 NORMALISATIONS, TABLE1_CSV, TABLE1_MD, WRITTEN_BY)
from core.release_folder import write_manifest as write_manifest_file
from tasks.release.dataset_card import twin_manifest_entry, twin_not_published, write_dataset_card
from tasks.release.hf_layout import DATA_DIR, Config, write_layout
from tasks.release.inputs import BuildInputs
from tasks.release.write import (SampleFiles, all_samples_name, category_folder, release_arrow_memory,
                                  samples_frame, test_samples_name, write_category_csvs, write_records_jsonl)
from tasks.release.check_child import ReleaseValidationError, ValidationChild, ValidationReport, warm_up
from tasks.release.table1 import Table1, build_table1, render_csv, render_markdown
from tasks.release.test_split import LISTED, NONE, SEEDED, TestSplit, listed_fills
from tasks.templates.load import LoadedTemplates, TemplateRow
from tasks.templates.validate import load_checked, template_format


@dataclass
class ExpandedRelease:
    """The release's sample sets, described row by row: expanded chunk by chunk as written (``chunks``), so no process
    holds every sample (``expansion``: at once, for tests); a generated release is small, made whole when planned."""

    templates: list[TemplateRow]
    profile: Profile
    row_fills: list[int]
    row_samples: list[int]
    test_fills: list[int]
    split: TestSplit
    generated: Expansion | None = None
    chunk_samples: int = CHUNK_SAMPLES  # the most samples a chunk holds (unless one template row has more)
    # A listed split: each test sample's position in the list (in release order); None: the release's order.
    test_order: list[int] | None = None

    @property
    def samples(self) -> int:
        return sum(self.row_samples)

    @property
    def test_indices(self) -> list[int]:
        """The test split's samples as positions in the release, in the test file's order."""
        if self.generated is not None:
            return []
        indices = evaluation_indices(list(itertools.accumulate(self.row_samples, initial=0)), self.test_fills)
        return indices if self.test_order is None else [i for _, i in sorted(zip(self.test_order, indices))]

    @cached_property
    def expansion(self) -> Expansion:
        return self.generated if self.generated is not None else expand_templates(self.templates, self.profile)

    def chunks(self) -> Iterator[tuple[Expansion, list[int]]]:
        """The samples chunk by chunk of template rows, each with its test-split positions (in the chunk)."""
        if self.generated is not None:
            yield self.generated, []
            return
        for rows in row_chunks(self.templates, self.chunk_samples):
            chunk = expand_templates(self.templates[rows.start:rows.stop], self.profile)
            yield chunk, evaluation_indices(chunk.row_starts, self.test_fills[rows.start:rows.stop])


def expand_release(templates: list[TemplateRow], profile: Profile, seed: int, vocabulary: Vocabulary | None = None,
                   split: TestSplit | None = None, partial: bool = False) -> ExpandedRelease:
    """The sample sets: workbook templates generated (no test split), template rows with ``split`` (default: the
    seeded draw with ``seed``). ``partial``: a twin release of some templates (``tasks.release.test_split``)."""
    fmt = template_format(profile)
    if fmt.generated:
        generated = fmt.expand(templates, profile, vocabulary)
        return ExpandedRelease(templates, profile, generated.row_fills, generated.row_samples, [0] * len(templates),
                               split or TestSplit(NONE, seed, "a generated release has no test split"), generated)
    split = split or TestSplit(SEEDED, seed, "the seeded draw, expand_release's default")
    fills = [fill_count(template) for template in templates]
    samples = [4 * count for count in fills]
    if split.method == LISTED:
        assert split.ids_file is not None
        test_fills, order = listed_fills(templates, fills, profile, split.ids_file, partial)
        return ExpandedRelease(templates, profile, fills, samples, test_fills, split, test_order=order)
    return ExpandedRelease(templates, profile, fills, samples, evaluation_fills(templates, fills, profile, split.seed),
                           split)


def expansion_decisions(release: ExpandedRelease) -> list[Decision]:
    """One decision per template row: in the release, with its fills and test fill (generated: instances made, kept)."""
    generated = release.generated
    if generated is not None and generated.row_generated is not None:
        rows = [(f"in the release: {made} instance(s) generated, {kept} kept after de-duplication",
                 {"generated": made, "samples": kept}) for made, kept in zip(generated.row_generated,
                                                                               generated.row_samples)]
    else:
        chosen = "evaluation split uses fill" if release.split.method == SEEDED else (
            f"the test split listed in {release.split.ids_file.name if release.split.ids_file else ''} has fill")
        rows = [(f"in the release: {fills} fill(s) x 4 = {4 * fills} samples; {chosen} {test_fill}",
                 {"fills": fills, "samples": 4 * fills, "test_fill": test_fill})
                for fills, test_fill in zip(release.row_fills, release.test_fills)]
    return [Decision(stage="release", subject_type="template_row", subject=t.key, rule="expanded", outcome="keep",
                     reason=reason, source=f"{Path(t.source).name} row {t.row}",
                     numbers={**numbers, "template": template_subject(t.category, t.template_id), "label": t.label,
                              "bbq": f"bbq:{t.bbq_category}:{t.bbq_id}" if t.bbq_id else ""})
            for t, (reason, numbers) in zip(release.templates, rows)]


def correction_decisions(loaded: LoadedTemplates) -> list[Decision]:
    return [Decision(stage="templates", subject_type="template_row", subject=c.row_key, rule="corrections-file",
                     outcome=f"{c.column}={c.new_value}", reason=c.reason,
                     numbers={"column": c.column, "old_value": c.old_value, "new_value": c.new_value},
                     source=f"{c.file} row {c.row}")
            for c in loaded.corrections]


class Portable:
    """Input paths reduced to file names: a release must not depend on where its inputs were checked out."""

    def __init__(self, inputs: BuildInputs) -> None:
        paths = {str(p) for p in inputs.files().values()} | {str(p.resolve()) for p in inputs.files().values()}
        self.known = sorted(((path, Path(path).name) for path in paths), key=lambda pair: -len(pair[0]))

    def text(self, text: str) -> str:
        for path, name in self.known:
            text = text.replace(path, name)
        return portable_text(text)

    def decision(self, decision: Decision) -> Decision:
        return replace(decision, reason=self.text(decision.reason), source=self.text(decision.source)).portable()


def write_input_reports(folder: Path, loaded: LoadedTemplates, findings: list[Finding]) -> None:
    """What the build changed or noticed in its input: corrections, normalisations, warnings."""
    write_csv_rows(folder / CORRECTIONS_APPLIED, ["file", "row", "row_key", "column", "old_value", "new_value",
                                                  "reason"],
                   [[c.file, c.row, c.row_key, c.column, c.old_value, c.new_value, c.reason]
                    for c in loaded.corrections])
    write_csv_rows(folder / NORMALISATIONS, ["file", "row", "row_key", "column", "what"],
                   [[loaded.path.name, n.row, n.row_key, n.column, n.what] for n in loaded.normalisations])
    (folder / INPUT_WARNINGS).write_text(
        "".join(f.render().replace(str(loaded.path), loaded.path.name) + "\n" for f in findings), encoding="utf-8")


def start_release_checks(folder: Path, profile: Profile, release: ExpandedRelease,
                         name: str | None = None) -> ValidationChild:
    """Start the release's checks on the staged Parquet files; ``name``: the files' prefix when not the release's."""
    prefixes = {c.name: c.sample_prefix for c in profile.categories}
    expected = {prefixes.get(category, category.lower()): count
                for category, count in samples_by_category(release).items()}
    name = name or profile.release.name
    return ValidationChild(folder, all_samples_name(name, ".parquet"), test_samples_name(name, ".parquet"),
                           profile.release.unknown_expression, expected)


Progress = Callable[[str], None]


def _silent(_: str) -> None:
    """The default progress callback: pure code reports through its caller, which may print."""


@contextmanager
def sample_files(folder: Path, name: str, profile: Profile, release: ExpandedRelease, validate: bool,
                 progress: Progress) -> Iterator[ValidationChild | None]:
    """All samples and the test split as Parquet, TSV and JSONL; inside the ``with``, the caller writes more beside
    the checks (None without) and asks for their ``report``. Parquet is written first and the samples expanded again
    for the rest (~0.2 s), so the checks start ~0.8 s of CPU earlier: the build then waits ~0.1 s for them, not ~1 s."""
    write_sample_sets(folder, name, release, ("parquet",))
    with start_release_checks(folder, profile, release, name) if validate else nullcontext() as checks:
        interrupt.checkpoint("writing")
        write_sample_sets(folder, name, release, ("tsv", "jsonl"))
        progress("sample files written (Parquet, TSV, JSONL)")
        yield checks


def write_parallel_release(folder: Path, name: str, templates_path: Path, kept: list[TemplateRow], profile: Profile,
                           split: TestSplit, progress: Progress = _silent,
                           validate: bool = True) -> tuple[dict[str, object], Config | None]:
    """A twin release (``mtBBQ``) of the templates the release kept, with its test split, in its own folder and
    manifest, evaluated as any release; its manifest entry and card config. One failing the checks is not published."""
    twin_dir = folder / name
    try:
        twin, _ = load_checked(templates_path, None, profile)
    except UserError as exc:
        return twin_not_published(name, f"its templates fail their checks: {exc}", progress), None
    keys = {t.template_key for t in kept}
    chosen = [t for t in twin.templates if t.template_key in keys]
    if not chosen:
        return twin_not_published(name, "none of the release's templates has a machine translation", progress), None
    expanded = expand_release(chosen, profile, split.seed, split=split, partial=True)

    def twin_progress(line: str) -> None:
        progress(f"{name}: {line}")

    twin_dir.mkdir()
    try:
        with sample_files(twin_dir, name, profile, expanded, validate, twin_progress) as checks:
            report = checks.report(twin_progress) if checks else None
    except ReleaseValidationError as exc:
        shutil.rmtree(twin_dir)
        return twin_not_published(name, str(exc), progress), None
    every = write_layout(twin_dir, profile, name)[0]  # its ``all`` config reads its own data/, as the release's do
    entry = twin_manifest_entry(name, profile.release.name, expanded.templates, kept, expanded.samples,
                                        len(expanded.test_indices), split.manifest(len(expanded.test_indices)),
                                        report.summary() if report else "not validated")
    write_manifest_file(twin_dir, {"written_by": WRITTEN_BY, "release": name, "profile": profile.name,
                                   "twin_of": profile.release.name, **entry,
                                   "outputs": release_outputs(twin_dir, profile)})
    progress(f"{name}: {expanded.samples} samples ({len(expanded.test_indices)} in the test split) of "
             f"{entry['template_ids']} template IDs, {'validated and ' if validate else ''}written to {name}/")
    return entry, Config(name, {split: [f"{name}/{path}" for path in paths] for split, paths in every.files.items()},
                         every.rows)


def write_sample_sets(folder: Path, name: str, release: ExpandedRelease, formats: tuple[str, ...]) -> None:
    """All samples and the test split in ``formats``, written chunk by chunk of template rows; a listed test split's
    samples (a few thousand) are held and written last, in its list's order."""
    with SampleFiles(folder, all_samples_name(name), formats) as all_files, \
            SampleFiles(folder, test_samples_name(name), formats) as test_files:
        held = []
        for chunk, test_rows in release.chunks():
            frame = samples_frame(chunk)
            all_files.append(frame)
            if release.test_order is None:
                test_files.append(frame.iloc[test_rows])
            else:
                held.append(frame.iloc[test_rows])
            del frame
            release_arrow_memory()
        if release.test_order is not None:
            test = pd.concat(held, ignore_index=True)
            test_files.append(test.iloc[sorted(range(len(test)), key=release.test_order.__getitem__)])


@contextmanager
def generated_sample_files(folder: Path, name: str, profile: Profile, release: ExpandedRelease, validate: bool,
                           progress: Progress) -> Iterator[ValidationChild | None]:
    """A generated release's samples, held whole (it is small): per-category CSVs in its layout, Parquet, JSONL."""
    fmt = profile.templates.workbook
    assert fmt is not None
    frame = pd.DataFrame(release.expansion.columns, columns=fmt.output_columns, dtype=object, copy=False)
    frame.to_parquet(folder / all_samples_name(name, ".parquet"), index=False, compression="zstd")
    with ValidationChild(folder, all_samples_name(name, ".parquet"), "", profile.release.unknown_expression,
                         samples_by_category(release), generated=True) if validate else nullcontext() as checks:
        interrupt.checkpoint("writing")
        records = frame.to_dict("records")
        write_records_jsonl(records, folder / all_samples_name(name, ".jsonl"))
        (folder / category_folder(profile.language)).mkdir()
        write_category_csvs(records, folder / category_folder(profile.language), fmt.output_of(fmt.category_column),
                            profile.category_names, fmt.output_columns, fmt.list_columns)
        progress("sample files written (Parquet, JSONL, per-category CSV)")
        yield checks


@dataclass(frozen=True)
class ReleaseFiles:
    """What ``write_release_files`` wrote, as the build holds it: the audit report, manifest and run's artifacts are
    made from this, never from the files read back."""

    facts: dict[str, object]  # the manifest without the hashes of the release's files
    table: Table1
    decisions: list[Decision]  # the decision log as written (paths reduced to file names)
    validation: ValidationReport | None  # None when the build skipped the checks
    reports: dict[str, str]  # the earlier stages' reports, as written into the release


B = TypeVar("B")
T = TypeVar("T")


def write_release_files(folder: Path, inputs: BuildInputs, loaded: LoadedTemplates, findings: list[Finding],
                        release: ExpandedRelease, decisions: list[Decision], beside: Callable[[ReleaseFiles], B],
                        then: Callable[[ReleaseFiles, B], T], reports: dict[str, str] | None = None,
                        validate: bool = True, parallel: dict[str, Path] | None = None,
                        progress: Progress = _silent) -> T:
    """Every release file but the audit report and the manifest, then what ``then`` makes of them. ``beside`` (the
    audit report) runs while the checks do, on what is written then (no ``validation``, no twin), so that the build
    does not wait for them with work left; ``then`` (the manifest), after their report, with what ``beside`` made."""
    profile = inputs.profile
    name = profile.release.name
    if validate:  # the checks' children (the release's, each twin's) import their library while the files are written
        warm_up(1 + len(parallel or {}))
    samples = generated_sample_files if profile.release.layout == "per-category-csv" else sample_files
    with samples(folder, name, profile, release, validate, progress) as checks:
        table, all_decisions, texts = write_tables_and_logs(folder, inputs, loaded, findings, release, decisions,
                                                            reports or {})
        configs = write_layout(folder, profile)  # it reads the staged Parquet only, so it too runs beside the checks
        written = ReleaseFiles(release_facts(inputs, release, table), table, all_decisions, None, texts)
        made_beside = beside(written)
        validation = checks.report(progress) if checks else None
        made = {twin: write_parallel_release(folder, twin, path, release.templates, profile, release.split, progress,
                                             validate) for twin, path in sorted((parallel or {}).items())}
        twins = {twin: entry for twin, (entry, _) in made.items()}
        facts = {**written.facts, "parallel_releases": twins} if twins else written.facts
        write_dataset_card(folder, profile, configs, facts, render_markdown(table, name), all_decisions, validation,
                           twins, tuple(config for _, config in made.values() if config))
        return then(replace(written, facts=facts, validation=validation), made_beside)


def write_tables_and_logs(folder: Path, inputs: BuildInputs, loaded: LoadedTemplates, findings: list[Finding],
                          release: ExpandedRelease, decisions: list[Decision],
                          reports: dict[str, str]) -> tuple[Table1, list[Decision], dict[str, str]]:
    """Table 1, the input reports, the decision log and the earlier stages' reports, as written beside the checks."""
    name = inputs.profile.release.name
    table = build_table1(release.templates, samples_by_category(release), inputs.profile)
    split = "" if release.split.method == NONE else release.split.describe(len(release.test_indices))  # generated
    (folder / TABLE1_MD).write_text(render_markdown(table, name, split), encoding="utf-8")
    (folder / TABLE1_CSV).write_text(render_csv(table), encoding="utf-8")
    write_input_reports(folder, loaded, findings)
    portable = Portable(inputs)
    all_decisions = sort_decisions(portable.decision(d).logged()
                                   for d in (*correction_decisions(loaded), *decisions, *expansion_decisions(release)))
    write_decisions_csv(all_decisions, folder / DECISIONS)
    write_decisions_parquet(all_decisions, folder / DECISIONS_PARQUET)
    texts = {report_name: portable.text(text) for report_name, text in sorted(reports.items())}
    for report_name, text in texts.items():
        (folder / report_name).write_text(text, encoding="utf-8")
    return table, all_decisions, texts


def write_manifest(folder: Path, profile: Profile, facts: dict[str, object]) -> dict[str, object]:
    """The manifest, written last: the facts and every file's sha256, a twin's (``mtBBQ/...``) too, so that ``status``
    and ``publish`` see a damaged twin as a damaged release."""
    twins = dict(facts.get("parallel_releases") or {})  # type: ignore[call-overload]
    manifest = {**facts, "outputs": release_outputs(folder, profile, [entry["folder"] for entry in twins.values()
                                                                      if entry.get("folder")])}
    write_manifest_file(folder, manifest)  # its keys sorted
    return manifest


def samples_by_category(release: ExpandedRelease, field: str = "category") -> dict[str, int]:
    """Samples per template ``field``: each template row's samples carry its category and label."""
    counts: Counter[str] = Counter()
    for template, samples in zip(release.templates, release.row_samples):
        counts[getattr(template, field)] += samples
    return dict(counts)


def samples_by_label(release: ExpandedRelease) -> dict[str, int]:
    """Samples per template label (a generated release's counted in its label column)."""
    if release.generated is not None:
        fmt = release.profile.templates.workbook
        column = fmt.output_of(fmt.label_column) if fmt else "label_annotation"
        return dict(sorted(Counter(release.generated.columns[column].tolist()).items()))
    return dict(sorted(samples_by_category(release, "label").items()))


def release_facts(inputs: BuildInputs, release: ExpandedRelease, table) -> dict[str, object]:
    """The manifest without the hashes of the release's files: counts, settings, inputs (also the card's)."""
    profile = inputs.profile
    categories = {}
    for category in sorted({t.category for t in release.templates}):
        rows = [(t, samples) for t, samples in zip(release.templates, release.row_samples) if t.category == category]
        labels = {t.template_id: t.label for t, _ in rows}  # a template ID's label: its last row's
        categories[category] = {
            "samples": sum(samples for _, samples in rows), "template_rows": len(rows), "template_ids": len(labels),
            "test_samples": 0 if release.generated is not None else 4 * len(rows),
            "template_ids_by_label": dict(sorted(Counter(labels.values()).items()))}
    return {
        "written_by": WRITTEN_BY,  # the marker a later build checks before it replaces the folder
        "release": profile.release.name,
        "profile": profile.name,
        "project_version": core.__version__,
        "seed": inputs.seed,
        "build_fingerprint": inputs.fingerprint,
        "samples": release.samples,
        "test_samples": len(release.test_indices),
        "test_split": release.split.manifest(len(release.test_indices)),
        "template_rows": len(release.templates),
        "template_ids": len({(t.category, t.template_id) for t in release.templates}),
        "samples_by_label": samples_by_label(release),
        "categories": categories,
        "paper_total_samples": profile.release.paper_total_samples,
        "table1_differences": [{"category": d.category, "column": d.column, "ours": d.ours, "paper": d.paper,
                                "explained": d.explained} for d in table.differences],
        "inputs": {role: {"file": path.name, "sha256": sha256_file(path)} for role, path in inputs.files().items()},
    }


def release_outputs(folder: Path, profile: Profile, twins: list[str] | None = None) -> dict[str, str]:
    """sha256 of every file of the release, those of its subfolders by relative path (``data/Age/test.parquet``)."""
    outputs = {p.name: sha256_file(p) for p in sorted(folder.iterdir()) if p.is_file()}
    subfolders = [category_folder(profile.language), DATA_DIR, *(twins or [])]
    for sub in (folder / name for name in subfolders):
        if sub.is_dir():
            outputs.update({p.relative_to(folder).as_posix(): sha256_file(p) for p in sorted(sub.rglob("*"))
                            if p.is_file()})
    return outputs
