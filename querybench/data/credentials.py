"""Cloud credentials where the official Spider 2.0 guides put them.

Snowflake (assets/Snowflake_Guideline.md): a `snowflake_credential.json` with `username` (the
guideline) or `user` (the shipped template), `password` (since the accounts use MFA,
2025-11, a programmatic access token), `account`, and optionally `role` / `warehouse`; or the
`SNOWFLAKE_*` variables. BigQuery (assets/Bigquery_Guideline.md): a service-account key named by
`GOOGLE_APPLICATION_CREDENTIALS`, else a `bigquery_credential.json`.

Files are looked for in the current folder, then the user config dir, then beside the Spider 2.0
data in every data root (where the official evaluation suites keep them). The templates the
repository ships (`your_username`, `your_private_key`) are recognised and never count as found.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs

from querybench import json_input
from querybench.data.roots import data_roots
from querybench.file_digests import open_regular

SNOWFLAKE_FILE = "snowflake_credential.json"
SNOWFLAKE_VARIABLES = "SNOWFLAKE_* variables"  # a `Found.source` that is no file
BIGQUERY_FILE = "bigquery_credential.json"
_BESIDE_DATA = (
    "spider2/spider2-snow/evaluation_suite",
    "spider2/spider2-lite/evaluation_suite",
    "spider2/spider2",
)
_PLACEHOLDERS = {
    "your_username",
    "your_password",
    "your_project_id",
    "your_private_key",
    "your_private_key_id",
}


@dataclass(frozen=True)
class Found:
    """Credentials found (`source` says where), or why none were (`problem`)."""

    kind: str  # "snowflake" or "bigquery"
    source: str | None  # a file path or `SNOWFLAKE_VARIABLES`
    problem: str | None = None  # set when nothing usable was found
    hint: str | None = None  # how to provide them

    @property
    def ok(self) -> bool:
        return self.problem is None


def config_dir() -> Path:
    return Path(platformdirs.user_config_dir("querybench", appauthor=False))


def candidate_files(name: str) -> list[Path]:
    """Where a credential file named `name` is looked for, in order."""
    places = [Path.cwd(), config_dir()]
    places += [root / beside for root in data_roots() for beside in _BESIDE_DATA]
    return [place / name for place in places]


def read_json(path: Path) -> dict[str, Any] | None:
    """The JSON object in `path`, or None when it is no readable regular file of one (a FIFO
    never waits for a writer: `open_regular`)."""
    try:
        fd, _ = open_regular(path)
        with os.fdopen(fd, "rb") as f:
            values = json_input.loads(f.read(1 << 20).decode("utf-8"))
    except (OSError, ValueError):
        return None
    return values if isinstance(values, dict) else None


def is_template(values: dict[str, Any]) -> bool:
    return any(isinstance(v, str) and v.strip().lower() in _PLACEHOLDERS for v in values.values())


def snowflake_values(values: dict[str, Any]) -> dict[str, Any]:
    """The credential file's fields as the connector names them (`username` -> `user`)."""
    out = dict(values)
    if not out.get("user") and out.get("username"):
        out["user"] = out["username"]
    out.pop("username", None)
    return out


def find_snowflake() -> Found:
    env = {k: os.environ.get(f"SNOWFLAKE_{k.upper()}") for k in ("account", "user", "password")}
    if (
        env["account"]
        and env["user"]
        and (env["password"] or os.environ.get("SNOWFLAKE_PRIVATE_KEY_FILE"))
    ):
        return Found("snowflake", SNOWFLAKE_VARIABLES)
    return _first_file("snowflake", SNOWFLAKE_FILE, ("account", "user"))


def find_bigquery() -> Found:
    env = os.environ.get("GOOGLE_APPLICATION_CREDENTIALS")
    if env:
        path = Path(env).expanduser()
        values = read_json(path)
        if values is None:
            return Found(
                "bigquery", None, f"GOOGLE_APPLICATION_CREDENTIALS={env}: not a readable JSON key"
            )
        if is_template(values):
            return Found("bigquery", None, f"{path} is the unfilled template")
        return Found("bigquery", str(path))
    return _first_file("bigquery", BIGQUERY_FILE, ("project_id", "private_key", "client_email"))


def _first_file(kind: str, name: str, required: tuple[str, ...]) -> Found:
    templates: list[Path] = []
    for path in candidate_files(name):
        if not path.is_file():
            continue
        values = read_json(path)
        if values is None:
            continue
        if kind == "snowflake":
            values = snowflake_values(values)
        if is_template(values):
            templates.append(path)
            continue
        if all(values.get(key) for key in required):
            return Found(kind, str(path))
    where = f"only the unfilled template {templates[0]}" if templates else f"no {name}"
    hint = (
        "fill in snowflake_credential.json or set SNOWFLAKE_ACCOUNT/USER/PASSWORD (docs/data.md)"
        if kind == "snowflake"
        else "set GOOGLE_APPLICATION_CREDENTIALS or write bigquery_credential.json (docs/data.md)"
    )
    return Found(kind, None, where, hint)
