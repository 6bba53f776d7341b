"""Download the official public benchmark releases: resumable, verified, unpacked in place.

`download` fetches one URL into a file with HTTP Range resume (a `.part` file survives a cut
and the next call continues it), verifies its sha256 when one is known, and names the host
in every error: unreachable (offline, DNS), refused (HTTP 4xx/5xx), cut mid-way.
`fetch` downloads every archive a benchmark needs (the `SOURCES` table) and unpacks it into
the data layout the loaders read (`<dir>/spider2/...`, `<dir>/bird/...`, `<dir>/spider1/...`).
"""

from __future__ import annotations

import hashlib
import shutil
import tarfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

import httpx

from querybench.errors import QuerybenchError

Progress = Callable[[int, int | None], None]  # (bytes so far, total bytes or None)

_GDRIVE = "https://drive.usercontent.google.com/download?export=download&confirm=t&id="


class FetchError(QuerybenchError):
    """A download could not be completed or verified."""


@dataclass(frozen=True)
class Source:
    """One official archive: where it is, its checksum when known, where it unpacks."""

    file_name: str
    url: str
    sha256: str | None
    unpack_to: str  # folder under the data dir
    strip: str = ""  # leading archive folder dropped while unpacking ("Spider2-main")
    only_stripped: bool = False  # unpack only the members under `strip` (one folder of a repo)


AGENTIC_COMMIT = "db1d8e1b4c054b8f36d72e118ec2ef62e2f2b9ac"

_SPIDER2_REPO = Source(
    "Spider2-main.zip",
    "https://github.com/xlang-ai/Spider2/archive/refs/heads/main.zip",
    None,  # a moving branch: no fixed checksum
    "spider2",
    strip="Spider2-main",
)

# The official public releases (URLs as the benchmarks' READMEs give them).
SOURCES: dict[str, tuple[Source, ...]] = {
    "spider2-lite": (
        _SPIDER2_REPO,
        # spider2-lite/README.md: the local SQLite databases (Google Drive)
        Source(
            "local_sqlite.zip",
            _GDRIVE + "1coEVsCZq-Xvj9p2TnhBFoFTsY-UoYGmG",
            None,
            "spider2/spider2-lite/resource/databases/spider2-localdb",
        ),
    ),
    "spider2-snow": (_SPIDER2_REPO,),
    # The agentic setting's folder, removed upstream on 2025-05-22: the repository at the last
    # commit that has it, only that folder unpacked.
    "spider2": (
        Source(
            "Spider2-db1d8e1b.zip",
            f"https://github.com/xlang-ai/Spider2/archive/{AGENTIC_COMMIT}.zip",
            None,
            "spider2/spider2",
            strip=f"Spider2-{AGENTIC_COMMIT}/spider2",
            only_stripped=True,
        ),
    ),
    "spider2-dbt": (
        _SPIDER2_REPO,
        # spider2-dbt/README.md: DBT_start_db.zip and dbt_gold.zip (Google Drive)
        Source(
            "DBT_start_db.zip",
            _GDRIVE + "1N3f7BSWC4foj-V-1C9n8M2XmgV7FOcqL",
            None,
            "spider2/spider2-dbt",
        ),
        Source(
            "dbt_gold.zip",
            _GDRIVE + "1s0USV_iQLo4oe05QqAMnhGGp5jeejCzp",
            None,
            "spider2/spider2-dbt",
        ),
    ),
    "bird": (
        Source(
            "bird_dev.zip",
            "https://bird-bench.oss-cn-beijing.aliyuncs.com/dev.zip",
            "cdd6d19faeb45a23970b98d3ef6c40a87987c95459c2cf12076897a60cf5a630",
            "bird",
            strip="dev_20240627",
        ),
    ),
    "bird-mini-dev": (
        Source(
            "bird_minidev.zip",
            "https://bird-bench.oss-cn-beijing.aliyuncs.com/minidev.zip",
            None,
            "bird",
            strip="minidev/MINIDEV",
        ),
    ),
    "spider1": (
        # the spider_data.zip linked from https://yale-lily.github.io/spider (Google Drive)
        Source(
            "spider_data.zip",
            _GDRIVE + "1403EGqzIDoHMdQF4c9Bkyl7dZLZ5Wt6J",
            None,
            "spider1",
            strip="spider_data",
        ),
    ),
}


