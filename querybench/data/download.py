"""Downloading and unpacking archives: resumable, verified, never keeping an HTML page.

`download` fetches one URL into a file with HTTP Range resume (a `.part` file survives a cut
and the next call continues it), verifies its sha256 when one is known, and names the host in
every error: unreachable (offline, DNS), refused (HTTP 4xx/5xx), cut mid-way. A reply that is an
HTML page (Google Drive's quota or virus-scan page instead of the file) is recognised by its
content and deleted: `HtmlPageError`, never a cached archive.
`unpack_routed` unpacks a zip or tar archive member by member through a `Route` (the member's
destination, or None to leave it out): `__MACOSX/` and `._*` AppleDouble stubs are never
extracted, nested `.zip` members are unpacked where they land, and no member may leave the
destination folder. Unpacking is bounded: zips nest at most `MAX_NESTING` deep and one archive
writes at most `$QUERYBENCH_MAX_UNPACK_BYTES` (default 512 GiB, above the largest official
release), so a zip bomb fails with the reason instead of filling the disk. Which archive goes
where is `releases.py`'s table.
"""

from __future__ import annotations

import os
import re
import shutil
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path, PurePosixPath
from typing import IO
from urllib.parse import urlsplit

import httpx

from querybench.errors import FetchError, HtmlPageError
from querybench.file_digests import file_sha256
from querybench.tar_checks import CheckedTarInfo, MemberLayout

Progress = Callable[[int, int | None], None]  # (bytes so far, total bytes or None)
Route = Callable[[PurePosixPath], PurePosixPath | None]  # member -> destination, None: skip

# The official archives nest one zip in another at most once; three levels leave room.
MAX_NESTING = 3
MAX_UNPACK_BYTES_ENV = "QUERYBENCH_MAX_UNPACK_BYTES"
DEFAULT_MAX_UNPACK_BYTES = 512 * 1024**3
# An archive of more members than this is refused before its listing is read (the largest
# official one, the Spider2 repository, holds some 60,000).
MAX_MEMBERS = 1_000_000
# A member that inflates more than this many times over, past `_RATIO_FROM_BYTES`, is a bomb:
# deflate itself cannot pass 1,032:1, and no official database comes near it.
MAX_RATIO = 1_000
_RATIO_FROM_BYTES = 1024**2
_COPY_CHUNK = 1 << 20
# A download never fills the disk: it is refused before it starts when its declared length
# would leave less than this free, and stopped when the disk gets there while it comes (a
# server may declare nothing and send without end). The disk is read again every
# `_DISK_CHECK_BYTES`.
DISK_RESERVE_BYTES = 64 << 20
_DISK_CHECK_BYTES = 64 << 20


def download(
    url: str,
    dest: Path,
    *,
    sha256: str | None = None,
    client: httpx.Client | None = None,
    on_progress: Progress | None = None,
    retries: int = 3,
) -> Path:
    """`url` into `dest`, resuming `dest.part` with a Range request; verified when `sha256`.

    A `dest` already there is reused when it verifies (or no checksum is known) and is not an
    HTML page; an HTML page downloaded or found is deleted and raises `HtmlPageError`."""
    if dest.is_file():
        if html_title(dest) is not None:
            dest.unlink()  # a page an earlier version kept as the archive
        elif sha256 is None or file_sha256(dest) == sha256.lower():
            return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    http = client or httpx.Client(follow_redirects=True, timeout=60.0)
    try:
        for attempt in range(retries + 1):
            try:
                _transfer(http, url, part, on_progress)
                break
            except httpx.TransportError as exc:
                if attempt == retries or isinstance(exc, httpx.ConnectError):
                    raise _transport_error(url, part, exc) from None
    finally:
        if client is None:
            http.close()
    title = html_title(part)
    if title is not None:
        part.unlink()
        raise HtmlPageError(f"the reply of {_host(url)}", title)
    if sha256 is not None:
        actual = file_sha256(part)
        if actual != sha256.lower():
            part.unlink()
            raise FetchError(
                f"checksum mismatch for {url}: expected sha256 {sha256}, got {actual} "
                "(the partial file was removed; run again to download it afresh, or pass "
                "--no-verify for a newer release)"
            )
    part.replace(dest)
    return dest


