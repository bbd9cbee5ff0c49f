"""Evaluating a release in BBQ's own column layout (EsBBQ's and CaBBQ's ``data_xx/<Category>.csv``): its instances as
the sample table the evaluation reads for KoBBQ, with the per-sample attributes the metrics group by. They carry no
KoBBQ-style IDs, so the context and the biased answer come from BBQ's columns and BBQ's own rule
(docs/reference/scoring.md#esbbq-and-cabbq); every instance is evaluated, as its paper does.
"""

from __future__ import annotations

import ast
import csv
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from core.errors import Location, UserError
from core.fingerprint import sha256_file
from core.profile import Profile
from core.text_files import check_input_file
from tasks.release.write import category_file_name, category_folder
from tasks.templates.hooks import names_a_target

COLUMNS = ("instance_id", "template_id", "template_label", "category", "context_condition", "question_polarity",
           "context", "question", "ans0", "ans1", "ans2", "label", "question_type", "stereotyped_groups",
           "answer_info.ans0", "answer_info.ans1")
DISAMBIGUATED = "disambig"
POLARITIES = ("neg", "nonneg")
SUPPORTS_BIASED = "pro-stereo"


def read_samples(path: Path) -> pd.DataFrame:
    """The release's all-samples Parquet file, with a clear error when it is not one of this layout."""
    if not path.exists():
        raise UserError("the release has no sample file in BBQ's column layout", path)
    frame = pd.read_parquet(path)
    missing = [column for column in COLUMNS if column not in frame.columns]
    if missing:
        raise UserError(f"lacks column(s) {', '.join(missing)} of BBQ's column layout", path)
    return frame


Where = Callable[[int, str], Location]  # an instance's row and a column -> where a person finds it


def evaluation_view(samples: pd.DataFrame, profile: Profile, csv_folder: Path
                    ) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """(samples as the evaluation reads them, attributes, notes); a row breaking a rule is named by its CSV row."""
    def where(row: int, column: str) -> Location:  # its row in the release's per-category CSV
        return Location(str(csv_folder / category_file_name(samples["category"].iloc[row])),
                        int(samples["instance_id"].iloc[row]) + 2, column)

    prefix = _prefixes(samples, profile, where)
    polarity = samples["question_polarity"].to_numpy(object)
    condition = samples["context_condition"].to_numpy(object)
    _require_values(polarity, set(POLARITIES), "question_polarity", where)
    _require_values(condition, {"ambig", DISAMBIGUATED}, "context_condition", where)
    answers = samples[["ans0", "ans1", "ans2"]].to_numpy(object)
    rows = np.arange(len(samples))
    answer = answers[rows, _labels(samples["label"], where)]
    stereotyped = stereotyped_choice(samples, where)
    biased = answers[rows, np.where(polarity == "neg", stereotyped, 1 - stereotyped)]
    dis = condition == DISAMBIGUATED
    biased_context = dis & (answer == biased)
    released = dis & (samples["question_type"].to_numpy(object) == SUPPORTS_BIASED)
    disagree = int((dis & (released != biased_context)).sum())
    notes = [f"{disagree:,} disambiguated instance(s) whose released question_type disagrees with their answer_info "
             "were scored by answer_info (see tasks.evaluation.bbq_columns)"] if disagree else []
    view = pd.DataFrame({
        # <category>-<instance_id>-amb|dis-neg|nonneg: readable, and never ending like a choice order (-0/-1/-2)
        "sample_id": (prefix + "-" + samples["instance_id"].astype(str).to_numpy(object) + "-"
                      + np.where(dis, "dis", "amb").astype(object) + "-" + polarity),
        "label_annotation": samples["template_label"].to_numpy(object),
        "context": samples["context"].to_numpy(object),
        "question": samples["question"].to_numpy(object),
        "choices": [repr(list(row)) for row in answers],
        "biased_answer": biased,
        "answer": answer,
    }, dtype=object)
    attributes = pd.DataFrame({"category": prefix,
                               "template": prefix + "-" + samples["template_id"].astype(str).to_numpy(object),
                               "dis": dis, "biased_context": biased_context})
    return view, attributes, notes


def stereotyped_choice(samples: pd.DataFrame, where: Where) -> np.ndarray:
    """0 or 1 per instance: the answer whose answer_info names one of the stereotyped groups (exactly one must)."""
    names = [_names_target(samples[f"answer_info.ans{i}"], samples["stereotyped_groups"]) for i in (0, 1)]
    undecided = names[0] == names[1]
    if undecided.any():
        row = int(np.flatnonzero(undecided)[0])
        raise UserError(f"{'both' if names[0][row] else 'neither'} of ans0 and ans1 name(s) a stereotyped group "
                        f"({list(samples['stereotyped_groups'].iloc[row])}), so no answer is the biased one",
                        where(row, "answer_info"))
    return np.where(names[0], 0, 1)


