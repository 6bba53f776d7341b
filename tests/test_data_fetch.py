"""`querybench data fetch` against a real HTTP server on 127.0.0.1 (no other network)."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import socket
import tarfile
import time
import warnings
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from querybench.cli import app
from querybench.data import download as download_module
from querybench.data import releases
from querybench.data.download import download, html_title, unpack, unpack_routed
from querybench.errors import FetchError, HtmlPageError
from tests.file_server import FileHandler as _Handler
from tests.file_server import server

__all__ = ["server"]  # the fixture, imported for pytest


def _archive() -> bytes:
    """A small Spider-1.0-like release: spider_data/dev.json plus padding to span many chunks."""
    buffer = io.BytesIO()
    entry = {"db_id": "d", "question": "How many?", "query": "SELECT count(*) FROM t"}
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("spider_data/dev.json", json.dumps([entry]))
        zf.writestr("spider_data/database/d/notes.txt", bytes(range(256)) * 2000)
    return buffer.getvalue()


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _disk(free: list[int]) -> object:
    """A `shutil.disk_usage` whose free bytes are `free`'s next value (then its last)."""

    def usage(path: object) -> object:
        value = free.pop(0) if len(free) > 1 else free[0]
        return type("Usage", (), {"free": value, "total": value, "used": 0})()

    return usage


