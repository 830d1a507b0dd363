"""A click group whose subcommands are imported only when invoked (fast startup), and
which suggests the nearest verbs for a mistyped one (``echs stat``)."""

from __future__ import annotations

import importlib
from typing import Any

import click


class LazyGroup(click.Group):
    """Subcommands given as ``{"name": "module.path:attribute"}``, imported on use."""

    def __init__(self, *args: Any, lazy_commands: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_commands = dict(lazy_commands or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self.lazy_commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy_commands:
            module_name, attribute = self.lazy_commands[cmd_name].split(":")
            command = getattr(importlib.import_module(module_name), attribute)
            assert isinstance(command, click.Command)
            return command
        return super().get_command(ctx, cmd_name)

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as exc:
            name = args[0] if args else ""
            verbs = self.list_commands(ctx)
            if name and name not in verbs:
                import difflib  # only for a mistyped verb

                near = [verb for verb in verbs if verb.startswith(name)] or difflib.get_close_matches(name, verbs, n=3, cutoff=0.6)
                if near:
                    exc.message += f" Did you mean {' or '.join(repr(verb) for verb in near)}?"
            raise
