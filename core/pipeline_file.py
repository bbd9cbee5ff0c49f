"""The whole pipeline's configuration (a TOML pipeline file, paths relative to it) and each stage's recorded state.

A stage's state (done, waiting or failed, with the fingerprint of what it read) is kept in
``<out>/<name>.pipeline/<pipeline key>/<stage>.json``: an unchanged fingerprint is not run again, and ``kobbq status``
tells a done stage from a stale one (docs/reference/pipeline.md)."""

from __future__ import annotations

import glob
import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from pydantic import TypeAdapter, ValidationError

from core.errors import UserError
from core.atomic import write_text
from core.domains import ReleaseName, Strict, Text, load_model
from core.profile import Profile, is_profile_path
from core.text_files import read_json

DONE, WAITING, FAILED, STALE, NOT_RUN, DAMAGED = "done", "waiting", "failed", "stale", "not run", "damaged"


class LabelsSection(Strict):
    bbq: str = ""  # folder (or file) of English BBQ templates
    annotations: list[str] = []  # annotator workbooks or CSVs (glob patterns); optional
    consensus: str = ""  # final label per BBQ template
    categories: list[str] = []  # only these BBQ categories (default: every category the profile adapts)
    # BBQ templates not taken into this release (bbq:<Category>:<Q_id>): never labelled, counted or translated,
    # unlike an SR label, which annotators give a template they judged
    not_taken: list[str] = []
    reference: str = ""  # real-data mode: a released KoBBQ template file whose BBQ links give the labels


class TranslationSection(Strict):
    cache: str = ""  # a recorded translation cache to start from (copied into the work folder)
    glossary: str = ""  # a glossary CSV (source,target,note) instead of the profile's
    returned: str = ""  # folder where the translator's returned workbooks are put
    workbooks: list[str] = []  # the returned workbooks one by one, instead of the folder (`kobbq postedit import`)
    reference: str = ""  # real-data mode: a released KoBBQ template file taken as the post-edit


class TemplatesSection(Strict):
    # A template file (KoBBQ TSV, or the profile's workbook folder) ready for the survey and the release: the
    # pipeline starts there (what `kobbq build --templates FILE` makes from its arguments).
    file: str = ""
    groups: str = ""  # per template row: N1_info, N2_info, Target_group, Reference
    newly_created: str = ""  # NC templates written directly in the target language
    corrections: str = ""


class SurveySection(Strict):
    results: str = ""
    reading: str = ""
    overrides: str = ""
    questions: str = ""
    allow_unmatched: bool = False  # results that match no template: an error unless the templates are survivors


class PipelineConfig(Strict):
    profile: Text  # a shipped profile's name, or the path of a profile file relative to the pipeline file (required)
    # The release's name: its folder, its files' prefix, its manifest, its card's title and its run's artifacts
    # (one plain folder name); default: the profile's release name.
    name: ReleaseName | None = None
    description: str = ""  # what the release is, in one line, first on its card; default: the profile's description
    seed: int | None = None
    # "profile": the test split's IDs the profile lists (ko: the official split), else one fill per template row
    # drawn with the seed; "seeded": the seeded draw although the profile lists IDs (tasks/release/test_split.py).
    test_split: Literal["profile", "seeded"] = "profile"
    labels: LabelsSection = LabelsSection()
    translation: TranslationSection = TranslationSection()
    templates: TemplatesSection = TemplatesSection()
    survey: SurveySection = SurveySection()


@dataclass(frozen=True)
class Pipeline:
    path: Path  # the pipeline file (or, for a pipeline made from a command's arguments, where paths resolve from)
    config: PipelineConfig
    key: str  # names this pipeline's own state and work folders beside the release (``pipeline_key``)

    def file(self, value: str) -> Path | None:
        """A configured path, resolved against the pipeline file's folder; None when not configured."""
        return (self.path.parent / value).resolve() if value else None

    def files(self, patterns: list[str]) -> list[Path]:
        return sorted({Path(p).resolve() for pattern in patterns for p in glob.glob(str(self.path.parent / pattern))})

    @property
    def profile(self) -> str:
        """A shipped profile's name as written, or a profile path resolved like every other path of the file."""
        value = self.config.profile
        return str(self.file(value)) if is_profile_path(value) else value

    def release_profile(self, profile: Profile) -> Profile:
        """The profile with the pipeline's release name and description (a card titled by another name takes it)."""
        name = self.config.name or profile.release.name
        if name == profile.release.name and not self.config.description:
            return profile
        card = profile.card if name == profile.release.name else profile.card.model_copy(update={"pretty_name": name})
        return profile.model_copy(update={"release": profile.release.model_copy(update={"name": name}), "card": card,
                                          "description": self.config.description or profile.description})

    @property
    def reference_mode(self) -> bool:
        return bool(self.config.translation.reference)


def pipeline_key(kind: str, identity: str) -> str:
    """``<kind>-<8 hex digits>``: a pipeline's states and work files, apart from another's writing its release."""
    return f"{kind}-{hashlib.sha256(identity.encode()).hexdigest()[:8]}"


# Inputs the pipeline's author has before the first run; a stage waits for the others (people deliver them).
START_INPUTS = ("labels.bbq", "labels.reference", "translation.cache", "translation.reference", "templates.file",
                "templates.corrections")


