"""The ``kobbq`` command. Each subcommand is a module of ``kobbq.commands`` defining ``register(subparsers)``, which
adds its parser with ``handler=<function(args) -> int>``; modules are discovered, and a run imports only the one of the
command it names (``--help`` all of them). A user error prints one paragraph and exits 1, without a traceback."""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import select
import sys
from typing import NoReturn

from core import console, interrupt
from core.errors import UserError, describe_os_error
from core.runtime import configure_environment
from kobbq import __version__, commands


class Parser(argparse.ArgumentParser):
    """argparse with a wrong argument told in one line (exit status 2); its subcommands kept for the site to walk."""

    subcommands: argparse.Action | None = None  # what add_subparsers returned

    def add_subparsers(self, **kwargs):
        self.subcommands = super().add_subparsers(**kwargs)
        return self.subcommands

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {self.prog}: {message} (see {self.prog} --help)\n")


def command_modules() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(commands.__path__) if not m.name.startswith("_"))


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of ``command`` alone when it names one."""
    parser = Parser(
        prog="kobbq",
        description="Build culturally adapted BBQ benchmarks (KoBBQ first) from their raw templates.",
    )
    parser.add_argument("--version", action="version", version=f"kobbq {__version__}")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    names = command_modules()
    for module in [command] if command in names else names:
        importlib.import_module(f"kobbq.commands.{module}").register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    with interrupt.handling_signals():
        console.escape_what_cannot_be_shown()  # Korean text on an ASCII stdout: escapes, not a traceback
        argv = sys.argv[1:] if argv is None else argv
        parser = build_parser(next((word for word in argv if not word.startswith("-")), None))
        if "_ARGCOMPLETE" in os.environ:  # the shell's completion hook runs the bare command: every parser is here
            complete(parser)
        args = parser.parse_args(argv)
        args.words = argv  # the command as typed (a Prefect flow run is named after it)
        if getattr(args, "handler", None) is None:
            parser.print_help()
            return 1
        configure_environment(debug=args.debug)  # before any command imports Prefect
        was_quiet = console.set_quiet(bool(getattr(args, "quiet", False)))
        try:
            return int(args.handler(args) or 0)
        except (UserError, OSError) as exc:  # bad input, a folder that cannot be written, a full disk: one line
            if isinstance(exc, BrokenPipeError) and reader_gone(sys.stdout):  # not a child's or a server's pipe
                quiet_stdout()
                return CLOSED_PIPE_EXIT
            if args.debug:
                raise
            print(f"error: {exc.render() if isinstance(exc, UserError) else describe_os_error(exc)}", file=sys.stderr)
            return 1
        finally:
            interrupt.forget_run()
            console.set_quiet(was_quiet)  # a command run in-process (a test's) leaves its caller's setting


def complete(parser: argparse.ArgumentParser) -> NoReturn:
    """Answer the shell's completion hook with argcomplete, imported only then (15 ms no other run pays), and exit."""
    import argcomplete

    argcomplete.autocomplete(parser, exit_method=sys.exit)
    sys.exit(1)  # argcomplete returned: the hook's variables are incomplete


CLOSED_PIPE_EXIT = 141  # 128 + SIGPIPE: what a shell reports for cat, grep or git whose reader has gone


def reader_gone(stream) -> bool:
    """Whether ``stream`` is a pipe whose reader has closed it (``| head -1``): the command then ends quietly."""
    try:
        poller = select.poll()
        poller.register(stream.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no file descriptor (a test's capture), no poll (Windows)
        return False


def quiet_stdout() -> None:
    """Point stdout at the null device, so that what is still buffered does not fail again at exit."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, sys.stdout.fileno())
    os.close(null)


def run() -> NoReturn:
    """The command line's entry point (``kobbq``, ``python -m kobbq``): ``main``, then the interpreter's own exit,
    which wakes idle thread pools (``threading._shutdown``) and runs the exit handlers (Prefect's workers send their
    last logs to its API). A hand-made fast exit skipped the pools' wake-up, and such a process never ended."""
    sys.exit(main())
