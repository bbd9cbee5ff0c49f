"""The release checks' rules that need more than one column or more than one row (the answer among the choices,
an ambiguous sample answered "unknown", four samples per fill, counts per category), computed as boolean columns
that the suite (``tasks.release.checks``) expects to be all true, so Great Expectations reports how many rows
break each and which. Pandas, NumPy and Arrow only: each rule is tested without Great Expectations, and none loops
over the rows in Python.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from tasks.release.write import parse_list_literal


def _choice_matrix(choices: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Each row's choices as a row of a matrix (padded with a value equal to nothing), and per row whether it
    holds three distinct choices. Each distinct list literal is parsed once: there are few (one per pair of
    answers), so no rule below loops over the rows in Python."""
    codes, literals = pd.factorize(choices)  # a missing literal gets code -1: the last, empty row below
    parsed = [parse_list_literal(literal) for literal in literals]
    width = max((len(items) for items in parsed), default=0)
    matrix = np.full((len(parsed) + 1, max(width, 1)), _NOTHING, dtype=object)
    for row, items in enumerate(parsed):
        matrix[row, :len(items)] = items
    distinct = np.array([len(items) == 3 and len(set(items)) == 3 for items in parsed] + [False])
    return matrix[codes], distinct[codes]


class _Nothing:
    """Pads a short list of choices: equal to no answer."""


_NOTHING = _Nothing()


def _in_row(values: pd.Series, matrix: np.ndarray) -> np.ndarray:
    return (matrix == values.to_numpy(dtype=object)[:, None]).any(axis=1)


def _group_sizes(keys: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray, pa.Array]:
    """Per row: its group's code and the group's size; and the groups (computed in Arrow: the keys of a large
    release as Python strings would cost more than a batch of its rows)."""
    encoded = pc.dictionary_encode(keys.fill_null("")).combine_chunks()
    codes = encoded.indices.to_numpy()
    return codes, np.bincount(codes, minlength=len(encoded.dictionary)), encoded.dictionary


def row_rules_all(batch: pd.DataFrame, unknown: str) -> dict[str, np.ndarray]:
    """The cross-column rules a row of the full set obeys on its own (true = it does)."""
    matrix, distinct = _choice_matrix(batch["choices"])
    return {"three_distinct_choices": distinct,
            "answer_in_choices": _in_row(batch["answer"], matrix),
            "biased_answer_in_choices": _in_row(batch["biased_answer"], matrix),
            "answer_unknown_iff_ambiguous": ((batch["answer"] == unknown) == batch["sample_id"].str.contains("-amb-")
                                             ).to_numpy(dtype=bool)}


def id_rules_all(ids: pa.ChunkedArray, expected_by_prefix: dict[str, int]) -> dict[str, np.ndarray]:
    """The rules of the full set that count its rows (per fill, per category), from its IDs alone."""
    fill_codes, fill_sizes, _ = _group_sizes(pc.utf8_slice_codeunits(ids, 0, -8))
    prefix_codes, prefix_sizes, prefixes = _group_sizes(
        pc.replace_substring_regex(ids, pattern="(?s)-.*", replacement="", max_replacements=1))
    category_ok = np.array([size == expected_by_prefix.get(prefix, -1)
                            for prefix, size in zip(prefixes.to_pylist(), prefix_sizes)], dtype=bool)
    return {"four_samples_per_fill": fill_sizes[fill_codes] == 4,
            "category_count_matches_manifest": category_ok[prefix_codes]}


def id_rules_test(ids: pa.ChunkedArray, all_ids: pa.ChunkedArray) -> dict[str, np.ndarray]:
    """The test split's rules, from its IDs and the full set's."""
    row_codes, row_sizes, _ = _group_sizes(pc.list_element(pc.split_pattern(ids, "-", max_splits=3, reverse=True), 0))
    # The full set is looked up in the (small) test split, not the other way: a hash table of the test IDs only.
    found = pc.unique(all_ids.filter(pc.is_in(all_ids, value_set=ids.combine_chunks())).combine_chunks())
    known = pc.is_in(ids, value_set=found)
    return {"in_all_samples": known.fill_null(False).to_numpy(zero_copy_only=False),
            "four_samples_per_template_row": row_sizes[row_codes] == 4}


