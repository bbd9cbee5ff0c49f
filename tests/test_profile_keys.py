"""Every profile key is read by some code: a key nothing reads would be a setting that silently does nothing.

The schema (``core/profile.py``) is walked model by model; a field is live when the project's code reads it
as an attribute (``profile.release.unknown_expressions``, also in the Jinja templates of the reports), or by
its name where the code looks a role up (``profile.file("postedit_instructions")``). A validator of the schema
checks a key without using it, so what validators read does not count. The walk is by name, so a key shares
its liveness with any attribute of the same name: it catches a key no code names at all.

And a key's domain, when a file has a value outside it: a pattern or a group reference that fails, an unknown key
(named with the closest known one), a broken survey options file; the generated reference says each domain.
(tests/test_fuzz_profiles.py sets every key outside its domain.)
"""

from __future__ import annotations

import ast
import importlib.util
import re
import shutil
from pathlib import Path

import pytest
from pydantic import BaseModel

from core.domains import Strict, models_in
from core.errors import UserError
from core.paths import EXAMPLE_PIPELINE, PROJECT_ROOT
from core.pipeline_file import load_pipeline
from core.profile import PROFILE_DIR, Profile, load_profile, load_survey_options
from product_code import parsed

CODE_FOLDERS = ("core", "tasks", "flows", "kobbq")
# Calls that read a profile key by its name: Profile.file / existing_file (the [files] roles), getattr.
BY_NAME = {"file", "existing_file", "getattr"}


def schema_keys(model: type[BaseModel], seen: set[type] | None = None) -> list[tuple[str, str]]:
    """(model, key) for every field of ``model`` and of every model its fields hold, each model once."""
    seen = set() if seen is None else seen
    if model in seen:
        return []
    seen.add(model)
    keys = []
    for name, field in model.model_fields.items():
        keys.append((model.__name__, name))
        for inner in models_in(field.annotation):
            keys += schema_keys(inner, seen)
    return keys


def names_read(files: list[Path]) -> set[str]:
    """Attribute names the code reads, and string constants given to the calls that read a key by name."""
    read: set[str] = set()
    for path in files:
        if path.suffix == ".j2":
            read.update(re.findall(r"\.([a-z_][a-z0-9_]*)", path.read_text(encoding="utf-8")))
            continue
        for node in _outside_validators(parsed(path)):
            if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Store):
                read.add(node.attr)
            elif isinstance(node, ast.Call):
                callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if callee in BY_NAME:
                    read.update(a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str))
    return read


def _outside_validators(tree: ast.AST) -> list[ast.AST]:
    """Every node but those inside a pydantic validator (``@model_validator``, ``@field_validator``)."""
    nodes, pending = [], [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef) and any("validator" in ast.unparse(d) for d in node.decorator_list):
            continue
        nodes.append(node)
        pending.extend(ast.iter_child_nodes(node))
    return nodes


def dead_keys(model: type[BaseModel], files: list[Path]) -> list[str]:
    read = names_read(files)
    return [f"{owner}.{key}" for owner, key in schema_keys(model) if key not in read]


def code_files() -> list[Path]:
    return sorted(p for folder in CODE_FOLDERS for pattern in ("*.py", "*.j2")
                  for p in (PROJECT_ROOT / folder).rglob(pattern) if ".venv" not in p.parts)


def test_every_profile_key_is_read_by_some_code():
    keys = schema_keys(Profile)
    assert ("Release", "unknown_expressions") in keys and ("EvaluationProfile", "answer_prefixes") in keys
    assert len(keys) > 100  # the walk reaches the nested models (workbook format, pools, conditions, ...)
    assert dead_keys(Profile, code_files()) == []


def test_a_key_no_code_reads_is_reported(tmp_path):
    class Extra(Strict):
        threshold: int = 1
        setting_nothing_reads_xyz: str = ""

    class WithExtra(Strict):
        extra: Extra = Extra()

    code = tmp_path / "code.py"
    code.write_text("def f(profile):\n    return profile.extra.threshold\n", encoding="utf-8")
    assert dead_keys(WithExtra, [code]) == ["Extra.setting_nothing_reads_xyz"]
    code.write_text("def f(p):\n    p.extra.setting_nothing_reads_xyz = 1\n    return p.extra\n\n\n"
                    "@model_validator(mode='after')\ndef g(self):\n    return self.threshold\n", encoding="utf-8")
    # neither a write nor a validator's check is a use
    assert dead_keys(WithExtra, [code]) == ["Extra.threshold", "Extra.setting_nothing_reads_xyz"]


# --- the keys' domains -----------------------------------------------------------------------------------------

