"""Fuzzing: a culture profile given as a folder (`--profile FOLDER/ko.toml`) with its TOML or one of its files
damaged (corrections, survey groups, options and overrides, the listed test split), through `kobbq validate`,
`kobbq build --templates [--survey-results]` and `kobbq eval prepare`. The promises are tests/fuzzing.py's.

And every key of a profile, a pipeline file and a survey options file set outside its domain, the values read off
the models' JSON schema (a new key is covered without a line here): its loader refuses it in one line that names the
file and the key, never a traceback, before any stage runs.
"""

from __future__ import annotations

import copy
import math
import re
import shutil
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import tomli_w
from hypothesis import strategies as st
from pydantic import BaseModel

from core.domains import validated
from core.errors import UserError
from core.paths import EXAMPLE_TEMPLATES, PROJECT_ROOT
from core.pipeline_file import PipelineConfig, load_pipeline
from core.profile import PROFILE_DIR, Profile, SurveyOptions, available_profiles, load_profile, load_survey_options
from fuzzing import (EXAMPLE_BUILD, FUZZ_PROFILES, check_command, fuzz, malformed_table, malformed_toml, run_in_process,
                     workspace, write)

KO = PROFILE_DIR / "ko"
SURVEY = PROJECT_ROOT / "survey" / "ko" / "example"
# The profile folder's files a command reads, and how each is damaged.
FILES = {"ko.toml": "toml", "survey/options.toml": "toml", "corrections.csv": ",", "survey/groups.csv": ",",
         "survey/overrides.csv": ",", "KoBBQ_test_sample_ids.txt": "\n"}


def malformed_profile() -> st.SearchStrategy[tuple[str, bytes]]:
    """(file of the profile folder, its damaged bytes)."""
    def damaged(name: str) -> st.SearchStrategy[tuple[str, bytes]]:
        data = (KO / name).read_bytes()
        how = FILES[name]
        files = malformed_toml(data) if how == "toml" else malformed_table(data, how if how != "\n" else "\t")
        return files.map(lambda bad: (name, bad))
    return st.sampled_from(sorted(FILES)).flatmap(damaged)


def check_profile(case: tuple[str, bytes], release: Path, fuzz_profile: str) -> None:
    name, data = case
    prompts = ["--prompt-ids", "1"] if fuzz_profile == "fast" else []
    with workspace(release) as root:
        shutil.copytree(KO, root / "profile" / "ko")
        write(root / "profile" / "ko" / name, data)
        profile = ["--profile", "profile/ko/ko.toml"]
        check_command(["validate", str(EXAMPLE_TEMPLATES), *profile], root, outputs=[], release="build/KoBBQ")
        check_command(["build", "--templates", str(EXAMPLE_TEMPLATES), *profile, *EXAMPLE_BUILD, "--quiet",
                       "--survey-results", str(SURVEY / "responses.csv"), "--questions", str(SURVEY / "questions.csv"),
                       "--reading-results", str(SURVEY / "reading_results.csv")], root, outputs=["build"],
                      release="build/KoBBQ")
        check_command(["eval", "prepare", "--release", "build/KoBBQ", *profile, "--out", "prepared", *prompts], root,
                      outputs=["prepared"], release="build/KoBBQ")


@pytest.mark.parametrize("profile", FUZZ_PROFILES)
def test_malformed_profile_folder(profile, previous_release):
    fuzz(profile, malformed_profile(), lambda case: check_profile(case, previous_release, profile), fast=5,
         long=100)


# --- every key outside its domain ------------------------------------------------------------------------------

@dataclass(frozen=True)
class FileKind:
    """A TOML file of the project's, its model, its loader and the shipped files a damaged one starts from."""
    model: type[BaseModel]
    load: Callable[[Path], object]
    shipped: tuple[Path, ...]


