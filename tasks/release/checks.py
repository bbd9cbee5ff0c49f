"""The release checks: a Great Expectations suite run on the staged release in a child process (``check_child``).

The rules over several columns or rows are boolean columns expected to be all true (computed in pandas, NumPy and
Arrow, never row by row), so Great Expectations names the rows that break them; the staged Parquet is read a batch of
rows at a time, so that no process's memory grows with the release.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import json
import logging
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from importlib.machinery import ModuleSpec, PathFinder
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tasks.release.check_child import (IMPORT_FAILED, OS_ERROR_EXIT, PROGRESS, READY, REPORTED, WAIT_FOR_JOB,
                                       CheckOutcome, ValidationReport, os_error_line, write_results)
from tasks.release.write import PARQUET_ROW_GROUP, parse_list_literal, release_arrow_memory
from tasks.templates.sample_ids import SAMPLE_ID

__all__ = ["ValidationReport", "SampleSet", "validate_release", "validate_generated", "staged_frame"]

# Without its named groups: Great Expectations matches with pandas' ``str.contains``, which warns about groups.
SAMPLE_ID_PATTERN = re.sub(r"\?P<\w+>", "?:", SAMPLE_ID)
VALUED_COLUMNS = ["sample_id", "label_annotation", "context", "question", "choices", "biased_answer", "answer"]
EXAMPLES = 5
RESULT_FORMAT = {"result_format": "SUMMARY", "partial_unexpected_count": EXAMPLES}
# Rows checked at a time, so memory does not grow with the release: a row group (the real release is one; a batch
# costs Great Expectations' ~0.5 s a run).
VALIDATION_BATCH = PARQUET_ROW_GROUP
# Expectations that need every row of a set at once: run on its IDs (``whole_set_frame``), the others per batch.
WHOLE_SET = ("expect_table_row_count_to_equal", "expect_column_values_to_be_unique")


# --- the rules that need more than one column or row, as boolean columns -------------------------------

def _choice_matrix(choices: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Each row's choices as a matrix row (padded with a value equal to nothing), and whether they are three distinct
    ones; each distinct literal (one per pair of answers) is parsed once, so no rule loops over the rows in Python."""
    codes, literals = pd.factorize(choices)  # a missing literal gets code -1: the last, empty row below
    parsed = [parse_list_literal(literal) for literal in literals]
    width = max((len(items) for items in parsed), default=0)
    matrix = np.full((len(parsed) + 1, max(width, 1)), _NOTHING, dtype=object)
    for row, items in enumerate(parsed):
        matrix[row, :len(items)] = items
    distinct = np.array([len(items) == 3 and len(set(items)) == 3 for items in parsed] + [False])
    return matrix[codes], distinct[codes]


_NOTHING = object()  # pads a short list of choices: equal to no answer


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
    """What row count and unique IDs run on, without every ID as a Python string: a frame of the set's length holding
    only the repeated IDs, in their rows (Great Expectations leaves missing values out of uniqueness)."""
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
    """Each row's list as the TSV's literal, made once per distinct list, told apart in Arrow by its items as
    netstrings (``length:text``, which no text can forge); a missing list, or one with a missing item, has none."""
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


# --- the suite -------------------------------------------------------------------------------------

