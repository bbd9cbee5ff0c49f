"""Which samples form a release's test split: the IDs its profile lists, or one fill per row drawn with the seed
(``docs/guides/rebuild-kobbq.md``). A drawn split shares only 592 of the official 2,280 samples, so a listed split
has exactly its IDs, in the list's order, or the build stops at the first ID the templates do not produce; what
chose the split is recorded, and nothing falls back silently.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from core.errors import Location, UserError
from core.profile import Profile
from core.text_files import read_text
from tasks.templates.validate import template_format
from tasks.templates.sample_ids import ANY_FILL_SAMPLE_ID, QUESTION_SUFFIXES, fill_number, row_prefix
from tasks.templates.load import TemplateRow

PROFILE, SEEDED = "profile", "seeded"  # what a build may ask for
CHOICES = (PROFILE, SEEDED)
LISTED, NONE = "listed", "none"  # what a release may have besides SEEDED
FIX = ('to draw one fill per template row with the seed instead, give --test-split seeded (in a pipeline file: '
       'test_split = "seeded")')


@dataclass(frozen=True)
class TestSplit:
    """A release's test split, ``listed``, ``seeded`` or ``none`` (a generated release), and what chose it."""

    method: str
    seed: int
    chosen_by: str
    ids_file: Path | None = None

    def describe(self, samples: int) -> str:
        """One sentence for Table 1 and the audit report."""
        if self.method == LISTED:
            assert self.ids_file is not None
            return (f"{samples:,} samples, exactly the IDs listed in {self.ids_file.name}, in that file's order "
                    f"({self.chosen_by}).")
        if self.method == SEEDED:
            return (f"{samples:,} samples, the four of one fill per template row drawn with seed {self.seed} "
                    f"({self.chosen_by}).")
        return f"none: the release is evaluated on all its samples ({self.chosen_by})."

    def manifest(self, samples: int) -> dict[str, object]:
        entry: dict[str, object] = {"method": self.method, "chosen_by": self.chosen_by, "samples": samples,
                                    "description": self.describe(samples)}
        if self.method == SEEDED:
            entry["seed"] = self.seed
        if self.ids_file is not None:
            entry["ids_file"] = self.ids_file.name
        return entry


def choose_test_split(profile: Profile, asked: str, seed: int) -> TestSplit:
    """The split a build of ``profile`` gets when it asks for ``asked`` (``profile`` or ``seeded``)."""
    if asked not in CHOICES:
        raise UserError(f"test split {asked!r}: choose {' or '.join(CHOICES)}")
    if template_format(profile).generated:
        return TestSplit(NONE, seed, f"profile {profile.name} generates its release, which has no test split")
    if asked == SEEDED:
        unused = f"; profile {profile.name} lists test-split IDs, not used" if profile.files.test_split else ""
        return TestSplit(SEEDED, seed, f"asked for by the build: test split seeded{unused}")
    if not profile.files.test_split:
        return TestSplit(SEEDED, seed, f"profile {profile.name} lists no test-split IDs")
    path = profile.file("test_split")
    if not path.is_file():
        raise UserError(f"profile {profile.name} names its test split's IDs ([files] test_split = "
                        f"{profile.files.test_split!r}), but the file is not there", path)
    return TestSplit(LISTED, seed, f"profile {profile.name}, [files] test_split", path)


@dataclass(frozen=True)
class ListedId:
    line: int
    sample_id: str


def read_listed_ids(path: Path) -> list[ListedId]:
    """One sample ID a line (blank lines ignored); a repeated ID is an error naming both lines."""
    ids: list[ListedId] = []
    seen: dict[str, int] = {}
    for line, text in enumerate(read_text(path, "sample ID list").splitlines(), start=1):
        sample_id = text.strip()
        if not sample_id:
            continue
        if sample_id in seen:
            raise UserError(f"test-split ID {sample_id!r} is listed twice (first on line {seen[sample_id]})",
                            Location(str(path), line))
        seen[sample_id] = line
        ids.append(ListedId(line, sample_id))
    if not ids:
        raise UserError("lists no test-split IDs", path)
    return ids


def listed_fills(templates: list[TemplateRow], fills: list[int], profile: Profile, path: Path,
                 partial: bool = False) -> tuple[list[int], list[int]]:
    """Per template row its listed fill (all four samples), and each test sample's position in the list (in release
    order). An ID the templates do not produce, or a row with none listed, is an error naming the line or row
    (``partial``: a twin's subset, listed rows it lacks skipped)."""
    listed = read_listed_ids(path)
    rows = {row_prefix(template, profile): index for index, template in enumerate(templates)}
    by_row: dict[int, dict[int, dict[str, int]]] = defaultdict(lambda: defaultdict(dict))
    foreign: list[tuple[ListedId, str]] = []
    for position, entry in enumerate(listed):
        match = re.match(ANY_FILL_SAMPLE_ID, entry.sample_id)
        index = rows.get(match["row"]) if match else None
        if match is None:
            foreign.append((entry, "not <category>-<number><version>-<fill>-amb|dis-bsd|cnt"))
        elif index is None:
            if not partial:
                foreign.append((entry, f"the templates have no row {match['row']} (removed since the list was "
                                       "made, or dropped by an earlier stage?)"))
        elif fill_number(int(match["fill"])) != match["fill"] or not 1 <= int(match["fill"]) <= fills[index]:
            foreign.append((entry, f"template row {match['row']} has fills {fill_number(1)}-"
                                   f"{fill_number(fills[index])}"))
        else:
            by_row[index][int(match["fill"])][f"{match['context']}-{match['question']}"] = position
    if foreign:
        first, why = foreign[0]
        names = sorted({Path(template.source).name for template in templates})
        raise UserError(f"{len(foreign):,} of the {len(listed):,} listed test-split IDs are not samples of the "
                        f"templates ({', '.join(names) or 'none'}; first: {first.sample_id!r}: {why}); {FIX}",
                        Location(str(path), first.line))
    return _one_fill_per_row(templates, by_row, listed, path)


def _one_fill_per_row(templates: list[TemplateRow], by_row: dict[int, dict[int, dict[str, int]]],
                      listed: list[ListedId], path: Path) -> tuple[list[int], list[int]]:
    unlisted = [template for index, template in enumerate(templates) if index not in by_row]
    if unlisted:
        first = unlisted[0]
        raise UserError(f"{len(unlisted):,} template row(s) have no sample in the test-split list {path.name} "
                        f"(first: {first.category} {first.template_id} {first.version}); a test split has one fill "
                        f"of every template row; {FIX}", first.where())
    fills, order = [], []
    for index in range(len(templates)):
        chosen = by_row[index]
        fill, samples = next(iter(chosen.items()))
        if len(chosen) > 1 or len(samples) < len(QUESTION_SUFFIXES):
            line = listed[max(p for s in chosen.values() for p in s.values())].line
            what = (f"fills {', '.join(fill_number(f) for f in sorted(chosen))}" if len(chosen) > 1 else
                    f"{len(samples)} of the 4 samples of fill {fill_number(fill)} (not "
                    f"{', '.join(s for s in QUESTION_SUFFIXES if s not in samples)})")
            row = templates[index]
            raise UserError(f"lists {what} of template row {row.category} {row.template_id} {row.version}: a test "
                            "split has the four samples of one fill per template row", Location(str(path), line))
        fills.append(fill)
        order.extend(samples[suffix] for suffix in QUESTION_SUFFIXES)
    return fills, order
