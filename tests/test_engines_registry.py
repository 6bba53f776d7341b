"""The engine registry against the engines: every entry names a class that points back at it,
every available engine opens through its own schemes and suffixes, `with` closes it, and
`execute_batches` gives exactly the rows of `execute`."""

from __future__ import annotations

import importlib
import inspect
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from querybench.engines import Engine, EngineKind, connect, parse_target
from querybench.engines.base import EngineBase
from querybench.engines.registry import (
    ENGINES,
    EngineSpec,
    dialect_label,
    engine_dialect,
    kind_spec,
    spec_for_scheme,
    spec_for_suffix,
    sqlglot_dialect,
)
from querybench.errors import EngineError, ResultTooLarge
from tests.server_databases import server_database
from tests.test_engines_conformance import build_database

ENGINE_MODULES = ("sqlite", "duckdb", "postgres", "mysql", "clickhouse", "snowflake", "bigquery")
# Cloud services and a ClickHouse server are not reachable here (nor in CI): their entries
# are checked against their classes above, not opened.
OPENED = ["sqlite", "duckdb", "postgres", "mysql", "chdb", "snowflake+local", "bigquery+local"]
ROWS = 1000
NUMS = "SELECT n FROM nums ORDER BY n"  # the conformance database's 1000 rows
MANY_ROWS = {
    "sqlite": NUMS,
    "duckdb": NUMS,
    "postgres": NUMS,
    "mysql": NUMS,
    "chdb": NUMS,
    "snowflake+local": f"SELECT SEQ4() AS n FROM TABLE(GENERATOR(ROWCOUNT => {ROWS})) ORDER BY n",
    "bigquery+local": f"SELECT n FROM UNNEST(GENERATE_ARRAY(0, {ROWS - 1})) AS n ORDER BY n",
}


def engine_classes() -> list[type]:
    classes = []
    for name in ENGINE_MODULES:
        module = importlib.import_module(f"querybench.engines.{name}")
        classes += [
            cls
            for _, cls in inspect.getmembers(module, inspect.isclass)
            if cls.__module__ == module.__name__ and issubclass(cls, EngineBase)
        ]
    return classes


def test_every_entry_is_claimed_by_exactly_one_engine_class() -> None:
    claimed = [cls.spec.name for cls in engine_classes()]  # type: ignore[attr-defined]
    assert sorted(claimed) == sorted(ENGINES)
    for cls in engine_classes():
        spec: EngineSpec = cls.spec  # type: ignore[attr-defined]
        assert ENGINES[spec.name] is spec
        assert cls.dialect == spec.dialect  # type: ignore[attr-defined]
        module, _, attribute = spec.opener.partition(":")
        assert module == cls.__module__
        opener = getattr(importlib.import_module(module), attribute)
        assert opener is cls if spec.is_file else callable(opener)


def test_every_kind_has_an_entry_and_spellings_are_unique() -> None:
    assert {spec.kind for spec in ENGINES.values()} == set(EngineKind)
    schemes = [s for spec in ENGINES.values() for s in spec.schemes]
    suffixes = [s for spec in ENGINES.values() for s in spec.suffixes]
    assert len(schemes) == len(set(schemes))
    assert len(suffixes) == len(set(suffixes))
    for spec in ENGINES.values():
        assert all(spec_for_scheme(s.upper()) is spec for s in spec.schemes)
        assert all(spec_for_suffix(s.upper()) is spec for s in spec.suffixes)
        assert kind_spec(spec.kind).dialect == spec.dialect
        assert kind_spec(spec.kind).label == spec.label


@pytest.mark.parametrize(
    ("name", "dialect"),
    [
        ("postgresql", "postgres"),
        ("PG", "postgres"),
        ("mariadb", "mysql"),
        ("chdb", "clickhouse"),
        ("sqlite3", "sqlite"),
        ("bigquery+local", "bigquery"),
        ("snowflake", "snowflake"),
        (EngineKind.DUCKDB, "duckdb"),
    ],
)
def test_spellings_name_their_sqlglot_dialect(name: str, dialect: str) -> None:
    assert engine_dialect(name) == dialect
    assert sqlglot_dialect(name) == dialect


