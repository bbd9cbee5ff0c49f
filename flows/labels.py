"""The labelling flows: thin Prefect wrappers around the labels stage's functions (``tasks.labels.stage``),
so ``kobbq labels consensus`` and a pipeline's labels stage read, check and write the same way.

- ``labels_flow(bbq, consensus, out, annotations=(), newly_created=None, profile_name="ko", categories=None)
  -> LabelsResult``: refuses any BBQ template without a final label; writes into ``out``
  ``labels.csv`` (``subject,label,rationale``: the final label of every BBQ template, by subject),
  ``agreement.txt`` (Fleiss' kappa, when annotators' files are given) and ``decisions_labels.csv``
  (with the newly-created templates' decisions, which a pipeline takes in its templates stage).
- ``labels_reference_flow(templates, bbq, out, profile_name="ko") -> ReferenceFlowResult``: the labels
  the release implies, written as ``reference_labels.txt`` and ``decisions_labels_reference.csv``.
Nothing here is slow enough to cache.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from core import console, interrupt
from core.atomic import write_with
from core.decisions import Decision, write_decisions_csv
from core.profile import Profile, load_profile
from tasks.templates.newly_created import NewlyCreated, import_newly_created
from tasks.labels.reference import ReferenceLabels
from tasks.labels.stage import FinalLabels, final_labels, labels_from_links, write_labels, write_reference
from tasks.templates.validate import load_templates


@dataclass(frozen=True)
class LabelsResult:
    templates: int  # BBQ templates labelled
    labels: dict[str, int]  # final label -> BBQ templates (ST, TM, SR)
    nc_templates: int
    annotators: int
    kappa: float | None  # overall Fleiss' kappa, None without annotators' files or when undefined
    raw_agreement: float | None
    disagreements: int
    labels_path: Path
    decisions_path: Path
    agreement_path: Path | None
    decisions: list[Decision]


@dataclass(frozen=True)
class ReferenceFlowResult:
    linked: dict[str, int]  # ST/TM -> BBQ templates linked with that label
    unlinked: int
    nc_templates: int
    problems: int  # links that do not resolve or contradict each other (listed in the table file)
    table_path: Path
    decisions_path: Path
    decisions: list[Decision]


@task(name="labels-stage", cache_policy=NO_CACHE)
def labels_task(bbq: Path, consensus: Path, annotations: list[Path], profile: Profile,
                categories: list[str] | None) -> FinalLabels:
    labels = final_labels(bbq, consensus, annotations, profile, categories)
    rows = sum(len(item.rows) for item in labels.items)
    console.step(f"{len(labels.items)} BBQ templates ({rows} rows) to label from {bbq}")
    if labels.agreement is not None:
        overall = labels.agreement.rows[0]
        console.step(f"{labels.annotator_files} annotators: raw agreement {overall.raw_agreement:.1%}, "
                     f"{len(labels.agreement.disagreements)} disagreement(s)")
    console.step(f"consensus: {labels.counts()}")
    return labels


@task(name="labels-newly-created", cache_policy=NO_CACHE)
def newly_created_templates(path: Path, profile: Profile) -> NewlyCreated:
    imported = import_newly_created(path, profile)
    console.step(f"{len(imported.decisions)} newly-created template(s) imported with label NC")
    return imported


@flow(name="kobbq-labels", log_prints=False)
def labels_flow(bbq: Path, consensus: Path, out: Path, annotations: list[Path] | tuple[Path, ...] = (),
                newly_created: Path | None = None, profile_name: str = "ko",
                categories: list[str] | None = None) -> LabelsResult:
    interrupt.take_over()
    profile = load_profile(profile_name)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    labels = labels_task(bbq, consensus, [Path(p) for p in annotations], profile, categories)
    nc = newly_created_templates(newly_created, profile) if newly_created else None
    decisions = labels.consensus.decisions + (nc.decisions if nc else [])
    written = write_labels(labels, out)
    decisions_path = write_with(out / "decisions_labels.csv", lambda p: write_decisions_csv(decisions, p))
    counts = Counter(labels.counts())
    overall = labels.agreement.rows[0] if labels.agreement else None
    return LabelsResult(
        templates=len(labels.items), labels={label: counts[label] for label in ("ST", "TM", "SR")},
        nc_templates=len(nc.decisions) if nc else 0, annotators=labels.annotator_files,
        kappa=overall.kappa if overall else None, raw_agreement=overall.raw_agreement if overall else None,
        disagreements=len(labels.agreement.disagreements) if labels.agreement else 0, labels_path=written["labels"],
        decisions_path=decisions_path, agreement_path=written.get("report:labels_agreement.txt"), decisions=decisions)


@task(name="labels-reference", cache_policy=NO_CACHE)
def reference_task(templates: Path, bbq: Path, profile: Profile) -> ReferenceLabels:
    return labels_from_links(load_templates(templates, profile).templates, bbq, profile)


@flow(name="kobbq-labels-reference", log_prints=False)
def labels_reference_flow(templates: Path, bbq: Path, out: Path, profile_name: str = "ko") -> ReferenceFlowResult:
    interrupt.take_over()
    profile = load_profile(profile_name)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    result = reference_task(templates, bbq, profile)
    table_path = write_reference(result, out)
    decisions_path = write_with(out / "decisions_labels_reference.csv",
                                lambda p: write_decisions_csv(result.decisions, p))
    outcomes = Counter(d.outcome for d in result.decisions if d.subject_type == "bbq_template")
    return ReferenceFlowResult(linked={"ST": outcomes["ST"], "TM": outcomes["TM"]}, unlinked=outcomes["unlinked"],
                               nc_templates=sum(1 for d in result.decisions if d.subject_type == "template"),
                               problems=len(result.findings), table_path=table_path, decisions_path=decisions_path,
                               decisions=result.decisions)
