"""The reference pages that are read off the code, so that they cannot drift from it.

An MkDocs hook (``hooks:`` in ``mkdocs.yml``): a page holding a marker ``<!-- generated: NAME -->`` gets the
marker replaced, when the site is built, by what ``PAGES[NAME]`` renders:

- ``commands``: every ``kobbq`` subcommand's ``--help``, from the real argparse parsers (``kobbq.cli.build_parser``)
  through argparse's public ``format_help``, with links to its subcommands.
- ``pipeline-file``: the pipeline file's keys from its pydantic models (``core.pipeline_file.PipelineConfig``).
- ``profile``: a profile's keys from its pydantic models (``core.profile.Profile``), table by table.
- ``example-pipeline`` / ``example-profile``: the Japanese example's pipeline file and profile as they are.

Field descriptions are the comments written beside (or just above) each field in the model's source, and the
class docstrings: the code's own words. ``tests/test_docs_commands.py`` reads the rendered pages too.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import io
import json
import os
import re
import textwrap
import tokenize
import typing
from collections.abc import Callable, Iterator
from fractions import Fraction

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from core.domains import models_in
from core.paths import PROJECT_ROOT

MARKER = re.compile(r"^( *)<!-- generated: ([a-z-]+) -->$", re.MULTILINE)


# --- commands ---------------------------------------------------------------------------------------------------

# The terminal width the page's --help texts are wrapped to (argparse reads COLUMNS, and leaves 2 columns free): a
# code box of the site holds 80 characters at 1,280 px and wider, so a --help line is never wrapped again.
HELP_COLUMNS = 80


def subcommands(parser: argparse.ArgumentParser, names: list[str]) -> Iterator[tuple[list[str], argparse.ArgumentParser]]:
    """Every parser under ``parser`` (itself first), depth first, with the words that name it."""
    yield names, parser
    for name, child in children(parser).items():
        yield from subcommands(child, [*names, name])


def children(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The parser's subcommands by name, each once (an alias shares its parser): the parsers ``add_subparsers``
    made, which ``kobbq.cli.Parser`` keeps (``subcommands.choices``), so no private attribute of argparse is read."""
    action = getattr(parser, "subcommands", None)
    named: dict[str, argparse.ArgumentParser] = {}
    for name, child in action.choices.items() if action else ():
        if all(child is not other for other in named.values()):
            named[name] = child
    return named


def help_text(parser: argparse.ArgumentParser) -> str:
    """What ``--help`` prints in a terminal of ``HELP_COLUMNS`` columns, whatever the terminal building the site."""
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(HELP_COLUMNS)
    try:
        return parser.format_help()
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


def escape(text: str) -> str:
    """Help text as Markdown: angle brackets shown, not taken for HTML tags."""
    return text.replace("<", "&lt;").replace(">", "&gt;")


def commands_page() -> str:
    """Each command's heading, its ``--help`` as printed, and links to its subcommands' sections."""
    from kobbq.cli import build_parser

    lines: list[str] = []
    for names, parser in subcommands(build_parser(), ["kobbq"]):
        lines += [f"## {' '.join(names)}", "", "```text", help_text(parser).rstrip(), "```", ""]
        links = [[*names, name] for name in children(parser)]
        if links:
            lines += [f"- [`{' '.join(link)}`](#{anchor(link)})" for link in links] + [""]
    return "\n".join(lines)


def anchor(names: list[str]) -> str:
    """The anchor MkDocs gives the heading ``## kobbq eval run`` (``kobbq-eval-run``)."""
    return "-".join(names).lower()


# --- pydantic models ----------------------------------------------------------------------------------------------

def field_notes(model: type[BaseModel]) -> dict[str, str]:
    """Each field's comment in the model's source: the comment on its line(s), after the comment lines just above
    it (a comment above a field describes it)."""
    source = textwrap.dedent(inspect.getsource(model))
    comments: dict[int, str] = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            comments[token.start[0]] = token.string.lstrip("#").strip()
    lines = source.splitlines()
    notes = {}
    for node in ast.parse(source).body[0].body:  # type: ignore[attr-defined]
        if not isinstance(node, ast.AnnAssign) or not isinstance(node.target, ast.Name):
            continue
        above, number = [], node.lineno - 1
        while number >= 1 and lines[number - 1].strip().startswith("#"):
            above.insert(0, comments[number])
            number -= 1
        beside = [comments[n] for n in range(node.lineno, node.end_lineno + 1) if n in comments]  # type: ignore[operator]
        notes[node.target.id] = " ".join(above + beside)
    return notes


