"""Resource resolution and download against a real HTTP server on 127.0.0.1: pinned checksums are
enforced, nothing half-written or unverified reaches the cache, and missing extras name the extra."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from bold_eval.core.resources import (
    MissingExtraError,
    RemoteFile,
    ResourceNotFoundError,
    download,
    require_extra,
    resolve_file,
)

CONTENT = b"word,valence\nhappy,8.47\n"
SHA256 = hashlib.sha256(CONTENT).hexdigest()


class _Server:
    """Serves `files` {path: bytes} and counts the requests; anything else is a 404."""

    def __init__(self, files: dict[str, bytes]):
        self.files = files
        self.requests: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                server.requests.append(self.path)
                body = server.files.get(self.path)
                self.send_response(200 if body is not None else 404)
                self.end_headers()
                self.wfile.write(body if body is not None else b"not found")

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def server(tmp_path, monkeypatch) -> Iterator[_Server]:
    """A local server, the network allowed (conftest turns offline mode on) and a fresh cache."""
    for variable in ("BOLD_EVAL_OFFLINE", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("BOLD_EVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    started = _Server({"/lexicon.csv": CONTENT})
    yield started
    started.stop()


def _remote(server: _Server, sha256: str | None = SHA256, name: str = "lexicon.csv") -> RemoteFile:
    return RemoteFile("test lexicon", name, f"{server.url}/{name}", sha256)


def test_download_verifies_and_caches_then_serves_from_the_cache(server, tmp_path):
    path = resolve_file(_remote(server), env_var="BOLD_TEST_LEXICON", argument="lexicon_dir", subdir="lexicons")
    assert path == tmp_path / "cache" / "lexicons" / "lexicon.csv" and path.read_bytes() == CONTENT
    assert server.requests == ["/lexicon.csv"]
    server.stop()  # the second lookup must not touch the network
    assert resolve_file(_remote(server), env_var="BOLD_TEST_LEXICON", argument="lexicon_dir", subdir="lexicons") == path


def test_checksum_mismatch_is_refused_and_nothing_is_cached(server, tmp_path):
    pinned = "0" * 64
    with pytest.raises(ResourceNotFoundError) as caught:
        resolve_file(_remote(server, sha256=pinned), env_var="BOLD_TEST_LEXICON", argument="lexicon_dir",
                     subdir="lexicons")
    message = str(caught.value)
    assert f"checksum {SHA256} != pinned {pinned}" in message and "test lexicon not found" in message
    assert "point to a local copy" in message
    cache = tmp_path / "cache"
    assert not cache.exists() or not [p for p in cache.rglob("*") if p.is_file()]  # no file, no temporary


def test_download_alone_refuses_a_mismatch_without_writing(server, tmp_path):
    destination = tmp_path / "out" / "lexicon.csv"
    with pytest.raises(ResourceNotFoundError, match="checksum"):
        download(_remote(server, sha256="f" * 64), destination, timeout=5)
    assert not destination.parent.exists()
    assert download(_remote(server), destination, timeout=5).read_bytes() == CONTENT


def test_a_corrupted_cache_file_is_downloaded_again(server, tmp_path):
    cached = tmp_path / "cache" / "lexicons" / "lexicon.csv"
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"truncated")
    path = resolve_file(_remote(server), env_var="BOLD_TEST_LEXICON", argument="lexicon_dir", subdir="lexicons")
    assert path == cached and cached.read_bytes() == CONTENT and server.requests == ["/lexicon.csv"]


def test_http_error_names_the_url_and_the_variable(server):
    with pytest.raises(ResourceNotFoundError) as caught:
        resolve_file(_remote(server, name="missing.csv"), env_var="BOLD_TEST_LEXICON", argument="lexicon_dir")
    message = str(caught.value)
    assert f"{server.url}/missing.csv (download failed: HTTP Error 404" in message
    assert "Set BOLD_TEST_LEXICON to a local copy" in message and "lexicon_dir=PATH" in message


def test_local_copy_wins_and_offline_never_downloads(tmp_path, monkeypatch):
    monkeypatch.setenv("BOLD_EVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("BOLD_EVAL_OFFLINE", "1")
    local = tmp_path / "mine"
    local.mkdir()
    (local / "lexicon.csv").write_bytes(b"my own version")
    remote = RemoteFile("test lexicon", "lexicon.csv", "http://127.0.0.1:9/lexicon.csv", SHA256)
    assert resolve_file(remote, local=local, env_var="BOLD_TEST_LEXICON",
                        argument="lexicon_dir") == local / "lexicon.csv"
    with pytest.raises(ResourceNotFoundError, match="not tried: offline mode is on"):
        resolve_file(remote, env_var="BOLD_TEST_LEXICON", argument="lexicon_dir")


def test_missing_extra_names_the_extra_to_install():
    with pytest.raises(MissingExtraError) as caught:
        require_extra("bold_eval_no_such_package.models", extra="embeddings", purpose="Gender-Max and Gender-Wavg")
    message = str(caught.value)
    assert "pip install 'bold-eval[embeddings]'" in message and "Gender-Max and Gender-Wavg" in message
    assert isinstance(caught.value, ResourceNotFoundError)  # the harness skips or falls back, as for a missing file
    assert require_extra("json", extra="none", purpose="stdlib").dumps([1]) == "[1]"

