"""One HTTP POST to an OpenAI-compatible server, retried until it succeeds or clearly fails.

Servers under load answer 429 (rate limit) or 5xx, drop connections when they restart, and time
out when overloaded; a 23,679-prompt BOLD run meets all of these. A request is retried on 408,
409, 425, 429, every 5xx, timeouts, dropped or refused connections and 200 answers that are not
the JSON the API promises, with exponential backoff and jitter (so that N clients do not retry in
lock-step), honouring `Retry-After` / `retry-after-ms`. Other 4xx answers (bad key, unknown model,
rejected parameter) cannot get better by waiting and fail at once. After `max_attempts` the error
names the prompt, the URL and the last answer.

The API key is read from an environment variable (`OPENAI_API_KEY`, or the one named by
`--api-key-env`), sent only in the Authorization header, and redacted from every message this
module produces: servers echo keys in error bodies ("Incorrect API key provided: sk-...").
"""

from __future__ import annotations

import email.utils
import json
import os
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from bold_eval.core.errors import UsageError, UserError
from bold_eval.core.options import DEFAULT_API_KEY_ENV

RETRY_STATUSES = frozenset({408, 409, 425, 429})  # and every 5xx
BODY_EXCERPT_CHARS = 500
REDACTED = "[redacted]"


class ApiError(UserError, RuntimeError):
    """A request failed for good (retries exhausted, or an answer that waiting cannot fix).

    A `UserError`: the server, URL or key is what to fix, so `bold-eval` prints the message alone."""

    def __init__(self, message: str, *, status: int | None = None, body: str | None = None,
                 attempts: int = 0, retryable: bool = False):
        super().__init__(message)
        self.status = status
        self.body = body
        self.attempts = attempts
        self.retryable = retryable


class ApiStopped(RuntimeError):
    """The generation was stopped (another request failed, or Ctrl-C) while this one waited to retry."""


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries: `max_attempts` tries in all, waits doubling from `backoff_base_s` up to
    `backoff_max_s` with "equal jitter" (half fixed, half random); a server's Retry-After wins
    when it asks for longer, up to `retry_after_max_s`."""

    max_attempts: int = 8
    backoff_base_s: float = 1.0
    backoff_max_s: float = 60.0
    retry_after_max_s: float = 300.0
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 300.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {self.max_attempts}")
        if self.backoff_base_s < 0 or self.backoff_max_s < 0:
            raise ValueError("backoff times must be >= 0")
        if self.connect_timeout_s <= 0 or self.read_timeout_s <= 0:
            raise ValueError("timeouts must be > 0")

    def delay(self, failed_attempt: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait after the `failed_attempt`-th try (1-based)."""
        backoff = min(self.backoff_max_s, self.backoff_base_s * 2 ** (failed_attempt - 1))
        jittered = backoff * (0.5 + 0.5 * rng.random())
        if retry_after is not None:
            return max(jittered, min(retry_after, self.retry_after_max_s))
        return jittered


