"""`db check URL`: connect, run `SELECT 1`, and say in words what went wrong.

Cloud connectors report failures as numbered errors in their own words ("250001 (08001):
Failed to connect to DB ..."); `explain` maps the ones a Spider 2.0 user meets (wrong account,
MFA required, expired token, suspended account 000666, missing Google credentials, a missing
role) to what happened and what to do, keeping the connector's own text after it.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from querybench.engines import connect


@dataclass(frozen=True)
class CheckOutcome:
    ok: bool
    message: str
    seconds: float


DEFAULT_CHECK_SECONDS = 30.0


def check_connection(
    url: str, *, opener: Callable[[str], Any] = connect, timeout: float = DEFAULT_CHECK_SECONDS
) -> CheckOutcome:
    """Open `url`, run a trivial query, close; never raises, and answers within `timeout`
    seconds even when the server never does (a connector's login can wait for minutes)."""
    start = time.perf_counter()
    outcome: list[CheckOutcome] = []
    worker = threading.Thread(
        target=lambda: outcome.append(_check(url, opener, start)), daemon=True, name="db-check"
    )
    worker.start()
    worker.join(timeout)
    if outcome:
        return outcome[0]
    message = f"no answer within {timeout:g} s (the server or network is not answering)"
    return CheckOutcome(False, message, time.perf_counter() - start)


def _check(url: str, opener: Callable[[str], Any], start: float) -> CheckOutcome:
    try:
        engine = opener(url)
        try:
            result = engine.execute("SELECT 1")
        finally:
            engine.close()
        rows = getattr(result, "rows", None)
        value = rows[0][0] if rows else "no row"
        message = f"connected; SELECT 1 returned {value}"
        return CheckOutcome(True, message, time.perf_counter() - start)
    except Exception as exc:  # every failure is the answer here, said in words
        return CheckOutcome(False, explain(exc), time.perf_counter() - start)


_SUSPENDED = (
    "the Snowflake account is suspended (error 000666). The shared Spider 2.0 account has been "
    "reported suspended since about 2026-08: host the data on your own Snowflake account or "
    "use the offline emulation (docs/data.md)"
)
# (errno or None, pattern over the message, explanation), first match wins
_SNOWFLAKE: tuple[tuple[int | None, str, str], ...] = (
    (666, "", _SUSPENDED),
    (None, r"suspended", _SUSPENDED),
    (
        None,
        r"\bMFA\b|multi-factor|TOTP|passcode|Duo",
        "the account requires multi-factor authentication: a password alone no longer signs in "
        "(since 2025-11). Create a programmatic access token in Snowsight and put it in the "
        "credential file as `password`",
    ),
    (
        None,
        r"token.*(expired|invalid|revoked)|(expired|invalid).*token",
        "the programmatic access token has expired or was revoked: create a new one in "
        "Snowsight and replace `password` in the credential file",
    ),
    (
        None,
        r"incorrect username or password",
        "wrong user or password: check `username` (or `user`) and that `password` is a current "
        "programmatic access token",
    ),
    (
        None,
        r"locked",
        "the user is locked after failed sign-ins: wait, or ask the account admin to unlock it",
    ),
    (
        None,
        r"role .*(does not exist|not authorized|not granted)",
        "the role does not exist or is not granted to this user: fix `role` in the credential "
        "file (the Spider 2.0 account uses PARTICIPANT)",
    ),
    (
        None,
        r"no active warehouse|warehouse .*(does not exist|not authorized)",
        "no usable warehouse: set `warehouse` in the credential file (the Spider 2.0 account "
        "uses COMPUTE_WH_PARTICIPANT)",
    ),
    (
        None,
        r"could not connect to snowflake backend|HTTP 40[34]|failed to connect to DB|"
        r"account .*(not found|does not exist)|getaddrinfo|name or service not known",
        "wrong account identifier, or no network to it: `account` is ORG-ACCOUNT as the "
        "guideline gives it (e.g. RSRSBDK-YDB67606), without .snowflakecomputing.com",
    ),
)

_GOOGLE: tuple[tuple[str, str, str], ...] = (
    (
        "DefaultCredentialsError",
        "",
        "no Google credentials: set GOOGLE_APPLICATION_CREDENTIALS to a service-account key "
        "file, or put the key as bigquery_credential.json in this folder",
    ),
    (
        "RefreshError",
        "",
        "Google rejected the service-account key (deleted or disabled key, or this machine's "
        "clock is wrong): create a new key",
    ),
    (
        "",
        r"billing",
        "billing is not enabled on the project (or its free query quota is used up)",
    ),
    (
        "Forbidden",
        r"bigquery\.jobs\.create|permission",
        "the service account may not run queries in this project: grant it BigQuery Job User "
        "and BigQuery Data Viewer",
    ),
    ("NotFound", r"project", "the project does not exist, or the key belongs to another one"),
)


def explain(exc: BaseException) -> str:
    """What failed, in words, then the original message."""
    original = _message(exc)
    for cause in _chain(exc):
        text = _snowflake(cause) or _google(cause)
        if text:
            detail = _message(cause)
            return f"{text} [{detail}]" if detail and detail not in text else text
    if isinstance(exc, ConnectionRefusedError | TimeoutError):
        return f"cannot reach the server ({original})"
    return original or type(exc).__name__


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _message(exc: BaseException) -> str:
    msg = getattr(exc, "msg", None) or getattr(exc, "message", None) or str(exc)
    return " ".join(str(msg).split())


def _snowflake(exc: BaseException) -> str | None:
    if not type(exc).__module__.startswith("snowflake."):
        return None
    errno = getattr(exc, "errno", None)
    text = _message(exc)
    for number, pattern, explanation in _SNOWFLAKE:
        if number is not None and errno == number:
            return explanation
        if pattern and re.search(pattern, text, re.IGNORECASE):
            return explanation
    return None


def _google(exc: BaseException) -> str | None:
    if not type(exc).__module__.startswith("google."):
        return None
    name = type(exc).__name__
    text = _message(exc)
    for class_name, pattern, explanation in _GOOGLE:
        if class_name and class_name != name:
            continue
        if not pattern or re.search(pattern, text, re.IGNORECASE):
            return explanation
    return None