def _names_target(infos: pd.Series, groups: pd.Series) -> np.ndarray:
    """Does the answer's info (its second item) name one of the row's groups? The generator's own test."""
    return np.array([len(info) > 1 and names_a_target(str(info[1]), set(map(str, targets)))
                     for info, targets in zip(infos, groups)], dtype=bool)


def _prefixes(samples: pd.DataFrame, profile: Profile, where: Where) -> np.ndarray:
    """Each instance's category as the profile's sample prefix (what reports group and name by)."""
    prefixes = {c.name: c.sample_prefix for c in profile.categories}
    category = samples["category"].to_numpy(object)
    unknown = ~np.isin(category, list(prefixes))
    if unknown.any():
        row = int(np.flatnonzero(unknown)[0])
        raise UserError(f"category {category[row]!r} is not one of profile {profile.name}'s", where(row, "category"))
    return np.array([prefixes[name] for name in category], dtype=object)


def _require_values(values: np.ndarray, allowed: set[str], column: str, where: Where) -> None:
    bad = ~np.isin(values, sorted(allowed))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise UserError(f"{column} is {values[row]!r}, not one of {sorted(allowed)}", where(row, column))


def _labels(labels: pd.Series, where: Where) -> np.ndarray:
    numbers = pd.to_numeric(labels, errors="coerce").to_numpy(np.float64)
    bad = ~np.isin(numbers, [0, 1, 2])
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise UserError(f"label is {str(labels.iloc[row])!r}, not 0, 1 or 2", where(row, "label"))
    return numbers.astype(np.int64)


@dataclass
class CategoryFiles:
    """EsBBQ-style per-category files of a downloaded release: where they are, which, and their samples."""

    folder: Path
    files: list[Path]
    samples: pd.DataFrame

    @property
    def digest(self) -> str:
        """One sha256 for the set: of the files' names and sha256s, in profile order."""
        lines = "".join(f"{sha256_file(path)}  {path.name}\n" for path in self.files)
        return hashlib.sha256(lines.encode("utf-8")).hexdigest()


def find_category_files(folder: Path, profile: Profile) -> tuple[Path, list[Path]]:
    """The profile's ``<Category>.full.csv`` files, in ``folder/data_xx`` (a downloaded repository) or in ``folder``
    itself (its ``data_xx`` folder), in profile order; at least one must be there."""
    for place in (folder / category_folder(profile.language), folder):
        files = [place / category_file_name(name) for name in profile.category_names
                 if (place / category_file_name(name)).is_file()]
        if files:
            return place, files
    expected = ", ".join(category_file_name(name) for name in profile.category_names[:3])
    raise UserError(f"no per-category file of profile {profile.name} here or in its {category_folder(profile.language)}/ "
                    f"({expected}, ...)", folder)


def read_category_files(folder: Path, profile: Profile) -> CategoryFiles:
    """Every per-category file, list columns parsed (as a build's Parquet holds them), in one frame."""
    place, files = find_category_files(folder, profile)
    fmt = profile.templates.workbook
    lists = set(fmt.list_columns) if fmt is not None else set()
    frames = [_read_category_csv(path, lists) for path in files]
    return CategoryFiles(place, files, pd.concat(frames, ignore_index=True))


def _read_category_csv(path: Path, list_columns: set[str]) -> pd.DataFrame:
    """One file; a missing column or a list cell that is not a list literal is an error at its line."""
    check_input_file(path)
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None:
            raise UserError("is empty", path)
        missing = [column for column in COLUMNS if column not in header]
        if missing:
            raise UserError(f"lacks column(s) {', '.join(missing)} of BBQ's column layout", Location(str(path), 1))
        parsed = [i for i, name in enumerate(header) if name in list_columns]
        rows, line = [], reader.line_num
        for row in reader:
            if len(row) != len(header):
                raise UserError(f"has {len(row)} cells, the header {len(header)}", Location(str(path), line + 1))
            for i in parsed:
                row[i] = _list_cell(row[i], Location(str(path), line + 1, header[i]))
            rows.append(row)
            line = reader.line_num
    return pd.DataFrame(rows, columns=header, dtype=object)


def _list_cell(text: str, where: Location) -> list[str]:
    try:
        value = ast.literal_eval(text) if text else []
    except (ValueError, SyntaxError):
        value = None
    if not isinstance(value, list):
        raise UserError(f"{text[:60]!r} is not a list literal", where)
    return [str(item) for item in value]
