"""Declared options: frozen dataclass fields that carry their command-line flag, help text and
whether they are part of a run's resume identity.

One declaration then drives the `run` command's options, the resume check and the JSON form
(`config.json`), so adding an option is one field that mypy checks. Values are checked against
their annotations when the dataclass is made (a JSON file or a keyword holding the wrong type
fails with the field named), which is why this sits at the bottom of the package.

    @dataclass(frozen=True)
    class Endpoint(Declared):
        timeout: float = option(120.0, help="Seconds per HTTP request.")
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import MISSING, dataclass
from pathlib import Path
from typing import Any, TypeVar

from querybench.errors import OptionError

T = TypeVar("T")
SPEC = "querybench.option"


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()  # a `cli_default` left out: the command line uses the field's default


@dataclass(frozen=True)
class Spec:
    """How one field appears outside Python."""

    help: str = ""
    flag: str | None = None  # the spelling when not `--<name-with-dashes>`; "" for no flag
    identity: bool = False  # part of the resume identity: a change means another experiment
    min: float | None = None  # the least value accepted (the flag's bound, checked on make)
    split: str | None = None  # a repeatable flag whose values may also be joined by this
    argument: bool = False  # a positional argument on the command line
    cli_default: Any = UNSET  # the command line's default, where it differs from the field's
    # what a run folder whose config.json predates the option held (its behaviour then), where
    # that differs from the default: a resume compares against it, not the default
    before_it: Any = UNSET

    def flags(self, name: str) -> str | None:
        if self.flag == "" or self.argument:
            return None
        return self.flag or "--" + name.replace("_", "-")


def option(
    default: T,
    *,
    help: str = "",
    flag: str | None = None,
    identity: bool = False,
    min: float | None = None,
    split: str | None = None,
    before_it: Any = UNSET,
) -> T:
    """A dataclass field with its default and its declaration."""
    spec = Spec(help, flag, identity, min, split, before_it=before_it)
    return dataclasses.field(default=default, metadata={SPEC: spec})


def required(spec: Spec) -> Any:
    """A dataclass field without a default, with its declaration."""
    return dataclasses.field(metadata={SPEC: spec})


def spec_of(field: dataclasses.Field[Any]) -> Spec:
    spec = field.metadata.get(SPEC)
    return spec if isinstance(spec, Spec) else Spec()


Declaration = tuple[dataclasses.Field[Any], Spec, Any]
_DECLARED: dict[type, tuple[Declaration, ...]] = {}


def declared_fields(cls: type) -> tuple[Declaration, ...]:
    """(field, its spec, its resolved annotation) of a declared dataclass, in order: a base's
    fields first, then the class's own, each named in its `placed_after` moved to follow the
    field it names there."""
    if cls not in _DECLARED:
        hints = typing.get_type_hints(cls)
        found = [(f, spec_of(f), hints[f.name]) for f in dataclasses.fields(cls) if f.init]
        for name, anchor in getattr(cls, "placed_after", {}).items():
            names = [f.name for f, _, _ in found]
            if name not in names or anchor not in names:
                raise TypeError(f"{cls.__name__}.placed_after: {name} after {anchor}: no field")
            moved = found.pop(names.index(name))
            found.insert([f.name for f, _, _ in found].index(anchor) + 1, moved)
        _DECLARED[cls] = tuple(found)
    return _DECLARED[cls]


class Declared:
    """Base of the declared dataclasses: each value is checked against its annotation (and
    converted where JSON cannot say it: a list to a tuple, a string to a Path, an int to a
    float) and its least value, so a file or a keyword is held to what the flag accepts."""

    def __post_init__(self) -> None:
        for field, spec, kind in declared_fields(type(self)):
            value = getattr(self, field.name)
            checked = check_value(field.name, value, kind)
            if spec.min is not None and checked is not None and checked < spec.min:
                raise OptionError(f"{field.name}: at least {spec.min:g}, got {checked!r}")
            if checked is not value:
                object.__setattr__(self, field.name, checked)

    @classmethod
    def from_values(cls: type[T], values: dict[str, Any], owner: str = "") -> T:
        """The instance from `{field: value}` (JSON values allowed); an unknown name is an
        `OptionError` naming it and the names allowed."""
        names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        unknown = sorted(set(values) - names)
        if unknown:
            allowed = ", ".join(sorted(names)) or "none"
            where = f" of {owner}" if owner else ""
            raise OptionError(f"{', '.join(unknown)}: not an option{where} (options: {allowed})")
        return cls(**values)

    def json_values(self, *, changed_only: bool = False) -> dict[str, Any]:
        """`{field: JSON value}`; with `changed_only`, the fields away from their default and
        those whose absence means another value (`before_it`)."""
        out = {}
        for field, spec, _ in declared_fields(type(self)):
            value = getattr(self, field.name)
            if changed_only and value == field.default and spec.before_it is UNSET:
                continue
            out[field.name] = to_json_value(value)
        return out


def to_json_value(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return [to_json_value(v) for v in value]
    return value


def default_json(field: dataclasses.Field[Any]) -> Any:
    return None if field.default is MISSING else to_json_value(field.default)


def absent_json(field: dataclasses.Field[Any]) -> Any:
    """The value a config.json without this key held: `before_it`, else the default."""
    spec = spec_of(field)
    return default_json(field) if spec.before_it is UNSET else to_json_value(spec.before_it)


def checked_values(cls: type, values: dict[str, Any]) -> dict[str, Any]:
    """`values` for fields of the dataclass `cls`, read from a file that may come from anywhere
    (a run folder): each checked against its annotation where `check_value` knows the kind
    (text, numbers, flags, paths, tuples and optional ones; a dict only as a dict), others
    left to the caller. An `OptionError` names the first field holding the wrong type."""
    hints = _hints(cls)
    out = dict(values)
    for name, value in values.items():
        kind = hints.get(name)
        if kind is None:
            continue
        if _checkable(kind):
            out[name] = check_value(name, value, kind)
            continue
        base = _not_none(kind)
        optional = base is not kind and value is None
        if typing.get_origin(base) is dict and not (isinstance(value, dict) or optional):
            raise OptionError(f"{name}: expected an object, got {type(value).__name__}")
    return out


_HINTS: dict[type, dict[str, Any]] = {}
_SCALARS = (str, int, float, bool, Path, type(None))


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _not_none(kind: Any) -> Any:
    """`X` of `X | None`; any other kind as it is."""
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(kind) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return kind


def _checkable(kind: Any) -> bool:
    """Whether `check_value` holds a value to `kind` (rather than passing it through)."""
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        return all(_checkable(a) for a in typing.get_args(kind))
    if origin is tuple:
        args = typing.get_args(kind)
        return len(args) == 2 and args[1] is Ellipsis and _checkable(args[0])
    return kind in _SCALARS


def check_value(name: str, value: Any, kind: Any) -> Any:
    """`value` as a `kind` (str, int, float, bool, Path, tuple[str, ...], optional ones)."""
    args = typing.get_args(kind)
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        kinds = [a for a in args if a is not type(None)]
        for one in kinds[:-1]:
            try:
                return check_value(name, value, one)
            except OptionError:
                continue
        kind = kinds[-1]
        args = typing.get_args(kind)
    if typing.get_origin(kind) is tuple and isinstance(value, list | tuple):
        return tuple(check_value(name, v, args[0]) for v in value)
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if kind is Path and isinstance(value, str):
        return Path(value)
    if (
        isinstance(kind, type)
        and isinstance(value, kind)
        and not (kind is int and isinstance(value, bool))
    ):
        return value
    if not isinstance(kind, type) and typing.get_origin(kind) is None:
        return value  # Any and the like: not checked
    wanted = getattr(kind, "__name__", str(kind))
    raise OptionError(f"{name}: expected {wanted}, got {value!r} ({type(value).__name__})")
