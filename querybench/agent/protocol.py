"""The paper's text protocol: a reply is `Thought: …` then `Action: Name(arg="…", …)`.

    step = parse_reply('Thought: count them\nAction: ExecuteSQL(sql_query="SELECT 1")')
    step.action  # ExecuteSQL(sql_query='SELECT 1')

The call is read as a Python call expression first (any string form: escapes, triple quotes,
multi-line SQL). Models often put unescaped quotes inside SQL, which no grammar accepts; the
fallback then cuts the argument list at the action's own `name=` markers and strips one pair of
quotes from each value, which is what the writer meant.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

from querybench.agent.actions import ACTIONS, ALIASES, Action, parameters
from querybench.errors import ProtocolError


@dataclass(frozen=True)
class Step:
    thought: str
    action: Action


_ACTION = re.compile(r"^\s*Action\s*:\s*", re.MULTILINE)
_THOUGHT = re.compile(r"^\s*Thought\s*:\s*", re.MULTILINE)
_CALL = re.compile(r"([A-Za-z_]+)\s*\(", re.DOTALL)
_TRUE = {"true", "1", "yes"}


def parse_reply(text: str) -> Step:
    """The thought and the action of one reply; `ProtocolError` when there is no action."""
    mark = _ACTION.search(text)
    if mark is None:
        raise ProtocolError("no `Action:` line found")
    before = text[: mark.start()]
    thought_mark = list(_THOUGHT.finditer(before))
    thought = before[thought_mark[-1].end() :] if thought_mark else before
    body = text[mark.end() :]
    observation = re.search(r"^\s*Observation\s*:", body, re.MULTILINE)
    if observation:  # the model went on imagining the outcome: only its first action counts
        body = body[: observation.start()]
    following = _ACTION.search(body)
    if following:
        body = body[: following.start()]
    return Step(thought.strip(), parse_action(body.strip()))


def parse_action(text: str) -> Action:
    text = _unfence(text)
    match = _CALL.match(text)
    if not match:
        raise ProtocolError(f"cannot read an action call in {text[:80]!r}")
    name = match.group(1)
    cls = ACTIONS.get(name)
    if cls is None:
        raise ProtocolError(f"unknown action {name!r}; use one of {', '.join(sorted(ACTIONS))}")
    end = text.rfind(")")
    if end < match.end() - 1:
        raise ProtocolError(f"{name}: the argument list is not closed with ')'")
    call = text[: end + 1]
    try:
        args, kwargs = _python_call(call)
    except (SyntaxError, ValueError):
        args, kwargs = [], _lenient_arguments(text[match.end() : end], parameters(cls))
    return _build(cls, name, args, kwargs)


def _unfence(text: str) -> str:
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.rsplit("```", 1)[0]
    return text.strip()


def _python_call(call: str) -> tuple[list[Any], dict[str, Any]]:
    node = ast.parse(call, mode="eval").body
    if not isinstance(node, ast.Call):
        raise ValueError("not a call")
    args = [ast.literal_eval(a) for a in node.args]
    kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg is not None}
    return args, kwargs


def _lenient_arguments(inner: str, names: tuple[str, ...]) -> dict[str, Any]:
    """Split `inner` at `<name>=` markers of this action's parameters only."""
    known = "|".join(re.escape(n) for n in (*names, *ALIASES))
    markers = list(re.finditer(rf"(?:^|,)\s*({known})\s*=", inner))
    if not markers:
        raise ProtocolError('cannot read the arguments; write them as name="value"')
    out: dict[str, Any] = {}
    for i, m in enumerate(markers):
        stop = markers[i + 1].start() if i + 1 < len(markers) else len(inner)
        out[m.group(1)] = _strip_quotes(inner[m.end() : stop].strip())
    return out


def _strip_quotes(value: str) -> str:
    for quote in ('"""', "'''", '"', "'"):
        if len(value) >= 2 * len(quote) and value.startswith(quote) and value.endswith(quote):
            inner = value[len(quote) : -len(quote)]
            return inner.replace("\\" + quote[0], quote[0]).replace("\\n", "\n")
    return value


def build_action(cls: type[Any], name: str, arguments: dict[str, Any]) -> Action:
    """The action from named arguments (a tool call's), read with the protocol's rules."""
    return _build(cls, name, [], arguments)


def _build(cls: type[Any], name: str, args: list[Any], kwargs: dict[str, Any]) -> Action:
    names = parameters(cls)
    values: dict[str, Any] = {}
    if len(args) > len(names):
        raise ProtocolError(f"{name} takes at most {len(names)} arguments")
    values.update(zip(names, args, strict=False))
    for given, value in kwargs.items():
        key = given if given in names else ALIASES.get(given, given)
        if key is None:
            continue  # a parameter other agents need and ours ignores (database_name)
        if key not in names:
            raise ProtocolError(f"{name} has no parameter {key!r}; it takes {', '.join(names)}")
        values[key] = value
    try:
        for key, value in list(values.items()):
            values[key] = _coerce(cls, key, value)
        action: Action = cls(**values)
    except (TypeError, ValueError) as exc:
        raise ProtocolError(f"{name}: {exc}") from exc
    return action


def _coerce(cls: type[Any], key: str, value: Any) -> Any:
    default = cls.__dataclass_fields__[key].default
    if isinstance(default, bool):
        return value if isinstance(value, bool) else str(value).strip().lower() in _TRUE
    if isinstance(default, int):
        return int(value)
    return value if isinstance(value, str) else str(value)


def format_action(name: str, **arguments: Any) -> str:
    """`Name(key="value", …)` with values written so `parse_action` reads them back exactly."""
    parts = []
    for key, value in arguments.items():
        parts.append(
            f"{key}={value!r}" if isinstance(value, (bool, int)) else f"{key}={_quote(value)}"
        )
    return f"{name}({', '.join(parts)})"


def _quote(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'
