"""The release checks itself: a Great Expectations suite run before a release is published.

Row-level rules that need more than one column (the answer among the choices, an ambiguous
sample answered "unknown", four samples per fill) are computed here as boolean columns and
expected to be all true, so Great Expectations reports how many rows break each rule and which
``sample_id``s. ``validation.json`` is our own deterministic summary (Great Expectations' raw
result carries run IDs and times); its Data Docs go to ``data_docs/`` beside it.

Great Expectations takes ~4 s to import (``lean_imports``) and ~130 MB, so the build runs the suite in a
child process (``python -m tasks.release.checks --wait-for-job``) on the Parquet files it has just staged:
the check sees exactly what will be published, and the build's peak memory stays low. The child is
started ahead (``tasks.release.check_child``), imports the library while the build goes on, and then
reads its arguments (``FOLDER ALL TEST --unknown ...``) from one line of stdin. The child
reads those files a batch of rows at a time (``validate_release``), so its memory does not grow
with the release either. It writes ``validation.json``, says so on its stdout (``REPORTED``), then
writes the Data Docs while the build writes its card, audit report and manifest.
"""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.util
import json
import re
import logging
import os
import sys
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from importlib.machinery import ModuleSpec, PathFinder
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from core import interrupt
from core.errors import UserError, os_errno
from tasks.release.arrow_memory import release_arrow_memory
from tasks.release.check_child import WAIT_FOR_JOB, take_child
from tasks.release.write import PARQUET_ROW_GROUP, parse_list_literal

# Template IDs and fill numbers are written with at least three digits (``{:03d}``): 4 when above 999.
SAMPLE_ID_PATTERN = r"^[a-z_]+-\d{3,}[a-z]-\d{3,}-(?:amb|dis)-(?:bsd|cnt)$"
VALUED_COLUMNS = ["sample_id", "label_annotation", "context", "question", "choices", "biased_answer", "answer"]
EXAMPLES = 5


@dataclass(frozen=True)
class CheckOutcome:
    sample_set: str  # "all" or "test"
    expectation: str  # Great Expectations' expectation type
    column: str
    rule: str  # what it checks, in words
    success: bool
    unexpected_count: int
    examples: list[str] = field(default_factory=list)  # sample_ids (or values) that break it

    def render(self) -> str:
        examples = f"; e.g. {', '.join(self.examples)}" if self.examples else ""
        return f"{self.rule} [{self.expectation} on {self.sample_set}.{self.column}]: {self.unexpected_count} row(s){examples}"


@dataclass(frozen=True)
class ValidationReport:
    success: bool
    outcomes: list[CheckOutcome]

    def failures(self) -> list[CheckOutcome]:
        return [o for o in self.outcomes if not o.success]

    def as_json(self) -> dict[str, object]:
        return {"success": self.success, "expectations": len(self.outcomes),
                "failed": len(self.failures()),
                "results": [o.__dict__ for o in self.outcomes]}


def report_from_json(data: dict[str, object]) -> ValidationReport:
    outcomes = [CheckOutcome(**item) for item in data["results"]]  # type: ignore[arg-type, union-attr]
    return ValidationReport(bool(data["success"]), outcomes)


class ReleaseValidationError(UserError):
    def __init__(self, report: ValidationReport) -> None:
        lines = [f"the release failed {len(report.failures())} of {len(report.outcomes)} checks; "
                 "nothing was published:"]
        lines += [f"  - {o.render()}" for o in report.failures()]
        super().__init__("\n".join(lines))
        self.report = report


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


def _generated_suite(gx, columns: list[str], total: int):
    expectations = gx.expectations
    suite = gx.ExpectationSuite(name="all_samples")
    suite.add_expectation(expectations.ExpectTableColumnsToMatchSet(column_set=columns, exact_match=True,
                                                                    meta={"rule": "the release's column set"}))
    suite.add_expectation(expectations.ExpectTableRowCountToEqual(value=total, meta={"rule": "row count"}))
    suite.add_expectation(expectations.ExpectColumnValuesToBeUnique(
        column="instance_key", meta={"rule": "(category, instance_id) is unique"}))
    for column in VALUED_GENERATED:
        suite.add_expectation(expectations.ExpectColumnValueLengthsToBeBetween(
            column=column, min_value=1, meta={"rule": f"{column} has no empty values"}))
    for column, rule in RULES_GENERATED.items():
        suite.add_expectation(expectations.ExpectColumnValuesToBeInSet(column=column, value_set=[True],
                                                                       meta={"rule": rule}))
    return suite


