"""`griffon data download` against a local HTTP server on 127.0.0.1 serving fixture files."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from griffon.launch import patient
from tests.conftest import REPO
from training.data import load_dataset
from training.download import DownloadError, download


class Bucket(BaseHTTPRequestHandler):
    """Serves ``files`` (path → bytes) with Range support; ``cut_after`` truncates the next response."""

    files: dict[str, bytes] = {}
    cut_after: int | None = None
    requests: list[tuple[str, str | None]] = []

    def do_GET(self) -> None:  # http.server's naming
        Bucket.requests.append((self.path, self.headers.get("Range")))
        body = self.files.get(self.path)
        if body is None:
            self.send_error(404)
            return
        start = 0
        if self.headers.get("Range"):
            start = int(self.headers["Range"].split("=")[1].split("-")[0])
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        else:
            self.send_response(200)
        part = body[start:]
        self.send_header("Content-Length", str(len(part)))
        self.end_headers()
        if Bucket.cut_after is not None:
            self.wfile.write(part[: Bucket.cut_after])
            Bucket.cut_after = None
            self.wfile.flush()
            self.connection.close()
            return
        self.wfile.write(part)

    def log_message(self, *args: object) -> None:
        """Keep test output quiet."""


@pytest.fixture()
def bucket(fixture_data: Path) -> Iterator[str]:
    Bucket.files = {
        "/full/simplified/circle.ndjson": (fixture_data / "full" / "raw" / "circle.ndjson").read_bytes(),
        "/full/simplified/square.ndjson": (fixture_data / "full" / "raw" / "square.ndjson").read_bytes(),
        "/full/simplified/ice%20cream.ndjson": (fixture_data / "full" / "raw" / "line.ndjson").read_bytes(),
    }
    Bucket.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Bucket)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_download_into_the_official_layout(bucket: str, tmp_path: Path) -> None:
    paths = download(["circle", "square", "ice cream"], "simplified", tmp_path, bucket, progress=False)
    assert [p.relative_to(tmp_path).as_posix() for p in paths] == [
        "full/simplified/circle.ndjson",
        "full/simplified/square.ndjson",
        "full/simplified/ice cream.ndjson",
    ]
    assert paths[0].read_bytes() == Bucket.files["/full/simplified/circle.ndjson"]
    assert len(load_dataset(tmp_path)) == 72  # the readers take what was downloaded
    Bucket.requests.clear()
    download(["circle"], "simplified", tmp_path, bucket, progress=False)
    assert Bucket.requests == []  # complete files are not fetched again


def test_an_interrupted_download_resumes_with_a_range_request(bucket: str, tmp_path: Path) -> None:
    Bucket.cut_after = 1000
    with pytest.raises(DownloadError, match="run again to resume"):
        download(["circle"], "simplified", tmp_path, bucket, progress=False)
    part = tmp_path / "full" / "simplified" / "circle.ndjson.part"
    assert part.stat().st_size == 1000
    download(["circle"], "simplified", tmp_path, bucket, progress=False)
    assert Bucket.requests[-1] == ("/full/simplified/circle.ndjson", "bytes=1000-")
    final = tmp_path / "full" / "simplified" / "circle.ndjson"
    assert final.read_bytes() == Bucket.files["/full/simplified/circle.ndjson"] and not part.exists()


def test_download_errors_are_clear(bucket: str, tmp_path: Path) -> None:
    with pytest.raises(DownloadError, match="HTTP 404"):
        download(["dragon"], "simplified", tmp_path, bucket, progress=False)
    with pytest.raises(DownloadError, match="unknown format"):
        download(["cat"], "svg", tmp_path, bucket, progress=False)


def test_download_cli(bucket: str, tmp_path: Path) -> None:
    command = [
        sys.executable, "-m", "griffon.cli", "data", "download", "--categories", "circle,square",
        "--format", "simplified", "--data", str(tmp_path), "--base-url", bucket,
    ]
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=patient(120))
    assert done.returncode == 0, done.stderr
    assert "circle.ndjson" in done.stdout and (tmp_path / "full/simplified/square.ndjson").is_file()
    failed = subprocess.run(
        command[:6] + ["dragon"] + command[7:], capture_output=True, text=True, cwd=REPO, timeout=patient(120)
    )
    assert failed.returncode == 1 and "HTTP 404" in failed.stderr


def test_download_lands_where_training_looks(
    bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`griffon data download` then `griffon data prepare`, neither given --data nor $GRIFFON_DATA."""
    import typer
    from typer.testing import CliRunner

    from training import data
    from training.cli import register

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(data.DATA_ENV, raising=False)
    monkeypatch.setattr(data, "SHARED_DATA", tmp_path / "no-shared-folder")
    app = typer.Typer()
    register(app)
    got = CliRunner().invoke(app, ["data", "download", "--categories", "circle,square", "--base-url", bucket])
    assert got.exit_code == 0, got.output
    assert (tmp_path / "data" / "quickdraw" / "full" / "simplified" / "circle.ndjson").is_file()
    prepared = CliRunner().invoke(app, ["data", "prepare", "--out", str(tmp_path / "prepared")])
    assert prepared.exit_code == 0, prepared.output
    assert " 48 drawings → " in prepared.output  # 24 circles + 24 squares, from ./data/quickdraw


def test_an_unwritable_destination_is_a_clear_error(bucket: str, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(DownloadError, match="cannot write"):
        download(["circle"], "simplified", tmp_path / "file", bucket, progress=False)
