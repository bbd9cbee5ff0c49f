"""The domains of the project's TOML settings (profile, pipeline file, survey options), each said once: checked types
and pydantic constraints (shown by the generated reference), references between tables (``among``), and the one error
line of a file with a value outside its domain, an unknown key (with the closest known one) or a missing one."""

from __future__ import annotations

import difflib
import json
import math
import re
import typing
import unicodedata
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, WithJsonSchema
from pydantic_core import ErrorDetails, InitErrorDetails, PydanticCustomError

from core.errors import UserError
from core.text_files import read_toml


def _exact(value: object) -> object:
    """A float cut-off (0.6667) is the fraction it rounds (6667/10000), not its binary value; true is no number."""
    if isinstance(value, bool):
        raise ValueError("must be a number or a fraction such as '2/3', not true or false")
    return Fraction(value).limit_denominator(10_000) if isinstance(value, float) and math.isfinite(value) else value


def check_regex(pattern: str) -> str:
    try:
        re.compile(pattern)
    except (re.error, OverflowError, RecursionError) as error:
        raise ValueError(f"must be a regular expression ({error})") from None
    return pattern


def _character_class(body: str) -> str:
    check_regex(f"[{body}]" if body else "")
    return body


def _script(name: str) -> str:
    import regex  # the Unicode Script property (re and unicodedata have none)

    try:
        regex.compile(rf"\p{{Script={name}}}")
    except regex.error:
        raise ValueError("must be a Unicode script name (e.g. Hangul, Han, Hiragana, Katakana, Latin, Arabic, "
                         "Devanagari, Cyrillic)") from None
    return name


RESERVED_PREFIXES = (".",)  # hidden names: the staging and retired folders of a publication start with "."
MAX_NAME_BYTES = 200  # a release name's length in UTF-8 bytes: room for its lock, staging and .work names (255)


def check_release_name(name: str) -> str:
    """A release name (``--name``, a pipeline file's ``name``, a profile's ``[release] name``) is one plain folder
    name: never ``.``, ``..``, a path, a hidden name, a control character (a newline would split every line that
    names it) or a name too long for the files beside it, so the release is written exactly at ``<out>/<name>`` and
    nowhere else."""
    if not name or name in (".", "..") or "/" in name or "\\" in name or name.startswith(RESERVED_PREFIXES) \
            or any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise UserError(f"release name {name!r} is not a plain folder name (no '/', '.', '..', leading '.' or "
                        "control character); give a name such as KoBBQ, and --out for the folder it goes in")
    if len(name.encode()) > MAX_NAME_BYTES:
        raise UserError(f"release name of {len(name.encode())} bytes: at most {MAX_NAME_BYTES} (the files beside the "
                        "release add to it, and a file name has at most 255); give a shorter --name")
    return name


def _release_name(name: str) -> str:
    try:
        return check_release_name(name)
    except UserError as error:
        raise ValueError(error.message) from None


def _format(kind: str) -> WithJsonSchema:
    return WithJsonSchema({"type": "string", "format": kind})


# Thresholds such as 2/3 compare exactly; a float 0.6667 would misjudge 200/300.
ExactNumber = Annotated[Fraction, Field(strict=False), BeforeValidator(_exact)]
Count = Annotated[int, Field(ge=0)]
Text = Annotated[str, Field(pattern=r"\S")]  # not blank
Name = Annotated[str, Field(pattern=r"^\w+$")]  # a plain name: part of a file name or a sample ID
LanguageCode = Annotated[str, Field(pattern=r"^[a-z]{2,3}(-[A-Za-z0-9]+)*$")]  # BCP-47: ko, pt-BR
Pair = Annotated[tuple[Text, str], Field(strict=False)]  # TOML writes a pair as a list
Separator = Annotated[str, Field(pattern=r"^[^\s\[\]:;]+$")]  # no space, and none of the slot syntax's "[]:;"
Regex = Annotated[str, AfterValidator(check_regex), _format("regex")]
CharacterClass = Annotated[str, AfterValidator(_character_class), _format("character-class")]  # "가-힣"
ScriptName = Annotated[str, AfterValidator(_script), _format("unicode-script")]
ReleaseName = Annotated[str, AfterValidator(_release_name), _format("folder-name")]


def among(path: str) -> dict[str, str]:
    """A field whose value, items or keys must be among the profile's values at ``path`` (``categories.name``)."""
    return {"among": path}


def refuse(problems: list[tuple[tuple[str | int, ...], object, str]]) -> None:
    """Raise every (key, value, what it must be) at its own key, so that the error names it (a validator of a table
    is otherwise reported at the table)."""
    if problems:
        raise ValidationError.from_exception_data("settings", [
            InitErrorDetails(type=PydanticCustomError("domain", "{says}", {"says": says}), loc=key, input=value)
            for key, value, says in problems])