KINDS = {
    "profile": FileKind(Profile, load_profile, tuple(PROFILE_DIR / n / f"{n}.toml" for n in available_profiles())),
    "pipeline": FileKind(PipelineConfig, load_pipeline,
                         tuple(sorted((PROJECT_ROOT / "templates_raw").rglob("*.toml")))),
    "survey options": FileKind(SurveyOptions, load_survey_options,
                               tuple(sorted(PROFILE_DIR.glob("*/survey/options.toml")))),
}
ITEM, ENTRY = 0, "*"  # a key's path steps into the first item of a list of tables, the first entry of a dict of them


def schema_keys(schema: dict, node: dict | None = None, at: tuple = (), refs: tuple = ()) -> Iterator[tuple]:
    """(path, property schema) of every key of the schema's tables and of the tables they hold, each table once
    per path (a pool's ``otherwise`` is a pool: its keys are listed once, not for ever)."""
    node = schema if node is None else node
    for name, prop in node["properties"].items():
        yield (*at, name), prop
        for steps, ref in tables_in(prop):
            if ref not in refs:
                yield from schema_keys(schema, schema["$defs"][ref], (*at, name, *steps), (*refs, ref))


def tables_in(prop: dict) -> Iterator[tuple[tuple, str]]:
    if "$ref" in prop:
        yield (), prop["$ref"].rsplit("/", 1)[1]
    for option in prop.get("anyOf", []):
        yield from tables_in(option)
    for key, step in (("items", ITEM), ("additionalProperties", ENTRY)):
        if isinstance(prop.get(key), dict):
            yield from (((step, *steps), ref) for steps, ref in tables_in(prop[key]))


# One value of each TOML type; a key whose schema accepts none of a type is outside its domain with it.
TYPED = {"string": "zz", "integer": 7, "number": 1.5, "boolean": True, "array": [{"zz": 1}], "object": {"zz": 1}}
FORMATS = {"regex": "(", "regex-replacement": "\\9", "character-class": "z-a", "unicode-script": "Klingon",
           "folder-name": "../x", "fraction": "two thirds"}
OFF_PATTERN = ["", " ", "../x", "a b", "[", "-", "ZZ"]  # the first that a key's pattern refuses is used
NOT_AMONG = "zz-none-of-these"


def accepted(prop: dict) -> set[str]:
    """The TOML types a property's schema accepts (a table for a model, any number for a float)."""
    types = {prop["type"]} if isinstance(prop.get("type"), str) else set()
    types |= {"object"} if "$ref" in prop else set()
    types |= {"integer"} if "number" in types else set()
    return types.union(*(accepted(option) for option in prop.get("anyOf", [])))


def candidates(prop: dict) -> list[object]:
    """Values outside a property's domain, read off its schema: another type, a value past a bound, off its pattern,
    not one of its choices, an invalid regular expression, a table with an unknown key, a list or a dict with one
    such item or key."""
    found = [value for kind, value in TYPED.items() if kind not in accepted(prop)]
    for option in [prop, *prop.get("anyOf", [])]:
        found += [{"zz_unknown": 1}] if "$ref" in option else []
        found += ["zz-none-of-these"] if "enum" in option else []
        found += [option[k] - 1 for k in ("minimum",) if k in option]
        found += [option[k] + 1 for k in ("maximum",) if k in option]
        found += [option[k] for k in ("exclusiveMinimum", "exclusiveMaximum") if k in option]
        found += [next(t for t in OFF_PATTERN if not re.search(option["pattern"], t))] if "pattern" in option else []
        found += [FORMATS[option["format"]]] if option.get("format") in FORMATS else []
        found += [[]] if option.get("minItems", 0) > 0 else []
        if "among" in option:
            found.append([NOT_AMONG] if option.get("type") == "array" else {NOT_AMONG: valid(
                option["additionalProperties"])} if option.get("type") == "object" else NOT_AMONG)
        items, values, keys = (option.get(k) or {"$ref": ""}
                               for k in ("items", "additionalProperties", "propertyNames"))
        found += [[bad] for bad in candidates(items)] if "$ref" not in items else []  # a table's keys are its own
        found += [{"k": bad} for bad in candidates(values)] if "$ref" not in values else []
        found += [{bad: "x"} for bad in candidates(keys) if isinstance(bad, str)] if "$ref" not in keys else []
        found += [[valid(o) if i != j else bad for j, o in enumerate(option["prefixItems"])]
                  for i, item in enumerate(option.get("prefixItems", [])) for bad in candidates(item)]
    return found