def _expectations(gx, columns: list[str], rules: dict[str, str], unknown: str, total: int,
                  generated: bool = False) -> list:
    """The suite of a sample set, in report order: a template release's, or a generated release's (EsBBQ's columns)."""
    expect = gx.expectations
    found = [expect.ExpectTableColumnsToMatchSet(column_set=columns, exact_match=True,
                                                 meta={"rule": "the release's column set"}),
             expect.ExpectTableRowCountToEqual(value=total, meta={"rule": "row count"})]
    if generated:
        found.append(expect.ExpectColumnValuesToBeUnique(column="instance_key",
                                                         meta={"rule": "(category, instance_id) is unique"}))
        found += [expect.ExpectColumnValueLengthsToBeBetween(column=column, min_value=1,
                                                             meta={"rule": f"{column} has no empty values"})
                  for column in VALUED_GENERATED]
    else:
        found += [expect.ExpectColumnValuesToBeUnique(column="sample_id", meta={"rule": "sample_id is unique"}),
                  expect.ExpectColumnValuesToMatchRegex(column="sample_id", regex=SAMPLE_ID_PATTERN,
                                                        meta={"rule": "sample_id has the documented form"})]
        for column in VALUED_COLUMNS:
            found += [expect.ExpectColumnValuesToNotBeNull(column=column, meta={"rule": f"{column} has no nulls"}),
                      expect.ExpectColumnValueLengthsToBeBetween(column=column, min_value=1,
                                                                 meta={"rule": f"{column} has no empty values"})]
        found.append(expect.ExpectColumnValuesToNotBeInSet(
            column="biased_answer", value_set=[unknown], meta={"rule": "the biased answer is never 'unknown'"}))
    return found + [expect.ExpectColumnValuesToBeInSet(column=column, value_set=[True], meta={"rule": rule})
                    for column, rule in rules.items()]


def _outcomes(sample_set: str, result, id_column: str) -> list[CheckOutcome]:
    outcomes = []
    for item in result.results:
        config = item.expectation_config
        details = item.result or {}
        index = details.get("partial_unexpected_index_list") or []
        examples = [str(row.get(id_column)) for row in index[:EXAMPLES] if isinstance(row, dict)]
        if not examples:
            examples = [str(v) for v in (details.get("partial_unexpected_list") or [])[:EXAMPLES]]
        if not examples and "observed_value" in details and not item.success:
            examples = [f"observed {details['observed_value']}"]
        outcomes.append(CheckOutcome(
            sample_set=sample_set, expectation=config.type, column=str(config.kwargs.get("column", "")),
            rule=str((config.meta or {}).get("rule", "")), success=bool(item.success),
            unexpected_count=int(details.get("unexpected_count") or (0 if item.success else 1)),
            examples=examples))
    return outcomes


class _Deferred(importlib.abc.MetaPathFinder):
    """Modules Great Expectations imports and this suite never uses, loaded on first use (``LazyLoader``)."""

    NAMES = ("altair", "scipy.stats")

    def find_spec(self, name: str, path: Sequence[str] | None = None, target: object = None) -> ModuleSpec | None:
        spec = PathFinder.find_spec(name, path) if name in self.NAMES else None
        if spec is not None and spec.loader is not None:
            spec.loader = importlib.util.LazyLoader(spec.loader)
        return spec


def lean_imports() -> None:
    """The checks' child only: altair and scipy.stats deferred, SQLAlchemy (Prefect brings it) hidden the documented
    way (``sys.modules[name] = None``: as if not installed); the import the build waits for is ~2 s of CPU, not ~3.8."""
    sys.modules.setdefault("sqlalchemy", None)  # type: ignore[arg-type]
    sys.meta_path.insert(0, _Deferred())


def _import_gx():
    """Great Expectations, imported quietly (analytics off, INFO lines silenced): a spare child's ~4 s start-up."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    import great_expectations as gx

    for name in [n for n in logging.root.manager.loggerDict if n.startswith("great_expectations")]:
        logging.getLogger(name).setLevel(logging.WARNING)  # its INFO lines are noise on the console
    return gx


def _gx_context():
    """Great Expectations and an ephemeral context, quiet."""
    gx = _import_gx()
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    return gx, context


def _suite_runner(gx, context, name: str, sample_set: str, expectations: list,
                  id_column: str = "sample_id") -> Callable[[pd.DataFrame], list[CheckOutcome]]:
    """``expectations`` run on each frame given: outcomes of ``sample_set`` naming breaking rows' ``id_column``."""
    suite = gx.ExpectationSuite(name=name, expectations=expectations)
    frames = context.data_sources.add_pandas(name).add_dataframe_asset(name).add_batch_definition_whole_dataframe(name)
    result_format = {**RESULT_FORMAT, "unexpected_index_column_names": [id_column]}

    def run(frame: pd.DataFrame) -> list[CheckOutcome]:
        result = frames.get_batch(batch_parameters={"dataframe": frame}).validate(suite, result_format=result_format)
        return _outcomes(sample_set, result, id_column)

    return run