class Strict(BaseModel):
    # strict: a TOML value of another type (true for a count, 1 for a flag) is an error, not converted.
    # defer_build: the validators are made when a file is first loaded, not when a command only imports a model
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)


def _values_at(model: BaseModel, path: str) -> list[object]:
    """The values at a dotted path, through lists (``categories.name``: every category's name) and absent tables."""
    found: list[object] = [model]
    for step in path.split("."):
        found = [getattr(item, step) for item in found if item is not None]
        found = [value for item in found for value in (item if isinstance(item, list) else [item])]
    return found


def references_outside(model: BaseModel, root: BaseModel, at: tuple[str | int, ...] = ()) -> Iterator[tuple]:
    """(key, value, what it must be) of every ``among`` value not among its path's, in ``model`` and its tables."""
    for name, info in type(model).model_fields.items():
        value = getattr(model, name)
        path = info.json_schema_extra.get("among") if isinstance(info.json_schema_extra, dict) else None
        items = value if isinstance(value, (list, dict)) else [value]
        allowed = _values_at(root, path) if path else []
        if path and (wrong := [item for item in items if item not in allowed]):
            yield (*at, name), value, (f"{', '.join(map(repr, wrong))}: must be among {path} "
                                       f"({', '.join(map(str, allowed)) or 'none'})")
        for key, child in (value.items() if isinstance(value, dict) else enumerate(items)):
            if isinstance(child, BaseModel):
                yield from references_outside(child, root, (*at, name, key) if child is not value else (*at, name))


Model = typing.TypeVar("Model", bound=BaseModel)


def nfc_values(data: object, keep: frozenset[str] = frozenset()) -> object:
    """``data`` read from a settings file with every string in NFC, the form of every text a release holds (a
    culture's name typed with U+0958 DEVANAGARI LETTER QA is written U+0915 U+093C in its card, as its samples write
    it); the tables named in ``keep`` (file names, which a file system compares byte for byte) as they are."""
    if isinstance(data, str):
        return unicodedata.normalize("NFC", data)
    if isinstance(data, list):
        return [nfc_values(item, keep) for item in data]
    if isinstance(data, dict):
        return {key: value if key in keep else nfc_values(value, keep) for key, value in data.items()}
    return data


def load_model(model: type[Model], path: Path, what: str, nfc_except: frozenset[str] | None = None) -> Model:
    """A TOML file read into ``model``; with ``nfc_except``, every string in NFC but the tables it names."""
    data = read_toml(path, what)
    return validated(model, data if nfc_except is None else nfc_values(data, nfc_except), path)


def validated(model: type[Model], data: dict[str, object], path: Path) -> Model:
    """``data`` of the file ``path`` as ``model``, else one error line naming the file and each key."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        # An unknown key first: it is often the missing one misspelt, which then explains the rest.
        errors = sorted(exc.errors(), key=lambda error: error["type"] != "extra_forbidden")
        raise UserError("; ".join(_problem(model, error) for error in errors), path) from None


def _problem(model: type[BaseModel], error: ErrorDetails) -> str:
    """``key = value: must be ...`` (pydantic's words); an unknown key with the closest known one, or all of them."""
    key = ".".join(map(str, error["loc"]))
    if error["type"] == "extra_forbidden":
        known = list(_table_at(model, error["loc"][:-1]).model_fields)
        close = difflib.get_close_matches(str(error["loc"][-1]), known, n=1, cutoff=0.6)
        return f"{key}: unknown key ({f'did you mean {close[0]}?' if close else 'known: ' + ', '.join(known)})"
    if error["type"] == "missing":
        return f"{key}: missing (a required key)"
    says = re.sub(r"^(Value error, |(Input|String|List|Tuple|Dictionary) should |Input (?=is))",
                  lambda m: "must " if "should" in m[1] else "", error["msg"])
    value = error["input"]
    if isinstance(value, dict) or value is None:  # a table: its key names it
        return f"{key}: {says}" if key else says
    shown = json.dumps(value, ensure_ascii=False, default=str)
    return f"{key} = {shown if len(shown) <= 80 else shown[:77] + '...'}: {says}"


def _table_at(model: type[BaseModel], loc: tuple[str | int, ...]) -> type[BaseModel]:
    """The model of the table at ``loc`` (an index into a list or a key of a dict of tables stays on its model)."""
    for step in loc:
        field = model.model_fields.get(step) if isinstance(step, str) else None
        inner = models_in(field.annotation) if field is not None else []
        model = inner[0] if inner else model
    return model


def models_in(annotation: object) -> list[type[BaseModel]]:
    """The pydantic models an annotation holds (``list[Category]``, ``Pool | None``, ``dict[str, Pool]``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for argument in typing.get_args(annotation) for m in models_in(argument)]
