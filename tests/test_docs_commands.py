"""The command lines of the README, the documentation site and the files and messages the project writes are
ones the parser accepts.

Every ``kobbq ...`` line of a fenced code block in README.md, every page under docs/ (subfolders included) and
the reference pages as the site renders them (docs/hooks/reference.py: the commands' own ``--help`` texts, the
pipeline-file and profile models' comments) is parsed by the real argparse parser (``kobbq.cli.build_parser``;
nothing runs); every ``kobbq ...`` in inline code (a synopsis such as ``kobbq build [--pipeline FILE | ...]``, or
a fragment) names only options its subcommand has. Neither may use a spelling ``--help`` hides (an alias kept
for old scripts). The same holds for what the project generates: every command of a release's dataset card, and
every `kobbq ...` that a stage's hint, an error message or a ``--help`` text tells a user to run.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import functools
import importlib.util
import io
import re
import shlex
from pathlib import Path

import pytest

from core.paths import PROJECT_ROOT
from kobbq.cli import build_parser
from product_code import parsed, product_modules

DOCS = PROJECT_ROOT / "docs"


@functools.cache
def reference_hook():
    """docs/hooks/reference.py, the site's hook that fills in the reference pages, loaded as MkDocs loads it: a
    file, not a module of a package."""
    spec = importlib.util.spec_from_file_location("docs_reference_hook", DOCS / "hooks" / "reference.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)  # type: ignore[union-attr]
    return hook


# The documents are read, rendered and walked when a test runs, not when pytest collects this file: every
# pytest-xdist worker collects every file, and only one runs these tests.
DOCUMENTS = ["README.md", *(path.relative_to(DOCS).as_posix() for path in sorted(DOCS.rglob("*.md")))]


@functools.cache
def document(name: str) -> str:
    """README.md, or a page under docs/ as the site shows it: the generated sections filled in by the site's own
    hook."""
    if name == "README.md":
        return (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    return reference_hook().render((DOCS / name).read_text(encoding="utf-8"))

# Code blocks that are not shell: a command's printed output or usage, a file's contents, Python.
NOT_SHELL = {"text", "toml", "python", "yaml", "json", "csv", "tsv"}
SHELL_OPERATORS = {"|", "||", "&&", ";", "&", ">", ">>", "2>", "2>&1", "<"}
INLINE = re.compile(r"`([^`\n]*?\bkobbq [a-z][^`\n]*)`")
PARSER = build_parser()


def fenced_commands(path: Path, text: str | None = None) -> list[tuple[str, list[str]]]:
    """(where, arguments after ``kobbq``) of every kobbq command line in the file's code blocks (``text``: the
    page as rendered, when it is not the file's own text)."""
    commands, block, pending, start = [], None, "", 0  # block: the open code block's language, None outside
    text = path.read_text(encoding="utf-8") if text is None else text
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip().startswith("```"):
            block = line.strip()[3:].strip() if block is None else None
            continue
        if block is None or block in NOT_SHELL:
            continue
        if not pending:
            start = number
        pending += line.rstrip().removesuffix("\\") + " "
        if line.rstrip().endswith("\\"):
            continue
        tokens, pending = shlex.split(pending, comments=True), ""
        for index, token in enumerate(tokens):
            if (token == "kobbq" or token.endswith("/kobbq")) and runs_a_program(tokens[:index]):
                rest = tokens[index + 1:]
                end = next((i for i, t in enumerate(rest) if t in SHELL_OPERATORS), len(rest))
                commands.append((f"{path.as_posix()}:{start}", rest[:end]))
    return commands