def test_names_no_engine_has() -> None:
    assert engine_dialect("tsql") is None
    assert sqlglot_dialect(" TSQL ") == "tsql"  # left to sqlglot
    assert dialect_label("oracle") == "oracle"
    assert dialect_label(EngineKind.POSTGRES) == "PostgreSQL"


def test_kinds_are_the_strings_json_holds() -> None:
    import json

    assert json.dumps({"engine": EngineKind.SQLITE}) == '{"engine": "sqlite"}'
    assert f"{EngineKind.BIGQUERY} {EngineKind.BIGQUERY!r}" == "bigquery 'bigquery'"
    assert EngineKind("mysql") == "mysql"


def test_reading_the_registry_imports_no_driver() -> None:
    code = (
        "import sys, querybench.engines, querybench.tasks.model\n"
        "heavy = ('duckdb', 'pyarrow', 'psycopg', 'pymysql', 'chdb', 'sqlglot', 'fakesnow')\n"
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@contextmanager
def opened_target(name: str, tmp: Path) -> Iterator[str]:
    """A URL of a small database for the entry `name`, built the way its tests build one."""
    if name in ("sqlite", "duckdb"):
        yield f"{name}://{build_database(name, tmp)}"
    elif name in ("postgres", "mysql", "chdb"):
        source = build_database("sqlite", tmp / "source")
        with server_database(name, source, tmp) as url:
            yield url
    elif name == "bigquery+local":
        from querybench.engines.spider2_metadata_load import build_emulation
        from tests.test_engines_bigquery import write_metadata

        build_emulation(write_metadata(tmp / "meta"), tmp / "shop.duckdb", "bigquery")
        yield f"bigquery+local://{tmp / 'shop.duckdb'}"
    else:
        from querybench.engines.spider2_metadata_load import build_emulation
        from tests.test_engines_snowflake import write_snowflake_metadata

        build_emulation(write_snowflake_metadata(tmp / "meta"), tmp / "SHOP.duckdb", "snowflake")
        yield f"snowflake+local://{tmp / 'SHOP.duckdb'}"


@pytest.fixture(params=OPENED)
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[EngineSpec, str]]:
    if request.param == "snowflake+local":
        pytest.importorskip("fakesnow")
    with opened_target(str(request.param), tmp_path) as url:
        yield ENGINES[request.param], url


def test_the_url_opens_the_entrys_engine_and_with_closes_it(
    target: tuple[EngineSpec, str],
) -> None:
    spec, url = target
    with connect(url) as engine:
        assert engine.spec is spec
        assert engine.dialect == spec.dialect
        assert engine.execute("SELECT 1").rows == [(1,)]
    with pytest.raises(EngineError) as info:
        engine.execute("SELECT 1")
    assert type(info.value) is EngineError  # closed: not a refusal, a timeout or a cap


def test_every_scheme_and_suffix_reaches_the_same_engine(
    target: tuple[EngineSpec, str], tmp_path: Path
) -> None:
    spec, url = target
    rest = url.partition("://")[2]
    for scheme in spec.schemes:
        with connect(f"{scheme}://{rest}") as engine:
            assert engine.spec is spec
    for suffix in spec.suffixes:
        copy = tmp_path / f"copy{suffix}"
        shutil.copyfile(rest, copy)
        assert parse_target(copy).kind == spec.kind
        assert parse_target(f"{spec.schemes[0]}://{copy}").kind == spec.kind
        with connect(copy) as engine:
            assert engine.spec is spec


