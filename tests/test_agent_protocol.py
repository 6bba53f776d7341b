"""The text protocol: Thought/Action replies read back into actions, as a table of cases."""

from __future__ import annotations

import pytest

from querybench.agent.actions import (
    Bash,
    CreateFile,
    ExecuteSQL,
    Fail,
    GetTabInfo,
    GetTables,
    SampleRows,
    Terminate,
)
from querybench.agent.protocol import format_action, parse_action, parse_reply
from querybench.errors import ProtocolError

CASES = [
    ('Bash(code="ls -la")', Bash("ls -la")),
    ("GetTables()", GetTables()),
    ('GetTabInfo(table="singer")', GetTabInfo("singer")),
    ('GetTabInfo(table_name="singer", database_name="x")', GetTabInfo("singer")),
    (
        'SampleRows(table="t", row_number=5, save_path="t.json")',
        SampleRows("t", 5, "t.json"),
    ),
    ('SampleRows(table="t", row_number="2")', SampleRows("t", 2)),
    (
        'ExecuteSQL(sql_query="SELECT 1", is_save=True, save_path="result.csv")',
        ExecuteSQL("SELECT 1", True, "result.csv"),
    ),
    ('ExecuteSQL(sql_query="SELECT \\"a b\\" FROM t")', ExecuteSQL('SELECT "a b" FROM t')),
    ("ExecuteSQL(sql_query='SELECT \"x\"')", ExecuteSQL('SELECT "x"')),
    (
        'ExecuteSQL(sql_query="""SELECT name\nFROM t\nWHERE a = "b" """)',
        ExecuteSQL('SELECT name\nFROM t\nWHERE a = "b" '),
    ),
    # unescaped quotes inside the SQL: no grammar reads it, the lenient split does
    (
        'ExecuteSQL(sql_query="SELECT "Name" FROM t WHERE c = "x"", is_save=true, '
        'save_path="r.csv")',
        ExecuteSQL('SELECT "Name" FROM t WHERE c = "x"', True, "r.csv"),
    ),
    (
        "ExecuteSQL(sql_query=\"SELECT a,\n  b\nFROM t\nWHERE s = 'it''s'\")",
        ExecuteSQL("SELECT a,\n  b\nFROM t\nWHERE s = 'it''s'"),
    ),
    ('CreateFile(filepath="q.sql", code="SELECT 1")', CreateFile("q.sql", "SELECT 1")),
    ('Terminate(output="result.csv")', Terminate("result.csv")),
    ('Terminate("42")', Terminate("42")),
    ('FAIL(reason="no such data")', Fail("no such data")),
    ('```\nTerminate(output="a")\n```', Terminate("a")),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_parse_action(text: str, expected: object) -> None:
    assert parse_action(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Nothing here",
        "Launch()",
        'ExecuteSQL(query_text="x")',
        "Bash(code=",
        "GetTabInfo(1, 2, 3)",
    ],
)
def test_unreadable_actions(text: str) -> None:
    with pytest.raises(ProtocolError):
        parse_action(text)


def test_reply_thought_and_first_action() -> None:
    reply = (
        "Thought: I will look at the tables.\nThen count.\n"
        'Action: GetTables()\nObservation: (imagined by the model, ignored)\nAction: Bash(code="x")'
    )
    step = parse_reply(reply)
    assert step.thought == "I will look at the tables.\nThen count."
    assert step.action == GetTables()
    with pytest.raises(ProtocolError):
        parse_reply("Thought: only thinking")


@pytest.mark.parametrize(
    "sql",
    ['SELECT "a\\b" FROM t', "SELECT 'x'\nFROM \"t\" -- c", 'SELECT "Name", \'o"k\' FROM x'],
)
def test_format_round_trip(sql: str) -> None:
    text = format_action("ExecuteSQL", sql_query=sql, is_save=True, save_path="result.csv")
    assert parse_action(text) == ExecuteSQL(sql, True, "result.csv")