def validate_generated(frame: pd.DataFrame, unknown: str, expected_by_category: dict[str, int]) -> ValidationReport:
    """The suite of a generated release (one sample set, EsBBQ's columns)."""
    gx, context = _gx_context()
    derived = derived_generated(frame, unknown, expected_by_category)
    run = _suite_runner(gx, context, "all_samples", "all", _expectations(
        gx, list(derived.columns), RULES_GENERATED, unknown, len(derived), generated=True), "instance_key")
    outcomes = run(derived)
    return ValidationReport(all(o.success for o in outcomes), outcomes)


@dataclass
class SampleSet:
    """A sample set as the suite reads it: its columns, its IDs (read when asked) and its rows in batches."""

    columns: list[str]
    ids: Callable[[], pa.ChunkedArray]
    batches: Callable[[], Iterator[pd.DataFrame]]

    @classmethod
    def staged(cls, path: Path) -> SampleSet:
        """A staged Parquet file, read ``VALIDATION_BATCH`` rows at a time (an empty file is one empty batch)."""
        def ids() -> pa.ChunkedArray:
            source = pq.ParquetFile(path)
            return pa.chunked_array([batch.column(0) for batch in source.iter_batches(
                batch_size=VALIDATION_BATCH, columns=["sample_id"])], type=pa.string())

        def batches() -> Iterator[pd.DataFrame]:
            source = pq.ParquetFile(path)
            if not source.metadata.num_rows:
                yield staged_frame(source.schema_arrow.empty_table())
                return
            for batch in source.iter_batches(batch_size=VALIDATION_BATCH, use_threads=False):
                yield staged_frame(pa.Table.from_batches([batch]))
                release_arrow_memory()  # the batch is checked: its Arrow buffers go back to the system

        return cls(pq.read_schema(path).names, ids, batches)


def validate_release(all_set: SampleSet, test_set: SampleSet, unknown: str, expected_by_prefix: dict[str, int],
                     step: Callable[[str], None] = lambda _: None) -> ValidationReport:
    """Run the suite on both sets, telling ``step`` after each part: the rules over whole sets on the IDs alone, then
    the rows batch by batch with the ID rules as columns, so that only a batch of rows is held at a time."""
    gx, context = _gx_context()
    sets = {"all": all_set, "test": test_set}
    rules = {"all": RULES_ALL, "test": RULES_TEST}
    ids = {name: samples.ids() for name, samples in sets.items()}
    id_rules = {"all": id_rules_all(ids["all"], expected_by_prefix), "test": id_rules_test(ids["test"], ids["all"])}
    expectations = {name: _expectations(gx, [*all_set.columns, *rules[name]], rules[name], unknown, len(ids[name]))
                    for name in sets}
    found: dict[str, list[CheckOutcome]] = {name: [] for name in sets}
    for name in sets:
        run = _suite_runner(gx, context, f"{name}_samples_whole_set", name,
                            [e for e in expectations[name] if e.expectation_type in WHOLE_SET])
        found[name] += run(whole_set_frame(ids[name]))
        step(f"{name} samples: whole-set rules checked")
    del ids  # from here on, only a batch of rows at a time
    for name, samples in sets.items():
        run = _suite_runner(gx, context, f"{name}_samples_batches", name,
                            [e for e in expectations[name] if e.expectation_type not in WHOLE_SET])
        offset = 0
        for batch in samples.batches():
            columns = {rule: values[offset:offset + len(batch)] for rule, values in id_rules[name].items()}
            derived = batch.assign(**(row_rules_all(batch, unknown) if name == "all" else {}), **columns)
            found[name] += run(derived[[*batch.columns, *rules[name]]])
            offset += len(batch)
            step(f"{name} samples: {offset:,} rows checked")
    outcomes = [o for name in sets for o in _in_order(expectations[name], found[name])]
    return ValidationReport(all(o.success for o in outcomes), outcomes)


