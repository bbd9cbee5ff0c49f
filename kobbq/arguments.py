"""Options several commands share, declared once so that one concept has one name everywhere (a renamed option keeps its
old spelling as a hidden alias), and argument types that refuse an impossible value (``--bootstrap -1``, an endpoint
without ``http://``) in one line naming the option, before anything is read, started or sent."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from core.errors import UserError
from core.paths import PROFILE_DIR, PROJECT_ROOT
from core.profile import DEFAULT_PROFILE, Profile, load_profile


def whole_number(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, not {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, not {value}")
        return value

    return parse


def real_number(minimum: float = 0.0, above: bool = False) -> Callable[[str], float]:
    """A finite number of at least ``minimum`` (more than ``minimum`` with ``above``)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, not {text!r}") from None
        if not math.isfinite(value) or value < minimum or (above and value == minimum):
            bound = f"more than {minimum:g}" if above else f"at least {minimum:g}"
            raise argparse.ArgumentTypeError(f"must be a finite number {bound}, not {text}")
        return value

    return parse


def http_url(text: str) -> str:
    """An http(s) URL with a host and, if any, a valid port: an API's base URL."""
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 (raises ValueError on a port that is not a number or out of range)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a URL ({exc}): {text!r}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(f"expected an http:// or https:// URL such as http://127.0.0.1:8000/v1, "
                                         f"not {text!r}")
    return text


def shown(path: Path) -> str:
    """A default path as ``--help`` shows it: relative to the project's folder when it is in it."""
    return str(path.relative_to(PROJECT_ROOT)) if path.is_relative_to(PROJECT_ROOT) else str(path)


# Where the survey stage finds a culture's curated overrides when none is given (tasks.survey.inputs).
OVERRIDES_HELP = ("curated survey overrides CSV (default: overrides.csv in the profile's survey folder, when it "
                  f"exists; ko: {shown(PROFILE_DIR / 'ko' / 'survey' / 'overrides.csv')})")

POSITIVE = whole_number(1)  # counts of things that must happen at least once: requests in flight, tokens, shards
NOT_NEGATIVE = whole_number(0)  # seeds, retries, resamples (0: none)


def blank(path: Path | None) -> str:
    """An optional file as a pipeline file's section holds it: its path, or "" for none."""
    return "" if path is None else str(path)


def prompt_ids(text: str) -> list[int]:
    """``3`` or ``1,2,3``: prompt ids (the prompt table's ``prompt_id``), each at least 1."""
    try:
        ids = [POSITIVE(part) for part in text.split(",") if part.strip()]
    except argparse.ArgumentTypeError:
        ids = []
    if not ids:
        raise argparse.ArgumentTypeError(f"prompt ids are whole numbers of at least 1, e.g. 2 or 1,2,3; "
                                         f"not {text!r}")
    return ids


class PromptIds(argparse.Action):
    """``--prompt 1 --prompt 3`` and ``--prompt 1,3`` as one sorted list: the prompts are asked in the table's order."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        given = values if self.nargs is None else [number for part in values for number in part]
        setattr(namespace, self.dest, sorted({*(getattr(namespace, self.dest, None) or ()), *given}))


def add_hidden_alias(parser: argparse.ArgumentParser | argparse._ArgumentGroup, old: str,
                     action: argparse.Action, **changes) -> None:
    """``old``, an option's spelling before it was renamed, still parsed but not shown: old scripts keep working."""
    kwargs = {"dest": action.dest, "type": action.type, "nargs": action.nargs, "metavar": action.metavar,
              "action": type(action), "choices": action.choices, **changes}
    parser.add_argument(old, default=argparse.SUPPRESS, help=argparse.SUPPRESS,
                        **{key: value for key, value in kwargs.items() if value is not None})


