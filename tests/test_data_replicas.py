"""`data fetch` on replicas of every official archive, served by a loopback HTTP server or taken
`--from` a folder, then used as a new user would: oracle runs reach every task without extra
flags, `eval --mode sql` and `audit` find the local databases, BIRD dev survives mini-dev."""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import replace
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from querybench.cli import app
from querybench.data import releases
from querybench.data.fetch import MIRROR_ENV, fetch_benchmark
from querybench.envs.tasks import located_tasks
from querybench.errors import FetchError
from querybench.tasks import load_tasks
from tests import data_replicas as replicas
from tests.conftest import as_new_user
from tests.file_server import FileHandler, server

__all__ = ["server"]


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A new user's machine: QUERYBENCH_DATA is an empty folder; no user data, no credentials,
    no shared data folder beside the checkout (a part there would be in place)."""
    import querybench.data.roots

    data = tmp_path / "data"
    as_new_user(monkeypatch, tmp_path, data)
    monkeypatch.setattr(querybench.data.roots, "shared_data_dir", lambda: None)
    return data


@pytest.fixture
def official(server: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, bytes]:
    """Every replica served under its official name; the release table aimed at the server,
    each pinned checksum replaced by its replica's (the Spider2 commits stay the pinned ones)."""
    files = replicas.every_archive()
    for name, content in files.items():
        FileHandler.files[f"/{name}"] = content

    def aimed(part: releases.Part) -> releases.Part:
        a = part.archive
        sha = hashlib.sha256(files[a.file_name]).hexdigest() if a.sha256 else None
        return replace(part, archive=replace(a, url=f"{server}/{a.file_name}", sha256=sha))

    table = {b: tuple(aimed(p) for p in parts) for b, parts in releases.PARTS.items()}
    monkeypatch.setattr(releases, "PARTS", table)
    return files