def valid(prop: dict) -> object:
    """A value inside a simple property's domain (a dict's value beside a key that is outside its own)."""
    return prop["enum"][0] if "enum" in prop else "x"


def place(data: dict, path: tuple, value: object) -> tuple[dict, str]:
    """``data`` with ``value`` at ``path`` (tables it passes through made when absent), and the key as an error names
    it (``categories.0.sample_prefix``)."""
    data = copy.deepcopy(data)
    node, names = data, []
    for step, following in zip(path, path[1:]):
        if step == ITEM:
            if not node:
                node.append({})
            node, name = node[0], 0
        elif step == ENTRY:
            name = next(iter(node), "NAME1")
            node = node.setdefault(name, {})
        else:
            if not isinstance(node.get(step), (list, dict)):
                node[step] = [] if following == ITEM else {}
            node, name = node[step], step
        names.append(name)
    node[path[-1]] = value
    return data, ".".join(map(str, [*names, path[-1]]))


def depth(data: object, path: tuple) -> int:
    """How much of ``path`` a file already has: the damage starts from the shipped file that has most of it."""
    for reached, step in enumerate(path):
        if step == ITEM and isinstance(data, list) and data:
            data = data[0]
        elif step == ENTRY and isinstance(data, dict) and data:
            data = next(iter(data.values()))
        elif isinstance(data, dict) and step in data:
            data = data[step]
        else:
            return reached
    return len(path)


BASES = {name: [tomllib.loads(path.read_text(encoding="utf-8")) for path in kind.shipped]
         for name, kind in KINDS.items()}
KEYS = [(name, path, prop) for name, kind in KINDS.items()
        for path, prop in schema_keys(kind.model.model_json_schema())]


def damaged(kind: str, path: tuple, value: object) -> tuple[dict, str]:
    """The shipped file that has most of ``path``, with ``value`` there; and the key as an error names it."""
    return place(max(BASES[kind], key=lambda base: depth(base, path)), path, value)


def assert_refused(refused: pytest.ExceptionInfo[UserError], file: Path, key: str) -> None:
    said = str(refused.value)
    assert "\n" not in said and said.startswith(f"{file}: ") and key in said, (key, said)


def check_file_refused(kind: str, path: tuple, value: object, folder: Path) -> None:
    """The file with ``value`` at ``path`` is refused when it loads: one line naming the file and the key."""
    data, key = damaged(kind, path, value)
    target = write(folder / "xx" / "xx.toml", tomli_w.dumps(data).encode("utf-8"))
    with pytest.raises(UserError) as refused:
        KINDS[kind].load(target)
    assert_refused(refused, target, key)


def test_shipped_profiles_pipeline_files_and_survey_options_load():
    for kind in KINDS.values():
        assert kind.shipped and all(kind.load(path) for path in kind.shipped)


def test_every_key_has_values_outside_its_domain():
    assert len(KEYS) > 180  # the walk reaches the nested tables (workbook format, pools, conditions, ...)
    assert [key for key in KEYS if not candidates(key[2])] == []
    survey = {path[-1]: candidates(prop) for kind, path, prop in KEYS if path[:-1] == ("survey",) and kind == "profile"}
    assert 0 in survey["respondents_per_question"] and 1 in survey["target_ratio"]


def test_every_key_out_of_its_domain_is_one_line_naming_file_and_key():
    """Every key with every value the schema gives, checked as its loader checks what it read (writing and reading
    ~1,300 files would take ~15 s; the drawn examples below go through the files)."""
    for kind, path, prop in KEYS:
        for value in candidates(prop):
            data, key = damaged(kind, path, value)
            with pytest.raises(UserError) as refused:
                validated(KINDS[kind].model, data, Path("xx.toml"))
            assert_refused(refused, Path("xx.toml"), key)