# What the code does not say beside a field yet, said here: (model, field) -> description. A field that gains its
# own comment in the code must lose its line here (``check_notes``), so that the code's words win.
NOTES = {
    ("PipelineConfig", "seed"): "seed of the test split's draw and of every seeded choice; default: the profile's "
                                "`[release] seed`",
    ("TemplatesSection", "corrections"): "a corrections CSV applied to the template files before validation; "
                                         "default: the profile's `corrections.csv`",
    ("SurveySection", "results"): "the survey results: the released JSON format, or respondent-level CSV/xlsx "
                                  "(a stage waits for them when named and absent)",
    ("SurveySection", "reading"): "the reading-comprehension results CSV/xlsx",
    ("SurveySection", "overrides"): "curated overrides CSV (default: `overrides.csv` in the profile's survey "
                                    "folder, when it exists)",
    ("SurveySection", "questions"): "the exported `questions.csv` (respondent-level results; default: beside them)",
    ("Profile", "name"): "the profile's name; a shipped profile's is its folder's name under `core/profiles/`",
    ("Profile", "description"): "one line about the culture's benchmark",
    ("Profile", "source_language"): "the language of the BBQ templates translated from (DeepL's source)",
    ("Release", "seed"): "seed of the test split's draw (a profile that lists no test-split IDs) and of every "
                         "seeded choice; `--seed` or a pipeline file's `seed` overrides it",
    ("Release", "paper_total_samples"): "the paper's total sample count, shown beside the release's in Table 1",
    ("TemplateFormat", "versions"): "the version letters a template's rows carry",
    ("TemplateFormat", "list_separator_space"): "written after the first of `list_separators` by the post-edit "
                                                "import",
}


def check_notes(model: type[BaseModel], notes: dict[str, str]) -> None:
    for (owner, name), _ in NOTES.items():
        if owner == model.__name__ and (name not in model.model_fields or notes.get(name)):
            raise ValueError(f"docs/hooks/reference.py NOTES: {owner}.{name} "
                             f"{'has its own comment in the code now' if notes.get(name) else 'is no field'}: "
                             "remove its line")


def field_types(model: type[BaseModel]) -> dict[str, str]:
    """Each field's annotation as written in the source (``list[str]``, ``ExactNumber``)."""
    source = textwrap.dedent(inspect.getsource(model))
    return {node.target.id: ast.get_source_segment(source, node.annotation).strip('"')  # type: ignore[union-attr]
            for node in ast.parse(source).body[0].body  # type: ignore[attr-defined]
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)}


def toml_value(value: object) -> str:
    """A default as it would be written in TOML."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Fraction):
        return str(value.numerator) if value.denominator == 1 else f'"{value}"'
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, BaseModel):
        return "(its table's defaults)"
    return str(value)


# What the schema's formats mean (core/profile.py's checked types).
FORMATS = {"regex": "a regular expression", "regex-replacement": "a replacement whose group references exist",
           "character-class": "a regular expression's character class body (`a-z`)",
           "unicode-script": "a Unicode script name", "folder-name": "one plain folder name"}
BOUNDS = {"minimum": "≥", "exclusiveMinimum": ">", "maximum": "≤", "exclusiveMaximum": "<"}


def domain(schema: dict) -> str:
    """A key's domain as its JSON schema states it (bounds, choices, pattern, format, lengths, ``among``), its items'
    and its values' too: what a profile may write there, read off the model's own constraints."""
    parts = []
    if "enum" in schema:
        parts.append("one of " + ", ".join(f"`{toml_value(v)}`" for v in schema["enum"]))
    parts += [f"{sign} {Fraction(schema[key]).limit_denominator(1000)}" for key, sign in BOUNDS.items()
              if key in schema]
    if "pattern" in schema:
        parts.append(f"matches `{schema['pattern']}`")
    if schema.get("format") in FORMATS:
        parts.append(FORMATS[schema["format"]])
    parts += [f"{what} {schema[key]} {unit}" for key, what, unit in
              (("minItems", "at least", "item(s)"), ("maxItems", "at most", "item(s)"),
               ("minLength", "at least", "character(s)")) if key in schema and "prefixItems" not in schema]
    if "among" in schema:
        parts.append(f"each among `{schema['among']}`")
    for key, what in (("items", "each"), ("additionalProperties", "each value"), ("propertyNames", "each key")):
        inner = domain(schema[key]) if isinstance(schema.get(key), dict) else ""
        parts += [f"{what}: {inner}"] if inner else []
    parts += [f"item {i + 1}: {inner}" for i, item in enumerate(schema.get("prefixItems", []))
              if (inner := domain(item))]
    parts += [inner for option in schema.get("anyOf", []) if (inner := domain(option))]
    return "; ".join(parts)


def table_of(name: str, annotation: object) -> str:
    """How a nested model's table is written: ``[[categories]]`` for a list, ``[x.people.NAME]`` for a dict."""
    origin = typing.get_origin(annotation)
    if origin is list:
        return f"[[{name}]]"
    if origin is dict:
        return f"[{name}.NAME]"
    return f"[{name}]"