RULES_TEST = {
    "in_all_samples": "every test sample is in the full release",
    "four_samples_per_template_row": "the test split has four samples per template row",
}


def _expectations(gx, columns: list[str], rules: dict[str, str], unknown: str | None, total: int) -> list:
    """The suite of a template release's sample set, in report order."""
    expectations = gx.expectations
    found = [expectations.ExpectTableColumnsToMatchSet(column_set=columns, exact_match=True,
                                                       meta={"rule": "the release's column set"}),
             expectations.ExpectTableRowCountToEqual(value=total, meta={"rule": "row count"}),
             expectations.ExpectColumnValuesToBeUnique(column="sample_id", meta={"rule": "sample_id is unique"}),
             expectations.ExpectColumnValuesToMatchRegex(column="sample_id", regex=SAMPLE_ID_PATTERN,
                                                         meta={"rule": "sample_id has the documented form"})]
    for column in VALUED_COLUMNS:
        found.append(expectations.ExpectColumnValuesToNotBeNull(column=column, meta={"rule": f"{column} has no nulls"}))
        found.append(expectations.ExpectColumnValueLengthsToBeBetween(
            column=column, min_value=1, meta={"rule": f"{column} has no empty values"}))
    if unknown is not None:
        found.append(expectations.ExpectColumnValuesToNotBeInSet(
            column="biased_answer", value_set=[unknown], meta={"rule": "the biased answer is never 'unknown'"}))
    for column, rule in rules.items():
        found.append(expectations.ExpectColumnValuesToBeInSet(column=column, value_set=[True], meta={"rule": rule}))
    return found


# Expectations that need every row of a set at once; they run on its IDs (``whole_set_frame``), the others batch
# by batch.
WHOLE_SET = ("expect_table_row_count_to_equal", "expect_column_values_to_be_unique")


def _key(expectation_type: str, column: object, rule: object) -> tuple[str, str, str]:
    """An expectation in a report: its type, column and rule (unique within a suite)."""
    return expectation_type, str(column or ""), str(rule or "")


def _outcomes(sample_set: str, result, id_column: str = "sample_id") -> list[CheckOutcome]:
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
    """Finds the modules Great Expectations imports at start-up and this suite never uses (altair for the charts
    of distribution expectations, scipy.stats for their statistics) where the standard path finder finds them,
    and has them loaded on first use by the standard library's ``LazyLoader`` (for this suite, never)."""

    NAMES = ("altair", "scipy.stats")

    def find_spec(self, name: str, path: Sequence[str] | None = None, target: object = None) -> ModuleSpec | None:
        spec = PathFinder.find_spec(name, path) if name in self.NAMES else None
        if spec is not None and spec.loader is not None:
            spec.loader = importlib.util.LazyLoader(spec.loader)
        return spec


def lean_imports() -> None:
    """The checks' child only: altair and scipy.stats are deferred (``_Deferred``), and SQLAlchemy, an optional
    extra of Great Expectations that Prefect brings beside it, is blocked the documented way (``sys.modules[name]
    = None``: its import raises ModuleNotFoundError and ``importlib.util.find_spec`` returns None, as for a module
    not installed), so the library runs as it does without its SQL back-ends. The library's import, which the
    build waits for, takes about 2 s of CPU instead of about 3.8 s; the suite's results are the same."""
    sys.modules.setdefault("sqlalchemy", None)  # type: ignore[arg-type]
    sys.meta_path.insert(0, _Deferred())


