"""Prompt tables, the release's samples in three choice orders, and the prepared request folder. Each sample is asked
once per row of the circulant matrix of its choices, so a preference for a position cannot pass for one for a group;
each prompt's own "unknown" wording replaces the release's in the choices and the answer, as the paper's
preprocessing does (else every "unknown" answer of prompts 2-5 would count as counter-biased).
"""

from __future__ import annotations

import ast
import csv
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from core import interrupt
from core.errors import Location, UserError
from core.paths import relative_path
from core.text_files import check_input_file
from core.profile import Profile, load_profile
from core.atomic import write_bytes, write_text, write_with
from core.release_folder import MANIFEST, changed_files, require_manifest
from tasks.audit.fates import release_profile
from core.fingerprint import sha256_file
from tasks.evaluation import esbbq_metrics
from tasks.evaluation.bbq_columns import evaluation_view, read_category_files, read_samples
from tasks.evaluation.metrics import sample_attributes
from tasks.evaluation.parse import answer_forms, changed_choice
from tasks.evaluation.prepared_folder import SUMMARY, folder_files, publish_prepared, staged
from tasks.release.write import all_samples_name, category_folder

PROMPT_COLUMNS = ("prompt_id", "instruction", "context", "question", "a", "b", "c", "answer", "unknown")
LETTERS = ("A", "B", "C")
# Row k of scipy.linalg.circulant([c0, c1, c2]) as indices into the choices: order k of a sample.
ORDERS = np.array([[0, 2, 1], [1, 0, 2], [2, 1, 0]])
REQUIRED_SAMPLE_COLUMNS = ("sample_id", "label_annotation", "context", "question", "choices", "biased_answer",
                           "answer")
PREPARED_PROMPTS = "prompts.tsv"  # the prompt table, copied into the prepared folder


@dataclass(frozen=True)
class Prompt:
    """One row of a prompt table: the labels put before each part of a sample, and the unknown wording."""

    prompt_id: int
    instruction: str
    context: str
    question: str
    a: str
    b: str
    c: str
    answer: str
    unknown: str

    @property
    def prefix(self) -> str:
        """The instruction as the upstream JSON's ``prefix``: it precedes every query after a blank line."""
        return self.instruction + "\n\n"


def read_table(path: Path, sep: str = "\t", **options) -> pd.DataFrame:
    """A delimited text file as strings ("NA" stays "NA"); a file pandas cannot parse is a UserError. Not
    ``core.tables.read_rows``: pandas' C parser reads 10^5-10^6 rows into columns ~10x faster."""
    check_input_file(path)  # a folder, a device or a named pipe: one line, before pandas opens it
    try:
        return pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False, **options)
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as exc:
        raise UserError(f"cannot be read as a {'tab' if sep == chr(9) else repr(sep)}-separated table: "
                        f"{str(exc).strip()}", path) from None


def read_prompt_table(path: Path) -> dict[int, Prompt]:
    """Prompts by id. Labels keep their trailing spaces (``맥락: ``): the prompt text depends on them."""
    if not path.exists():
        raise UserError("prompt table not found", path)
    frame = read_table(path, quoting=csv.QUOTE_NONE)
    missing = [name for name in PROMPT_COLUMNS if name not in frame.columns]
    if missing:
        raise UserError(f"prompt table lacks column(s) {', '.join(missing)}", Location(str(path), 1))
    prompts: dict[int, Prompt] = {}
    for row, record in enumerate(frame[list(PROMPT_COLUMNS)].to_dict("records"), start=2):
        if not record["prompt_id"].strip().isdigit():
            raise UserError(f"prompt_id {record['prompt_id']!r} is not a number", Location(str(path), row, "prompt_id"))
        prompt_id = int(record["prompt_id"])
        if prompt_id in prompts:
            raise UserError(f"prompt_id {prompt_id} appears twice", Location(str(path), row, "prompt_id"))
        if not record["unknown"].strip():
            raise UserError("empty unknown wording", Location(str(path), row, "unknown"))
        prompts[prompt_id] = Prompt(**{**record, "prompt_id": prompt_id})
    if not prompts:
        raise UserError("holds no prompts (a header alone): a preparation would hold no request", path)
    return prompts