def _cli(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def _oracle_run(benchmark: str, out: Path, method: str = "zero-shot") -> tuple[int, int]:
    _cli("run", benchmark, "--method", method, "--model", "oracle", "--out", str(out))
    summary = json.loads((out / "summary.json").read_text())
    return summary["n"], summary["correct"]


def _no_junk(root: Path) -> None:
    names = [p.name for p in root.rglob("*")]
    assert "__MACOSX" not in names
    assert not [n for n in names if n.startswith("._") or n.endswith((".unpacking", ".part"))]


def test_spider1_fetch_writes_where_readers_look(
    env: Path, official: dict[str, bytes], tmp_path: Path
) -> None:
    output = _cli("data", "fetch", "spider1")
    assert f"into {env / 'spider1'} (sha256 verified)" in output
    assert f"data root {env}: read from there" in output
    assert (env / "spider1" / "database" / "toys" / "toys.sqlite").is_file()
    _no_junk(env / "spider1")
    assert _oracle_run("spider1", tmp_path / "run") == (3, 3)
    # into the user data dir, behind $QUERYBENCH_DATA's own copy: said, not silently shadowed
    user_dir = tmp_path / "xdg-data" / "querybench"
    output = _cli("data", "fetch", "spider1", "--to", str(user_dir))
    assert f"note: {env / 'spider1' / 'dev.json'} comes first" in output


def test_bird_dev_survives_a_mini_dev_fetch(
    env: Path, official: dict[str, bytes], tmp_path: Path
) -> None:
    _cli("data", "fetch", "bird")
    bird = env / "bird"
    assert sorted(p.relative_to(bird).as_posix() for p in bird.rglob("*.sqlite")) == [
        "dev_databases/shop/shop.sqlite",
        "dev_databases/toys/toys.sqlite",
    ]
    assert not (bird / "dev_databases.zip").exists()  # the nested zip was unpacked, then removed
    _no_junk(env)
    assert _oracle_run("bird", tmp_path / "dev1") == (3, 3)
    dev_files = ["dev.json", "dev_tables.json", "dev_databases/shop/shop.sqlite"]
    before = {name: (bird / name).read_bytes() for name in dev_files}

    _cli("data", "fetch", "bird-mini-dev")
    assert {name: (bird / name).read_bytes() for name in dev_files} == before
    mini = bird / "mini_dev"
    for name in ("mini_dev_mysql.json", "mini_dev_postgresql.json", "dev_tables.json"):
        assert (mini / name).is_file()
    assert (mini / "MINIDEV_postgresql" / "BIRD_dev.sql").is_file()
    assert json.loads((mini / "dev_tables.json").read_text())[0]["from"] == "mini-dev"
    # the gold reads a table only mini-dev's own copy of `shop` has
    assert _oracle_run("bird-mini-dev", tmp_path / "mini") == (1, 1)
    assert _oracle_run("bird", tmp_path / "dev2") == (3, 3)
    # the RL environments find the same files
    assert {d for _t, d in located_tasks("bird-mini-dev")} == {
        mini / "dev_databases/shop/shop.sqlite"
    }
    assert len({d for _t, d in located_tasks("bird")}) == 2
    assert [t.instance_id for t in load_tasks("bird-mini-dev")] == ["1471"]


def test_bird_revised_dev_is_its_own_split(
    env: Path, official: dict[str, bytes], tmp_path: Path
) -> None:
    output = _cli("data", "fetch", "bird-dev-20251106")
    assert "BIRD dev 2025-11-06 revised questions" in output
    revised = {t.instance_id: t for t in load_tasks("bird-dev-20251106")}
    dev = {t.instance_id: t for t in load_tasks("bird")}
    assert sorted(revised) == ["0", "1"] and sorted(dev) == ["0", "1", "2"]
    assert revised["1"].gold.sql != dev["1"].gold.sql
    assert revised["0"].benchmark == "bird-dev-20251106"
    assert _oracle_run("bird-dev-20251106", tmp_path / "run") == (2, 2)


def test_bird_train_from_a_folder_into_the_user_data_dir(
    env: Path, official: dict[str, bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("QUERYBENCH_DATA")
    downloads = tmp_path / "Downloads"
    downloads.mkdir()
    (downloads / "train.zip").write_bytes(official["train.zip"])
    output = _cli("data", "fetch", "bird-train", "--from", str(downloads))
    user_dir = tmp_path / "xdg-data" / "querybench"
    expected = (
        f"into {user_dir / 'bird' / 'train'} (not verified: no sha256 is pinned for train.zip)"
    )
    assert expected in " ".join(output.split())
    assert FileHandler.ranges == []  # nothing was downloaded
    assert (user_dir / "bird" / "train" / "train_databases" / "toys" / "toys.sqlite").is_file()
    assert "note:" not in output  # no earlier root holds bird-train
    tasks = load_tasks("bird-train")  # found in the user data dir, the last root
    assert [t.instance_id for t in tasks] == ["0", "1"]  # train.json has no question_id
    assert _oracle_run("bird-train", tmp_path / "run") == (2, 2)


def test_spider2_lite_local_databases_found_by_every_reader(
    env: Path, official: dict[str, bytes], tmp_path: Path
) -> None:
    _cli("data", "fetch", "spider2-lite")
    localdb = env / "spider2" / "spider2-lite" / "resource" / "databases" / "spider2-localdb"
    assert sorted(p.name for p in localdb.iterdir()) == ["shop.sqlite", "toys.sqlite"]
    assert not (env / "spider2" / "methods").exists()  # only the benchmark folders
    _no_junk(env)
    status = _cli("data", "status", "spider2-lite")
    assert "spider2-lite: 3 of 4 tasks can run here; 1 BigQuery / Snowflake tasks have " in status
    assert "built 1 emulation files" in _cli("data", "emulate", "spider2-lite")
    assert (env / "spider2-lite-local" / "shopcloud.duckdb").is_file()
    assert "spider2-lite: 4 of 4 tasks can run here" in _cli("data", "status", "spider2-lite")
    assert _oracle_run("spider2-lite", tmp_path / "run") == (4, 4)
    assert _oracle_run("spider2-lite", tmp_path / "agent", "spider-agent") == (4, 4)
    predictions = tmp_path / "sqls"
    shutil.copytree(
        env / "spider2" / "spider2-lite" / "evaluation_suite" / "gold" / "sql", predictions
    )
    results = tmp_path / "eval.jsonl"
    _cli(
        "eval",
        "spider2-lite",
        "--predictions",
        str(predictions),
        "--mode",
        "sql",
        "--output",
        str(results),
    )
    scores = [json.loads(line) for line in results.read_text().splitlines()]
    assert [(r["instance_id"], r["score"]) for r in scores] == [
        ("bq001", 1.0),
        ("local001", 1.0),
        ("local002", 1.0),
        ("local003", 1.0),
    ]
    audit = CliRunner().invoke(
        app, ["audit", "spider2-lite", "--output", str(tmp_path / "a.jsonl")]
    )
    assert audit.exit_code == 0, audit.output
    assert "3 ran, 3 reproduced the gold" in audit.output  # the local instances' gold SQL


def test_spider2_dbt_flattened_start_and_gold_apart(
    env: Path, official: dict[str, bytes], tmp_path: Path
) -> None:
    _cli("data", "fetch", "spider2-dbt")
    dbt = env / "spider2" / "spider2-dbt"
    tasks = load_tasks("spider2-dbt")
    assert [t.instance_id for t in tasks] == list(replicas.DBT_IDS)
    predictions = tmp_path / "predictions"
    for task in tasks:
        start = dbt / "examples" / task.instance_id / "shop.duckdb"  # flattened, even from deep
        gold = dbt / "evaluation_suite" / "gold" / task.instance_id / "shop.duckdb"
        assert task.extra["project_dir"] == str(start.parent)
        assert task.gold.result_files == (str(gold),)
        with duckdb.connect(str(start), read_only=True) as con:  # not overwritten by the gold
            assert [r[0] for r in con.execute("SHOW TABLES").fetchall()] == ["orders"]
        with duckdb.connect(str(gold), read_only=True) as con:
            assert con.execute("SELECT total FROM totals").fetchone() == (replicas.GOLD_TOTAL,)
        (predictions / task.instance_id).mkdir(parents=True)
        shutil.copyfile(gold, predictions / task.instance_id / "shop.duckdb")
    assert not list((dbt / "examples").glob("*/nested"))
    _no_junk(env)
    results = tmp_path / "eval.jsonl"
    _cli("eval", "spider2-dbt", "--predictions", str(predictions), "--output", str(results))
    assert [json.loads(line)["score"] for line in results.read_text().splitlines()] == [1.0, 1.0]
    assert "spider2-dbt: 2 of 2 tasks can run here" in _cli("data", "status", "spider2-dbt")
    # a second fetch finds every part in place and asks the server for nothing
    asked = len(FileHandler.ranges)
    output = _cli("data", "fetch", "spider2-dbt")
    assert output.count("in place:") == 3 and len(FileHandler.ranges) == asked
    assert _cli("data", "fetch", "spider2-dbt", "--force").count("unpacked:") == 3


def test_agentic_spider2_beside_the_others(env: Path, official: dict[str, bytes]) -> None:
    _cli("data", "fetch", "spider2")
    agentic = env / "spider2" / "spider2"
    assert (agentic / "examples" / "spider2.jsonl").is_file()
    assert (agentic / "evaluation_suite" / "gold" / "spider2_eval.jsonl").is_file()
    assert (agentic / "resource" / "databases" / "local" / "local-map.jsonl").is_file()
    # the agentic archive's own spider2-lite/ is not unpacked over the pinned lite
    assert [t.instance_id for t in load_tasks("spider2-lite")] == [
        "local001",
        "local002",
        "local003",
        "bq001",
    ]
    assert len(load_tasks("spider2-dbt")) == 2
    localdb = env / "spider2" / "spider2-lite" / "resource" / "databases" / "spider2-localdb"
    assert (localdb / "shop.sqlite").is_file()


def test_a_drive_html_page_is_deleted_and_explained(
    env: Path, official: dict[str, bytes], tmp_path: Path
) -> None:
    FileHandler.files["/local_sqlite.zip"] = (
        b"<!DOCTYPE html><html><head><title>Google Drive - Quota exceeded</title></head>"
        b"<body>Too many users have viewed or downloaded this file recently.</body></html>"
    )
    result = CliRunner().invoke(app, ["data", "fetch", "spider2-lite"])
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert "an HTML page ('Google Drive - Quota exceeded'), not the archive" in text
    assert "the page was deleted" in text
    assert "https://drive.google.com/file/d/1coEVsCZq-Xvj9p2TnhBFoFTsY-UoYGmG/view" in text
    assert "save the file as local_sqlite.zip in a folder" in text
    assert "querybench data fetch spider2-lite --from FOLDER" in text
    assert not list((env / ".downloads").glob("local_sqlite.zip*"))
    downloads = tmp_path / "Downloads"
    downloads.mkdir()
    (downloads / "local_sqlite.zip").write_bytes(official["local_sqlite.zip"])
    output = _cli("data", "fetch", "spider2-lite", "--from", str(downloads))
    assert "in place: Spider 2.0 tasks" in output  # the repository came in the first try
    assert "unpacked: Spider 2.0-lite local SQLite databases" in output


def test_checksums_and_no_verify(
    env: Path, official: dict[str, bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pinned = {b: parts for b, parts in releases.PARTS.items()}
    pinned["spider1"] = (replace(releases.SPIDER1_PART, archive=releases.SPIDER1),)
    monkeypatch.setattr(releases, "PARTS", pinned)
    downloads = tmp_path / "Downloads"
    downloads.mkdir()
    (downloads / "spider_data.zip").write_bytes(official["spider_data.zip"])  # not the release
    result = CliRunner().invoke(app, ["data", "fetch", "spider1", "--from", str(downloads)])
    assert result.exit_code == 2
    assert "checksum mismatch (expected sha256 00636695" in " ".join(result.output.split())
    assert "--no-verify" in result.output
    output = _cli("data", "fetch", "spider1", "--from", str(downloads), "--no-verify")
    assert "(not verified: --no-verify)" in output and "NOT verified (--no-verify)" in output
    assert len(load_tasks("spider1")) == 3


def test_a_zip_comment_naming_the_pinned_commit_verifies_nothing(
    env: Path, official: dict[str, bytes], tmp_path: Path
) -> None:
    # Hand-made under the official name, its comment the pinned commit, its gold forged.
    top = f"Spider2-{releases.SPIDER2_COMMIT}/spider2-snow"
    forged = replicas.zip_bytes(
        {
            f"{top}/spider2-snow.jsonl": json.dumps({"instance_id": "sf001", "question": "q"}),
            f"{top}/evaluation_suite/gold/spider2snow_eval.jsonl": "{}",
        },
        comment=releases.SPIDER2_COMMIT,
    )
    downloads = tmp_path / "Downloads"
    downloads.mkdir()
    (downloads / f"Spider2-{releases.SPIDER2_COMMIT}.zip").write_bytes(forged)
    said = " ".join(_cli("data", "fetch", "spider2-snow", "--from", str(downloads)).split())
    assert "commit verified" not in said
    assert (
        f"(not verified: no sha256 is pinned for Spider2-{releases.SPIDER2_COMMIT}.zip, which "
        f"GitHub builds on request; its zip comment names commit {releases.SPIDER2_COMMIT[:12]},"
        " which any zip can carry)"
    ) in said


def test_the_repository_must_be_the_pinned_commit(
    env: Path, official: dict[str, bytes], tmp_path: Path
) -> None:
    moved = replicas.spider2_repo()[f"Spider2-{releases.SPIDER2_COMMIT}.zip"]
    downloads = tmp_path / "Downloads"
    downloads.mkdir()
    main = replicas.zip_bytes({"Spider2-main/README.md": "x"}, comment="a" * 40)
    (downloads / "Spider2-main.zip").write_bytes(main)
    result = CliRunner().invoke(app, ["data", "fetch", "spider2-snow", "--from", str(downloads)])
    assert result.exit_code == 2
    assert f"is commit {'a' * 40}, expected xlang-ai/Spider2 at commit" in " ".join(
        result.output.split()
    )
    (downloads / f"Spider2-{releases.SPIDER2_COMMIT}.zip").write_bytes(moved)
    _cli("data", "fetch", "spider2-snow", "--from", str(downloads))
    assert [t.instance_id for t in load_tasks("spider2-snow")] == ["sf001"]


def test_a_cut_download_resumes_on_the_next_fetch(env: Path, official: dict[str, bytes]) -> None:
    half = len(official["dev.zip"]) // 2
    FileHandler.cut_after["/dev.zip"] = half
    with pytest.raises(FetchError, match=f"cut after {half} bytes.*run again to resume"):
        fetch_benchmark("bird", env, retries=0)
    assert not (env / "bird").exists()
    (outcome,) = fetch_benchmark("bird", env, retries=0)
    assert outcome.fetched and outcome.check == "sha256 verified"
    assert FileHandler.ranges[-1] == f"bytes={half}-"
    assert len(load_tasks("bird")) == 3


def test_a_mirror_serves_the_official_names(
    env: Path, server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shipped table as it is, every file taken from a mirror by its official name."""
    for name, content in replicas.every_archive().items():
        FileHandler.files[f"/{name}"] = content
    monkeypatch.setenv(MIRROR_ENV, f"{server}/")
    output = _cli("data", "fetch", "spider2-dbt")
    said = " ".join(output.split())
    assert "verified)" not in said.replace("not verified", "")  # no pin: nothing is verified
    assert (
        said.count(f"not verified: no sha256 is pinned for Spider2-{releases.SPIDER2_COMMIT}") == 1
    )
    assert said.count("not verified: no sha256 is pinned for D") == 1
    assert said.count("not verified: no sha256 is pinned for dbt_gold.zip") == 1
    assert FileHandler.ranges == [None, None, None]  # three archives, no other request
    assert len(load_tasks("spider2-dbt")) == 2


def test_from_a_folder_with_only_the_databases_keeps_a_checkout_in_place(
    env: Path, official: dict[str, bytes], tmp_path: Path
) -> None:
    # the lite task files and gold already in the target (here: a checkout holding lite and
    # snow only), the folder holding only local_sqlite.zip: it stopped with "no
    # Spider2-<commit>.zip or Spider2-main.zip there"
    _cli("data", "fetch", "spider2-snow")
    shutil.rmtree(env / "spider2" / "spider2-dbt", ignore_errors=True)
    asked = len(FileHandler.ranges)
    downloads = tmp_path / "Downloads"
    downloads.mkdir()
    (downloads / "local_sqlite.zip").write_bytes(official["local_sqlite.zip"])
    output = _cli("data", "fetch", "spider2-lite", "--from", str(downloads))
    assert "in place: Spider 2.0 tasks" in output
    assert "unpacked: Spider 2.0-lite local SQLite databases" in output
    assert len(FileHandler.ranges) == asked  # nothing downloaded
    localdb = env / "spider2" / "spider2-lite" / "resource" / "databases" / "spider2-localdb"
    assert (localdb / "shop.sqlite").is_file()


def test_from_a_folder_with_the_dbt_archives_fetches_only_what_is_missing(
    env: Path, official: dict[str, bytes], tmp_path: Path
) -> None:
    downloads = tmp_path / "Downloads"
    downloads.mkdir()
    for name in ("DBT_start_db.zip", "dbt_gold.zip"):
        (downloads / name).write_bytes(official[name])
        del FileHandler.files[f"/{name}"]  # only in the folder: asking the server fails
    # the repository is in no root and not in the folder: that part alone is downloaded
    output = _cli("data", "fetch", "spider2-dbt", "--from", str(downloads))
    assert output.count("unpacked:") == 3
    asked = len(FileHandler.ranges)
    assert asked == 1  # the repository archive, once
    shutil.rmtree(env / "spider2" / "spider2-dbt" / "examples" / replicas.DBT_IDS[0])
    (env / "spider2" / "spider2-dbt" / "examples").joinpath(replicas.DBT_IDS[0]).mkdir()
    again = _cli("data", "fetch", "spider2-dbt", "--from", str(downloads))
    assert "in place: Spider 2.0 tasks" in again and "in place: Spider 2.0-DBT gold" in again
    assert "unpacked: Spider 2.0-DBT start databases" in again
    assert len(FileHandler.ranges) == asked  # nothing downloaded again


def test_a_part_in_another_data_root_is_in_place(
    env: Path, official: dict[str, bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import querybench.data.roots as data

    _cli("data", "fetch", "spider2-snow")  # the repository, into what becomes the shared root
    monkeypatch.setattr(data, "shared_data_dir", lambda: env)
    monkeypatch.delenv("QUERYBENCH_DATA")  # the target is now the user data dir
    downloads = tmp_path / "Downloads"
    downloads.mkdir()
    (downloads / "local_sqlite.zip").write_bytes(official["local_sqlite.zip"])
    output = _cli("data", "fetch", "spider2-lite", "--from", str(downloads))
    assert "in place: Spider 2.0 tasks, gold, metadata and documents (lite, snow, DBT " in output
    assert f"projects) ({env / 'spider2'};" in output
    user = tmp_path / "xdg-data" / "querybench"
    assert not (user / "spider2" / "spider2-lite" / "spider2-lite.jsonl").exists()
    assert "spider2-lite: 3 of 4 tasks can run here" in _cli("data", "status", "spider2-lite")
