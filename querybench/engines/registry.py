"""The one table of engines: what each is called, which targets it opens, its SQL dialect and
what it can do. Everything else (tasks, `connect`, transpile, prompts, the CLI) reads it.

Each `EngineSpec` names the engine's opener by module path, so reading the table imports no
driver: `connect` (engines/__init__.py) imports the one module a target needs. Each engine
class points back at its entry (`spec = ENGINES["sqlite"]`), so its `dialect` and
capabilities are declared here once; `tests/test_engines_registry.py` checks the two agree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType


class EngineKind(StrEnum):
    """Which database a task runs on; the values are the strings task and result JSON hold."""

    SQLITE = "sqlite"
    DUCKDB = "duckdb"
    BIGQUERY = "bigquery"
    SNOWFLAKE = "snowflake"
    POSTGRES = "postgres"
    CLICKHOUSE = "clickhouse"
    MYSQL = "mysql"

    def __repr__(self) -> str:
        # Shown as the plain string, so `{kind!r}` in a message reads as it did for a str.
        return repr(self.value)


@dataclass(frozen=True)
class Capabilities:
    """What an engine does beyond the `Engine` protocol's guarantees.

    * `streams`: `execute_batches` reads rows from the database as they are asked for (else
      the shared default runs `execute` and hands the whole result out in batches);
    * `arrow`: `execute_arrow` returns an Arrow table without Python values per cell;
    * `native_read_only`: the database itself refuses writes (a read-only file, transaction
      or setting), not only querybench's up-front statement check;
    * `cancel`: a query still running at its timeout is stopped by the engine (an interrupt,
      a server-side timeout or cancel), not merely abandoned.
    """

    streams: bool = False
    arrow: bool = False
    native_read_only: bool = True
    cancel: bool = True


@dataclass(frozen=True)
class EngineSpec:
    """One way to open a database: the `Engine` class behind a URL scheme or a file suffix."""

    name: str  # the registry key, e.g. "chdb" (embedded) beside "clickhouse" (a server)
    kind: EngineKind
    dialect: str  # the sqlglot dialect of the SQL it accepts
    label: str  # the dialect's human name, as prompts say it
    embedded: bool  # runs in this process on a local file or folder, else a client of a server
    opener: str  # "module:attribute": a class taking a path (file engines) or `from_url(url)`
    capabilities: Capabilities = Capabilities()
    schemes: tuple[str, ...] = ()
    suffixes: tuple[str, ...] = ()  # file engines only: bare paths ending so are theirs
    magic: tuple[int, bytes] | None = None  # (offset, bytes) every file of the engine holds
    aliases: tuple[str, ...] = ()  # further spellings of the dialect (`transpile --from pg`)
    password_env: str | None = None  # where a password comes from when the URL has none
    # an offline stand-in for a cloud warehouse: a `<db>.duckdb` file (`data emulate`)
    emulates: bool = False
    # files beside a database file whose content a reader applies on top of the file's own
    # (`<db>-wal`): while one holds data, the database's state is not the file's bytes
    sidecars: tuple[str, ...] = ()

    def url_for(self, path: object) -> str:
        """The URL of the database at `path` (a file or folder) through this entry."""
        return f"{self.schemes[0]}://{path}"

    @property
    def is_file(self) -> bool:
        """Targets are a single file, given as `scheme:///abs/path` or a bare path."""
        return bool(self.suffixes)


_SPECS = (
    EngineSpec(
        "sqlite",
        EngineKind.SQLITE,
        "sqlite",
        "SQLite",
        embedded=True,
        opener="querybench.engines.sqlite:SQLiteEngine",
        capabilities=Capabilities(streams=True),
        schemes=("sqlite",),
        suffixes=(".sqlite", ".sqlite3", ".db"),
        magic=(0, b"SQLite format 3\x00"),
        aliases=("sqlite3",),
        sidecars=("-wal", "-journal"),
    ),
    EngineSpec(
        "duckdb",
        EngineKind.DUCKDB,
        "duckdb",
        "DuckDB",
        embedded=True,
        opener="querybench.engines.duckdb:DuckDBEngine",
        capabilities=Capabilities(arrow=True),
        schemes=("duckdb",),
        suffixes=(".duckdb",),
        magic=(8, b"DUCK"),
        sidecars=(".wal",),
    ),
    EngineSpec(
        "postgres",
        EngineKind.POSTGRES,
        "postgres",
        "PostgreSQL",
        embedded=False,
        opener="querybench.engines.postgres:from_url",
        schemes=("postgresql", "postgres"),
        aliases=("pg",),
        password_env="PGPASSWORD",
    ),
    EngineSpec(
        "mysql",
        EngineKind.MYSQL,
        "mysql",
        "MySQL",
        embedded=False,
        opener="querybench.engines.mysql:from_url",
        schemes=("mysql", "mariadb"),
        password_env="MYSQL_PWD",
    ),
    EngineSpec(
        "clickhouse",
        EngineKind.CLICKHOUSE,
        "clickhouse",
        "ClickHouse",
        embedded=False,
        opener="querybench.engines.clickhouse:from_url",
        schemes=("clickhouse",),
        password_env="CLICKHOUSE_PASSWORD",
    ),
    EngineSpec(
        "chdb",
        EngineKind.CLICKHOUSE,
        "clickhouse",
        "ClickHouse",
        embedded=True,
        opener="querybench.engines.clickhouse:from_url",
        capabilities=Capabilities(arrow=True),
        schemes=("chdb",),
    ),
    EngineSpec(
        "snowflake",
        EngineKind.SNOWFLAKE,
        "snowflake",
        "Snowflake",
        embedded=False,
        opener="querybench.engines.snowflake:from_url",
        capabilities=Capabilities(native_read_only=False),
        schemes=("snowflake",),
    ),
    EngineSpec(
        "snowflake+local",
        EngineKind.SNOWFLAKE,
        "snowflake",
        "Snowflake",
        embedded=True,
        opener="querybench.engines.snowflake:from_url",
        schemes=("snowflake+local",),
        emulates=True,
    ),
    EngineSpec(
        "bigquery",
        EngineKind.BIGQUERY,
        "bigquery",
        "BigQuery",
        embedded=False,
        opener="querybench.engines.bigquery:from_url",
        capabilities=Capabilities(native_read_only=False),
        schemes=("bigquery",),
    ),
    EngineSpec(
        "bigquery+local",
        EngineKind.BIGQUERY,
        "bigquery",
        "BigQuery",
        embedded=True,
        opener="querybench.engines.bigquery:from_url",
        schemes=("bigquery+local",),
        emulates=True,
    ),
)

ENGINES: Mapping[str, EngineSpec] = MappingProxyType({spec.name: spec for spec in _SPECS})
_BY_SCHEME = {scheme: spec for spec in _SPECS for scheme in spec.schemes}
_BY_SUFFIX = {suffix: spec for spec in _SPECS for suffix in spec.suffixes}
_BY_KIND: dict[str, EngineSpec] = {spec.kind.value: spec for spec in reversed(_SPECS)}  # first wins
_BY_SPELLING = {
    spelling: spec
    for spec in reversed(_SPECS)
    for spelling in (spec.name, spec.kind.value, *spec.schemes, *spec.aliases)
}


def spec_for_scheme(scheme: str) -> EngineSpec | None:
    """The engine opening `scheme://…` URLs (case-insensitive), None when no engine does."""
    return _BY_SCHEME.get(scheme.lower())


def spec_for_suffix(suffix: str) -> EngineSpec | None:
    """The file engine of a bare path ending in `suffix` (".db"), None when no engine's."""
    return _BY_SUFFIX.get(suffix.lower())