def profile_prompt_table(profile: Profile) -> Path | None:
    """The profile's prompt table (``[files] evaluation_prompts``, relative to its folder); None when unset."""
    return profile.folder_file(profile.files.evaluation_prompts)


def resolve_prompt_table(profile: Profile, explicit: Path | None) -> tuple[Path, str]:
    """The prompt table to use and a note saying why: the explicit one, the profile's, or (absent on a fresh machine)
    its fallback in the same language, said in the note; never another language's table."""
    if explicit is not None:
        check_input_file(explicit, "prompt table")  # absent, or a folder: one line naming it
        return explicit, f"prompt table {explicit} (--prompt-table)"
    named = profile_prompt_table(profile)
    if named is not None and named.exists():
        return named, f"prompt table {named} (profile {profile.name})"
    fallback = profile.folder_file(profile.evaluation.fallback_prompts)
    if fallback is not None and fallback.exists():
        why = f"{named} is absent" if named else f"profile {profile.name} names no evaluation_prompts"
        return fallback, (f"prompt table {fallback}: profile {profile.name}'s fallback prompts, because "
                          f"{why}; give --prompt-table FILE for another table")
    raise UserError(f"profile {profile.name} names no prompt table that exists ({named or 'none'}); give --prompt-table "
                    "FILE, or name one in the profile ([files] evaluation_prompts)")


def select_prompts(prompts: dict[int, Prompt], wanted: list[int] | None, table: Path) -> list[Prompt]:
    if not wanted:
        return [prompts[key] for key in sorted(prompts)]
    unknown = [key for key in wanted if key not in prompts]
    if unknown:
        raise UserError(f"no prompt {', '.join(map(str, unknown))} in the table (it has {sorted(prompts)})", table)
    return [prompts[key] for key in wanted]


@dataclass
class ReleaseSamples:
    """One split of a release folder, with its profile, its choices as an (n, 3) array, and what the metrics
    group by per sample (``attributes``: category, template, dis, biased_context, label, biased_answer)."""

    folder: Path
    name: str
    profile: Profile
    split: str
    path: Path
    frame: pd.DataFrame
    choices: np.ndarray
    attributes: pd.DataFrame
    notes: list[str] = field(default_factory=list)  # what a reader of the results should know about the samples
    digest: str = ""  # sha256 of the samples read; empty: that of ``path``, computed when asked
    warnings: list[str] = field(default_factory=list)  # what no number may be read without (a modified release)

    @property
    def samples_sha256(self) -> str:
        """What a prepared folder records, so that answers are never scored against other samples."""
        return self.digest or sha256_file(self.path)


def read_release(folder: Path, split: str | None = "test", profile: str | None = None,
                 allow_modified: bool = False) -> ReleaseSamples:
    """Read a release's samples; ``profile``, when given, must be the one it was built with (a folder without
    ``kobbq build``'s manifest is a published release as downloaded: ``profile`` must name its culture). A built release
    must still have every file its manifest records, unless ``allow_modified``. ``split=None``: the test split, or all
    samples for a release without one."""
    if not folder.is_dir():
        raise UserError("release folder not found", folder)
    warnings: list[str] = []
    if not (folder / MANIFEST).exists():  # a published release as downloaded
        if profile is None:
            raise UserError(f"no {MANIFEST} here, so this is not a release folder written by `kobbq build`; to score "
                            "a published release as downloaded (KoBBQ's data/ folder, EsBBQ's or CaBBQ's per-category "
                            "files), name its culture with --profile (ko, es, ca, or a profile file)", folder)
        loaded = load_profile(profile)
        name, published = loaded.release.name, True
    else:
        loaded = release_profile(folder, profile)
        manifest = require_manifest(folder)
        name, published = str(manifest.get("release", loaded.release.name)), False
        warnings = modified_warnings(folder, manifest, allow_modified)
    release = _read_split(folder, name, split, loaded, published)
    release.warnings = warnings
    release.notes += answer_forms(loaded.evaluation, loaded.release.unknown_expressions).notes
    return release


def published_note(profile: Profile, files: list[Path]) -> str:
    names = ", ".join(path.name for path in files)
    return (f"a published release as downloaded (no {MANIFEST}), read as profile {profile.name} (--profile): "
            f"{names}")


