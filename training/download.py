"""Fetch Quick, Draw! files from Google's public bucket into a data folder (resumable).

Files land in the official layout (``full/simplified/cat.ndjson`` …) so every reader works on them.
A partial download is kept as ``<file>.part`` and resumed with an HTTP ``Range`` request.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from urllib.parse import quote

import httpx
from tqdm import tqdm

from training.data import FORMAT_FOLDERS

BUCKET_URL = "https://storage.googleapis.com/quickdraw_dataset"
# The bucket's folders are the readers' folders; each holds the first (uncompressed) suffix.
FORMATS = {fmt: (folder, suffixes[0]) for fmt, (folder, suffixes) in FORMAT_FOLDERS.items()}


class DownloadError(RuntimeError):
    """A file could not be fetched (unknown format, HTTP error, network failure)."""


def file_url(base_url: str, fmt: str, category: str) -> str:
    """The bucket address of one category's file in one format."""
    folder, suffix = FORMATS[fmt]
    return f"{base_url.rstrip('/')}/{folder}/{quote(category)}{suffix}"


def download(
    categories: Iterable[str],
    fmt: str,
    dest: Path | str,
    base_url: str = BUCKET_URL,
    client: httpx.Client | None = None,
    progress: bool = True,
) -> list[Path]:
    """Download one format of each category into ``dest``; returns the finished files' paths.

    Files already complete are skipped; ``.part`` files are resumed.
    """
    if fmt not in FORMATS:
        raise DownloadError(f"unknown format {fmt!r}; use one of {sorted(FORMATS)}")
    names = [c.strip() for c in categories if c.strip()]
    if not names:
        raise DownloadError("no categories given")
    own_client = client is None
    client = client or httpx.Client(timeout=httpx.Timeout(30.0), follow_redirects=True)
    folder, suffix = FORMATS[fmt]
    written = []
    try:
        for category in names:
            target = Path(dest) / folder / f"{category}{suffix}"
            if target.is_file():
                written.append(target)
                continue
            try:
                _fetch(client, file_url(base_url, fmt, category), target, progress)
            except OSError as error:
                raise DownloadError(f"cannot write {target}: {error}") from error
            written.append(target)
    finally:
        if own_client:
            client.close()
    return written


def _fetch(client: httpx.Client, url: str, target: Path, progress: bool) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(target.name + ".part")
    have = part.stat().st_size if part.is_file() else 0
    headers = {"Range": f"bytes={have}-"} if have else {}
    try:
        with client.stream("GET", url, headers=headers) as response:
            if response.status_code == 416:  # nothing left to fetch
                part.replace(target)
                return
            if response.status_code not in (200, 206):
                raise DownloadError(f"{url}: HTTP {response.status_code}")
            if response.status_code == 200:
                have = 0  # the server ignored the range: start over
            total = int(response.headers.get("content-length", 0)) + have
            mode = "ab" if have else "wb"
            with open(part, mode) as handle, tqdm(
                total=total or None, initial=have, unit="B", unit_scale=True, desc=target.name,
                disable=not progress, leave=False,
            ) as bar:
                for chunk in response.iter_bytes():
                    handle.write(chunk)
                    bar.update(len(chunk))
    except httpx.HTTPError as error:
        raise DownloadError(f"{url}: {error} (partial file kept; run again to resume)") from error
    part.replace(target)
