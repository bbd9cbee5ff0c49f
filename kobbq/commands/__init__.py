"""Subcommands of ``kobbq``; every module with a ``register(subparsers)`` function is one."""
