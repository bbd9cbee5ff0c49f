"""The build flow: templates in, a validated, reproducible release out.

``build_release(request)`` builds one ``ReleaseRequest`` (``tasks.release.inputs``); the pipeline's flow
runs the same steps (``release_steps``) as its release stage, and ``build_from_files`` is the deployment's
entry point (file arguments, as ``kobbq build --templates`` without a survey). Each step is a Prefect task
wrapping the pure functions of ``tasks.release.assemble``; the whole release is staged beside the target
and published only when every file is written and valid. A request whose inputs, seed and code are
unchanged finds the release up to date and does nothing.
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.utilities.annotations import opaque

from core import console, interrupt
from core.decisions import Decision, read_decisions
from core.findings import Finding
from core.profile import DEFAULT_PROFILE, Profile, load_profile
from core.release_folder import ReleaseFolder
from flows.artifacts import publish_release
from tasks.audit.report import write_release_folder
from tasks.release.assemble import ExpandedRelease, expand_release
from tasks.release.inputs import BuildInputs, BuildResult, ReleaseRequest
from tasks.release.publish import publish, staged_release
from tasks.release.test_split import PROFILE, TestSplit
from tasks.survey.survey_stage import survivors
from tasks.templates.load import LoadedTemplates, TemplateRow
from tasks.templates.validate import load_checked


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
    publish_release(target, inputs.profile, manifest)  # its summary, funnel, Table 1, validation and links
    return manifest


def release_steps(request: ReleaseRequest) -> BuildResult:
    """The release's tasks, inside a running flow: ``build_release``'s, or the pipeline's as its last stage."""
    interrupt.checkpoint("start-up")
    target = request.folder.path
    current = request.current()
    if current is not None:
        console.step(f"{target} is up to date (same inputs, seed and code); nothing rebuilt")
        return current
    inputs = request.inputs()
    loaded, findings = load_templates(inputs)
    earlier = [d for path in request.upstream.values() for d in read_decisions(path)]
    decisions = request.survey_decisions
    kept = survivors(loaded.templates, read_decisions(decisions)) if decisions else loaded.templates
    # Prefect walks every parameter's contents (to find futures and dependencies) unless it is marked opaque:
    # at 10x the real templates, walking the templates and the expansion cost ~60 s of a 170 s build.
    release = expand(opaque(kept), request.profile, inputs.test_split, opaque(loaded.vocabulary))
    texts = {name: path.read_text(encoding="utf-8") for name, path in request.reports.items()}
    manifest = write_and_publish(target, inputs, opaque(loaded), opaque(findings), opaque(release), opaque(earlier),
                                 request.parallel, texts)
    return BuildResult.of(request.folder, manifest, up_to_date=False)


@flow(name="kobbq-release", log_prints=False)
def build_release(request: ReleaseRequest) -> BuildResult:
    """One release from its request (``kobbq build --templates``)."""
    interrupt.take_over(request.folder.out)
    console.step("build flow started (Prefect API ready)")
    return release_steps(request)


@flow(name="kobbq-build", log_prints=False)
def build_from_files(templates: Path, out: Path = Path("build"), profile: str = DEFAULT_PROFILE,
                     name: str | None = None, corrections: Path | None = None, seed: int | None = None,
                     test_split: str = PROFILE, force: bool = False) -> BuildResult:
    """A release from one template file, as ``kobbq build --templates`` without a survey: the deployments'
    entry point (``prefect.yaml``), whose runs pass files, not a request."""
    interrupt.take_over(Path(out))
    console.step("build flow started (Prefect API ready)")
    loaded = load_profile(profile)
    return release_steps(ReleaseRequest(loaded, ReleaseFolder.of(out, name, loaded), Path(templates), corrections,
                                        seed, test_split, rebuild=force))
