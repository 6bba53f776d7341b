"""connect(): which engine a target names, and refusing what it cannot open."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from querybench.engines import connect, parse_target
from querybench.errors import EngineError, EngineUnavailable
from tests.test_engines_conformance import KINDS, build_database


@pytest.fixture(scope="module")
def databases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return {k: build_database(k, tmp_path_factory.mktemp(f"connect-{k}")) for k in KINDS}


@pytest.mark.parametrize("kind", KINDS)
def test_url_names_the_engine(kind: str, databases: dict[str, Path]) -> None:
    engine = connect(f"{kind}://{databases[kind]}")
    assert engine.dialect == kind
    engine.close()


@pytest.mark.parametrize(
    ("suffix", "kind"),
    [(".sqlite", "sqlite"), (".db", "sqlite"), (".sqlite3", "sqlite"), (".duckdb", "duckdb")],
)
def test_bare_path_suffix_names_the_engine(
    suffix: str, kind: str, databases: dict[str, Path], tmp_path: Path
) -> None:
    path = tmp_path / f"copy{suffix}"
    shutil.copyfile(databases[kind], path)
    target = parse_target(path)
    assert (target.kind, target.path) == (kind, path)
    engine = connect(str(path))
    assert engine.dialect == kind
    engine.close()


@pytest.mark.parametrize("kind", KINDS)
def test_unknown_suffix_is_told_by_the_file_header(
    kind: str, databases: dict[str, Path], tmp_path: Path
) -> None:
    path = tmp_path / "data.bin"
    shutil.copyfile(databases[kind], path)
    assert parse_target(path).kind == kind


def test_unknown_scheme_is_unavailable() -> None:
    with pytest.raises(EngineUnavailable, match="postgres") as info:
        connect("postgres://localhost/db")
    assert info.value.code == "engine_unavailable"


def test_a_file_no_engine_reads_is_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello, this is not a database")
    with pytest.raises(EngineUnavailable, match=r"notes\.txt"):
        connect(path)


def test_relative_url_path_is_an_error() -> None:
    with pytest.raises(EngineError, match="absolute") as info:
        connect("sqlite://relative.db")
    assert type(info.value) is EngineError


@pytest.mark.parametrize(
    "target",
    [
        "{dir}/missing.sqlite",
        "{dir}/missing.duckdb",
        "{dir}/missing.bin",
        "sqlite://{dir}/missing.sqlite",
        "duckdb://{dir}/missing.duckdb",
    ],
)
def test_missing_file_is_named_and_never_created(target: str, tmp_path: Path) -> None:
    with pytest.raises(EngineError, match="missing") as info:
        connect(target.format(dir=tmp_path))
    assert type(info.value) is EngineError  # a missing file, not an unavailable engine
    assert str(tmp_path) in str(info.value)
    assert list(tmp_path.iterdir()) == []