def spec_for_header(header: bytes) -> EngineSpec | None:
    """The file engine whose files start like `header` (a file's first 16 bytes)."""
    for spec in _SPECS:
        if spec.magic is not None:
            offset, magic = spec.magic
            if header[offset : offset + len(magic)] == magic:
                return spec
    return None


def file_specs() -> tuple[EngineSpec, ...]:
    """The engines whose targets are single files, in registry order."""
    return tuple(spec for spec in _SPECS if spec.is_file)


def kind_spec(kind: EngineKind) -> EngineSpec:
    """The first (primary) entry of `kind`: where its dialect and label are read."""
    return _BY_KIND[kind]


def emulation_spec(kind: str) -> EngineSpec | None:
    """The offline emulation of a cloud kind (`bigquery+local` for BigQuery), else None."""
    return next((s for s in _SPECS if s.emulates and s.kind.value == kind), None)


def emulated_kinds() -> frozenset[EngineKind]:
    """The kinds with an offline emulation: the cloud warehouses of Spider 2.0."""
    return frozenset(s.kind for s in _SPECS if s.emulates)


def dialect_label(kind: str) -> str:
    """The human name of an engine kind's dialect ("PostgreSQL"); an unknown kind as given."""
    spec = _BY_KIND.get(kind)
    return kind if spec is None else spec.label


def engine_dialect(name: str) -> str | None:
    """The sqlglot dialect an engine name, kind, URL scheme or alias ("pg", "mariadb") names
    (case-insensitive); None for a name no engine has."""
    spec = _BY_SPELLING.get(name.strip().lower())
    return None if spec is None else spec.dialect


def sqlglot_dialect(name: str) -> str:
    """`engine_dialect(name)`, else `name` lower-cased, for sqlglot to accept or refuse."""
    return engine_dialect(name) or name.strip().lower()
