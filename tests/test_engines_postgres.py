"""PostgreSQL: the server conformance checks, plus what only PostgreSQL has."""

from __future__ import annotations

import pytest

from querybench.engines import connect
from querybench.engines.postgres import PostgresEngine
from querybench.errors import EngineUnavailable
from tests.server_conformance import *  # noqa: F403  (the shared tests run here)
from tests.server_databases import require_server


@pytest.fixture
def kind() -> str:
    return "postgres"


@pytest.fixture
def endless() -> str:
    return "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c"


@pytest.fixture
def hostile() -> list[str]:
    return [
        "COPY singer TO '{elsewhere}/out.csv'",
        "SET default_transaction_read_only = off",
        "SET statement_timeout = 0",
        "SELECT set_config('default_transaction_read_only', 'off', false)",
        "SELECT pg_read_file('/etc/hostname')",
        # The same functions as the server reads their names: past a comment, in quotes, in
        # Unicode escapes, or built at run time by a function that runs a query's text.
        "SELECT pg_read_file/**/('/etc/hostname')",
        "SELECT pg_catalog.\"pg_read_file\"('/etc/hostname')",
        "SELECT * FROM pg_ls_dir -- a comment\n('/')",
        "SELECT U&\"\\0070g_read_file\"('/etc/hostname')",
        "SELECT query_to_xml('SELECT pg_read_' || 'file(''/etc/hostname'')', true, true, '')",
        "SELECT \"set_config\"('default_transaction_read_only', 'off', false)",
        "SELECT lo_import('/etc/hostname')",
        # host files behind views a superuser reads, no function named: the role decides
        "SELECT sourcefile, setting FROM pg_file_settings",
        "SELECT * FROM pg_hba_file_rules",
        "SELECT pg_terminate_backend(1)",
        "WITH x AS (DELETE FROM singer RETURNING 1) SELECT * FROM x",
        "START TRANSACTION READ WRITE",
        "CREATE EXTENSION dblink",
        "VACUUM",
        "TRUNCATE singer",
        "GRANT ALL ON singer TO PUBLIC",
    ]


def test_types_are_postgres_types(engine) -> None:  # type: ignore[no-untyped-def]
    singer = next(t for t in engine.tables() if t.name == "singer")
    assert [c.type for c in singer.columns] == ["bigint", "text", "double precision", "bytea"]


def test_numeric_comes_back_as_decimal(engine) -> None:  # type: ignore[no-untyped-def]
    from decimal import Decimal

    assert engine.execute("SELECT avg(id) FROM singer").rows == [(Decimal("2.0000000000000000"),)]


def test_password_is_never_shown() -> None:
    require_server("postgres")
    with pytest.raises(EngineUnavailable) as info:
        PostgresEngine("postgresql://nobody:s3cret-pw@127.0.0.1:5432/no_such_db")
    assert "s3cret-pw" not in str(info.value)
    assert "***" in str(info.value)


def test_connect_picks_postgres(url: str) -> None:
    engine = connect(url.replace("postgresql://", "postgres://"))
    assert engine.dialect == "postgres"
    engine.close()


def test_model_sql_runs_without_the_superusers_rights(engine) -> None:  # type: ignore[no-untyped-def]
    """Connected as a superuser (the local server's trust role), queries run as the predefined
    reader role: the server, not a list of names, refuses what reaches outside the data."""
    assert engine.execute("SELECT current_setting('is_superuser')").rows == [("off",)]
    assert engine.execute("SELECT count(*) FROM singer").rows == [(3,)]
