"""A child's replies are read with only the globals a reply holds (`engines/replies.py`): a reply
naming anything else (a child taken over sending `os.system`) is refused, that child killed and
its step settled as a crash, and the next message goes to a fresh child; every value an honest
child hands back (SQLite and DuckDB rows and frames, errors, the reward's packed verdicts) still
loads as it was."""

from __future__ import annotations

import datetime
import decimal
import importlib
import ipaddress
import os
import pickle
import uuid
from multiprocessing.reduction import ForkingPickler
from pathlib import Path
from typing import Any

import duckdb
import pytest

from querybench.engines.base import Column, Result, Table
from querybench.engines.child import WORK, Child, ChildSetup
from querybench.engines.replies import ReplyReader
from querybench.engines.supervisor import Launch, Stopped, Supervisor
from querybench.envs.match import execution_match
from querybench.envs.reward_child import REPLY_GLOBALS, Packer, unpack_outcomes
from querybench.errors import EngineError, EngineErrorClass, QueryTimeout


class _Calls:
    """Pickles as a call of `function(*args)`: what a child taken over could send."""

    def __init__(self, function: Any, *args: Any) -> None:
        self.function, self.args = function, args

    def __reduce__(self) -> tuple[Any, ...]:
        return self.function, self.args


class Hostile:
    """A work kind for the tests: `(marker)` answers a pickle that would run `touch marker`
    in the process reading it; `(None)` answers honestly."""

    def __init__(self, child: Child) -> None:
        self.child = child

    def __call__(self, marker: str | None) -> Any:
        self.child.progress.index = 3
        self.child.progress.step(WORK, 60.0)
        if marker is None:
            return "honest", os.getpid()
        return "hostile", _Calls(os.system, f"touch {marker}")