def modified_warnings(folder: Path, manifest: dict, allow_modified: bool) -> list[str]:
    """Nothing when every file of the release is as its manifest records it (sha256); else a UserError, or with
    ``allow_modified`` the warning every output of the evaluation carries. A release edited by hand (an answer
    set to the biased one) scores other numbers than the release as built, and nothing else would say so."""
    changed = changed_files(folder, manifest)
    if not changed:
        return []
    listed = f"{len(changed)} file(s) ({', '.join(changed[:5])}{', ...' if len(changed) > 5 else ''})"
    if not allow_modified:
        raise UserError(f"{listed} differ from what the build wrote (the sha256 in manifest.json): the release was "
                        "edited or damaged since it was built; rebuild it (kobbq build --force), or give "
                        "--allow-modified to evaluate it as it is (every output then says so)", folder)
    return [f"the release {folder} differs from its manifest in {listed}: evaluated as it is (--allow-modified), so "
            "these numbers are not those of the release as built"]


def _read_split(folder: Path, name: str, split: str | None, loaded: Profile, published: bool) -> ReleaseSamples:
    if loaded.release.layout == "per-category-csv":
        return _read_bbq_columns(folder, name, split or "all", loaded, published)
    split = split or "test"
    path = folder / f"{name}_{split}_samples.tsv"
    if not path.exists():
        other = folder / f"{name}_{'all' if split == 'test' else 'test'}_samples.tsv"
        hint = f" (it has {other.name}: --split {'all' if split == 'test' else 'test'})" if other.exists() else ""
        raise UserError(f"the release has no {split} split file{hint}", path)
    frame = read_table(path)
    missing = [column for column in REQUIRED_SAMPLE_COLUMNS if column not in frame.columns]
    if missing:
        raise UserError(f"lacks column(s) {', '.join(missing)}", Location(str(path), 1))
    _unique_ids(frame["sample_id"], str(path))
    attributes = sample_attributes(frame["sample_id"], frame["answer"], frame["biased_answer"], loaded, str(path))
    return ReleaseSamples(folder, name, loaded, split, path, frame, _choice_array(frame, path),
                          _with_answers(attributes, frame), [published_note(loaded, [path])] if published else [])


def _read_bbq_columns(folder: Path, name: str, split: str, profile: Profile, published: bool) -> ReleaseSamples:
    """A release in BBQ's column layout, all samples: a build's from its Parquet file, a download's from its CSVs."""
    if published:
        downloaded = read_category_files(folder, profile)
        path, samples, csv_folder, digest = downloaded.folder, downloaded.samples, downloaded.folder, downloaded.digest
        notes = [published_note(profile, downloaded.files)]
        if len(downloaded.files) < len(profile.categories):
            notes.append(f"{len(downloaded.files)} of profile {profile.name}'s {len(profile.categories)} categories "
                         "are in the folder; the overall figures are over those")
    else:
        path = folder / all_samples_name(name).replace(".tsv", ".parquet")
        samples, csv_folder, digest, notes = None, folder / category_folder(profile.language), "", []
    if split != "all":
        raise UserError(f"{name} has no {split} split: a release in BBQ's column layout is evaluated on all its "
                        "samples (--split all, the default for it)", path)
    samples = read_samples(path) if samples is None else samples
    frame, attributes, view_notes = evaluation_view(samples, profile, csv_folder)
    # EsBBQ's own metrics read the released columns their way (tasks.evaluation.esbbq_metrics)
    attributes = pd.concat([_with_answers(attributes, frame), esbbq_metrics.sample_attributes(samples)], axis=1)
    return ReleaseSamples(folder, name, profile, split, path, frame, _choice_array(frame, path), attributes,
                          notes + view_notes, digest)


def _unique_ids(sample_ids: pd.Series, where: str) -> None:
    repeated = sample_ids.duplicated()
    if repeated.any():
        row = int(repeated.to_numpy().argmax())
        first = int((sample_ids == sample_ids.iloc[row]).to_numpy().argmax())
        raise UserError(f"sample_id {sample_ids.iloc[row]!r} appears twice (first at row {first + 2})",
                        Location(where, row + 2, "sample_id"))


def _with_answers(attributes: pd.DataFrame, frame: pd.DataFrame) -> pd.DataFrame:
    return attributes.assign(label=frame["label_annotation"].to_numpy(), biased_answer=frame["biased_answer"].to_numpy())