def _import_gx():
    """Great Expectations, imported quietly (its analytics off, its INFO lines silenced): the ~4 s of a child's
    start-up, which a spare child spends before its job comes (``warm_up``)."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    import great_expectations as gx

    for name in [n for n in logging.root.manager.loggerDict if n.startswith("great_expectations")]:
        logging.getLogger(name).setLevel(logging.WARNING)  # its INFO lines are noise on the console
    return gx


def _gx_context():
    """An ephemeral Great Expectations context, quiet, without its default docs site."""
    gx = _import_gx()
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    _remove_default_docs_site(context)
    return gx, context


RESULT_FORMAT = {"result_format": "SUMMARY", "partial_unexpected_count": EXAMPLES}


def _runner(definition, result_format) -> Callable[[pd.DataFrame], object]:
    """Validates a frame with ``definition``, as often as called (each result is kept for the Data Docs)."""
    return lambda frame: definition.run(batch_parameters={"dataframe": frame}, result_format=result_format)


Reported = Callable[[ValidationReport], None]


def _unreported(_: ValidationReport) -> None:
    """No one to report to before the Data Docs (a caller in the same process)."""


def _report(report: ValidationReport, context, docs_dir: Path | None, reported: Reported) -> ValidationReport:
    """The report to ``reported`` first, then the Data Docs (the child's build writes its card meanwhile)."""
    reported(report)
    if docs_dir is not None:
        build_docs(context, docs_dir)
    return report


def validate_generated(frame: pd.DataFrame, unknown: str, expected_by_category: dict[str, int],
                       docs_dir: Path | None = None, reported: Reported = _unreported) -> ValidationReport:
    """The suite of a generated release (one sample set, EsBBQ's columns)."""
    gx, context = _gx_context()
    derived = derived_generated(frame, unknown, expected_by_category)
    suite = context.suites.add(_generated_suite(gx, list(derived.columns), len(derived)))
    batch = context.data_sources.add_pandas("release").add_dataframe_asset("all_samples") \
        .add_batch_definition_whole_dataframe("whole")
    definition = context.validation_definitions.add(gx.ValidationDefinition(name="all_samples", data=batch,
                                                                            suite=suite))
    result_format = {**RESULT_FORMAT, "unexpected_index_column_names": ["instance_key"]}
    outcomes = _outcomes("all", _runner(definition, result_format)(derived), "instance_key")
    return _report(ValidationReport(all(o.success for o in outcomes), outcomes), context, docs_dir, reported)


# Rows checked at a time, so that the suite's memory does not grow with the release: a row group of the staged
# Parquet. Each batch pays Great Expectations' fixed ~0.5 s per run, and the real release is one row group.
VALIDATION_BATCH = PARQUET_ROW_GROUP


@dataclass
class SampleSet:
    """A sample set as the suite reads it: its columns, its IDs (read when asked) and its rows in batches."""

    columns: list[str]
    ids: Callable[[], pa.ChunkedArray]
    batches: Callable[[], Iterator[pd.DataFrame]]

    @classmethod
    def of_frame(cls, frame: pd.DataFrame) -> SampleSet:
        """A set held in memory (tests), read in the same batches as a staged file."""
        rows = VALIDATION_BATCH
        return cls(list(frame.columns),
                   lambda: pa.chunked_array([pa.array(frame["sample_id"], type=pa.string(), from_pandas=True)]),
                   lambda: (frame.iloc[start:start + rows] for start in range(0, max(len(frame), 1), rows)))

    @classmethod
    def staged(cls, path: Path, rows: int | None = None) -> SampleSet:
        """A staged Parquet file, read ``rows`` at a time (an empty file is one empty batch)."""
        def ids() -> pa.ChunkedArray:
            source = pq.ParquetFile(path)
            return pa.chunked_array([batch.column(0) for batch in source.iter_batches(
                batch_size=rows or VALIDATION_BATCH, columns=["sample_id"])], type=pa.string())

        def batches() -> Iterator[pd.DataFrame]:
            source = pq.ParquetFile(path)
            if not source.metadata.num_rows:
                yield staged_frame(source.schema_arrow.empty_table())
                return
            for batch in source.iter_batches(batch_size=rows or VALIDATION_BATCH, use_threads=False):
                yield staged_frame(pa.Table.from_batches([batch]))
                release_arrow_memory()  # the batch is checked: its Arrow buffers go back to the system

        return cls(pq.read_schema(path).names, ids, batches)


def validate_release(all_set: SampleSet, test_set: SampleSet, unknown: str, expected_by_prefix: dict[str, int],
                     docs_dir: Path | None = None, reported: Reported = _unreported) -> ValidationReport:
    """Run the suite on both sample sets; hand the report to ``reported``, then write Data Docs into ``docs_dir``
    when given.

    First the IDs: the rules that count rows (per fill, per category, the test split within the full
    set) are computed from them, and row count and unique IDs run on them (``whole_set_frame``). Then
    each set's rows are checked batch by batch, the ID rules handed to each batch as columns, and a
    batch's results are summed into one outcome per expectation. Only a batch of rows is held at a time.
    """
    gx, context = _gx_context()
    source = context.data_sources.add_pandas("release")
    sets = {"all": all_set, "test": test_set}
    assets = {name: source.add_dataframe_asset(f"{name}_samples") for name in sets}
    rules = {"all": RULES_ALL, "test": RULES_TEST}
    ids = {name: samples.ids() for name, samples in sets.items()}
    id_rules = {"all": id_rules_all(ids["all"], expected_by_prefix), "test": id_rules_test(ids["test"], ids["all"])}
    expectations = {name: _expectations(gx, [*all_set.columns, *rules[name]], rules[name], unknown, len(ids[name]))
                    for name in sets}
    found: dict[str, list[CheckOutcome]] = {name: [] for name in sets}
    for name in sets:
        run = _suite_runner(gx, context, assets[name], f"{name}_samples_whole_set",
                            [e for e in expectations[name] if e.expectation_type in WHOLE_SET])
        found[name] += _outcomes(name, run(whole_set_frame(ids[name])))
    del ids  # from here on, only a batch of rows at a time
    for name, samples in sets.items():
        run = _suite_runner(gx, context, assets[name], f"{name}_samples_batches",
                            [e for e in expectations[name] if e.expectation_type not in WHOLE_SET])
        offset = 0
        for batch in samples.batches():
            columns = {rule: values[offset:offset + len(batch)] for rule, values in id_rules[name].items()}
            derived = batch.assign(**(row_rules_all(batch, unknown) if name == "all" else {}), **columns)
            found[name] += _outcomes(name, run(derived[[*batch.columns, *rules[name]]]))
            offset += len(batch)
    outcomes = [o for name in sets for o in _in_order(expectations[name], found[name])]
    return _report(ValidationReport(all(o.success for o in outcomes), outcomes), context, docs_dir, reported)


def _suite_runner(gx, context, asset, name: str, expectations: list) -> Callable[[pd.DataFrame], object]:
    """A suite of ``expectations`` on frames of ``asset``, run on as many frames as it is given."""
    suite = context.suites.add(gx.ExpectationSuite(name=name, expectations=expectations))
    definition = context.validation_definitions.add(gx.ValidationDefinition(
        name=name, data=asset.add_batch_definition_whole_dataframe(name), suite=suite))
    result_format = {**RESULT_FORMAT, "unexpected_index_column_names": ["sample_id"]}
    return _runner(definition, result_format)


def _report_order(expectations: list) -> list:
    """The order Great Expectations reports a suite's results in: grouped by column, columns (and the
    table-level expectations) in order of first appearance."""
    groups: dict[str, list] = {}
    for expectation in expectations:
        groups.setdefault(getattr(expectation, "column", None) or "", []).append(expectation)
    return [expectation for group in groups.values() for expectation in group]


def _in_order(expectations: list, outcomes: list[CheckOutcome]) -> list[CheckOutcome]:
    """One outcome per expectation, in the order of one whole-set run: a batch's failures are added up
    (their first examples kept); a table-level result is the first failing batch's."""
    by_key: dict[tuple[str, str, str], list[CheckOutcome]] = {}
    for outcome in outcomes:
        by_key.setdefault(_key(outcome.expectation, outcome.column, outcome.rule), []).append(outcome)
    merged = []
    for expectation in _report_order(expectations):
        found = by_key[_key(expectation.expectation_type, getattr(expectation, "column", ""), expectation.meta["rule"])]
        failed = [o for o in found if not o.success]
        if not failed or expectation.expectation_type.startswith("expect_table_"):
            merged.append(failed[0] if failed else found[0])
            continue
        merged.append(replace(failed[0], unexpected_count=sum(o.unexpected_count for o in failed),
                              examples=[e for o in failed for e in o.examples][:EXAMPLES]))
    return merged


_REMOTE_ASSET = re.compile(r'<link[^>]*href="https?://[^"]*"[^>]*>|<script[^>]*src="https?://[^"]*"[^>]*>\s*</script>')
# The Great Expectations logo, fetched from a remote bucket on every page open (with a timestamp, so never
# cached); the Data Docs ship the same image in static/images/.
_REMOTE_IMAGE = re.compile(r'(<img\b[^>]*?\bsrc=")https?://[^"]*?/([\w.-]+?)(?:\?[^"]*)?(")')
_REMOTE_CSS_URL = re.compile(r"""url\(\s*['"]?https?://[^)]*\)""")
OFFLINE_STYLE = """<style>/* offline: Data Docs' own styles come from CDNs; these keep the pages readable without them */
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;margin:.5em 0}
td,th{border:1px solid #ccc;padding:.25em .5em;vertical-align:top}.collapse{display:block}
.navbar,.ge-logo,nav{display:none}.card{border:1px solid #ddd;margin:1em 0;padding:.5em}
</style>"""


def make_docs_offline(docs_dir: Path) -> None:
    """Data Docs load bootstrap, jQuery and fonts from CDNs and their logo from a remote bucket; offline (the
    release's use) they hang or render unstyled, and online every page open reaches a third party. Remote
    tags are replaced by a small inline stylesheet, the logo by the local copy of it (or nothing), remote
    CSS backgrounds by none: every page opens with nothing fetched (checked by ``tests/offline.py``)."""
    for page in sorted(docs_dir.rglob("*.html")):
        images = os.path.relpath(docs_dir / "static" / "images", page.parent)

        def local_image(match: re.Match) -> str:
            found = (docs_dir / "static" / "images" / match[2]).exists()
            return f"{match[1]}{images}/{match[2]}{match[3]}" if found else f"{match[1]}{match[3]}"

        html = _REMOTE_IMAGE.sub(local_image, _REMOTE_ASSET.sub("", page.read_text(encoding="utf-8")))
        html = _REMOTE_CSS_URL.sub("none", html)
        page.write_text(html.replace("</head>", OFFLINE_STYLE + "</head>", 1), encoding="utf-8")
    for sheet in sorted(docs_dir.rglob("*.css")):
        sheet.write_text(_REMOTE_CSS_URL.sub("none", sheet.read_text(encoding="utf-8")), encoding="utf-8")


def _remove_default_docs_site(context) -> None:
    """An ephemeral context creates a docs site in a new temp folder per run; remove it and its folder."""
    for name, site in dict(context.get_config().data_docs_sites or {}).items():
        base = (site.get("store_backend") or {}).get("base_directory")
        context.delete_data_docs_site(name)
        if base and Path(base).is_dir() and Path(base).resolve().is_relative_to(Path(tempfile.gettempdir()).resolve()):
            shutil.rmtree(base, ignore_errors=True)


def build_docs(context, docs_dir: Path) -> None:
    """Render every result of this run (each batch's too) into offline Data Docs, once at the end: a
    checkpoint's docs action re-renders the site after every batch."""
    site_name = "release"
    context.add_data_docs_site(site_name=site_name, site_config={
        "class_name": "SiteBuilder", "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
        "store_backend": {"class_name": "TupleFilesystemStoreBackend", "base_directory": str(docs_dir.resolve())}})
    context.build_data_docs(site_names=[site_name])
    make_docs_offline(docs_dir)


def summary_markdown(report: ValidationReport) -> str:
    lines = ["| set | rule | expectation | result |", "|---|---|---|---|"]
    for o in report.outcomes:
        result = "pass" if o.success else f"FAIL: {o.unexpected_count} row(s)"
        lines.append(f"| {o.sample_set} | {o.rule} | `{o.expectation}` {o.column} | {result} |")
    return "\n".join(lines) + "\n"



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


def write_results(report: ValidationReport, folder: Path) -> None:
    (folder / "validation.json").write_text(json.dumps(report.as_json(), ensure_ascii=False, indent=2,
                                                       sort_keys=True) + "\n", encoding="utf-8")
    (folder / "validation.md").write_text(summary_markdown(report), encoding="utf-8")


REPORTED = "reported"  # the child's line on stdout once validation.json is written; its Data Docs follow
OS_ERROR_EXIT = 3  # the child met an OSError (a full disk): its last stderr line is ``os_error_line``'s


def os_error_line(exc: OSError) -> str:
    """An OSError as one JSON line, for the parent to raise again (``os_error_from``)."""
    return json.dumps({"errno": os_errno(exc), "strerror": exc.strerror or str(exc),
                       "filename": None if exc.filename is None else str(exc.filename)})


def os_error_from(stderr: str) -> OSError:
    """The child's OSError again, from the last line of its stderr."""
    lines = stderr.strip().splitlines() or ["{}"]
    try:
        record = json.loads(lines[-1])
    except ValueError:
        record = {}
    if not isinstance(record, dict):
        record = {}
    return OSError(record.get("errno"), record.get("strerror") or "release validation failed: " + stderr[-500:],
                   record.get("filename"))


class ValidationChild:
    """The suite running in a child process on staged Parquet files, while the build writes the rest: a spare
    child when one is waiting (``tasks.release.check_child.warm_up``), else a new one. The child reports (its
    ``validation.json`` written, a line on its stdout) before it renders its Data Docs, so that the build
    writes its card, audit report and manifest meanwhile; ``finish`` waits for the Data Docs."""

    def __init__(self, folder: Path, all_parquet: str, test_parquet: str, unknown: str,
                 expected_by_prefix: dict[str, int], generated: bool = False) -> None:
        self.folder = folder
        job = [str(folder), all_parquet, test_parquet, "--unknown", unknown,
               "--expected", json.dumps(expected_by_prefix, sort_keys=True), "--batch-rows", str(VALIDATION_BATCH),
               *(["--generated"] if generated else [])]
        self.process = take_child()
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(job) + "\n")  # one line; communicate() closes stdin
        self.process.stdin.flush()

    def result(self) -> ValidationReport:
        """Wait for the child's report: what it wrote to validation.json (its Data Docs may still be coming)."""
        assert self.process.stdout is not None
        if self.process.stdout.readline().strip() != REPORTED:  # it ended without reporting: say why
            self.finish()
            raise RuntimeError(f"release validation did not report: {self.process.stderr_text().strip()[-2000:]}")
        return report_from_json(json.loads((self.folder / "validation.json").read_text(encoding="utf-8")))

    def finish(self) -> None:
        """Wait for the child to end, its Data Docs written; a child that failed raises."""
        self.process.communicate()
        interrupt.unregister_child(self.process.pid)
        if self.process.returncode == OS_ERROR_EXIT:  # e.g. a full disk: the command says so in one line
            raise os_error_from(self.process.stderr_text())
        if self.process.returncode not in (0, 1) or not (self.folder / "validation.json").exists():
            raise RuntimeError(f"release validation did not run: {self.process.stderr_text().strip()[-2000:]}")

    def stop(self) -> None:
        """End the child if it still runs (the build failed or stopped while it validated)."""
        if self.process.poll() is None:
            interrupt.end_processes([self.process.pid])
            self.process.wait()
        interrupt.unregister_child(self.process.pid)


