"""`vf-run`: verifiers' own `vf-eval` with the same arguments, `--no-push` unless `--push`.

No verifiers release ships a `vf-run` command (0.4.0 has `vf-eval`), and `vf-eval` pushes
results to the platform by default, which needs a cloud login; the environment READMEs' run
line needs neither. `--push` is passed on to `vf-eval` as it is. An endpoint that does not
stream (`streaming_refused`, one probe before the first task) is put behind a loopback relay
that does (`stream_relay.py`), so the run works on it as on any other.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from querybench.errors import QuerybenchError

if TYPE_CHECKING:
    from querybench.envs.stream_relay import StreamRelay


def eval_arguments(argv: Sequence[str]) -> list[str]:
    """`argv` as `vf-eval` gets it: `--no-push` added unless `--push` or `--no-push` is there."""
    arguments = list(argv)
    if "--push" not in arguments and "--no-push" not in arguments:
        arguments.append("--no-push")
    return arguments


def _option(arguments: Sequence[str], *names: str) -> str | None:
    """The value of `--name VALUE` or `--name=VALUE`, the last one given."""
    value = None
    for i, argument in enumerate(arguments):
        flag, has_value, given = argument.partition("=")
        if flag in names:
            value = given if has_value else (arguments[i + 1] if i + 1 < len(arguments) else None)
    return value


def _with_option(arguments: Sequence[str], name: str, value: str) -> list[str]:
    """`arguments` with every `name VALUE` / `name=VALUE` given `value` instead."""
    out = list(arguments)
    for i, argument in enumerate(out):
        if argument == name and i + 1 < len(out):
            out[i + 1] = value
        elif argument.startswith(name + "="):
            out[i] = f"{name}={value}"
    return out


def streaming_refused(arguments: Sequence[str]) -> str | None:
    """Why the endpoint cannot serve this run as it is, when it answers a streamed chat
    request with a plain JSON reply: verifiers' harness always streams and reads the reply as
    SSE, so every task would fail with "upstream stream ended before its terminal event" while
    the run exits 0. One request of one token, before the first task; an endpoint that cannot
    be asked (down, no `--client.base-url`) is left to vf-eval's own errors."""
    import os

    import httpx

    base = _option(arguments, "--client.base-url")
    model = _option(arguments, "-m", "--model")
    if not base or not model:
        return None
    key = os.environ.get(_option(arguments, "--client.api-key-var") or "OPENAI_API_KEY", "")
    body = {
        "model": model,
        "messages": [{"role": "user", "content": "Say ok."}],
        "max_tokens": 1,
        "stream": True,
    }
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    url = f"{base.rstrip('/')}/chat/completions"
    try:
        with httpx.stream("POST", url, json=body, headers=headers, timeout=60.0) as reply:
            kind = reply.headers.get("content-type", "")
            if reply.status_code != 200 or kind.startswith("text/event-stream"):
                return None
    except httpx.HTTPError:
        return None
    return (
        f"{base} answered a streamed chat request (stream: true) with {kind or 'no'} content, "
        "not an event stream: the verifiers harness reads every reply as a stream"
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Run `vf-eval`; a querybench data error (no question file, a missing database) ends it
    with that one line and exit status 2 instead of a traceback."""
    from verifiers.v1.cli.eval.main import main as vf_eval

    arguments = eval_arguments(sys.argv[1:] if argv is None else argv)
    if arguments == ["--no-push"] or any(a in ("-h", "--help") for a in arguments):
        arguments = [a for a in arguments if a != "--no-push"]
        print("vf-run: verifiers' vf-eval, with --no-push unless --push is given.")
    relay: StreamRelay | None = None
    if streaming_refused(arguments) is not None:
        from querybench.envs.stream_relay import StreamRelay

        base = str(_option(arguments, "--client.base-url"))
        relay = StreamRelay(base)
        arguments = _with_option(arguments, "--client.base-url", relay.url)
        print(
            f"vf-run: {base} does not stream its replies (the harness reads streams): "
            f"relayed through {relay.url}, which streams each reply it gets",
            file=sys.stderr,
        )
    try:
        if relay is None:
            vf_eval(arguments)
        else:
            with relay:
                vf_eval(arguments)
    except QuerybenchError as exc:
        print(f"vf-run: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
