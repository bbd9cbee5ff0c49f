"""Group lists per category: the options of a type-1 question, and which of them count.

A profile's list lives in ``core/profiles/<profile>/survey/groups.csv`` with columns ``category, group,
world_region``. ``world_region`` is set for a country shown under a world region (race: "US"
under "North America"); such a group is shown as an option but not counted in the equal share
of the type-1 rule, so that 37 race groups count as 19 (+ the "no stereotype" option).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from core.errors import Location, UserError
from core.tables import read_csv_table
from core.profile import Profile
from core.text import normalise_text
from tasks.templates.load import TemplateRow
from tasks.templates.versions import group_names

GROUP_COLUMNS = ["category", "group", "world_region"]


def norm(text: str) -> str:
    """NFC + collapsed whitespace, the form in which stereotypes and groups are compared."""
    return normalise_text(text)[0]


def group_key(label: str) -> tuple[str, ...]:
    """A group label as a set of names (``tasks.templates.versions.group_names``): "a, b" and "b, a" are one group."""
    return group_names(label)


def row_groups(row: TemplateRow) -> tuple[set[str], set[str]]:
    """The groups a template row targets, and the other groups its two people (N1_info, N2_info) belong to."""
    targets = set(group_key(row.target_group))
    return targets, set().union(*(group_key(row.columns.get(c, "")) for c in ("N1_info", "N2_info"))) - targets


@dataclass(frozen=True)
class GroupList:
    category: str
    groups: tuple[str, ...]  # in questionnaire order
    world_region: dict[str, str]  # country -> the world-region option it belongs to

    @property
    def counted(self) -> tuple[str, ...]:
        return tuple(g for g in self.groups if not self.world_region.get(g))

    def counting_options(self, count_no_stereotype: bool) -> int:
        return len(self.counted) + (1 if count_no_stereotype else 0)


def profile_survey_dir(profile: Profile) -> Path:
    return profile.file("survey")


def type1_group_list(category: str, stereotype: str, lists: dict[str, GroupList], profile: Profile) -> GroupList:
    """A type-1 question offers its category's whole group list and the rule counts its options: without a list in
    the profile the question can be neither asked nor judged, which is a profile error, not a drop."""
    if category not in lists:
        raise UserError(f"type-1 stereotype '{stereotype}' in {category}, but the profile has no group list for "
                        f"{category}", profile_survey_dir(profile) / "groups.csv")
    return lists[category]


def load_group_lists(path: Path, profile: Profile) -> dict[str, GroupList]:
    ordered: dict[str, list[str]] = {}
    regions: dict[str, dict[str, str]] = {}
    for number, row in read_csv_table(path, GROUP_COLUMNS, "a group list file"):
        category, group, region = norm(row["category"]), norm(row["group"]), norm(row["world_region"])
        if profile.category(category) is None:
            raise UserError(f"unknown category {category!r}", Location(str(path), number, "category"))
        if not group:
            raise UserError("empty group name", Location(str(path), number, "group"))
        if group in ordered.get(category, []):
            raise UserError(f"group {group!r} listed twice for {category}", Location(str(path), number, "group"))
        ordered.setdefault(category, []).append(group)
        if region:
            regions.setdefault(category, {})[group] = region
    lists = {c: GroupList(c, tuple(g), regions.get(c, {})) for c, g in ordered.items()}
    for category, group_list in lists.items():
        for country, region in group_list.world_region.items():
            if region not in group_list.groups or group_list.world_region.get(region):
                raise UserError(f"{country!r} is placed under {region!r}, which is not a world-region option of {category}",
                                path)
    return lists


def profile_group_lists(profile: Profile) -> dict[str, GroupList]:
    return load_group_lists(profile_survey_dir(profile) / "groups.csv", profile)
