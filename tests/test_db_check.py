"""Cloud credentials as the official guides give them, and `db check`'s failures in words.

The connectors' exceptions are their real classes, built here with the numbers and messages
the services answer with; nothing reaches a network."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from querybench.cli import app
from querybench.data.credentials import find_bigquery, find_snowflake
from querybench.engines.check import explain
from querybench.engines.snowflake import SnowflakeCredentials
from tests.conftest import as_new_user

sf_errors = pytest.importorskip("snowflake.connector.errors")
google_auth = pytest.importorskip("google.auth.exceptions")
google_api = pytest.importorskip("google.api_core.exceptions")


@pytest.fixture
def clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    as_new_user(monkeypatch, tmp_path, tmp_path / "data")
    return tmp_path


GUIDELINE = {  # assets/Snowflake_Guideline.md, section 6
    "username": "ann",
    "password": "pat-token",
    "account": "RSRSBDK-YDB67606",
    "role": "PARTICIPANT",
    "warehouse": "COMPUTE_WH_PARTICIPANT",
}
TEMPLATE = {"user": "your_username", "password": "your_password", "account": "RSRSBDK-YDB67606"}


def test_snowflake_user_or_username(clean: Path) -> None:
    path = clean / "snowflake_credential.json"
    path.write_text(json.dumps(GUIDELINE))
    credentials = SnowflakeCredentials.load(path)
    assert (credentials.user, credentials.password) == ("ann", "pat-token")
    assert credentials.warehouse == "COMPUTE_WH_PARTICIPANT"
    path.write_text(json.dumps({**TEMPLATE, "user": "bo", "password": "tok"}))
    assert SnowflakeCredentials.load(path).user == "bo"
    assert SnowflakeCredentials.load().user == "bo"  # found in the current folder
    assert find_snowflake().source == str(path)


def test_templates_never_count_as_credentials(clean: Path) -> None:
    beside = clean / "data" / "spider2" / "spider2-snow" / "evaluation_suite"
    beside.mkdir(parents=True)
    (beside / "snowflake_credential.json").write_text(json.dumps(TEMPLATE))
    found = find_snowflake()
    assert not found.ok
    assert found.problem == f"only the unfilled template {beside / 'snowflake_credential.json'}"
    key = {"type": "service_account", "project_id": "p", "private_key": "k", "client_email": "e"}
    assert not find_bigquery().ok
    (clean / "xdg-config" / "querybench").mkdir(parents=True)
    (clean / "xdg-config" / "querybench" / "bigquery_credential.json").write_text(json.dumps(key))
    assert find_bigquery().source == str(
        clean / "xdg-config" / "querybench" / "bigquery_credential.json"
    )


def test_google_application_credentials_first(clean: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = clean / "key.json"
    key.write_text(json.dumps({"project_id": "p", "private_key": "k", "client_email": "e"}))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key))
    assert find_bigquery().source == str(key)
    key.write_text("not json")
    assert (
        find_bigquery().problem == f"GOOGLE_APPLICATION_CREDENTIALS={key}: not a readable JSON key"
    )


def _sf(cls: Any, errno: int, msg: str, sqlstate: str = "08001") -> Exception:
    error: Exception = cls(msg=msg, errno=errno, sqlstate=sqlstate)
    return error


# (the connector's exception, the words `explain` must start with)
CASES = [
    (
        _sf(
            sf_errors.DatabaseError, 666, "Your account is suspended due to lack of payment method."
        ),
        "the Snowflake account is suspended (error 000666)",
    ),
    (
        _sf(
            sf_errors.DatabaseError,
            394508,
            "Failed to authenticate: MFA with TOTP is required. To authenticate, provide both "
            "your password and a current TOTP passcode.",
        ),
        "the account requires multi-factor authentication",
    ),
    (
        _sf(sf_errors.DatabaseError, 394400, "Programmatic access token is invalid or expired."),
        "the programmatic access token has expired or was revoked",
    ),
    (
        _sf(sf_errors.DatabaseError, 390100, "Incorrect username or password was specified."),
        "wrong user or password",
    ),
    (
        _sf(
            sf_errors.OperationalError,
            250001,
            "Could not connect to Snowflake backend after 2 attempt(s).Aborting",
        ),
        "wrong account identifier, or no network to it",
    ),
    (
        _sf(
            sf_errors.DatabaseError,
            390189,
            "Role 'ADMIN' specified in the connect string does not exist or not authorized.",
        ),
        "the role does not exist or is not granted",
    ),
    (
        _sf(
            sf_errors.ProgrammingError,
            606,
            "No active warehouse selected in the current session.",
            "57P03",
        ),
        "no usable warehouse",
    ),
    (
        google_auth.DefaultCredentialsError("Your default credentials were not found."),
        "no Google credentials",
    ),
    (google_auth.RefreshError("invalid_grant: Invalid JWT Signature."), "Google rejected the"),
    (
        google_api.Forbidden("Access Denied: Project p: User does not have bigquery.jobs.create"),
        "the service account may not run queries",
    ),
]


@pytest.mark.parametrize(("error", "words"), CASES, ids=[w[:30] for _, w in CASES])
def test_failures_in_words(error: Exception, words: str) -> None:
    text = explain(error)
    assert text.startswith(words)
    assert getattr(error, "msg", None) is None or str(error.msg).split(".")[0] in text  # type: ignore[attr-defined]


def test_a_wrapped_connector_error_is_still_explained() -> None:
    from querybench.errors import EngineUnavailable

    cause = _sf(sf_errors.DatabaseError, 666, "Your account is suspended.")
    try:
        try:
            raise cause
        except Exception as exc:
            raise EngineUnavailable("cannot connect to Snowflake: suspended") from exc
    except EngineUnavailable as wrapped:
        assert explain(wrapped).startswith("the Snowflake account is suspended (error 000666)")


def test_db_check_through_the_real_snowflake_path(
    clean: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import snowflake.connector

    (clean / "snowflake_credential.json").write_text(json.dumps(GUIDELINE))
    seen: dict[str, Any] = {}

    def refuse(**kw: Any) -> None:
        seen.update(kw)
        raise _sf(
            sf_errors.DatabaseError, 666, "Your account is suspended due to lack of payment method."
        )

    monkeypatch.setattr(snowflake.connector, "connect", refuse)
    result = CliRunner().invoke(app, ["db", "check", "snowflake://RSRSBDK-YDB67606"])
    assert result.exit_code == 1
    assert (
        "failed: snowflake://RSRSBDK-YDB67606: the Snowflake account is suspended" in result.output
    )
    assert (seen["user"], seen["password"], seen["role"]) == ("ann", "pat-token", "PARTICIPANT")


def test_db_check_ok(clean: Path) -> None:
    db = clean / "a.sqlite"
    sqlite3.connect(db).close()
    result = CliRunner().invoke(app, ["db", "check", f"sqlite:///{db}"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"ok: sqlite:///{db}: connected; SELECT 1 returned 1 (")
    missing = CliRunner().invoke(app, ["db", "check", str(clean / "none.sqlite")])
    assert missing.exit_code == 1 and "database file not found" in missing.output


def test_db_check_answers_within_its_timeout_when_the_server_never_does(
    clean: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    import snowflake.connector

    (clean / "snowflake_credential.json").write_text(json.dumps(GUIDELINE))
    released = threading.Event()
    monkeypatch.setattr(snowflake.connector, "connect", lambda **kw: released.wait(600))
    try:
        result = CliRunner().invoke(
            app, ["db", "check", "snowflake://RSRSBDK-YDB67606", "--timeout", "0.5"]
        )
    finally:
        released.set()
    assert result.exit_code == 1
    assert "failed: snowflake://RSRSBDK-YDB67606: no answer within 0.5 s" in result.output
