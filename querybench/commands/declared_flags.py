"""Typer parameters from declared options: `run`'s flags and every `eval <name>`'s are made
here from their dataclass fields (flag, default, help and bound spelled once, on the field)."""

from __future__ import annotations

import inspect
import typing
from dataclasses import MISSING, Field
from typing import Annotated, Any

import typer

from querybench.declared import UNSET, Spec, declared_fields


def parameter(
    field: Field[Any], spec: Spec, kind: Any, panel: str | None = None, *, optional: bool = False
) -> inspect.Parameter:
    """A typer parameter from a declared field; `optional`: None unless given (a method's own
    option, whose default is the method's)."""
    default = field.default if spec.cli_default is UNSET else spec.cli_default
    annotation = kind
    if typing.get_origin(kind) is tuple:  # a repeatable flag
        annotation, default = list[str] | None, None
    elif optional and kind is not bool:
        annotation, default = kind | None, None
    elif default is None and type(None) not in typing.get_args(kind):
        annotation = kind | None
    if default is MISSING:
        default = inspect.Parameter.empty
    info: Any
    if spec.argument:
        info = typer.Argument(help=spec.help)
    else:
        decls = [spec.flag] if spec.flag else []
        info = typer.Option(*decls, help=spec.help or None, rich_help_panel=panel, min=spec.min)
    return inspect.Parameter(
        field.name,
        inspect.Parameter.KEYWORD_ONLY,
        default=default,
        annotation=Annotated[annotation, info],
    )


def signature(kind: type) -> inspect.Signature:
    """The typer signature of a declared options class: one flag per field, in its order."""
    return inspect.Signature([parameter(f, spec, hint) for f, spec, hint in declared_fields(kind)])