def test_execute_batches_gives_the_rows_of_execute(target: tuple[EngineSpec, str]) -> None:
    spec, url = target
    sql = MANY_ROWS[spec.name]
    engine: Engine
    with connect(url) as engine:
        whole = engine.execute(sql).rows
        batches = list(engine.execute_batches(sql, batch=64))
        assert len(whole) == ROWS
        assert [row for batch in batches for row in batch] == whole
        assert [len(batch) for batch in batches] == [64] * (ROWS // 64) + [ROWS % 64]
        with pytest.raises(ResultTooLarge):
            list(engine.execute_batches(sql, max_rows=ROWS - 1))
        assert engine.execute("SELECT 1").rows == [(1,)]  # a stopped stream frees the engine


TYPED_USE = """
from querybench.engines import Engine, connect


def rows(target: str) -> list[tuple[object, ...]]:
    with connect(target) as engine:
        same: Engine = engine
        return [row for batch in same.execute_batches("SELECT 1", batch=10) for row in batch]
"""


def test_with_connect_type_checks_under_mypy_strict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mypy import api

    monkeypatch.setenv("MYPYPATH", str(Path(__file__).resolve().parent.parent))  # this checkout
    snippet = tmp_path / "typed_use.py"
    snippet.write_text(TYPED_USE)
    out, err, status = api.run(
        ["--strict", "--cache-dir", str(tmp_path / "cache"), "--no-incremental", str(snippet)]
    )
    assert status == 0, out + err


@pytest.mark.parametrize(
    ("engine", "variable"),
    [("postgres", "PGPASSWORD"), ("mysql", "MYSQL_PWD"), ("clickhouse", "CLICKHOUSE_PASSWORD")],
)
def test_a_server_password_falls_back_to_its_entrys_variable(
    engine: str, variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from querybench.engines.url import parse_server_url

    monkeypatch.setenv(variable, "from-env")
    assert parse_server_url(f"{engine}://u@h/db", engine).password == "from-env"
    assert parse_server_url(f"{engine}://u:given@h/db", engine).password == "given"
    assert parse_server_url(f"{engine}://u@h/db", "sqlite").password is None


@pytest.mark.parametrize(("name", "streams"), [("sqlite", True), ("duckdb", False)])
@pytest.mark.parametrize("isolated", [False, True])
def test_an_answer_streams_where_its_engine_declares_it(
    name: str, streams: bool, isolated: bool, tmp_path: Path
) -> None:
    from querybench.engines.base import Result
    from querybench.engines.isolated import connect_isolated
    from querybench.envs.match import run_answer
    from querybench.evaluation.bird.evaluate import StreamedMatch

    path = build_database(name, tmp_path)
    gold = Result(("n",), [(0,), (1,)])
    with connect_isolated(path) if isolated else connect(path) as engine:
        assert engine.spec is ENGINES[name]
        assert engine.spec.capabilities.streams is streams
        answer = run_answer(engine, NUMS, gold, timeout=30, max_rows=None)
    if streams:
        assert isinstance(answer, StreamedMatch)
        assert not answer.matched and answer.rows_read == 3  # stopped at its first foreign row
    else:
        assert isinstance(answer, Result) and len(answer.rows) == ROWS


def test_the_cloud_kinds_emulation_entries_come_from_the_registry(tmp_path: Path) -> None:
    from querybench.engines.registry import (
        EngineKind,
        emulated_kinds,
        emulation_spec,
        spec_for_scheme,
    )

    assert emulated_kinds() == {EngineKind.BIGQUERY, EngineKind.SNOWFLAKE}
    assert emulation_spec("postgres") is None and emulation_spec("sqlite") is None
    for kind in ("bigquery", "snowflake"):
        spec = emulation_spec(kind)
        assert spec is not None and spec.embedded and spec.kind == kind
        url = spec.url_for(tmp_path / "shop.duckdb")
        assert url == f"{kind}+local://{tmp_path / 'shop.duckdb'}"
        assert spec_for_scheme(url.partition("://")[0]) is spec


@pytest.mark.parametrize(
    ("url", "dialect"),
    [
        (None, "sqlite"),
        ("mysql://root@127.0.0.1:3306/BIRD", "mysql"),
        ("mariadb://root@127.0.0.1:3306/BIRD", "mysql"),
        ("postgresql://postgres@127.0.0.1/bird", "postgresql"),
        ("postgres://postgres@127.0.0.1/bird", "postgresql"),
        ("PG://postgres@127.0.0.1/bird", "pg"),
        ("duckdb:///x.duckdb", "duckdb"),
    ],
)
def test_birds_dialect_names_are_read_through_the_registry(url: str | None, dialect: str) -> None:
    from querybench.evaluation.bird.evaluate import bird_dialect

    assert bird_dialect(url) == dialect
