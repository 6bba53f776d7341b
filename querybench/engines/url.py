"""Server URLs (`postgresql://user:pw@host/db`), parsed once and never shown with a password."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, unquote, urlsplit

from querybench.engines.registry import ENGINES
from querybench.errors import EngineError

_USERINFO_PASSWORD = re.compile(r"(://[^:/@\s]*:)[^@\s]*@")


@dataclass(frozen=True)
class ServerUrl:
    scheme: str
    host: str
    port: int | None
    user: str | None
    database: str | None
    params: dict[str, str] = field(default_factory=dict)
    password: str | None = field(default=None, repr=False)

    def masked(self) -> str:
        """The URL as it may be shown: the password, if any, replaced by ***."""
        auth = ""
        if self.user is not None:
            auth = self.user + (":***" if self.password else "") + "@"
        port = "" if self.port is None else f":{self.port}"
        return f"{self.scheme}://{auth}{self.host}{port}/{self.database or ''}"


def parse_server_url(url: str, engine: str) -> ServerUrl:
    """Split `url`; the password falls back to the environment variable of the registry's
    entry `engine` (the drivers' own conventions: `PGPASSWORD`, `MYSQL_PWD`, …)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise EngineError(f"malformed URL {mask_secrets(url)!r}: {exc}") from None
    password = unquote(parts.password) if parts.password is not None else None
    spec = ENGINES.get(engine)
    if password is None and spec is not None and spec.password_env is not None:
        password = os.environ.get(spec.password_env)
    database = unquote(parts.path.lstrip("/")) or None
    return ServerUrl(
        scheme=parts.scheme.lower(),
        host=parts.hostname or "127.0.0.1",
        port=port,
        user=unquote(parts.username) if parts.username is not None else None,
        database=database,
        params=dict(parse_qsl(parts.query)),
        password=password,
    )


def mask_secrets(text: str, password: str | None = None) -> str:
    """`text` with URL passwords (and `password` itself, wherever it appears) replaced by ***."""
    masked = _USERINFO_PASSWORD.sub(r"\1***@", text)
    if password:
        masked = masked.replace(password, "***")
    return masked