def edited(tmp_path: Path, source: Path, old: str, new: str) -> Path:
    """``source`` copied to ``tmp_path/xx/xx.toml`` with one edit."""
    text = source.read_text(encoding="utf-8")
    assert old in text
    target = tmp_path / "xx" / "xx.toml"
    target.parent.mkdir(exist_ok=True)
    target.write_text(text.replace(old, new, 1), encoding="utf-8")
    return target


@pytest.mark.parametrize("old, new, said", [
    ("pattern = '\\bde el\\b'", "pattern = '\\bde (el\\b'",
     "templates.workbook.fixes.0.pattern = \"\\\\bde (el\\\\b\": must be a regular expression (missing ), "
     "unterminated subpattern at position 5)"),
    ("replace = '\\1l'", "replace = '\\2l'",
     "templates.workbook.fixes.1.replace = \"\\\\2l\": must refer only to the pattern's groups (invalid group "
     "reference 2 at position 1)"),
    ("""article_prefix = "^[^ ']*[ ']\"""", """article_prefix = "^[^ ']*[ '\"""",
     "templates.workbook.article_prefix = \"^[^ ']*[ '\": must be a regular expression (unterminated character set "
     "at position 7)")])
def test_a_pattern_or_group_reference_that_fails_is_a_load_time_error_at_its_position(tmp_path, old, new, said):
    path = edited(tmp_path, PROFILE_DIR / "es" / "es.toml", old, new)
    with pytest.raises(UserError) as error:
        load_profile(path)
    assert str(error.value) == f"{path}: {said}"


def test_an_unknown_key_is_named_with_the_closest_known_one(tmp_path):
    profile = edited(tmp_path, PROFILE_DIR / "ko" / "ko.toml", "target_ratio = 2", "target_ration = 2")
    with pytest.raises(UserError, match=r": survey\.target_ration: unknown key \(did you mean target_ratio\?\)$"):
        load_profile(profile)
    pipeline = edited(tmp_path, EXAMPLE_PIPELINE, 'profile = "ko"', 'Profile = "ko"')
    with pytest.raises(UserError) as error:
        load_pipeline(pipeline)
    assert str(error.value) == (f"{pipeline}: Profile: unknown key (did you mean profile?); "
                                "profile: missing (a required key)")
    options = edited(tmp_path, PROFILE_DIR / "ko" / "survey" / "options.toml", "no_stereotype =", "no_stereotyp =")
    with pytest.raises(UserError, match="no_stereotyp: unknown key \\(did you mean no_stereotype\\?\\)"):
        load_survey_options(options)
    nothing_close = edited(tmp_path, PROFILE_DIR / "ko" / "ko.toml", "[culture]", "[culture]\nzzz = 1")
    with pytest.raises(UserError, match=r"culture\.zzz: unknown key \(known: name, adjective\)$"):
        load_profile(nothing_close)


def test_a_broken_survey_options_file_fails_when_its_profile_loads(tmp_path):
    shutil.copytree(PROFILE_DIR / "ja", tmp_path / "xx")
    (tmp_path / "xx" / "ja.toml").rename(tmp_path / "xx" / "xx.toml")
    (tmp_path / "xx" / "survey" / "options.toml").write_text("no_stereotype = 5\n", encoding="utf-8")
    with pytest.raises(UserError) as error:
        load_profile(tmp_path / "xx" / "xx.toml")
    options = tmp_path / "xx" / "survey" / "options.toml"
    assert str(error.value) == f"{options}: no_stereotype = 5: must be a valid string"


def reference_hook():
    """docs/hooks/reference.py, loaded as MkDocs loads it (a file, not a module of the project)."""
    spec = importlib.util.spec_from_file_location("docs_reference_hook",
                                                  PROJECT_ROOT / "docs" / "hooks" / "reference.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)  # type: ignore[union-attr]
    return hook


def test_the_profile_reference_shows_each_keys_domain():
    rows = {line.split(" | ")[0].strip("| `"): line for line in reference_hook().profile_page().splitlines()
            if line.startswith("| `")}
    assert "| > 1 |" in rows["target_ratio"] and "| ≥ 1/2; < 1 |" in rows["type2_agreement"]
    assert "| ≥ 0; ≤ 1 |" in rows["no_stereotype_max"] and "| > 0 |" in rows["respondents_per_question"]
    assert "| each among `templates.versions` |" in rows["counter_biased_versions"]
    assert "| a regular expression's character class body (`a-z`) |" in rows["suffix_characters"]
    assert "| matches `^\\w+$` |" in rows["sample_prefix"]
    assert "| one of `\"respondents\"`, `\"votes\"` |" in rows["type1_equal_share"]