@pytest.mark.parametrize("launch", ["fork", "subprocess"])
def test_a_reply_naming_os_system_is_refused_and_the_next_message_gets_a_fresh_child(
    launch: Launch, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    child = Supervisor(
        ChildSetup(ignore_ctrl_c=True, work="tests.test_engines_replies:Hostile"), launch=launch
    )
    try:
        number = child.send("work", str(marker))
        stopped = child.receive()
        assert isinstance(stopped, Stopped) and not stopped.killed
        assert (stopped.number, stopped.index) == (number, 3)
        assert str(stopped.ended()) == (
            "the query's process ended (killed: its reply was refused: UnpicklingError: "
            "posix.system is not a value a reply holds)"
        )
        assert not marker.exists()
        assert child.pid is None  # killed

        number = child.send("work", None)
        reply = child.receive()
        assert not isinstance(reply, Stopped) and reply[:2] == (number, "ok")
        assert reply[2][0] == "honest"
    finally:
        child.close()


def _reloaded(value: Any, reader: ReplyReader | None = None) -> Any:
    return (reader or ReplyReader()).load(bytes(ForkingPickler.dumps(value)))


@pytest.mark.parametrize(
    "hostile",
    [
        _Calls(os.system, "true"),
        _Calls(eval, "1"),
        _Calls(getattr, uuid.UUID, "__init__"),
        _Calls(getattr, Result, "__init__"),
        _Calls(pickle.loads, b"."),
        _Calls(open, "/etc/hostname"),
        _Calls(importlib.import_module, "os"),
    ],
)
def test_every_other_global_is_refused(hostile: _Calls) -> None:
    with pytest.raises(pickle.UnpicklingError):
        _reloaded((0, "ok", hostile))


def test_a_dotted_name_through_an_allowed_class_is_refused() -> None:
    # protocol 4's STACK_GLOBAL of "EngineError.__init__" would walk attributes by name
    payload = b"\x80\x04\x8c\x11querybench.errors\x8c\x14EngineError.__init__\x93."
    with pytest.raises(pickle.UnpicklingError):
        ReplyReader().load(payload)


DUCKDB_VALUES = [
    "1::TINYINT",
    "1::HUGEINT",
    "18446744073709551615::UBIGINT",
    "1.5::DECIMAL(10,2)",
    "1.5::DECIMAL(38,10)",
    "1.5::FLOAT",
    "'nan'::DOUBLE",
    "'x'",
    "'\\x00'::BLOB",
    "true",
    "DATE '2020-01-01'",
    "TIME '10:00:00'",
    "TIMESTAMP '2020-01-01 10:00:00'",
    "TIMESTAMPTZ '2020-01-01 10:00:00+02'",
    "TIMESTAMP_NS '2020-01-01 10:00:00'",
    "INTERVAL 3 DAY",
    "'0b0d2f42-4c6e-4b3a-9e1d-9b1f7a4e2c10'::UUID",
    "[1, 2]",
    "{'a': 1}",
    "MAP {'a': 1}",
    "[[1.5::DECIMAL(10,2)]]",
    "'a'::ENUM ('a', 'b')",
    "NULL::INTEGER",
]


@pytest.mark.parametrize("value", DUCKDB_VALUES)
def test_duckdb_rows_and_frames_load_as_they_were(value: str) -> None:
    with duckdb.connect() as conn:
        rows = conn.execute(f"SELECT {value} AS v, 2 AS w").fetchall()
        frame = conn.execute(f"SELECT {value} AS v UNION ALL SELECT NULL").fetchdf()
    assert repr(_reloaded((1, "ok", Result(("v", "w"), rows)))) == repr(
        (1, "ok", Result(("v", "w"), rows))
    )
    again = _reloaded((2, "ok", [frame]))[2][0]
    assert again.dtypes.equals(frame.dtypes) and again.equals(frame)


def test_values_errors_and_tables_load_as_they_were() -> None:
    values = [
        decimal.Decimal("1.10"),
        datetime.date(2020, 1, 1),
        datetime.timedelta(days=2),
        datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone(datetime.timedelta(hours=2))),
        uuid.UUID(int=5),
        b"\x00",
        bytearray(b"x"),
        1j,
        frozenset({1}),
        {1, 2},
        None,
        2**100,
        float("inf"),
        "\udcff",
    ]
    zoneinfo = pytest.importorskip("zoneinfo")
    values.append(datetime.datetime(2020, 1, 1, tzinfo=zoneinfo.ZoneInfo("Europe/Paris")))
    values += [ipaddress.ip_address("::1"), ipaddress.ip_network("10.0.0.0/8")]
    pytz = pytest.importorskip("pytz")
    values += [pytz.timezone("Europe/Paris").localize(datetime.datetime(2020, 1, 1)), pytz.utc]
    values.append(datetime.datetime(2020, 1, 1, tzinfo=pytz.FixedOffset(120)))  # Snowflake
    # PostgreSQL's ranges and multiranges, as psycopg gives them
    from psycopg.types.multirange import Multirange
    from psycopg.types.range import Range

    values += [Range(1, 5), Multirange([Range(1, 2), Range(5, 6)])]
    assert _reloaded((0, "ok", values)) == (0, "ok", values)
    error = QueryTimeout("too slow")
    again = _reloaded((1, "error", error))[2]
    assert type(again) is QueryTimeout and str(again) == "too slow"
    classified = EngineError("no such column: x", EngineErrorClass.executed("no such column"))
    back = _reloaded((1, "error", classified))[2]
    assert back.error_class == classified.error_class
    tables = [Table("t", [Column("a", "INTEGER")])]
    assert _reloaded((2, "ok", tables))[2] == tables


def test_the_rewards_packed_outcomes_load_with_its_own_globals_only() -> None:
    packer = Packer()
    for i in range(300):  # past 256 distinct: the index array is an `array`
        outcome = execution_match(Result(("a",), [(1,)]), Result(("a",), [(i,)]))
        packer.add(outcome.verdict, outcome.metrics)
    failed = execution_match(EngineError("x"), None)  # an error class and code inside
    packer.add(failed.verdict, failed.metrics)
    packed = packer.packed()
    reader = ReplyReader(REPLY_GLOBALS)
    assert unpack_outcomes(_reloaded((0, "ok", packed), reader)[2]) == unpack_outcomes(packed)
    with pytest.raises(pickle.UnpicklingError):
        _reloaded((0, "ok", packed))  # a query child's replies hold no verdict