def _return_freed_memory() -> None:
    """Arrow's default allocator (mimalloc) keeps what it frees, so a release read batch by batch would stay
    resident batch after batch; jemalloc without decay hands it back (measured: 10x release, reading and the
    row rules, 380 -> 281 MB)."""
    try:
        pa.set_memory_pool(pa.jemalloc_memory_pool())
        pa.jemalloc_set_decay_ms(0)
    except NotImplementedError:  # a pyarrow built without jemalloc
        pa.set_memory_pool(pa.system_memory_pool())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Validate a staged release folder (used by the build).")
    parser.add_argument("folder", type=Path)
    parser.add_argument("all_parquet")
    parser.add_argument("test_parquet")
    parser.add_argument("--unknown", required=True)
    parser.add_argument("--expected", required=True, help="JSON: sample_id prefix (or category) -> expected count")
    parser.add_argument("--generated", action="store_true", help="a generated release (one set, no test split)")
    parser.add_argument("--batch-rows", type=int, default=VALIDATION_BATCH, help="rows checked at a time")
    argv = sys.argv[1:] if argv is None else argv
    if argv == [WAIT_FOR_JOB]:  # a spare: the slow import first, then the job its parent sends on one line
        _import_gx()
        line = sys.stdin.readline()
        if not line:
            return 0  # no job: the build ended without one
        argv = json.loads(line)
    args = parser.parse_args(argv)
    try:
        return validate_folder(args)
    except OSError as exc:  # a full disk: the parent reports it in one line (ValidationChild.result)
        print(os_error_line(exc), file=sys.stderr)
        return OS_ERROR_EXIT


def validate_folder(args: argparse.Namespace) -> int:
    """The child's work: validate the staged files, write validation.json/.md and report, then write the Data
    Docs; 0 when every check passed."""
    _return_freed_memory()
    docs = args.folder / "data_docs"

    def reported(report: ValidationReport) -> None:
        write_results(report, args.folder)
        print(REPORTED, flush=True)

    if args.generated:
        report = validate_generated(pd.read_parquet(args.folder / args.all_parquet), args.unknown,
                                    json.loads(args.expected), docs_dir=docs, reported=reported)
    else:
        report = validate_release(SampleSet.staged(args.folder / args.all_parquet, args.batch_rows),
                                  SampleSet.staged(args.folder / args.test_parquet, args.batch_rows), args.unknown,
                                  json.loads(args.expected), docs_dir=docs, reported=reported)
    return 0 if report.success else 1


if __name__ == "__main__":
    lean_imports()  # the child only: a test importing this module keeps every library
    sys.exit(main())
