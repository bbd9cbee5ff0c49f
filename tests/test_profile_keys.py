"""Every profile key is read by some code: a key nothing reads would be a setting that silently does nothing.

The schema (``core/profile.py``) is walked model by model; a field is live when the project's code reads it
as an attribute (``profile.release.unknown_expressions``, also in the Jinja templates of the reports), or by
its name where the code looks a role up (``profile.file("postedit_instructions")``). A validator of the schema
checks a key without using it, so what validators read does not count. The walk is by name, so a key shares
its liveness with any attribute of the same name: it catches a key no code names at all.
"""

from __future__ import annotations

import ast
import re
import typing
from pathlib import Path

from pydantic import BaseModel

from core.paths import PROJECT_ROOT
from core.profile import Profile, Strict

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
        for inner in _models_in(field.annotation):
            keys += schema_keys(inner, seen)
    return keys


def _models_in(annotation: object) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for argument in typing.get_args(annotation) for m in _models_in(argument)]


def names_read(files: list[Path]) -> set[str]:
    """Attribute names the code reads, and string constants given to the calls that read a key by name."""
    read: set[str] = set()
    for path in files:
        if path.suffix == ".j2":
            read.update(re.findall(r"\.([a-z_][a-z0-9_]*)", path.read_text(encoding="utf-8")))
            continue
        for node in _outside_validators(ast.parse(path.read_text(encoding="utf-8"), str(path))):
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