def _column(expectation) -> str:
    return getattr(expectation, "column", None) or ""  # a table-level expectation has none


def _in_order(expectations: list, outcomes: list[CheckOutcome]) -> list[CheckOutcome]:
    """One outcome per expectation, in the order of one whole-set run (by column, in order of first appearance): the
    batches' failures added up (first examples kept); a table-level result is the first failing batch's."""
    by_key: dict[tuple[str, str, str], list[CheckOutcome]] = {}
    for outcome in outcomes:
        by_key.setdefault((outcome.expectation, outcome.column, outcome.rule), []).append(outcome)
    columns = list(dict.fromkeys(map(_column, expectations)))
    merged = []
    for expectation in sorted(expectations, key=lambda e: columns.index(_column(e))):  # stable: in suite order
        found = by_key[(expectation.expectation_type, _column(expectation), expectation.meta["rule"])]
        failed = [o for o in found if not o.success]
        if not failed or expectation.expectation_type.startswith("expect_table_"):
            merged.append(failed[0] if failed else found[0])
            continue
        merged.append(replace(failed[0], unexpected_count=sum(o.unexpected_count for o in failed),
                              examples=[e for o in failed for e in o.examples][:EXAMPLES]))
    return merged


def _return_freed_memory() -> None:
    """jemalloc without decay, which hands freed memory back (mimalloc keeps it): 10x release read, 380 -> 281 MB."""
    try:
        pa.set_memory_pool(pa.jemalloc_memory_pool())
        pa.jemalloc_set_decay_ms(0)
    except NotImplementedError:  # a pyarrow built without jemalloc
        pa.set_memory_pool(pa.system_memory_pool())


def main(argv: list[str] | None = None) -> int:
    """The child: import the library (else exit ``IMPORT_FAILED``), say ``ready``, read the job's JSON line on stdin."""
    if (sys.argv[1:] if argv is None else argv) != [WAIT_FOR_JOB]:
        print(f"usage: python -P -m tasks.release.checks {WAIT_FOR_JOB} (the build starts it)", file=sys.stderr)
        return 2
    try:
        _import_gx()
    except Exception as exc:  # noqa: BLE001 - any failure of a broken install: the build says it in one line
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return IMPORT_FAILED
    print(READY, flush=True)
    line = sys.stdin.readline()
    if not line:
        return 0  # no job: the build ended without one
    try:
        report = validate_folder(json.loads(line))
    except OSError as exc:  # a full disk: the build reports it in one line (ValidationChild)
        print(os_error_line(exc), file=sys.stderr)
        return OS_ERROR_EXIT
    return 0 if report.success else 1


def validate_folder(job: dict) -> ValidationReport:
    """The child's work: validate the staged files, saying where it is, write validation.json/.md and report."""
    _return_freed_memory()
    folder = Path(job["folder"])
    if job["generated"]:
        report = validate_generated(pd.read_parquet(folder / job["all"]), job["unknown"], job["expected"])
    else:
        report = validate_release(SampleSet.staged(folder / job["all"]), SampleSet.staged(folder / job["test"]),
                                  job["unknown"], job["expected"], step=lambda what: print(f"{PROGRESS} {what}",
                                                                                           flush=True))
    write_results(report, folder)
    print(REPORTED, flush=True)
    return report


if __name__ == "__main__":
    lean_imports()  # the child only: a test importing this module keeps every library
    sys.exit(main())