def model_sections(model: type[BaseModel], path: str, seen: set[type], table: str = "",
                   schema: dict | None = None) -> list[str]:
    """The model's keys as a table, then every model nested in it, each under its TOML table (``table``: how it is
    written, ``[[categories]]``; ``path``: its dotted name, which is also its anchor; ``schema``: the top model's
    JSON schema, whose ``$defs`` hold the nested models')."""
    if model in seen:
        return []
    seen.add(model)
    schema = schema or model.model_json_schema()
    properties = schema.get("$defs", {}).get(model.__name__, schema)["properties"]
    notes, types = field_notes(model), field_types(model)
    check_notes(model, notes)
    notes = {**notes, **{name: text for (owner, name), text in NOTES.items() if owner == model.__name__}}
    doc = inspect.getdoc(model) or ""
    lines = [f"### `{table}` {{#{anchor_of(path)}}}" if path else "### Top level (before any table)", ""]
    if doc and not doc.startswith(("Usage docs", "!!! abstract")):
        lines += [escape(doc), ""]
    lines += ["| key | type | allowed | default | what |", "|---|---|---|---|---|"]
    nested: list[tuple[str, str, type[BaseModel]]] = []
    for name, info in model.model_fields.items():
        if info.default is PydanticUndefined and info.default_factory is None:
            default = "**required**"
        else:
            value = info.get_default(call_default_factory=True)
            default = "(none)" if value is None else f"`{toml_value(value)}`"
        inner = models_in(info.annotation)
        note = notes.get(name, "")
        for sub in inner:
            table = table_of(f"{path}.{name}" if path else name, info.annotation)
            where = table.strip("[]")
            if sub is model:  # a model inside itself (a pool's fallback pool)
                note = (note + "; " if note else "") + "a table of the same keys"
                continue
            nested.append((where, table, sub))
            note = (note + "; " if note else "") + f"see [`{table}`](#{anchor_of(where)})"
        allowed = domain(properties[name])  # every "|" and "<" it holds is in code, which a table cell keeps
        lines.append(f"| `{name}` | {cell(types.get(name, ''))} | {allowed} | {default.replace('|', '&#124;')} | "
                     f"{escape(note).replace('|', '&#124;')} |")
    lines.append("")
    for where, table, sub in nested:
        lines += model_sections(sub, where, seen, table, schema)
    return lines


def cell(type_text: str) -> str:
    """A type in a table cell, as code (Python-Markdown's tables do not split a row at a ``|`` inside code)."""
    return f"`{type_text}`"


def anchor_of(path: str) -> str:
    """The anchor of a TOML table's heading: its dotted name with dots as dashes (``templates-workbook``)."""
    return path.replace(".", "-").replace("_", "-").lower()


def pipeline_file_page() -> str:
    from core.pipeline_file import PipelineConfig

    return "\n".join(model_sections(PipelineConfig, "", set()))


def profile_page() -> str:
    from core.profile import Profile

    return "\n".join(model_sections(Profile, "", set()))


def example(path: str) -> Callable[[], str]:
    def render() -> str:
        text = (PROJECT_ROOT / path).read_text(encoding="utf-8")
        return f"`{path}`:\n\n```toml\n{text.rstrip()}\n```\n"

    return render


PAGES: dict[str, Callable[[], str]] = {
    "commands": commands_page,
    "pipeline-file": pipeline_file_page,
    "profile": profile_page,
    "example-pipeline": example("templates_raw/example_ja/pipeline.toml"),
    "example-profile": example("core/profiles/ja/ja.toml"),
}


def render(markdown: str) -> str:
    """The page with every marker replaced by what it names, indented as the marker is (inside an admonition);
    an unknown name is an error, not an empty page."""
    def replace(match: re.Match[str]) -> str:
        indent, name = match.groups()
        if name not in PAGES:
            raise KeyError(f"<!-- generated: {name} -->: no such generated section; known: {', '.join(PAGES)}")
        return textwrap.indent(PAGES[name](), indent)

    return MARKER.sub(replace, markdown)


def on_page_markdown(markdown: str, page, config, files) -> str:  # MkDocs' hook (mkdocs.plugins.BasePlugin)
    return render(markdown)