def _transfer(http: httpx.Client, url: str, part: Path, on_progress: Progress | None) -> None:
    offset = part.stat().st_size if part.exists() else 0
    if offset and html_title(part) is not None:  # never resume onto a page
        part.unlink()
        offset = 0
    headers = {"Range": f"bytes={offset}-"} if offset else {}
    with http.stream("GET", url, headers=headers) as response:
        if response.status_code == 416 and offset:  # nothing left: the part is complete
            return
        if response.status_code >= 400:
            raise FetchError(
                f"{_host(url)} refused {url}: HTTP {response.status_code} {response.reason_phrase}"
            )
        if response.status_code != 206:  # the server ignored Range: start over
            offset = 0
        length = response.headers.get("Content-Length")
        total = offset + int(length) if length and length.isdigit() else None
        done = offset
        if total is not None:
            _check_free(part, url, total - offset)
        checked = done
        with part.open("ab" if offset else "wb") as out:
            for chunk in response.iter_bytes():  # no re-chunking: a cut loses no received byte
                out.write(chunk)
                done += len(chunk)
                if done - checked >= _DISK_CHECK_BYTES:
                    checked = done
                    _check_free(part, url, 0)
                if on_progress:
                    on_progress(done, total)


def _check_free(part: Path, url: str, coming: int) -> None:
    """`FetchError` when `coming` more bytes would leave the disk under `part` less than
    `DISK_RESERVE_BYTES` free (what came so far stays, to resume once there is room)."""
    free = shutil.disk_usage(part.parent).free
    if free - coming < DISK_RESERVE_BYTES:
        raise FetchError(
            f"{_host(url)}: {url} would leave less than {DISK_RESERVE_BYTES:,} bytes free on "
            f"the disk of {part.parent} ({free:,} free, {coming:,} more declared); "
            f"{part.name} is kept to resume once there is room"
        )


def _transport_error(url: str, part: Path, exc: httpx.TransportError) -> FetchError:
    host = _host(url)
    if isinstance(exc, httpx.ConnectError):
        return FetchError(f"cannot connect to {host} ({exc}): offline, or the host refuses")
    if isinstance(exc, httpx.TimeoutException):
        return FetchError(f"{host} timed out ({type(exc).__name__}); run again to resume")
    kept = part.stat().st_size if part.exists() else 0
    return FetchError(f"download from {host} cut after {kept} bytes ({exc}); run again to resume")


def _host(url: str) -> str:
    return urlsplit(url).netloc or url


