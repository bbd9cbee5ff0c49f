"""The whole pipeline's configuration and the state of each stage, kept beside the release.

A pipeline file (TOML) names the inputs of every stage, relative to itself: the English BBQ
templates, the annotators' labels and their consensus, the translation cache and the
translator's returned workbooks, the template groups and newly-created templates, the survey
results. A stage whose inputs are all there runs; the first stage that waits for people stops
the pipeline with what it waits for and the command that produces what to send out.

Each stage records its state in ``<out>/<name>.pipeline/<stage>.json``: done (with counts and
when), waiting (for what), or failed (why), and the fingerprint of everything it read. A stage
whose fingerprint is unchanged is not run again; ``kobbq status`` compares fingerprints to tell
a done stage from a stale one. Real-data mode: ``labels.reference`` and
``translation.reference`` take a released template file as the labels and the post-edit.
"""

from __future__ import annotations

import glob
import json
import tomllib
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from core.errors import UserError
from core.atomic import write_text
from core.profile import is_profile_path

STAGES = ["labels", "pretranslate", "postedit", "templates", "survey-export", "survey", "release"]
DONE, WAITING, FAILED, STALE, NOT_RUN = "done", "waiting", "failed", "stale", "not run"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LabelsSection(_Section):
    bbq: str = ""  # folder (or file) of English BBQ templates
    annotations: list[str] = []  # annotator workbooks or CSVs (glob patterns); optional
    consensus: str = ""  # final label per BBQ template
    reference: str = ""  # real-data mode: a released KoBBQ template file whose BBQ links give the labels


class TranslationSection(_Section):
    cache: str = ""  # a recorded translation cache to start from (copied into the work folder)
    returned: str = ""  # folder where the translator's returned workbooks are put
    reference: str = ""  # real-data mode: a released KoBBQ template file taken as the post-edit


class TemplatesSection(_Section):
    groups: str = ""  # per template row: N1_info, N2_info, Target_group, Reference
    newly_created: str = ""  # NC templates written directly in the target language
    corrections: str = ""


class SurveySection(_Section):
    results: str = ""
    reading: str = ""
    overrides: str = ""
    questions: str = ""
    allow_unmatched: bool = False  # results that match no template: an error unless the templates are survivors


class PipelineConfig(_Section):
    profile: str = "ko"  # a shipped profile's name, or the path of a profile file relative to the pipeline file
    name: str = ""  # release folder name; default: the profile's release name
    seed: int | None = None
    # "profile": the test split's IDs the profile lists (ko: the official split), else one fill per template row
    # drawn with the seed; "seeded": the seeded draw although the profile lists IDs (tasks/release/test_split.py).
    test_split: str = Field("profile", pattern="^(profile|seeded)$")
    labels: LabelsSection = LabelsSection()
    translation: TranslationSection = TranslationSection()
    templates: TemplatesSection = TemplatesSection()
    survey: SurveySection = SurveySection()


@dataclass(frozen=True)
class Pipeline:
    path: Path
    config: PipelineConfig

    def file(self, value: str) -> Path | None:
        """A configured path, resolved against the pipeline file's folder; None when not configured."""
        return (self.path.parent / value).resolve() if value else None

    def files(self, patterns: list[str]) -> list[Path]:
        found = set()
        for pattern in patterns:
            found.update(Path(p).resolve() for p in glob.glob(str(self.path.parent / pattern)))
        return sorted(found)

    @property
    def profile(self) -> str:
        """The profile as the pipeline file names it: a shipped profile's name as written, a profile path resolved
        against the pipeline file's folder like every other path in it."""
        value = self.config.profile
        return str(self.file(value)) if is_profile_path(value) else value

    @property
    def reference_mode(self) -> bool:
        return bool(self.config.translation.reference)


def load_pipeline(path: Path) -> Pipeline:
    if not path.exists():
        raise UserError("pipeline file does not exist", path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        return Pipeline(path.resolve(), PipelineConfig.model_validate(data))
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"not valid TOML: {exc}", path) from None
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise UserError(f"invalid pipeline file: {problems}", path) from None


# --- stage state ------------------------------------------------------------------------------

@dataclass
class StageState:
    stage: str
    status: str  # done | waiting | failed
    fingerprint: str = ""
    message: str = ""  # waiting: for what and which command; failed: why; done: a one-line summary
    counts: dict[str, object] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)  # role -> path
    finished_at: str = ""


def read_state(folder: Path, stage: str) -> StageState | None:
    path = folder / f"{stage}.json"
    if not path.exists():
        return None
    return StageState(**json.loads(path.read_text(encoding="utf-8")))


def write_state(folder: Path, state: StageState) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    state.finished_at = datetime.now(timezone.utc).replace(microsecond=0).isoformat()
    path = folder / f"{state.stage}.json"
    write_text(path, json.dumps(asdict(state), ensure_ascii=False, indent=2, sort_keys=True) + "\n")


def is_current(state: StageState | None, current: str) -> bool:
    """Done with the same inputs, and every output it recorded still there."""
    return (state is not None and state.status == DONE and state.fingerprint == current
            and all(Path(p).exists() for p in state.outputs.values()))


def describe(state: StageState | None, current: str | None) -> tuple[str, str]:
    """(status, detail) of a stage for ``kobbq status``."""
    if state is None:
        return NOT_RUN, ""
    if state.status == DONE:
        counts = ", ".join(f"{k} {v}" for k, v in state.counts.items())
        if current is not None and current != state.fingerprint:
            return STALE, f"inputs changed since {state.finished_at} (was: {counts})"
        return DONE, f"{counts} ({state.finished_at})"
    return state.status, f"{state.message} ({state.finished_at})"