def whole_set_frame(ids: pa.ChunkedArray) -> pd.DataFrame:
    """What the whole-set expectations (row count, unique IDs) run on, without the set's IDs as Python strings
    (~100 bytes each): a frame of the set's length whose ``sample_id`` holds only the IDs that occur more than
    once, in their rows, and nothing elsewhere. Great Expectations leaves missing values out of a column's
    uniqueness, so this gives the whole column's result (its count and first examples; a missing ID is the null
    check's)."""
    codes, sizes, _ = _group_sizes(ids)
    repeated = np.flatnonzero((sizes[codes] > 1) & ids.is_valid().to_numpy(zero_copy_only=False))
    column = np.full(len(ids), None, dtype=object)
    column[repeated] = ids.take(pa.array(repeated)).to_pylist()
    return pd.DataFrame({"sample_id": column})


RULES_ALL = {
    "three_distinct_choices": "every sample has three distinct choices",
    "answer_in_choices": "the answer is one of the choices",
    "biased_answer_in_choices": "the biased answer is one of the choices",
    "answer_unknown_iff_ambiguous": "ambiguous samples, and only they, are answered with the unknown expression",
    "four_samples_per_fill": "every fill has its four samples",
    "category_count_matches_manifest": "samples per category equal the manifest",
}


def derived_generated(frame: pd.DataFrame, unknown: str, expected_by_category: dict[str, int]) -> pd.DataFrame:
    """A generated release (per-category layout) plus its cross-column rules as boolean columns."""
    first, second, third = (frame[column].astype(str) for column in ("ans0", "ans1", "ans2"))
    ambiguous = frame["context_condition"] == "ambig"
    counts = frame["category"].value_counts()
    count_ok = {category: count == expected_by_category.get(category, -1) for category, count in counts.items()}
    numbering = frame.groupby("category", sort=False).cumcount()
    return frame.assign(
        instance_key=frame["category"].astype(str) + "#" + frame["instance_id"].astype(str),
        three_distinct_answers=(first != second) & (second != third) & (first != third),
        unknown_is_third_answer=frame["ans2"] == unknown,
        label_unknown_iff_ambiguous=(frame["label"] == 2) == ambiguous,
        label_in_range=frame["label"].isin([0, 1, 2]),
        instances_numbered_in_order=frame["instance_id"] == numbering,
        category_count_matches_manifest=frame["category"].map(count_ok),
    )


RULES_GENERATED = {
    "three_distinct_answers": "every instance has three distinct answers",
    "unknown_is_third_answer": "the third answer is always the unknown expression",
    "label_unknown_iff_ambiguous": "ambiguous instances, and only they, are labelled with the unknown answer",
    "label_in_range": "the label is 0, 1 or 2",
    "instances_numbered_in_order": "instance_id numbers each category 0, 1, 2, ... in file order",
    "category_count_matches_manifest": "instances per category equal the manifest",
}
VALUED_GENERATED = ["context", "question", "ans0", "ans1", "ans2", "category", "flipped"]


RULES_TEST = {
    "in_all_samples": "every test sample is in the full release",
    "four_samples_per_template_row": "the test split has four samples per template row",
}


def staged_frame(table: pa.Table) -> pd.DataFrame:
    """Staged rows as a frame, with ``choices`` back in the list-literal form of the TSV files."""
    frame = table.drop_columns(["choices"]).to_pandas()
    frame.insert(table.schema.get_field_index("choices"), "choices", choice_literals(table.column("choices")))
    return frame


def choice_literals(choices: pa.ChunkedArray) -> pd.api.extensions.ExtensionArray:
    """Each row's list as the TSV's Python literal, made once per distinct list (there are few). Lists are
    told apart in Arrow by their items written as netstrings (``length:text``), which no text can forge;
    a missing list, or one with a missing item, has no literal."""
    lists = choices.combine_chunks()
    items = lists.flatten()
    netstrings = pc.binary_join_element_wise(pc.cast(pc.utf8_length(items), pa.string()), items, ":")
    keys = pc.binary_join(pa.ListArray.from_arrays(pc.subtract(lists.offsets, lists.offsets[0]), netstrings,
                                                   mask=lists.is_null()), "")
    codes, distinct = pd.factorize(keys.to_numpy(zero_copy_only=False))
    found, first = np.unique(codes, return_index=True)
    first = first[found >= 0]
    literals = np.array([repr([str(c) for c in lists[int(row)].as_py()]) for row in first] + [None], dtype=object)
    return pd.array(literals[codes], dtype="str")