_TITLE = re.compile(rb"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)


def html_title(path: Path) -> str | None:
    """The page's title (or "untitled") when `path` starts as an HTML document; else None.

    Archives (zip, tar, gzip) and JSON never start with `<`; a page does, after whitespace."""
    try:
        with path.open("rb") as f:
            head = f.read(4096)
    except OSError:
        return None
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if not text.startswith(b"<"):  # a JSON file or archive may hold "<html" in its data
        return None
    if not (text.startswith((b"<!doctype html", b"<head", b"<meta")) or b"<html" in text):
        return None
    match = _TITLE.search(head)
    title = match[1].decode("utf-8", "replace").strip() if match else ""
    return " ".join(title.split()) or "untitled"


def zip_commit(archive: Path) -> str | None:
    """The commit a GitHub (git archive) zip was made from: git writes it as the zip comment."""
    try:
        with zipfile.ZipFile(archive) as zf:
            comment = zf.comment.decode("ascii", "replace").strip()
    except (OSError, zipfile.BadZipFile):
        return None
    return comment if re.fullmatch(r"[0-9a-f]{40}", comment) else None


def is_junk(member: PurePosixPath) -> bool:
    """macOS archive litter: `__MACOSX/` resource forks, `._*` AppleDouble stubs, .DS_Store."""
    return any(p == "__MACOSX" or p.startswith("._") or p == ".DS_Store" for p in member.parts)


def unpack_routed(
    archive: Path,
    root: Path,
    route: Route,
    *,
    nested: bool = True,
    before: Callable[[], None] | None = None,
) -> list[Path]:
    """Unpack `archive`'s members to `root / route(member)`; the files written.

    Junk (`is_junk`) is never written; with `nested`, a `.zip` member is unpacked into its own
    folder (junk left out the same way) and then removed, as unzipping it by hand would. Every
    file is first written into a staging folder inside `root`, and moved into place only when
    the whole archive unpacked and its layout holds: a member that would land outside `root`
    (absolute, `..`), whose name no file system keeps (a control character, a part past 255
    bytes), on a file another member wrote, under one (`a`, then `a/b`) or where a folder is
    (in the archive or in `root`) stops with `FetchError`, as do zips nested past
    `MAX_NESTING` levels and `max_unpack_bytes()` written in all; nothing is left in `root`
    then. `before` runs after those checks and before the first file moves (a part clearing
    the files the new ones replace)."""
    allowance = _ByteAllowance(max_unpack_bytes(), archive)
    try:
        root.mkdir(parents=True, exist_ok=True)
        stage = Path(tempfile.mkdtemp(prefix=".unpacking-", dir=root))
    except OSError as exc:
        raise FetchError(f"cannot unpack {archive} into {root}: {exc}") from None
    try:
        layout = _Layout(archive, stage.name)
        _unpack(archive, stage, route, nested, 0, allowance, layout)
        layout.check_against(root)
        if before is not None:
            before()
        return layout.move(stage, root)
    except OSError as exc:
        raise FetchError(f"cannot unpack {archive} into {root}: {exc}") from None
    finally:
        shutil.rmtree(stage, ignore_errors=True)


class _Layout(MemberLayout):
    """The destinations one archive's members were written to (relative to the root), so that
    no member lands on, under or over another's (`MemberLayout`), nor in the staging folder,
    and the whole can be checked against what the root already holds before anything moves
    there."""

    def __init__(self, archive: Path, reserved: str) -> None:
        super().__init__(str(archive))
        self.archive, self.reserved = archive, reserved

    def claim(self, destination: PurePosixPath, name: str) -> None:
        """Take `destination` for member `name`, or raise `FetchError` saying why not."""
        where = self.checked(destination, name)
        if destination.parts[0] == self.reserved:
            raise FetchError(f"{where} would land in the unpacking's own staging folder")
        super().claim(destination, name)

    def release(self, destination: PurePosixPath) -> None:
        """A nested zip, unpacked and removed: its own members may take its name."""
        self.files.pop(destination, None)

    def check_against(self, root: Path) -> None:
        """`FetchError` when a file would replace a folder of `root`, or a folder is needed
        where `root` has something else."""
        for folder in sorted(self.folders, key=lambda p: len(p.parts)):
            there = root.joinpath(*folder.parts)
            if (there.exists() or there.is_symlink()) and not there.is_dir():
                raise FetchError(
                    f"{self.archive}: {there} is needed as a folder, and is a file there now"
                )
        for file in self.files:
            there = root.joinpath(*file.parts)
            if there.is_dir() and not there.is_symlink():
                raise FetchError(f"{self.archive}: would write the file {there}, a folder now")

    def move(self, stage: Path, root: Path) -> list[Path]:
        for folder in sorted(self.folders, key=lambda p: len(p.parts)):
            root.joinpath(*folder.parts).mkdir(exist_ok=True)
        moved = []
        for file in self.files:
            target = root.joinpath(*file.parts)
            os.replace(stage.joinpath(*file.parts), target)
            moved.append(target)
        return moved


def max_unpack_bytes() -> int:
    """`$QUERYBENCH_MAX_UNPACK_BYTES`, else 512 GiB: what one archive may write in all."""
    value = os.environ.get(MAX_UNPACK_BYTES_ENV, "").strip()
    if not value:
        return DEFAULT_MAX_UNPACK_BYTES
    if not value.isdigit() or int(value) < 1:
        raise FetchError(f"{MAX_UNPACK_BYTES_ENV} must be a whole number of bytes, got {value!r}")
    return int(value)


class _ByteAllowance:
    """What is left of one archive's unpacking budget, nested archives included."""

    def __init__(self, cap: int, archive: Path) -> None:
        self.left, self.cap, self.archive = cap, cap, archive

    def take(self, size: int, member: str) -> None:
        self.left -= size
        if self.left < 0:
            raise FetchError(
                f"{self.archive}: unpacking {member!r} passes {self.cap:,} bytes in all "
                f"(a zip bomb, or raise ${MAX_UNPACK_BYTES_ENV})"
            )


def _unpack(
    archive: Path,
    stage: Path,
    route: Route,
    nested: bool,
    depth: int,
    allowance: _ByteAllowance,
    layout: _Layout,
) -> None:
    with _members(archive, stage) as members:
        for name, is_dir, open_member in members:
            member = PurePosixPath(name)
            if member.is_absolute() or ".." in member.parts:
                raise FetchError(f"{archive}: member {name!r} would unpack outside the data folder")
            if is_dir or is_junk(member):
                continue
            destination = route(member)
            if destination is None:
                continue
            layout.claim(destination, name)
            target = stage.joinpath(*destination.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                with open_member() as src, target.open("wb") as dst:
                    while chunk := src.read(_COPY_CHUNK):
                        allowance.take(len(chunk), name)
                        dst.write(chunk)
            except (zipfile.BadZipFile, tarfile.TarError, EOFError, zlib.error) as exc:
                raise FetchError(f"{archive}: member {name!r} is damaged ({exc})") from None
            if nested and target.suffix == ".zip" and zipfile.is_zipfile(target):
                if depth + 1 > MAX_NESTING:
                    raise FetchError(
                        f"{archive}: member {name!r} nests zips more than {MAX_NESTING} deep"
                    )
                # moved aside and removed once unpacked, as by hand; a member of its own name
                # (a zip holding a zip of its name) may then be written while it is read
                layout.release(destination)
                inner = target.with_name(f".{target.name}.{depth}.nested")
                os.replace(target, inner)
                route_inner = partial(_under, destination.parent)
                _unpack(inner, stage, route_inner, True, depth + 1, allowance, layout)
                inner.unlink()


def _under(folder: PurePosixPath, member: PurePosixPath) -> PurePosixPath:
    return folder / member


Member = tuple[str, bool, Callable[[], IO[bytes]]]


@contextmanager
def _members(archive: Path, stage: Path | None = None) -> Iterator[Iterator[Member]]:
    if zipfile.is_zipfile(archive):
        _check_member_count(archive, _zip_member_count(archive))
        with zipfile.ZipFile(archive) as zf:
            infos = zf.infolist()
            _check_member_count(archive, len(infos))
            _check_declared_sizes(archive, infos, stage or archive.parent)
            yield ((i.filename, i.is_dir(), partial(zf.open, i)) for i in infos)
        return
    if _is_tar(archive):
        with tarfile.open(archive, tarinfo=CheckedTarInfo) as tf:
            members = []
            for count, m in enumerate(tf, 1):  # counted as read: no listing past the bound
                _check_member_count(archive, count)
                if m.isfile() or m.isdir():
                    members.append(m)
            yield ((m.name, m.isdir(), partial(_tar_member, tf, m)) for m in members)
        return
    title = html_title(archive)
    if title is not None:
        raise HtmlPageError(str(archive), title)
    raise FetchError(f"{archive} is neither a zip nor a tar archive (truncated or not the file?)")


def _zip_member_count(archive: Path) -> int:
    """The member count a zip's end record declares, read before its listing is (0 when it
    cannot be read: the listing's own errors then say why)."""
    with archive.open("rb") as f:
        record = zipfile._EndRecData(f)  # type: ignore[attr-defined]  # stdlib since 2.x
    if not record:
        return 0
    return int(record[zipfile._ECD_ENTRIES_TOTAL])  # type: ignore[attr-defined]


def _check_member_count(archive: Path, count: int) -> None:
    if count > MAX_MEMBERS:
        raise FetchError(
            f"{archive}: holds more than {MAX_MEMBERS:,} members ({count:,} listed or counted so "
            "far): refused as a bomb"
        )


def _check_declared_sizes(archive: Path, infos: list[zipfile.ZipInfo], stage: Path) -> None:
    """Refuse a zip whose members inflate past `MAX_RATIO`, or whose declared sizes pass the
    unpacking allowance or the free disk, before a byte is written (a member never inflates
    past its declared size: `zipfile` stops it there)."""
    total = sum(info.file_size for info in infos)
    cap = max_unpack_bytes()
    if total > cap:
        raise FetchError(
            f"{archive}: its members declare {total:,} bytes, which passes {cap:,} bytes in all "
            f"(a zip bomb, or raise ${MAX_UNPACK_BYTES_ENV})"
        )
    for info in infos:
        if info.file_size > _RATIO_FROM_BYTES and info.file_size > MAX_RATIO * max(
            1, info.compress_size
        ):
            ratio = info.file_size // max(1, info.compress_size)
            raise FetchError(
                f"{archive}: member {info.filename!r} inflates {ratio:,} times over "
                f"({info.compress_size:,} to {info.file_size:,} bytes; the bound is "
                f"{MAX_RATIO:,}): refused as a zip bomb"
            )
    try:
        free = shutil.disk_usage(stage).free
    except OSError:
        return
    if total > free:
        raise FetchError(
            f"{archive}: its members declare {total:,} bytes, more than the {free:,} free "
            "on the disk"
        )


def _is_tar(archive: Path) -> bool:
    """`tarfile.is_tarfile`, its first header read as every other (`CheckedTarInfo`)."""
    try:
        with tarfile.open(archive, tarinfo=CheckedTarInfo):
            return True
    except tarfile.TarError:
        return False


def _tar_member(tf: tarfile.TarFile, member: tarfile.TarInfo) -> IO[bytes]:
    content = tf.extractfile(member)
    assert content is not None  # a regular file always has content
    return content


def strip_route(strip: str = "") -> Route:
    """Every member as it is, less the leading `strip` folder."""
    prefix = PurePosixPath(strip).parts if strip else ()

    def route(member: PurePosixPath) -> PurePosixPath | None:
        parts = member.parts
        if prefix and parts[: len(prefix)] == prefix:
            parts = parts[len(prefix) :]
        return PurePosixPath(*parts) if parts else None

    return route


def unpack(archive: Path, folder: Path, *, strip: str = "") -> None:
    """Unpack a zip or tar archive into `folder`, dropping the leading `strip` folder."""
    folder.mkdir(parents=True, exist_ok=True)
    unpack_routed(archive, folder, strip_route(strip), nested=False)
