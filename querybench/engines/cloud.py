"""A Spider 2.0 cloud task's warehouse, when credentials for it are here.

A BigQuery or Snowflake task runs on its offline emulation when one was built (`data emulate`),
else on the warehouse itself when the official guides' credentials are found
(`credentials.py`): the URL names the credentials file and the task's database, so the query
child that opens it needs nothing from the environment but what `SNOWFLAKE_*` already carries.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlencode

from querybench.data.credentials import (
    SNOWFLAKE_VARIABLES,
    find_bigquery,
    find_snowflake,
    read_json,
)
from querybench.engines.registry import EngineKind


@dataclass(frozen=True)
class CloudTarget:
    """The URL `engines.connect` opens for one cloud database, or why there is none here."""

    url: str | None
    problem: str | None = None


def cloud_target(kind: str, database: str) -> CloudTarget:
    """The warehouse URL of `database` on `kind` ("bigquery", "snowflake") with the credentials
    found here; `problem` says why there is none."""
    if kind == EngineKind.BIGQUERY:
        found = find_bigquery()
        if found.source is None:
            return CloudTarget(None, f"no BigQuery credentials: {found.problem}")
        values = read_json(Path(found.source)) or {}
        project = values.get("project_id") or values.get("quota_project_id")
        if not isinstance(project, str) or not project:
            return CloudTarget(None, f"{found.source} names no project_id to bill the queries to")
        query = urlencode({"credentials": str(Path(found.source).resolve())})
        return CloudTarget(f"bigquery://{quote(project, safe='')}?{query}")
    if kind == EngineKind.SNOWFLAKE:
        found = find_snowflake()
        if found.source is None:
            return CloudTarget(None, f"no Snowflake credentials: {found.problem}")
        query = (
            ""  # the connector reads SNOWFLAKE_* itself
            if found.source == SNOWFLAKE_VARIABLES
            else "?" + urlencode({"credentials": str(Path(found.source).resolve())})
        )
        return CloudTarget(f"snowflake:///{quote(database, safe='')}{query}")
    return CloudTarget(None, f"{kind} is not a cloud warehouse")