def fetch(
    benchmark: str,
    to: Path,
    *,
    client: httpx.Client | None = None,
    on_start: Callable[[Source], Progress] | None = None,
    retries: int = 3,
) -> list[Path]:
    """Download and unpack every archive of `benchmark` under `to`; the unpacked folders."""
    if benchmark not in SOURCES:
        raise FetchError(f"nothing to fetch for {benchmark!r}; choose one of {', '.join(SOURCES)}")
    downloads = to / ".downloads"
    folders = []
    with client or httpx.Client(follow_redirects=True, timeout=60.0) as http:
        for source in SOURCES[benchmark]:
            progress = on_start(source) if on_start else None
            archive = download(
                source.url,
                downloads / source.file_name,
                sha256=source.sha256,
                client=http,
                on_progress=progress,
                retries=retries,
            )
            folder = to / source.unpack_to
            unpack(archive, folder, strip=source.strip, only_stripped=source.only_stripped)
            folders.append(folder)
    return folders


def download(
    url: str,
    dest: Path,
    *,
    sha256: str | None = None,
    client: httpx.Client | None = None,
    on_progress: Progress | None = None,
    retries: int = 3,
) -> Path:
    """`url` into `dest`, resuming `dest.part` with a Range request; verified when `sha256`."""
    if dest.is_file() and (sha256 is None or file_sha256(dest) == sha256):
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
    if sha256 is not None:
        actual = file_sha256(part)
        if actual != sha256.lower():
            part.unlink()
            raise FetchError(
                f"checksum mismatch for {url}: expected sha256 {sha256}, got {actual} "
                "(the partial file was removed; run again to download it afresh)"
            )
    part.replace(dest)
    return dest


def _transfer(http: httpx.Client, url: str, part: Path, on_progress: Progress | None) -> None:
    offset = part.stat().st_size if part.exists() else 0
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
        with part.open("ab" if offset else "wb") as out:
            for chunk in response.iter_bytes():  # no re-chunking: a cut loses no received byte
                out.write(chunk)
                done += len(chunk)
                if on_progress:
                    on_progress(done, total)


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


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def unpack(archive: Path, folder: Path, *, strip: str = "", only_stripped: bool = False) -> None:
    """Unpack a zip or tar archive into `folder`, dropping the leading `strip` folder (and,
    with `only_stripped`, every member outside it).

    Members that would land outside `folder` (absolute paths, `..`) are refused.
    """
    folder.mkdir(parents=True, exist_ok=True)
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                target = _member_target(folder, info.filename, strip, archive, only_stripped)
                if target is None:
                    continue
                if info.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, target.open("wb") as dst:
                    shutil.copyfileobj(src, dst)
        return
    if tarfile.is_tarfile(archive):
        with tarfile.open(archive) as tf:
            for member in tf.getmembers():
                target = _member_target(folder, member.name, strip, archive, only_stripped)
                if target is None or not (member.isfile() or member.isdir()):
                    continue
                if member.isdir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                content = tf.extractfile(member)
                assert content is not None  # a regular file always has content
                with content, target.open("wb") as dst:
                    shutil.copyfileobj(content, dst)
        return
    raise FetchError(f"{archive} is neither a zip nor a tar archive (an HTML error page?)")


def _member_target(
    folder: Path, name: str, strip: str, archive: Path, only_stripped: bool = False
) -> Path | None:
    parts = PurePosixPath(name).parts
    prefix = PurePosixPath(strip).parts if strip else ()
    if prefix and parts[: len(prefix)] == prefix:
        parts = parts[len(prefix) :]
    elif only_stripped:
        return None
    if not parts:
        return None
    if PurePosixPath(name).is_absolute() or ".." in parts:
        raise FetchError(f"{archive}: member {name!r} would unpack outside {folder}")
    return folder.joinpath(*parts)
