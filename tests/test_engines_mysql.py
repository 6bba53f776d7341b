"""MySQL/MariaDB: the server conformance checks, plus what only MySQL has."""

from __future__ import annotations

import pytest

from querybench.engines.mysql import MySQLEngine
from querybench.errors import EngineUnavailable
from tests.server_conformance import *  # noqa: F403  (the shared tests run here)
from tests.server_databases import require_server


@pytest.fixture
def kind() -> str:
    return "mysql"


@pytest.fixture
def endless() -> str:
    return "SELECT count(*) FROM nums a, nums b, nums c, nums d"


@pytest.fixture
def hostile() -> list[str]:
    return [
        "SELECT * FROM singer INTO OUTFILE '{elsewhere}/out.csv'",
        "SELECT photo FROM singer LIMIT 1 INTO DUMPFILE '{elsewhere}/out.bin'",
        "SELECT LOAD_FILE('/etc/hostname')",
        # the same function past a comment, in backquotes, in an executable comment
        "SELECT load_file/**/('/etc/hostname')",
        "SELECT `load_file`('/etc/hostname')",
        "SELECT load_file -- a comment\n('/etc/hostname')",
        "SELECT /*!50000 load_file*/('/etc/hostname')",
        "SET SESSION max_statement_time = 0",
        "SET GLOBAL read_only = 0",
        "SET STATEMENT max_statement_time=0 FOR SELECT 1",
        "TRUNCATE TABLE singer",
        "RENAME TABLE singer TO s2",
        "LOCK TABLES singer WRITE",
        "HANDLER singer OPEN",
        "LOAD DATA INFILE '/etc/hostname' INTO TABLE singer",
        "REPLACE INTO singer VALUES (1, 'x', 1.0, NULL)",
        "CALL mysql.nothing()",
        "DO SLEEP(0)",
    ]


def test_types_are_mysql_types(engine) -> None:  # type: ignore[no-untyped-def]
    singer = next(t for t in engine.tables() if t.name == "singer")
    assert [c.type for c in singer.columns][:2] in (
        ["bigint(20)", "longtext"],
        ["bigint", "longtext"],
    )


def test_text_compares_case_sensitively_like_sqlite(engine) -> None:  # type: ignore[no-untyped-def]
    assert engine.execute("SELECT count(*) FROM singer WHERE name = 'ann'").rows == [(0,)]


def test_password_is_never_shown() -> None:
    require_server("mysql")
    with pytest.raises(EngineUnavailable) as info:
        MySQLEngine("mysql://nobody:s3cret-pw@127.0.0.1:3306/no_such_db")
    assert "s3cret-pw" not in str(info.value)