def runs_a_program(before: list[str]) -> bool:
    """The next token is the program a shell runs: it comes first, after an operator or after ``NAME=value``s
    (``kobbq`` elsewhere is an argument: ``prefect work-pool create kobbq``, ``lm_eval --tasks kobbq``)."""
    since = before[max((i + 1 for i, t in enumerate(before) if t in SHELL_OPERATORS), default=0):]
    return all(re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", token) for token in since)


def inline_commands(path: Path, text: str | None = None) -> list[tuple[str, str]]:
    """(where, text after ``kobbq``) of every inline-code kobbq command outside the code blocks."""
    found, fenced = [], False
    text = path.read_text(encoding="utf-8") if text is None else text
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            found += [(f"{path.as_posix()}:{number}", m.group(1).split("kobbq ", 1)[1]) for m in INLINE.finditer(line)]
    return found


def subcommand(words: list[str]) -> tuple[argparse.ArgumentParser, str]:
    """The parser of the subcommand the leading words name, and its name."""
    parser, names = PARSER, ["kobbq"]
    for word in words:
        choices = next((a.choices for a in parser._actions if isinstance(a, argparse._SubParsersAction)), {})
        if word not in choices:
            break
        parser, names = choices[word], [*names, word]
    return parser, " ".join(names)


def shown_options(parser: argparse.ArgumentParser) -> set[str]:
    return {o for a in parser._actions if a.help is not argparse.SUPPRESS for o in a.option_strings}


def test_the_documents_have_command_lines() -> None:
    fenced = [command for name in DOCUMENTS for command in fenced_commands(Path(name), document(name))]
    inline = [command for name in DOCUMENTS for command in inline_commands(Path(name), document(name))]
    assert len(fenced) >= 30 and len(inline) >= 30
    assert {"README.md", "new-culture.md", "guides/score-a-model.md", "guides/adapt-a-culture.md"} <= {
        where.split(":")[0] for where, _ in fenced}
    # the command reference is walked as rendered (the --help texts it shows are checked as help texts, below)
    assert any(where.startswith("reference/commands.md:") for where, _ in inline)


def code_block_problem(where: str, argv: list[str]) -> str:
    """Why a command line of a code block is wrong (the parser refuses it, or it uses a spelling --help hides), or
    "" when it is right."""
    errors = io.StringIO()
    with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
        try:
            PARSER.parse_args(argv)
        except SystemExit:
            return f"{where}: kobbq {shlex.join(argv)}: {errors.getvalue().strip()}"
    parser, name = subcommand(argv)
    hidden = [t.split("=")[0] for t in argv if t.startswith("--") and t.split("=")[0] not in shown_options(parser)]
    return f"{where}: {name} is given {hidden}, spellings its --help does not show" if hidden else ""


@pytest.mark.parametrize("name", DOCUMENTS)
def test_every_command_line_in_a_code_block_parses(name: str) -> None:
    problems = [code_block_problem(where, argv) for where, argv in fenced_commands(Path(name), document(name))]
    assert not any(problems), "\n".join(filter(None, problems))


def inline_problem(where: str, text: str) -> str:
    """The options an inline command names that its subcommand does not have, or "" when it has them all."""
    parser, name = subcommand(re.findall(r"[\w-]+", text.split("--")[0]))
    unknown = sorted(set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", text)) - shown_options(parser))
    return f"{where}: `kobbq {text}`: {name} has no {', '.join(unknown)}" if unknown else ""


@pytest.mark.parametrize("name", DOCUMENTS)
def test_every_inline_command_names_options_its_subcommand_has(name: str) -> None:
    problems = [inline_problem(where, text) for where, text in inline_commands(Path(name), document(name))]
    assert not any(problems), "\n".join(filter(None, problems))


def test_the_checks_catch_a_wrong_line(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("Run `kobbq eval run --prompts 1,2` or:\n\n```bash\n.venv/bin/kobbq eval prepare --out p \\\n"
                    "    --prompt-ids 1   # two lines\n.venv/bin/kobbq build --outt x | tee log\n"
                    "prefect work-pool create kobbq --type process && K=1 kobbq status --pipeline f\n```\n",
                    encoding="utf-8")
    text = page.read_text(encoding="utf-8")
    assert fenced_commands(Path("page.md"), text) == [("page.md:4", ["eval", "prepare", "--out", "p", "--prompt-ids", "1"]),
                                     ("page.md:6", ["build", "--outt", "x"]),
                                     ("page.md:7", ["status", "--pipeline", "f"])]
    with pytest.raises(SystemExit), contextlib.redirect_stderr(io.StringIO()):
        PARSER.parse_args(["build", "--outt", "x"])
    assert "--prompt-ids" not in shown_options(subcommand(["eval", "prepare"])[0])
    assert inline_commands(Path("page.md"), text) == [("page.md:1", "eval run --prompts 1,2")]
    assert "--prompts" not in shown_options(subcommand(["eval", "run"])[0])


# --- commands that generated files and messages tell a user to run -------------------------------------------

BACKTICKED = re.compile(r"(?<!`)`(kobbq [a-z][^`]*)`(?!`)")


@functools.cache
def message_commands() -> list[tuple[str, str]]:
    """(where, command) of every `kobbq ...` in a message the code composes (a stage's hint, an error), each
    ``{...}`` of an f-string standing for one word; docstrings and comments are not messages."""
    found = []
    for path in product_modules():
        if "kobbq" not in path.read_text(encoding="utf-8"):  # no literal can name the command (an import does)
            continue
        docstrings = set()  # ast.walk visits an expression statement before the string it holds
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.Expr):
                docstrings.add(id(node.value))
            if id(node) in docstrings or not isinstance(node, (ast.JoinedStr, ast.Constant)):
                continue
            found += [(f"{path.relative_to(PROJECT_ROOT)}:{node.lineno}", m.group(1))
                      for m in BACKTICKED.finditer(_literal(node))]
    return list(dict.fromkeys(found))  # an f-string's literal parts are nodes of their own too


def _literal(node: ast.AST) -> str:
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else ""
    return "".join(part.value if isinstance(part, ast.Constant) else "WORD" for part in node.values)  # type: ignore[attr-defined]


@functools.cache
def help_commands() -> list[tuple[str, str]]:
    """(command, command line) of every `kobbq ...` in a --help text."""
    from test_help_text import COMMANDS

    found = []
    for name, parser in COMMANDS.items():
        text = " ".join(parser.format_help().split())
        found += [(name, m.group(1)) for m in BACKTICKED.finditer(text)]
    return list(dict.fromkeys(found))


def parses(argv: list[str]) -> str:
    """The parser's complaint about ``argv``, or "" when it parses."""
    errors = io.StringIO()
    with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
        try:
            PARSER.parse_args(argv)
        except SystemExit:
            return errors.getvalue().strip() or "refused"
    return ""


def test_the_messages_and_help_texts_have_command_lines() -> None:
    messages = message_commands()
    assert len(messages) >= 8 and any("labels_stage.py" in where for where, _ in messages)
    assert any("pretranslate_stage.py" in where for where, _ in messages)
    assert help_commands()


def check_generated(where: str, argv: list[str]) -> None:
    """A command line that gives what its command requires must parse; a fragment (`kobbq build`,
    `kobbq eval import-lm-eval`) names a command and only options it has."""
    parser, name = subcommand(argv)
    unknown = sorted({a.split("=")[0] for a in argv if a.startswith("--")} - shown_options(parser))
    assert not unknown, f"{where}: `kobbq {shlex.join(argv)}`: {name} has no {', '.join(unknown)}"
    required = [a for a in parser._actions if (a.required and a.option_strings) or
                (not a.option_strings and a.nargs not in ("?", "*") and not isinstance(a, argparse._SubParsersAction))]
    given = set(argv)
    if parser is not PARSER and (not required or any(o in given for a in required for o in a.option_strings)):
        assert parses(argv) == "", f"{where}: `kobbq {shlex.join(argv)}`"


def test_every_command_a_message_or_a_help_names_has_its_options() -> None:
    problems = []
    for where, text in message_commands() + help_commands():
        try:
            check_generated(where, shlex.split(text)[1:])
        except AssertionError as problem:
            problems.append(str(problem).splitlines()[0])
    assert not problems, "\n".join(problems)


@pytest.fixture(scope="module")
def generated_card(tmp_path_factory) -> Path:
    """A release's dataset card, with the machine-translated twin's section (the Japanese example)."""
    from test_twin_release import build, make_twin_templates

    folder = tmp_path_factory.mktemp("card")
    build(folder / "JaBBQ", make_twin_templates(folder))
    return folder / "JaBBQ" / "README.md"


def test_every_command_of_a_dataset_card_parses(generated_card: Path) -> None:
    commands = fenced_commands(generated_card) + [(w, shlex.split(t)) for w, t in inline_commands(generated_card)]
    names = {" ".join(argv[:2]) for _, argv in commands}
    assert {"publish --release", "eval prepare", "eval run", "eval export-lm-eval"} <= names
    for where, argv in commands:
        check_generated(where, argv)