def _choice_array(frame: pd.DataFrame, path: Path) -> np.ndarray:
    """The ``choices`` literals as an (n, 3) array, each distinct literal parsed once."""
    parsed: dict[str, list[str]] = {}
    for row, literal in enumerate(frame["choices"], start=2):
        if literal in parsed:
            continue
        try:
            value = ast.literal_eval(literal)
        except (ValueError, SyntaxError):
            value = None
        if not isinstance(value, list) or len(value) != 3 or not all(isinstance(v, str) for v in value):
            raise UserError("choices is not a list of three texts", Location(str(path), row, "choices"))
        parsed[literal] = value
    return np.array([parsed[literal] for literal in frame["choices"]], dtype=object).reshape(-1, 3)


def ordered_choices(release: ReleaseSamples, unknown: str) -> pd.DataFrame:
    """Three rows per sample (orders 0-2): ids, choices by letter, answer letter; the unknown choice as ``unknown``."""
    release_unknown = release.profile.release.unknown_expression
    choices = np.where(release.choices == release_unknown, unknown, release.choices)
    answers = release.frame["answer"].to_numpy(object)
    answers = np.where(answers == release_unknown, unknown, answers)
    ordered = choices[:, ORDERS].reshape(-1, 3)  # (3n, 3): sample i order k at row 3i + k
    _check_readable(release.profile, pd.unique(ordered.ravel()), release.path)
    answer_text = np.repeat(answers, 3)
    matches = ordered == answer_text[:, None]
    lacking = np.flatnonzero(~matches.any(axis=1))
    if len(lacking):
        row = int(lacking[0] // 3)
        raise UserError("the answer is not one of the choices", Location(str(release.path), row + 2, "answer"))
    # The last matching letter, as upstream picks it when two choices are equal.
    letter_index = 2 - np.argmax(matches[:, ::-1], axis=1)
    sample_ids = np.repeat(release.frame["sample_id"].to_numpy(object), 3)
    return pd.DataFrame({
        "id": sample_ids + np.tile(np.array(["-0", "-1", "-2"], dtype=object), len(release.frame)),
        "sample_id": sample_ids, "order": np.tile(np.arange(3), len(release.frame)),
        "A": ordered[:, 0], "B": ordered[:, 1], "C": ordered[:, 2],
        "answer": np.asarray(LETTERS, dtype=object)[letter_index], "answer_text": answer_text,
    }, dtype=object)


def _check_readable(profile: Profile, choices: Iterable[str], samples: Path) -> None:
    """No choice a model may answer with is changed by the profile's reading of answers (checked before a request
    is sent, and again when answers are scored), or an answer naming it would be read as another."""
    changed = changed_choice(answer_forms(profile.evaluation, profile.release.unknown_expressions), choices)
    if changed is not None:
        raise UserError(f"[evaluation]: {changed[1]} changes the choice {changed[0]!r} of {samples}, so that an answer "
                        "naming it would be misread; write the profile's forms and labels so that no choice holds "
                        "them", profile.path)


def ordered_requests(release: ReleaseSamples, prompt: Prompt) -> pd.DataFrame:
    """A prompt's ordered choices with each request's text without its instruction (upstream's ``query``)."""
    frame = ordered_choices(release, prompt.unknown)
    context = np.repeat(release.frame["context"].to_numpy(object), 3)
    question = np.repeat(release.frame["question"].to_numpy(object), 3)
    frame["query"] = (prompt.context + context + "\n" + prompt.question + question + "\n" + prompt.a + frame["A"]
                      + "\n" + prompt.b + frame["B"] + "\n" + prompt.c + frame["C"] + "\n" + prompt.answer)
    return frame


def request_lines(requests: pd.DataFrame, prompt: Prompt) -> list[str]:
    """requests.jsonl lines of one prompt (the interface shared with `kobbq eval run`)."""
    return [json.dumps({"id": r.id, "sample_id": r.sample_id, "prompt_id": prompt.prompt_id,
                        "prompt": prompt.prefix + r.query, "choices": {"A": r.A, "B": r.B, "C": r.C},
                        "answer": r.answer}, ensure_ascii=False) + "\n" for r in requests.itertuples(index=False)]


def upstream_frame(release: ReleaseSamples, requests: pd.DataFrame) -> pd.DataFrame:
    """The upstream preprocessed TSV: the release's columns per order, then A, B, C, answer_abc; sorted by id."""
    frame = release.frame.loc[release.frame.index.repeat(3)].reset_index(drop=True)
    frame["sample_id"] = requests["id"].to_numpy()
    frame["choices"] = [repr([a, b, c]) for a, b, c in zip(requests["A"], requests["B"], requests["C"])]
    frame["answer"] = requests["answer_text"].to_numpy()
    for letter in LETTERS:
        frame[letter] = requests[letter].to_numpy()
    frame["answer_abc"] = requests["answer"].to_numpy()
    order = np.argsort(frame["sample_id"].to_numpy(str), kind="stable")
    return frame.iloc[order].reset_index(drop=True)


def write_prepared(out: Path, release: ReleaseSamples, table: Path, prompts: list[Prompt]) -> dict:
    """requests.jsonl, the upstream TSV/JSON per prompt, a copy of the prompt table, then prepared.json (complete)."""
    lines: list[str] = []
    counts = {}
    for prompt in prompts:
        requests = ordered_requests(release, prompt)
        lines.extend(request_lines(requests, prompt))
        counts[str(prompt.prompt_id)] = len(requests)
        stem = f"{release.name}_{release.split}_evaluation_{prompt.prompt_id}"  # model outputs append _<model>
        upstream = upstream_frame(release, requests)
        folder = out / f"{release.name}_{release.split}"
        write_with(folder / f"{stem}.tsv", lambda path: upstream.to_csv(
            path, sep="\t", index=False, lineterminator="\n", encoding="utf-8"))
        ordered = requests.iloc[np.argsort(requests["id"].to_numpy(str), kind="stable")]
        data = {"ver": release.split, "prefix": prompt.prefix,
                "data": ordered[["query", "A", "B", "C", "answer", "id"]].to_numpy().tolist()}
        # no final newline, as upstream writes it
        write_text(folder / f"{stem}.json", json.dumps(data, ensure_ascii=False, indent=4))
    write_text(out / "requests.jsonl", "".join(lines))
    interrupt.checkpoint("prepare")  # fault-injection tests stop a preparation here, half written
    write_bytes(out / PREPARED_PROMPTS, table.read_bytes())  # the folder scores anywhere, table or not
    summary = {"release": relative_path(release.folder, out), "release_name": release.name,
               "profile": release.profile.name, "split": release.split, "prompts": [p.prompt_id for p in prompts],
               "requests": len(lines), "requests_per_prompt": counts, "prompt_table": table.name,  # copied: PREPARED_PROMPTS
               "prompt_table_sha256": sha256_file(table), "samples_sha256": release.samples_sha256,
               "unknown": {str(p.prompt_id): p.unknown for p in prompts}, "warnings": release.warnings,
               "files": sorted([*folder_files(out), SUMMARY])}  # what a new preparation replaces
    write_text(out / SUMMARY, json.dumps(summary, ensure_ascii=False, indent=2, sort_keys=True) + "\n")
    return summary


@dataclass(frozen=True)
class Prepared:
    notes: list[str]  # which prompt table and why, and what the release reader noticed
    requests: int
    samples: int
    prompts: int
    warnings: list[str] = field(default_factory=list)  # the release differs from its manifest (--allow-modified)


def prepare_release(release_dir: Path, out: Path, split: str | None = None, profile: str | None = None,
                    prompts: Path | None = None, prompt_ids: list[int] | None = None,
                    allow_modified: bool = False) -> Prepared:
    """``kobbq eval prepare``: every sample x prompt x 3 choice orders of a release written into ``out``."""
    release = read_release(release_dir, split, profile, allow_modified)
    table, note = resolve_prompt_table(release.profile, prompts)
    chosen = select_prompts(read_prompt_table(table), prompt_ids, table)
    with staged(out) as staging:  # an interrupted or failed preparation leaves the previous one as it was
        summary = write_prepared(staging, release, table, chosen)
        publish_prepared(staging, out)
    return Prepared([note, *release.notes], summary["requests"], len(release.frame), len(chosen), release.warnings)