# Inputs that are one file, never a folder (the others may be either: a BBQ folder, a workbook folder, a reference
# release's folder of templates such as EsBBQ's).
FILE_INPUTS = ("translation.cache", "labels.consensus",
               "templates.groups", "templates.newly_created", "templates.corrections", "survey.results",
               "survey.reading", "survey.overrides", "survey.questions")


def _named(pipeline: Pipeline, keys: tuple[str, ...], wrong: Callable[[Path], bool]) -> list[str]:
    """``key = 'value' (path)`` of each input of ``keys`` that the file names and whose path is ``wrong``."""
    values = [(key, getattr(getattr(pipeline.config, key.split(".")[0]), key.split(".")[1])) for key in keys]
    return [f"{key} = {value!r} ({path})" for key, value in values if (path := pipeline.file(value)) and wrong(path)]


def missing_start_inputs(pipeline: Pipeline) -> list[str]:
    """The start inputs the file names that do not exist: a mistyped path, not something people will deliver."""
    return _named(pipeline, START_INPUTS, lambda path: not path.exists())


def check_start_inputs(pipeline: Pipeline) -> None:
    """Before anything runs: every start input named exists, and no one-file input is a folder (else one error)."""
    if missing := missing_start_inputs(pipeline):
        raise UserError(f"{'; '.join(missing)}: does not exist (paths are relative to the pipeline file); "
                        "correct the path", pipeline.path)
    if folders := _named(pipeline, FILE_INPUTS, Path.is_dir):
        raise UserError(f"{'; '.join(folders)}: a folder, where the pipeline reads one file; name the file",
                        pipeline.path)


def load_pipeline(path: Path) -> Pipeline:
    resolved = path.resolve()
    config = load_model(PipelineConfig, path, "pipeline file")
    return Pipeline(resolved, config, pipeline_key(resolved.stem, str(resolved)))


# --- stage state ------------------------------------------------------------------------------

@dataclass
class StageState:
    stage: str
    status: str  # done | waiting | failed
    fingerprint: str = ""
    message: str = ""  # waiting: for what and which command; failed: why; done: a one-line summary
    counts: dict[str, object] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)  # role -> path, relative to the build folder when in it
    finished_at: str = ""
    hashes: dict[str, str] = field(default_factory=dict)  # role -> sha256 of the output as written (a folder: its files)
    parts: dict[str, str] = field(default_factory=dict)  # the fingerprint's parts: inputs, settings, code


REWRITE_HINT = "`kobbq build --force` runs the stage again and rewrites it"


def read_state(folder: Path, stage: str) -> StageState | None:
    """A stage's recorded state; None before it ran; a damaged file is a UserError saying what rewrites it."""
    path = folder / f"{stage}.json"
    if not path.exists():
        return None
    try:
        state = TypeAdapter(StageState).validate_python(read_json(path, "stage-state file"))
    except UserError as error:
        raise UserError(f"{error.message}; {REWRITE_HINT}", error.where) from None
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'file'}: {e['msg']}" for e in exc.errors())
        raise UserError(f"not a stage-state file ({problems}); {REWRITE_HINT}", path) from None
    if state.stage != stage or state.status not in (DONE, WAITING, FAILED):
        raise UserError(f"not the state of stage {stage} (stage {state.stage!r}, status {state.status!r}); "
                        f"{REWRITE_HINT}", path)
    return state


def check_states(folder: Path, stages: list[str], rewrite: bool = False) -> list[Path]:
    """Before a run: a corrupt state file of ``stages`` is an error, or with ``rewrite`` (``--force``) removed so that
    its stage runs again; the files removed."""
    removed = []
    for stage in stages:
        try:
            read_state(folder, stage)
        except UserError:
            if not rewrite:
                raise
            path = folder / f"{stage}.json"
            path.unlink()
            removed.append(path)
    return removed


def write_state(folder: Path, state: StageState) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    state.finished_at = datetime.now(timezone.utc).replace(microsecond=0).isoformat()
    path = folder / f"{state.stage}.json"
    write_text(path, json.dumps(asdict(state), ensure_ascii=False, indent=2, sort_keys=True) + "\n")


def describe(state: StageState | None, fingerprint: str, parts: dict[str, str], problem: str | None = None
             ) -> tuple[str, str]:
    """(status, detail) of a stage for ``kobbq status``, from its fingerprint and ``parts`` now; ``problem``: what is
    wrong with what a done stage made (``core.release_folder.release_problem``)."""
    if state is None:
        return NOT_RUN, ""
    if state.status == DONE and problem is not None:
        return DAMAGED, problem
    if state.status == DONE:
        counts = ", ".join(f"{k} {v}" for k, v in state.counts.items())
        if fingerprint != state.fingerprint:
            changed = [part for part, value in parts.items() if state.parts.get(part) != value] if state.parts else []
            return STALE, (f"{' and '.join(changed) if changed else 'what it reads'} changed since {state.finished_at} "
                           f"(was: {counts})")
        return DONE, f"{counts} ({state.finished_at})"
    return state.status, f"{state.message} ({state.finished_at})"
