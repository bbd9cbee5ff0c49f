"""The build flow: templates in, a validated, reproducible release out.

Each stage is a Prefect task wrapping the pure functions of ``tasks.release.assemble``; the flow
stages the whole release beside the target and publishes it only when every file is written
(and, once the validation stage runs, valid). A rebuild whose inputs, seed and code are
unchanged finds the release up to date and does nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.utilities.annotations import opaque

from core import console, interrupt
from flows.artifacts import publish_release
from core.profile import Profile, load_profile
from tasks.release.assemble import ExpandedRelease, expand_release
from tasks.audit.report import write_release_folder
from tasks.release.inputs import BuildInputs, release_inputs
from tasks.templates.validate import load_checked
from core.decisions import Decision, read_decisions
from core.findings import Finding
from tasks.release.publish import publish, staged_release
from core.release_folder import release_is_current
from tasks.survey.stage import survivors
from tasks.release.test_split import PROFILE, TestSplit
from tasks.templates.load import LoadedTemplates, TemplateRow


@dataclass(frozen=True)
class BuildResult:
    release_dir: Path
    samples: int
    test_samples: int
    up_to_date: bool  # True when nothing was rebuilt


@task(name="load-and-validate-templates", cache_policy=NO_CACHE)
def load_templates(inputs: BuildInputs) -> tuple[LoadedTemplates, list[Finding]]:
    interrupt.checkpoint("loading")
    loaded, findings = load_checked(inputs.templates, inputs.corrections, inputs.profile)
    warnings = sum(1 for f in findings if f.severity == "warning")
    console.step(f"loaded {len(loaded.templates)} template rows from {inputs.templates.name} "
                 f"({len(loaded.corrections)} correction(s) applied, {warnings} warning(s))")
    return loaded, findings


@task(name="expand-templates", cache_policy=NO_CACHE)
def expand(templates: list[TemplateRow], profile: Profile, split: TestSplit,
           vocabulary: object = None) -> ExpandedRelease:
    """Not cached: template releases are only counted here (their samples are expanded chunk by chunk as
    they are written, ~0.1 s for the full release); generated ones are generated here, in seconds."""
    interrupt.checkpoint("expansion")
    release = expand_release(templates, profile, split.seed, vocabulary, split)
    how = "generated" if release.generated is not None else "expanded chunk by chunk as they are written"
    console.step(f"expansion: {release.samples:,} samples ({len(release.test_indices):,} in the test split), {how}")
    return release


@task(name="write-and-publish-release", cache_policy=NO_CACHE)
def write_and_publish(target: Path, inputs: BuildInputs, loaded: LoadedTemplates, findings: list[Finding],
                      release: ExpandedRelease, earlier: list[Decision], parallel: dict[str, Path],
                      texts: dict[str, str]) -> dict[str, object]:
    with staged_release(target) as staging:
        manifest = write_release_folder(staging, inputs, loaded, findings, release, decisions=earlier,
                                        reports=texts, parallel=parallel, progress=console.step)
        publish(staging, target)
    console.step(f"validated and published {target}")
    interrupt.checkpoint("published")
    publish_release(target, inputs.profile)  # its summary, funnel, Table 1, validation and links, as artifacts
    return manifest


@flow(name="kobbq-build", log_prints=False)
def build_release(profile_name: str = "ko", templates: Path | None = None, out: Path = Path("build"),
                  name: str | None = None, seed: int | None = None, corrections: Path | None = None,
                  survey_files: dict[str, Path] | None = None, survey_decisions: Path | None = None,
                  upstream: dict[str, Path] | None = None, parallel: dict[str, Path] | None = None,
                  reports: dict[str, Path] | None = None, test_split: str = PROFILE,
                  force: bool = False) -> BuildResult:
    """``survey_files``: the survey stage's inputs (role -> file), recorded in the manifest.
    ``survey_decisions``: that stage's decisions file; its template decisions say which templates survive.
    ``upstream``: decision logs of earlier stages (stage -> CSV), merged into the release's log.
    ``parallel``: twin releases (name -> template file, e.g. mtBBQ) expanded for the surviving templates.
    ``reports``: earlier stages' reports (name in the release -> file), copied into the release.
    ``test_split``: ``profile`` (the IDs the profile lists, else the seeded draw) or ``seeded``."""
    interrupt.take_over(Path(out))
    console.step("build flow started (Prefect API ready)")
    interrupt.checkpoint("start-up")
    profile = load_profile(profile_name)
    inputs = release_inputs(profile, templates, corrections, seed, survey_files, upstream, parallel, reports,
                            test_split)
    target = Path(out) / (name or profile.release.name)
    fingerprint = inputs.fingerprint()
    if not force and release_is_current(target, fingerprint):
        manifest = json.loads((target / "manifest.json").read_text(encoding="utf-8"))
        console.step(f"{target} is up to date (same inputs, seed and code); nothing rebuilt")
        return BuildResult(target, manifest["samples"], manifest["test_samples"], up_to_date=True)
    loaded, findings = load_templates(inputs)
    earlier = [d for path in (upstream or {}).values() for d in read_decisions(path)]
    kept = survivors(loaded.templates, read_decisions(survey_decisions)) if survey_decisions else loaded.templates
    # Prefect walks every parameter's contents (to find futures and dependencies) unless it is marked opaque:
    # at 10x the real templates, walking the templates and the expansion cost ~60 s of a 170 s build.
    release = expand(opaque(kept), profile, inputs.test_split, opaque(loaded.vocabulary))
    texts = {name: path.read_text(encoding="utf-8") for name, path in (reports or {}).items()}
    manifest = write_and_publish(target, inputs, opaque(loaded), opaque(findings), opaque(release), opaque(earlier),
                                 parallel or {}, texts)
    return BuildResult(target, manifest["samples"], manifest["test_samples"], up_to_date=False)
