"""Where the project's own files are: the embedded example, the default build folder."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
TEMPLATES_RAW = PROJECT_ROOT / "templates_raw"
EXAMPLE_DIR = TEMPLATES_RAW / "example"
EXAMPLE_TEMPLATES = EXAMPLE_DIR / "kobbq_example_templates.tsv"
EXAMPLE_PIPELINE = EXAMPLE_DIR / "pipeline.toml"
PROFILE_DIR = PROJECT_ROOT / "core" / "profiles"
DEFAULT_CORRECTIONS = PROFILE_DIR / "ko" / "corrections.csv"  # the ko profile's; the embedded example uses it
DEFAULT_BUILD_DIR = Path("build")
# The Jinja templates of the dataset card and of the audit page (the release stage's contract names them).
CARD_TEMPLATES = PROJECT_ROOT / "tasks" / "release" / "templates"
AUDIT_TEMPLATES = PROJECT_ROOT / "tasks" / "audit" / "templates"


def relative_path(path: Path | str, folder: Path) -> str:
    """``path`` as a file in ``folder`` names it (``../KoBBQ``): what an output records of another file, so that the
    output is the same wherever the two are, as long as they keep their places beside each other."""
    return Path(os.path.relpath(Path(path).resolve(), Path(folder).resolve())).as_posix()