def test_a_download_that_would_fill_the_disk_is_refused_before_it_starts(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _Handler.files["/big.zip"] = b"x" * 200_000
    monkeypatch.setattr(download_module.shutil, "disk_usage", _disk([100_000 + (64 << 20)]))
    with pytest.raises(FetchError, match="would leave less than 67,108,864 bytes free"):
        download(f"{server}/big.zip", tmp_path / "big.zip")
    assert not (tmp_path / "big.zip").exists()
    part = tmp_path / "big.zip.part"
    assert not part.exists() or part.stat().st_size == 0


def test_a_download_is_stopped_when_the_disk_fills_while_it_comes(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the length declared fits; the disk fills meanwhile (a server sending without end, or
    # another writer): stopped at the next check, what came kept to resume
    _Handler.files["/big.zip"] = b"x" * 1_000_000
    monkeypatch.setattr(download_module, "_DISK_CHECK_BYTES", 100_000)
    monkeypatch.setattr(download_module.shutil, "disk_usage", _disk([10 << 30, 0]))
    with pytest.raises(FetchError, match="is kept to resume once there is room"):
        download(f"{server}/big.zip", tmp_path / "big.zip")
    assert 100_000 <= (tmp_path / "big.zip.part").stat().st_size < 1_000_000


def test_full_download_verified(server: str, tmp_path: Path) -> None:
    data = _archive()
    _Handler.files["/a.zip"] = data
    seen: list[tuple[int, int | None]] = []
    path = download(
        f"{server}/a.zip",
        tmp_path / "a.zip",
        sha256=_sha(data),
        on_progress=lambda done, total: seen.append((done, total)),
    )
    assert path.read_bytes() == data
    assert seen[-1] == (len(data), len(data))
    assert not (tmp_path / "a.zip.part").exists()
    # already there and verified: no second request
    download(f"{server}/a.zip", tmp_path / "a.zip", sha256=_sha(data))
    assert len(_Handler.ranges) == 1


def test_resume_after_a_cut(server: str, tmp_path: Path) -> None:
    data = _archive()
    _Handler.files["/a.zip"] = data
    _Handler.cut_after["/a.zip"] = 100_000
    with pytest.raises(FetchError, match=r"cut after 100000 bytes.*run again to resume"):
        download(f"{server}/a.zip", tmp_path / "a.zip", sha256=_sha(data), retries=0)
    assert (tmp_path / "a.zip.part").stat().st_size == 100_000
    path = download(f"{server}/a.zip", tmp_path / "a.zip", sha256=_sha(data))
    assert path.read_bytes() == data
    assert _Handler.ranges == [None, "bytes=100000-"]


def test_a_cut_is_resumed_within_one_call(server: str, tmp_path: Path) -> None:
    data = _archive()
    _Handler.files["/a.zip"] = data
    _Handler.cut_after["/a.zip"] = 4096
    assert download(f"{server}/a.zip", tmp_path / "a.zip", retries=1).read_bytes() == data
    assert _Handler.ranges == [None, "bytes=4096-"]


def test_checksum_mismatch(server: str, tmp_path: Path) -> None:
    _Handler.files["/a.zip"] = _archive()
    with pytest.raises(FetchError, match=r"checksum mismatch .* expected sha256 0{64}, got "):
        download(f"{server}/a.zip", tmp_path / "a.zip", sha256="0" * 64)
    assert not (tmp_path / "a.zip").exists() and not (tmp_path / "a.zip.part").exists()


def test_refused_connection(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(FetchError, match=rf"cannot connect to 127.0.0.1:{port}.*offline"):
        download(f"http://127.0.0.1:{port}/a.zip", tmp_path / "a.zip")


def test_host_refusing_with_an_http_error(server: str, tmp_path: Path) -> None:
    _Handler.status["/a.zip"] = 403
    with pytest.raises(FetchError, match=r"127.0.0.1:\d+ refused .*HTTP 403"):
        download(f"{server}/a.zip", tmp_path / "a.zip")


def test_unpack_refuses_escaping_members(tmp_path: Path) -> None:
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("../outside.txt", "x")
    with pytest.raises(FetchError, match="would unpack outside"):
        unpack(archive, tmp_path / "out")
    (tmp_path / "page.zip").write_text("<html><title>Quota exceeded</title></html>")
    with pytest.raises(HtmlPageError, match="is an HTML page \\('Quota exceeded'\\)"):
        unpack(tmp_path / "page.zip", tmp_path / "out")
    (tmp_path / "cut.zip").write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(FetchError, match="neither a zip nor a tar"):
        unpack(tmp_path / "cut.zip", tmp_path / "out")


def _zip_of(name: str, data: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr(name, data)
    return buffer.getvalue()


def test_a_nested_zip_holding_a_zip_of_its_own_name_unpacks(tmp_path: Path) -> None:
    # x.zip holds x.zip holds data.txt: as by hand, each unzip overwrites x.zip, then it goes
    archive = tmp_path / "a.zip"
    archive.write_bytes(_zip_of("x.zip", _zip_of("x.zip", _zip_of("data.txt", b"hi"))))
    out = tmp_path / "out"
    assert unpack_routed(archive, out, lambda m: m) == [out / "data.txt"]
    assert sorted(p.name for p in out.iterdir()) == ["data.txt"]


def test_a_damaged_member_is_a_fetch_error_and_leaves_no_partial(tmp_path: Path) -> None:
    data = bytearray(_zip_of("d.txt", b"hello world" * 10))
    data[data.index(b"hello")] ^= 1  # the stored CRC no longer matches
    (tmp_path / "c.zip").write_bytes(bytes(data))
    with pytest.raises(FetchError, match=r"member 'd\.txt' is damaged"):
        unpack(tmp_path / "c.zip", tmp_path / "out")
    assert list((tmp_path / "out").iterdir()) == []


DRIVE_PAGE = (
    b"<!DOCTYPE html><html><head><title>Google Drive - Virus scan warning</title></head>"
    b"<body>Google Drive can't scan this file for viruses.<form action='/download'>"
    b"<input type='hidden' name='confirm' value='t'></form></body></html>"
)


def test_an_html_page_is_recognised_and_never_kept(server: str, tmp_path: Path) -> None:
    _Handler.files["/a.zip"] = b"\n  " + DRIVE_PAGE  # served with 200, as Drive does
    with pytest.raises(HtmlPageError) as caught:
        download(f"{server}/a.zip", tmp_path / "a.zip")
    assert caught.value.title == "Google Drive - Virus scan warning"
    assert list(tmp_path.iterdir()) == []  # neither the archive nor a .part
    # a page an older version kept as the archive is deleted and downloaded again
    (tmp_path / "a.zip").write_bytes(DRIVE_PAGE)
    data = _archive()
    _Handler.files["/a.zip"] = data
    assert download(f"{server}/a.zip", tmp_path / "a.zip").read_bytes() == data
    # a .part holding a page is not resumed onto
    (tmp_path / "b.zip.part").write_bytes(DRIVE_PAGE)
    _Handler.files["/b.zip"] = data
    assert download(f"{server}/b.zip", tmp_path / "b.zip").read_bytes() == data
    assert _Handler.ranges[-1] is None


def test_html_detection_reads_content_not_names(tmp_path: Path) -> None:
    cases = {
        "page.zip": (DRIVE_PAGE, "Google Drive - Virus scan warning"),
        "bare.zip": (b"<html><body>Too many users</body></html>", "untitled"),
        "data.json": (b'[{"question_id": 0}]', None),
        "html_in.json": (b'[{"question": "what does <html> do?"}]', None),
        "real.zip": (_archive(), None),
    }
    for name, (content, title) in cases.items():
        (tmp_path / name).write_bytes(content)
        assert html_title(tmp_path / name) == title, name


def test_official_sources_are_pinned() -> None:
    archives = {p.archive for parts in releases.PARTS.values() for p in parts}
    assert all(a.url.startswith("https://") for a in archives)
    by_name = {a.file_name: a for a in archives}
    assert by_name["dev.zip"].sha256 == (
        "cdd6d19faeb45a23970b98d3ef6c40a87987c95459c2cf12076897a60cf5a630"
    )
    assert by_name["minidev.zip"].sha256 == (
        "cc48ba16838204e4e214512030cb572eeb5f7bcdd999bae4b9b6ff12ec13b92f"
    )
    assert by_name["local_sqlite.zip"].sha256 == (
        "d56acf7c9d89be4bdf1f4f1281f4a03d91735f1858f6d6d0cfe0f9d562e3a94f"
    )
    assert by_name["spider_data.zip"].sha256 == (
        "00636695dabed6b5f4b8328a16b13e069a2f16591d5efcce57660669c85b121b"
    )
    repos = [a for a in archives if "xlang-ai/Spider2" in a.url]
    assert {a.commit for a in repos} == {
        releases.SPIDER2_COMMIT,
        "db1d8e1b4c054b8f36d72e118ec2ef62e2f2b9ac",
    }
    assert all(a.url.endswith(f"/archive/{a.commit}.zip") for a in repos)  # never a branch
    variants = {a.commit: a for a in archives if "github.com/ygan/" in a.url}
    assert set(variants) == {releases.SPIDER_SYN_COMMIT, releases.SPIDER_DK_COMMIT}
    assert all(a.url.endswith(f"/archive/{c}.zip") for c, a in variants.items())
    assert set(releases.PARTS) == {
        "spider2-lite",
        "spider2-snow",
        "spider2-dbt",
        "spider2",
        "bird",
        "bird-dev-20251106",
        "bird-train",
        "bird-mini-dev",
        "spider1",
        "spider-syn",
        "spider-dk",
    }


def test_cli_data_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUERYBENCH_DATA", str(tmp_path))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    result = CliRunner().invoke(app, ["data", "path"])
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines[0] == f"* {tmp_path}  [$QUERYBENCH_DATA]"
    assert lines[1].endswith("[../shared/data]")
    assert lines[2] == f"  {tmp_path / 'xdg' / 'querybench'}  [user data dir]"
    assert lines[3] == f"data fetch writes to {tmp_path}"


def test_zips_nested_past_the_bound_fail_with_the_reason(tmp_path: Path) -> None:
    from querybench.data.download import MAX_NESTING

    data = _zip_of("data.txt", b"hi")
    for _ in range(MAX_NESTING + 1):
        data = _zip_of("x.zip", data)
    (tmp_path / "deep.zip").write_bytes(data)
    with pytest.raises(FetchError, match=rf"nests zips more than {MAX_NESTING} deep"):
        unpack_routed(tmp_path / "deep.zip", tmp_path / "out", lambda m: m)


def test_zips_nested_to_the_bound_unpack(tmp_path: Path) -> None:
    from querybench.data.download import MAX_NESTING

    data = _zip_of("data.txt", b"hi")
    for _ in range(MAX_NESTING):
        data = _zip_of("x.zip", data)
    (tmp_path / "deep.zip").write_bytes(data)
    out = tmp_path / "out"
    assert unpack_routed(tmp_path / "deep.zip", out, lambda m: m) == [out / "data.txt"]
    assert (out / "data.txt").read_bytes() == b"hi"


def test_an_archive_past_the_byte_cap_stops_and_leaves_no_partial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 10 MB of zeros compresses to a few KB: the cap counts what is written, not the archive
    monkeypatch.setenv("QUERYBENCH_MAX_UNPACK_BYTES", str(4 * 1024**2))
    (tmp_path / "bomb.zip").write_bytes(_zip_of("x.zip", _zip_of("zeros.bin", bytes(10 * 1024**2))))
    out = tmp_path / "out"
    with pytest.raises(FetchError, match=r"passes 4,194,304 bytes in all"):
        unpack_routed(tmp_path / "bomb.zip", out, lambda m: m)
    assert [p.name for p in out.rglob("*") if p.is_file()] == []


def test_a_bad_unpack_cap_is_refused_with_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("QUERYBENCH_MAX_UNPACK_BYTES", "lots")
    (tmp_path / "a.zip").write_bytes(_zip_of("data.txt", b"hi"))
    with pytest.raises(FetchError, match="QUERYBENCH_MAX_UNPACK_BYTES must be a whole number"):
        unpack_routed(tmp_path / "a.zip", tmp_path / "out", lambda m: m)


def _zip_members(path: Path, members: list[tuple[str, bytes]]) -> Path:
    with zipfile.ZipFile(path, "w") as zf, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a duplicate name is what some cases are made of
        for name, data in members:
            zf.writestr(name, data)
    return path


def _tree(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


BAD_LAYOUTS = {
    "a file, then a file under it": ([("a", b"1"), ("a/b", b"2")], "under a, an earlier file"),
    "a file under a name, then that name": ([("a/b", b"1"), ("a", b"2")], "a folder of earlier"),
    "the same name twice": ([("a", b"1"), ("a", b"2")], "which an earlier member wrote"),
    "a control character": ([("ok", b"1"), ("x\nb", b"2")], "holds a control character"),
    "a part past 255 bytes": ([("ok", b"1"), ("x" * 256, b"2")], "past 255 bytes"),
    "a damaged member after good ones": ([("ok", b"1")], "is damaged"),
    "a nested zip over an outer member": (
        [("d/a", b"1"), ("d/inner.zip", _zip_of("a", b"2"))],
        "which an earlier member wrote",
    ),
}


@pytest.mark.parametrize("layout", BAD_LAYOUTS)
def test_a_collision_or_unsafe_layout_is_a_clean_error_writing_nothing(
    tmp_path: Path, layout: str
) -> None:
    members, reason = BAD_LAYOUTS[layout]
    archive = _zip_members(tmp_path / "a.zip", members)
    if layout == "a damaged member after good ones":
        with zipfile.ZipFile(archive, "a") as zf:
            zf.writestr("bad", b"hello world" * 10)
        data = bytearray(archive.read_bytes())
        data[data.rindex(b"hello")] ^= 1
        archive.write_bytes(bytes(data))
    out = tmp_path / "out"
    (out / "kept").mkdir(parents=True)
    (out / "kept" / "old.txt").write_text("old")
    cleared: list[bool] = []
    with pytest.raises(FetchError, match=reason):
        unpack_routed(archive, out, lambda m: m, before=lambda: cleared.append(True))
    assert _tree(out) == ["kept", "kept/old.txt"]  # nothing half-written, no staging left
    assert cleared == []  # what the new files would replace was not cleared either


def test_what_the_root_holds_is_checked_before_anything_moves(tmp_path: Path) -> None:
    archive = _zip_members(tmp_path / "a.zip", [("z/first", b"1"), ("x/y/z", b"2")])
    out = tmp_path / "out"
    out.mkdir()
    (out / "x").write_text("a file where the archive needs a folder")
    with pytest.raises(FetchError, match="is needed as a folder, and is a file there now"):
        unpack_routed(archive, out, lambda m: m)
    assert _tree(out) == ["x"]
    (out / "x").unlink()
    (out / "z" / "first").mkdir(parents=True)
    with pytest.raises(FetchError, match=r"would write the file .*first, a folder now"):
        unpack_routed(archive, out, lambda m: m)
    assert _tree(out) == ["z", "z/first"]


def test_before_runs_after_the_checks_and_before_the_files_move(tmp_path: Path) -> None:
    archive = _zip_members(tmp_path / "a.zip", [("d/new.duckdb", b"new")])
    out = tmp_path / "out"
    (out / "d").mkdir(parents=True)
    (out / "d" / "old.duckdb").write_text("old")
    seen: list[list[str]] = []

    def before() -> None:  # the staging folder aside, the new file is not in place yet
        seen.append([p for p in _tree(out) if not p.startswith(".unpacking-")])

    written = unpack_routed(archive, out, lambda m: m, before=before)
    assert seen == [["d", "d/old.duckdb"]]
    assert written == [out / "d" / "new.duckdb"]
    assert _tree(out) == ["d", "d/new.duckdb", "d/old.duckdb"]


def test_a_collision_through_data_fetch_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    # The official name, hand-made: a file `spider_data`, then members under that name.
    downloads = tmp_path / "Downloads"
    downloads.mkdir()
    _zip_members(
        downloads / "spider_data.zip",
        [("spider_data/dev.json", b"[]"), ("spider_data/dev.json/x", b"{}")],
    )
    data = tmp_path / "data"
    args = ["data", "fetch", "spider1", "--from", str(downloads), "--to", str(data)]
    result = CliRunner().invoke(app, [*args, "--no-verify"])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "under spider1/dev.json, an earlier file" in " ".join(result.output.split())
    assert [p for p in _tree(data) if not p.startswith(".downloads")] == []


def _fetch_spider1_from(downloads: Path, data: Path) -> Result:
    args = ["data", "fetch", "spider1", "--from", str(downloads), "--to", str(data)]
    return CliRunner().invoke(app, [*args, "--no-verify"])


def _refused_writing_nothing(result: Result, data: Path, words: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert words in " ".join(result.output.split())
    assert [p for p in _tree(data) if not p.startswith(".downloads")] == []


def test_a_zip_bomb_is_refused_before_a_byte_is_written(tmp_path: Path) -> None:
    # 64 MiB of zeros in 45 bytes: declared, it would fill the disk many times over as a
    # thousand such members; each inflating past 1,000:1 is refused from its header.
    downloads = tmp_path / "Downloads"
    downloads.mkdir()
    with zipfile.ZipFile(downloads / "spider_data.zip", "w", zipfile.ZIP_BZIP2) as zf:
        zf.writestr("spider_data/dev.json", b"[]")
        zf.writestr("spider_data/database/a/a.sqlite", bytes(64 * 1024**2))
    data = tmp_path / "data"
    result = _fetch_spider1_from(downloads, data)
    _refused_writing_nothing(result, data, "times over")
    assert "refused as a zip bomb" in " ".join(result.output.split())


def test_an_archive_of_absurdly_many_members_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(download_module, "MAX_MEMBERS", 10)
    downloads = tmp_path / "Downloads"
    downloads.mkdir()
    members = [(f"spider_data/database/d{n}/d{n}.sqlite", b"x") for n in range(11)]
    _zip_members(downloads / "spider_data.zip", [("spider_data/dev.json", b"[]"), *members])
    data = tmp_path / "data"
    _refused_writing_nothing(
        _fetch_spider1_from(downloads, data), data, "holds more than 10 members"
    )


def test_a_tar_of_absurdly_many_members_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(download_module, "MAX_MEMBERS", 10)
    archive = tmp_path / "many.tar"
    with tarfile.open(archive, "w") as tf:
        for n in range(11):
            info = tarfile.TarInfo(f"m{n}")
            tf.addfile(info, io.BytesIO(b""))
    with pytest.raises(FetchError, match="holds more than 10 members"):
        unpack(archive, tmp_path / "out")
    assert not (tmp_path / "out" / "m0").exists()


def tar_with_header(kind: bytes, payload: bytes) -> bytes:
    """A tar whose first header is a `kind` header (pax `x`, GNU long name `L`) of `payload`,
    then one regular file `x`."""
    header = tarfile.TarInfo("././@PaxHeader")
    header.type, header.size = kind, len(payload)
    out = io.BytesIO()
    out.write(header.tobuf(tarfile.USTAR_FORMAT))
    out.write(payload + b"\0" * (-len(payload) % 512))
    member = tarfile.TarInfo("x")
    member.size = 1
    out.write(member.tobuf(tarfile.USTAR_FORMAT) + b"x" + b"\0" * 511 + b"\0" * 1024)
    return out.getvalue()


# Headers past what the reader takes: (kind, payload, the refusal's words), and their ids.
HOSTILE_HEADERS = [
    # Python 3.11's hdrcharset search is quadratic in a run of digits: minutes for this
    (tarfile.XHDTYPE, b"1" * 400_000, "a run of more than 64 digits"),
    # many short records before one `=`: the record match is quadratic too
    (tarfile.XHDTYPE, b"4 a\n" * 100_000 + b"=", "a record"),
    (tarfile.XHDTYPE, b"40 GNU.sparse.map=0,512,1024,1536,20480\n", "sparse"),
    (tarfile.XHDTYPE, b"\0" * (2 << 20), "2,097,152 bytes of pax records"),
    (tarfile.GNUTYPE_LONGNAME, b"n" * (2 << 20), "a long name of 2,097,152 bytes"),
]
HOSTILE_HEADER_IDS = ["digits", "records", "sparse", "large-pax", "large-long-name"]


@pytest.mark.parametrize(("kind", "payload", "why"), HOSTILE_HEADERS, ids=HOSTILE_HEADER_IDS)
def test_a_tar_header_past_what_the_reader_takes_is_refused_at_once(
    tmp_path: Path, kind: bytes, payload: bytes, why: str
) -> None:
    archive = tmp_path / "hostile.tar.gz"
    archive.write_bytes(gzip.compress(tar_with_header(kind, payload)))
    start = time.monotonic()
    with pytest.raises(FetchError, match=f"hostile.tar.gz: the tar header at byte 0 holds .*{why}"):
        unpack(archive, tmp_path / "out")
    assert time.monotonic() - start < 5.0
    assert not (tmp_path / "out" / "x").exists()


def test_a_pax_tar_of_long_and_unicode_names_still_unpacks(tmp_path: Path) -> None:
    archive = tmp_path / "pax.tar"
    names = [
        "d/" + "n" * 200 + "/" + "m" * 200,
        "d/naïve ☃.txt",
        "d/" + "/".join(["sub"] * 200) + "/f",
    ]
    with tarfile.open(archive, "w", format=tarfile.PAX_FORMAT) as tf:
        for name in names:
            info = tarfile.TarInfo(name)
            info.size, info.mtime = 2, 1700000000.123456789
            info.pax_headers = {"comment": "=" * 100}
            tf.addfile(info, io.BytesIO(b"ok"))
    unpack(archive, tmp_path / "out")
    assert all((tmp_path / "out" / name).read_bytes() == b"ok" for name in names)


@pytest.mark.parametrize(
    "members",
    [
        [("spider_data/dev.json", b"[]"), ("spider_data/dev.json", b"{}")],
        [("spider_data/a", b"1"), ("spider_data/a/b", b"2")],
        [("spider_data/a/b", b"2"), ("spider_data/a", b"1")],
    ],
    ids=["duplicate", "a-then-a/b", "a/b-then-a"],
)
def test_colliding_members_through_data_fetch_exit_2_writing_nothing(
    tmp_path: Path, members: list[tuple[str, bytes]]
) -> None:
    downloads = tmp_path / "Downloads"
    downloads.mkdir()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of the duplicate name
        _zip_members(downloads / "spider_data.zip", members)
    data = tmp_path / "data"
    _refused_writing_nothing(_fetch_spider1_from(downloads, data), data, "member")
