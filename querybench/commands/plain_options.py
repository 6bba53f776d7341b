"""Typer's option coercion, without pydantic for the plain values the commands take.

Typer (0.29) coerces every option through a pydantic `TypeAdapter`, built when the command
runs: importing pydantic and building the adapters is 0.05-0.08 CPU seconds of every command,
more than scoring a warm BIRD dev set. `PlainGroup` gives each command's options a coercion
that returns exactly what typer's would for a plain value (a decimal `int` or `float` in its
bounds, any `str`, a `Path` with no path checks asked for) and hands anything else (a bound
crossed, a list, an unreadable path, an odd spelling) to typer's own, so every value and every
error message stays typer's. On a typer without these internals the group changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import typer.core

from querybench.commands.plain_values import _UNSET, plain_value

try:  # typer's private coercion layer (0.29); without it, typer coerces as it always did
    from typer._coercion import RuntimeParam, build_runtime_param
except ImportError:  # pragma: no cover - another typer
    RuntimeParam = None  # type: ignore[assignment,misc]

if RuntimeParam is not None:

    @dataclass(frozen=True)
    class _PlainParam(RuntimeParam):
        """Coerces plain values itself, anything else through typer's own coercion."""

        descriptor: Any

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            plain = plain_value(self.annotation, self.parameter_info, value)
            if plain is not _UNSET:
                return plain
            typer_own = build_runtime_param(self.descriptor)
            return typer_own._coerce_value(value, param=param, ctx=ctx)


def _plain_params(command: Any, ctx: Any) -> None:
    """Give each of the command's parameters (its help option too) the plain coercion."""
    if RuntimeParam is None:
        return
    for param in command.get_params(ctx):
        descriptor = getattr(param, "type_descriptor", None)
        if descriptor is None or getattr(param, "_runtime_param", _UNSET) is not None:
            continue
        if descriptor.file_annotation is not None:
            continue
        param._runtime_param = _PlainParam(
            descriptor.parameter_info, descriptor.annotation, descriptor
        )


class PlainGroup(typer.core.TyperGroup):
    """A `TyperGroup` whose commands (and own options) coerce plain values without pydantic."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        _plain_params(self, ctx)
        rest: list[str] = super().parse_args(ctx, args)
        return rest

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            _plain_params(command, ctx)
        return command