def add_prompt_table(parser: argparse.ArgumentParser) -> None:
    """``--prompt-table FILE`` (``eval prepare``, ``eval score``; ``args.prompts``), formerly ``--prompts``."""
    table = parser.add_argument("--prompt-table", dest="prompts", type=Path, default=None, metavar="FILE",
                                help="prompt table TSV (default: the one the release's profile names, "
                                     "[files] evaluation_prompts)")
    add_hidden_alias(parser, "--prompts", table)


def add_prompt_selection(parser: argparse.ArgumentParser, old: str, dest: str, **old_changes) -> None:
    """``--prompt ID``, repeatable or comma-separated, into ``args.<dest>``; ``old``: the command's former spelling."""
    chosen = parser.add_argument("--prompt", dest=dest, type=prompt_ids, action=PromptIds, default=None,
                                 metavar="ID[,ID...]",
                                 help="only these prompts of the table (repeat it, or 1,2,3; default: all of them)")
    add_hidden_alias(parser, old, chosen, **old_changes)


PROFILE_HELP = (f"culture profile name or .toml path (default: the one the inputs record, else {DEFAULT_PROFILE}, "
                "said in one line)")


def add_profile(parser: argparse.ArgumentParser, help: str = PROFILE_HELP) -> None:
    """``--profile``: None when not given, so that a command can take it from its inputs, or say which default."""
    parser.add_argument("--profile", default=None, help=help)


def profile_of(args: argparse.Namespace, recorded: str | None = None) -> Profile:
    """The profile the command was given, else the one its inputs record (``recorded``), else the default, said
    in one line: a command never becomes KoBBQ without a word. Loaded once per command."""
    if args.profile is None and recorded is None:  # on stdout, with what the command reports: stderr is for errors
        print(f"profile: {DEFAULT_PROFILE} (the default; --profile NAME or --profile path/to/xx.toml for another "
              "culture)")
    return load_profile(args.profile or recorded or DEFAULT_PROFILE)


def default_said(what: str, value: Path, option: str) -> Path:
    """A default input a command falls back on, said in one line (the embedded example's files are Korean)."""
    print(f"{option}: {shown(value)} ({what}; {option} FILE for yours)")
    return value


def add_quiet(parser: argparse.ArgumentParser) -> None:
    """``--quiet`` of a command that prints progress lines (``kobbq.cli.main`` applies it to ``core.console``)."""
    parser.add_argument("--quiet", action="store_true", help="no progress lines")


def release_of(args: argparse.Namespace, prepared: Path | None = None) -> Path:
    """``--release``, else the release the prepared folder records (``prepared.json``), else the one a build of
    ``--profile`` writes, said in one line: a command never reads build/KoBBQ without a word."""
    if args.release is not None:
        return args.release
    if prepared is not None and (prepared / "prepared.json").is_file():  # relative to the folder
        from core.text_files import read_json

        summary = read_json(prepared / "prepared.json", "prepared summary")
        release = summary.get("release") if isinstance(summary, dict) else None
        if isinstance(release, str):
            return prepared / release
    from tasks.audit.fates import default_release  # reads the profile

    folder = default_release(getattr(args, "profile", None))
    print(f"--release: {folder} (the release `kobbq build` writes for this profile; --release DIR for another)")
    return folder


def add_corrections(parser: argparse.ArgumentParser, without: str, applied_to: str = "before validation") -> None:
    """``--corrections FILE`` and ``--no-corrections`` (``without``: what the command then does)."""
    parser.add_argument("--corrections", type=Path, default=None,
                        help=f"corrections CSV applied {applied_to} (default: the profile's corrections.csv)")
    parser.add_argument("--no-corrections", action="store_true", help=without)


def corrections_file(args: argparse.Namespace, profile: Profile) -> Path | None:
    """--corrections, else the profile's corrections file when it has one; none with --no-corrections."""
    if getattr(args, "no_corrections", False):
        return None
    if args.corrections is not None:
        if not args.corrections.exists():
            raise UserError("corrections file does not exist", args.corrections)
        return args.corrections
    return profile.existing_file("corrections")