def parse_retry_after(headers: Any, now: float | None = None) -> float | None:
    """Seconds the server asked us to wait: `retry-after-ms`, or `Retry-After` as seconds or an HTTP date."""
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return max(0.0, float(value) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def redact(text: str, secret: str | None) -> str:
    """`text` with every occurrence of `secret` replaced (keys must never reach logs or errors)."""
    if secret and len(secret) >= 4:
        return text.replace(secret, REDACTED)
    return text


def public_url(url: str) -> str:
    """`url` without user:password@ (a URL may carry credentials too)."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


def normalize_base_url(base_url: str) -> str:
    """`http://host:8000/v1` as given; a bare `http://host:8000` gets the usual `/v1`.

    Raises a `UsageError` (a ValueError) for what cannot be a server address (names --base-url).
    """
    url = (base_url or "").strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(f"--base-url {public_url(url)!r} is not an http(s) URL; "
                         "expected e.g. http://localhost:8000/v1 (vLLM, TGI, llama.cpp, transformers serve)")
    path = parts.path.rstrip("/")
    for endpoint in ("/chat/completions", "/completions"):
        if path.endswith(endpoint):
            root = public_url(urlunsplit((parts.scheme, parts.netloc, path[: -len(endpoint)], "", "")))
            raise UsageError(f"--base-url {public_url(url)!r} names an endpoint; pass the API root instead, "
                             f"e.g. {root}")
    if not path:
        path = "/v1"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def read_api_key(env_name: str | None, *, required: bool) -> str | None:
    """The key from `$env_name`; None when unset and not `required` (local servers need none)."""
    name = env_name or DEFAULT_API_KEY_ENV
    if not name.replace("_", "").isalnum():
        raise ValueError(f"--api-key-env {name!r} is not an environment variable name")
    key = os.environ.get(name)
    if key:
        return key.strip()
    if required:
        raise ValueError(f"--api-key-env {name}: the environment variable {name} is not set; "
                         f"export it with the server's API key (`export {name}=...`)")
    return None


class ApiClient:
    """POST JSON with retries; one `requests.Session` (kept-alive connection) per thread."""

    def __init__(self, base_url: str, *, api_key: str | None, api_key_env: str, policy: RetryPolicy | None = None,
                 stop: threading.Event | None = None, seed: int | None = None):
        self.base_url = normalize_base_url(base_url)
        self._api_key = api_key
        self.api_key_env = api_key_env
        self.policy = policy or RetryPolicy()
        self.stop = stop or threading.Event()
        self._local = threading.local()
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self.requests_sent = 0
        self.retries: Counter[str] = Counter()

    def __repr__(self) -> str:  # never the key
        return f"ApiClient(base_url={public_url(self.base_url)!r}, api_key_env={self.api_key_env!r})"

    def url(self, endpoint: str) -> str:
        return f"{self.base_url}/{endpoint.lstrip('/')}"

    def _session(self) -> Any:
        session = getattr(self._local, "session", None)
        if session is None:
            import requests
            from requests.adapters import HTTPAdapter

            session = requests.Session()
            adapter = HTTPAdapter(pool_connections=1, pool_maxsize=1, max_retries=0)
            session.mount("http://", adapter)
            session.mount("https://", adapter)
            session.headers["Content-Type"] = "application/json"
            if self._api_key:
                session.headers["Authorization"] = f"Bearer {self._api_key}"
            self._local.session = session
        return session

    def _reset_session(self) -> None:
        session = getattr(self._local, "session", None)
        if session is not None:
            session.close()
            self._local.session = None

    def _count(self, reason: str) -> None:
        with self._lock:
            self.retries[reason] += 1

    def retry_count(self) -> int:
        with self._lock:
            return sum(self.retries.values())

    def retry_counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self.retries)

    def _jitter_rng(self) -> random.Random:
        with self._lock:  # random.Random is not safe to share across threads without a lock
            return random.Random(self._rng.random())

    def _excerpt(self, text: str) -> str:
        text = redact(text, self._api_key).strip()
        return text if len(text) <= BODY_EXCERPT_CHARS else text[:BODY_EXCERPT_CHARS] + "..."

    def post(self, endpoint: str, payload: dict[str, Any], *, what: str) -> dict[str, Any]:
        """POST `payload` to `endpoint` and return the JSON answer; `what` names the request in errors."""
        import requests

        url = self.url(endpoint)
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        rng = self._jitter_rng()
        last = "no answer"
        status: int | None = None
        excerpt: str | None = None
        for attempt in range(1, self.policy.max_attempts + 1):
            if self.stop.is_set():
                raise ApiStopped(f"{what}: stopped before attempt {attempt}")
            retry_after = None
            with self._lock:
                self.requests_sent += 1
            try:
                response = self._session().post(url, data=body, timeout=(self.policy.connect_timeout_s,
                                                                          self.policy.read_timeout_s))
                status, text = response.status_code, response.text
            except requests.Timeout as error:
                status, excerpt, reason = None, None, "timeout"
                last = f"timed out ({type(error).__name__}; read timeout {self.policy.read_timeout_s:g} s)"
            except (requests.ConnectionError, requests.exceptions.ChunkedEncodingError) as error:
                status, excerpt, reason = None, None, "connection"
                last = f"connection failed or dropped ({type(error).__name__}: {self._excerpt(str(error))})"
                self._reset_session()  # a fresh connection for the next try
            else:
                excerpt = self._excerpt(text)
                if 200 <= status < 300:
                    try:
                        data = json.loads(text)
                    except json.JSONDecodeError:
                        data = None
                    if isinstance(data, dict) and "error" not in data:
                        return data
                    reason, last = "bad_answer", f"HTTP {status} but not an API answer: {excerpt!r}"
                elif status in RETRY_STATUSES or status >= 500:
                    reason, last = str(status), f"HTTP {status}: {excerpt!r}"
                    retry_after = parse_retry_after(response.headers)
                else:
                    raise ApiError(self._final_message(what, url, attempt, f"HTTP {status}: {excerpt!r}", status),
                                   status=status, body=excerpt, attempts=attempt)
            if attempt == self.policy.max_attempts:
                break
            self._count(reason)
            if self.stop.wait(self.policy.delay(attempt, retry_after, rng)):
                raise ApiStopped(f"{what}: stopped while waiting to retry ({last})")
        raise ApiError(self._final_message(what, url, self.policy.max_attempts, last, status),
                       status=status, body=excerpt, attempts=self.policy.max_attempts, retryable=True)

    def _final_message(self, what: str, url: str, attempts: int, last: str, status: int | None) -> str:
        tries = "1 attempt" if attempts == 1 else f"{attempts} attempts"
        message = f"{what} failed after {tries} (POST {public_url(url)}); last answer: {last}"
        if status in (401, 403):
            if self._api_key:
                message += (f". The server refused the API key read from ${self.api_key_env}; set the right key "
                            f"there, or name another variable with --api-key-env NAME")
            else:
                message += (f". No API key was sent: ${self.api_key_env} is not set (export it, or name "
                            "another variable with --api-key-env NAME)")
        elif status == 404:
            message += (". Check --base-url (the API root, usually ending in /v1, e.g. http://localhost:8000/v1), "
                        "that the server offers this endpoint (use --api chat for chat-only servers), and --model")
        elif status is None and "connection" in last:
            message += f". Is the server running at {public_url(self.base_url)}? Check --base-url"
        return message