def outside(prop: dict) -> st.SearchStrategy[object]:
    """Hypothesis' values outside a property's domain: the schema's candidates, any text its pattern refuses, any
    number past its bounds."""
    drawn = [st.sampled_from(candidates(prop))]
    for option in [prop, *prop.get("anyOf", [])]:
        if "pattern" in option:
            drawn.append(st.text(max_size=12).filter(lambda text, p=option["pattern"]: not re.search(p, text)))
        drawn += [st.integers(-10**6, math.floor(option["exclusiveMinimum"]))] if "exclusiveMinimum" in option else []
        drawn += [st.integers(-10**6, math.ceil(option["minimum"]) - 1)] if "minimum" in option else []
        drawn += [st.integers(math.ceil(option["exclusiveMaximum"]), 10**6)] if "exclusiveMaximum" in option else []
        drawn += [st.integers(math.floor(option["maximum"]) + 1, 10**6)] if "maximum" in option else []
    return st.one_of(drawn)


@pytest.mark.parametrize("profile", FUZZ_PROFILES)
def test_out_of_domain_values_drawn_for_any_key(profile, tmp_path):
    keys = st.sampled_from(KEYS).flatmap(lambda key: outside(key[2]).map(lambda value: (key, value)))
    fuzz(profile, keys, lambda case: check_file_refused(case[0][0], case[0][1], case[1], tmp_path), fast=30,
         long=500)


# The values of the report that found them (issue 43): each changed the Japanese example's survey or a check silently.
REPORTED = [("[survey]", "target_ratio = 2", "target_ratio = -2", "survey.target_ratio"),
            ("[survey]", 'type2_agreement = "2/3"', 'type2_agreement = "0"', "survey.type2_agreement"),
            ("[survey]", 'no_stereotype_max = "1/2"', 'no_stereotype_max = "5"', "survey.no_stereotype_max"),
            ("[survey]", 'reading_min_correct = "1/2"', 'reading_min_correct = "-1"', "survey.reading_min_correct"),
            ("[survey]", "respondents_per_question = 100", "respondents_per_question = 0",
             "survey.respondents_per_question"),
            ("[survey]", 'quota_genders = ["男性", "女性"]', "quota_genders = []", "survey.quota_genders"),
            ("[templates]", 'counter_biased_versions = ["a", "c"]', 'counter_biased_versions = ["a", "z"]',
             "templates.counter_biased_versions"),
            ("[[categories]]", 'sample_prefix = "age"', 'sample_prefix = "../x"', "categories.0.sample_prefix"),
            ("[particles]", "enabled = false", 'enabled = false\nsuffix_characters = "힣-가"',
             "particles.suffix_characters")]


@pytest.mark.parametrize("table, line, bad, key", REPORTED, ids=[case[3] for case in REPORTED])
def test_a_reported_value_is_refused_by_validate_and_build_before_any_stage(tmp_path, table, line, bad, key):
    shutil.copytree(PROFILE_DIR / "ja", tmp_path / "xx")
    text = (tmp_path / "xx" / "ja.toml").read_text(encoding="utf-8")
    start = text.index(f"\n{table}\n")
    assert line in text[start:]
    write(tmp_path / "xx" / "xx.toml", (text[:start] + text[start:].replace(line, bad, 1)).encode("utf-8"))
    profile = ["--profile", "xx/xx.toml"]
    for argv in (["validate", str(EXAMPLE_TEMPLATES), *profile],
                 ["build", "--templates", str(EXAMPLE_TEMPLATES), *profile, "--quiet"]):
        outcome = run_in_process(argv, tmp_path)
        assert outcome.code == 1, outcome  # not None: stopped before Prefect would start
        assert outcome.err.count("\n") == 1 and f"xx/xx.toml: {key} = " in outcome.err, outcome.err
