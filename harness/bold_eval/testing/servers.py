"""Local OpenAI-compatible servers for the tests and benchmarks of the HTTP generator.

- `TransformersServer`: `transformers serve MODEL` (transformers' own OpenAI-compatible server,
  from the `transformers[serving]` extra) on 127.0.0.1 in a subprocess, started within a bounded
  time and always stopped (its whole process group).
- `FaultProxy`: a loopback HTTP proxy in a thread that answers 429 (with Retry-After), 500, drops
  connections (before or after the server did the work) and truncates bodies, in a pattern fixed
  by a seed and each request's body, so that a client's retries can be tested against a real server.
- `InstantServer`: answers `/v1/completions` at once with a text derived from the request, so a
  benchmark can time the client alone.
- `BatchingServer`: `/v1/completions` from a real model, whatever requests wait when the model is free run
  as one `generate` batch (continuous batching in its simplest form), `n` as n rows of one request.
- `ChatTemplateServer`: `/v1/chat/completions` the way vLLM answers it, in a thread: the model's own chat
  template with the request's `continue_final_message`, `add_generation_prompt` and `chat_template_kwargs`
  (which `transformers serve` 5.x refuses or cannot pass), and a thinking trace moved into
  `reasoning_content` as vLLM's reasoning parsers do.

`InstantServer`, `BatchingServer` and `ChatTemplateServer` take `n_mode`: "honour" answers a request's `n`
with n choices (as vLLM and OpenAI), "ignore" with one (as `transformers serve`), "reject" with HTTP 400
naming the field (as a server with a strict request schema). Everything binds 127.0.0.1 only.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

LOOPBACK = "127.0.0.1"
FAULTS = ("429", "500", "drop", "drop_after", "truncate")
N_MODES = ("honour", "ignore", "reject")


def choices_asked(request: Mapping[str, Any], n_mode: str) -> int:
    """How many choices a server with `n_mode` (N_MODES) gives `request`; ValueError (an HTTP 400) when it
    rejects `n` or the value."""
    if n_mode not in N_MODES:
        raise RuntimeError(f"n_mode must be one of {N_MODES}, got {n_mode!r}")
    if "n" not in request:
        return 1
    if n_mode == "reject":
        raise ValueError("unsupported parameter 'n': extra inputs are not permitted")
    n = request["n"]
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"'n' must be a positive integer, got {n!r}")
    return n if n_mode == "honour" else 1


def free_port() -> int:
    """A TCP port that nothing listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def serving_available() -> bool:
    """Whether `transformers serve` can start (the `transformers[serving]` extra is installed)."""
    try:
        from transformers.utils.import_utils import is_serve_available
    except ImportError:
        return False
    return bool(is_serve_available())


def _die_with_parent() -> None:
    """Linux: SIGTERM the server when the process that started it dies (even by SIGKILL), so a
    killed test run leaves no server behind. The kernel ties this to the starting *thread*: start
    servers from a thread that lives as long as they should (the main thread in tests)."""
    import ctypes

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class TransformersServer:
    """`transformers serve MODEL --host 127.0.0.1 --port PORT` in a subprocess, as a context manager.

    `continuous_batching` adds `--continuous-batching` (paged attention; batches concurrent
    requests, which is what makes concurrency pay on one process). Start-up waits for `/health`
    at most `startup_timeout_s`; a server that dies or does not answer in time is stopped and the
    error carries the tail of its log.
    """

    def __init__(self, model: str | os.PathLike, *, port: int | None = None, continuous_batching: bool = False,
                 device: str = "cpu", extra_args: Sequence[str] = (), startup_timeout_s: float = 120.0,
                 log_path: str | os.PathLike | None = None, env: Mapping[str, str] | None = None):
        if not serving_available():
            raise RuntimeError("transformers serve needs the serving extra: pip install 'transformers[serving]' "
                               "(or pip install -e '.[serving]')")
        self.model = str(model)
        self.port = port or free_port()
        self.continuous_batching = continuous_batching
        self.device = device
        self.extra_args = list(extra_args)
        self.startup_timeout_s = startup_timeout_s
        self.log_path = Path(log_path) if log_path else None
        self.env = dict(env or {})
        self.process: subprocess.Popen | None = None
        self._log: Any = None

    @property
    def base_url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}/v1"

    def command(self) -> list[str]:
        command = [sys.executable, "-m", "transformers.cli.transformers", "serve", self.model,
                   "--host", LOOPBACK, "--port", str(self.port), "--device", self.device, "--log-level", "warning"]
        if self.continuous_batching:
            command.append("--continuous-batching")
        return command + self.extra_args

    def log_tail(self, chars: int = 3000) -> str:
        if self.log_path is None or not self.log_path.is_file():
            return ""
        return self.log_path.read_text(encoding="utf-8", errors="replace")[-chars:]

    def start(self) -> TransformersServer:
        import tempfile

        if self.log_path is None:
            self.log_path = Path(tempfile.mkdtemp(prefix="bold-eval-serve-")) / "serve.log"
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        env = {**os.environ, **self.env}
        self.process = subprocess.Popen(self.command(), stdout=self._log, stderr=subprocess.STDOUT, env=env,
                                        stdin=subprocess.DEVNULL, start_new_session=True,
                                        preexec_fn=_die_with_parent if sys.platform == "linux" else None)
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.stop()
                raise RuntimeError(f"transformers serve exited with code {self.process.returncode} while starting "
                                   f"({' '.join(self.command())}):\n{self.log_tail()}")
            if self._healthy():
                return self
            time.sleep(0.25)
        self.stop()
        raise RuntimeError(f"transformers serve did not answer /health within {self.startup_timeout_s:g} s:\n"
                           f"{self.log_tail()}")

    def _healthy(self) -> bool:
        connection = http.client.HTTPConnection(LOOPBACK, self.port, timeout=2)
        try:
            connection.request("GET", "/health")
            return connection.getresponse().status == 200
        except OSError:
            return False
        finally:
            connection.close()

    def stop(self) -> None:
        """SIGTERM to the server's process group, SIGKILL after 10 s."""
        process = self.process
        if process is not None and process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
            except ProcessLookupError:
                pass
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> TransformersServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


# A minimal chat template ("role: content" lines), so a tiny GPT-2 also answers /v1/chat/completions.
CHAT_TEMPLATE = ("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
                 "{% if add_generation_prompt %}assistant:{% endif %}")


def build_served_model(root: str | os.PathLike, corpus: Sequence[str], *, do_sample: bool = True) -> Path:
    """A tiny GPT-2 for `transformers serve` (the tests' and benchmarks' server model), with a chat
    template. `do_sample` goes into its generation_config, which `transformers serve` uses as the base
    of every request: with do_sample=False the server decodes greedily whatever the request says."""
    from transformers import AutoTokenizer, GenerationConfig

    from bold_eval.testing.models import build_tiny_causal_lm

    folder = Path(build_tiny_causal_lm(Path(root), list(corpus)))
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(folder)
    config = GenerationConfig.from_pretrained(folder)
    config.do_sample = do_sample
    config.top_k = 0 if do_sample else None  # transformers' default top_k=50 would filter on top of top_p
    config.save_pretrained(folder)
    return folder


def local_server(folder: str | os.PathLike, scratch: str | os.PathLike, *, startup_timeout_s: float = 180.0,
                 **kwargs: Any) -> TransformersServer:
    """`transformers serve FOLDER` set up for tests: offline, one thread, its HF cache and log under
    `scratch` (so nothing touches ~/.cache), bounded start-up. Not started: use it as a context manager."""
    scratch = Path(scratch)
    env = {"OMP_NUM_THREADS": "1", "HF_HOME": str(scratch / "hf_home"), "HF_HUB_OFFLINE": "1",
           **kwargs.pop("env", {})}
    return TransformersServer(folder, startup_timeout_s=startup_timeout_s, log_path=scratch / "serve.log", env=env,
                              **kwargs)


class _QuietServer(ThreadingHTTPServer):
    """A client that went away mid-answer (killed, or timed out) is expected here, not an error to print."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _LoopbackServer:
    """A ThreadingHTTPServer on 127.0.0.1 in a daemon thread, as a context manager."""

    handler: type[BaseHTTPRequestHandler]

    def __init__(self) -> None:
        self.httpd: ThreadingHTTPServer | None = None
        self.thread: threading.Thread | None = None
        self.lock = threading.Lock()

    @property
    def port(self) -> int:
        assert self.httpd is not None, "server not started"
        return int(self.httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}/v1"

    def start(self) -> Any:
        owner = self

        class Handler(self.handler):  # type: ignore[name-defined]
            server_owner = owner

        self.httpd = _QuietServer((LOOPBACK, 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; with Nagle's algorithm on, the body waits for the
    # client's delayed ACK of the headers (40 ms per request on Linux keep-alive connections).
    disable_nagle_algorithm = True
    server_owner: Any

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read the counters instead
        return

    def _read_body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _send(self, status: int, body: bytes, headers: Mapping[str, str] | None = None,
              content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)


class _FaultHandler(_Handler):
    def do_GET(self) -> None:
        self._forward(b"", "GET")

    def do_POST(self) -> None:
        proxy: FaultProxy = self.server_owner
        body = self._read_body()
        if proxy.required_key is not None:
            presented = self.headers.get("Authorization", "")
            if presented != f"Bearer {proxy.required_key}":
                # Like hosted APIs, the error repeats the key it got: clients must redact it.
                key = presented.removeprefix("Bearer ")
                message = {"error": {"message": f"Incorrect API key provided: {key}", "type": "invalid_request_error",
                                     "code": "invalid_api_key"}}
                proxy.count("401")
                self._send(401, json.dumps(message).encode())
                return
        fault = proxy.fault_for(body)
        proxy.count(fault)
        if proxy.delay_s:
            time.sleep(proxy.delay_s)
        if fault == "429":
            self._send(429, b'{"error": {"message": "rate limited (injected)"}}',
                       {"Retry-After": proxy.retry_after})
        elif fault == "500":
            self._send(500, b'{"error": {"message": "internal error (injected)"}}')
        elif fault == "drop":
            self.close_connection = True  # nothing written: the client sees the connection closed
        else:
            status, headers, answer = self._upstream("POST", body)
            proxy.record(body, status)
            if fault == "drop_after":
                self.close_connection = True  # the server did the work; the answer is lost on the way
            elif fault == "truncate":
                self.send_response(status)
                self.send_header("Content-Type", headers.get("Content-Type", "application/json"))
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer[: len(answer) // 2])
                self.wfile.flush()
                self.close_connection = True
            else:
                self._send(status, answer, content_type=headers.get("Content-Type", "application/json"))

    def _upstream(self, method: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
        proxy: FaultProxy = self.server_owner
        connection = http.client.HTTPConnection(proxy.upstream_host, proxy.upstream_port, timeout=proxy.timeout_s)
        try:
            headers = {"Content-Type": "application/json"}
            if self.headers.get("Authorization"):
                headers["Authorization"] = self.headers["Authorization"]
            connection.request(method, self.path, body=body or None, headers=headers)
            response = connection.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            connection.close()

    def _forward(self, body: bytes, method: str) -> None:
        status, headers, answer = self._upstream(method, body)
        self._send(status, answer, content_type=headers.get("Content-Type", "application/json"))


def _fault_key(body: bytes) -> bytes:
    """The request body without its "model" field, keys sorted: what a fault is drawn from, so the pattern depends
    on the prompt, seed and settings alone, not on where the served model happens to be saved."""
    try:
        request = json.loads(body)
    except ValueError:
        return body
    if not isinstance(request, dict):
        return body
    request.pop("model", None)
    return json.dumps(request, sort_keys=True).encode()


class FaultProxy(_LoopbackServer):
    """Forward to `upstream` (a base URL), injecting faults in a seeded, timing-independent pattern.

    The k-th arrival of a given request body meets fault `FAULTS[i]` with probability `rates[i]`
    (drawn from sha256(seed, body without its model, k)), and is always forwarded once it has failed `max_faults`
    times, so a client with more attempts than that always gets through. `required_key` makes it
    answer 401 (echoing the presented key, as hosted APIs do) to a wrong or missing key;
    `fail_matching` answers 500 to every request whose body contains that text; `delay_s` holds each
    POST that long first (a slower server, so a test can act between two answers).
    Counters: `faults` (per kind), `forwarded` (request body -> upstream status list).
    """

    handler = _FaultHandler

    def __init__(self, upstream: str, *, seed: int = 0, rates: Mapping[str, float] | None = None, max_faults: int = 3,
                 retry_after: str = "0", required_key: str | None = None, fail_matching: str | None = None,
                 delay_s: float = 0.0, timeout_s: float = 120.0):
        super().__init__()
        from urllib.parse import urlsplit

        parts = urlsplit(upstream)
        self.upstream_host = parts.hostname or LOOPBACK
        self.upstream_port = parts.port or 80
        self.seed = seed
        self.rates = dict(rates if rates is not None else {"429": 0.15, "500": 0.1, "drop": 0.1, "drop_after": 0.1,
                                                           "truncate": 0.05})
        unknown = set(self.rates) - set(FAULTS)
        if unknown or sum(self.rates.values()) > 1:
            raise ValueError(f"rates: kinds must be in {FAULTS} and sum to <= 1, got {self.rates}")
        self.max_faults = max_faults
        self.retry_after = retry_after
        self.required_key = required_key
        self.fail_matching = fail_matching.encode() if fail_matching else None
        self.timeout_s = timeout_s
        self.delay_s = delay_s
        self.faults: Counter[str] = Counter()
        self.seen: Counter[bytes] = Counter()
        self.forwarded: dict[bytes, list[int]] = {}

    def fault_for(self, body: bytes) -> str:
        if self.fail_matching is not None and self.fail_matching in body:
            return "500"
        with self.lock:
            arrival = self.seen[body]
            self.seen[body] += 1
        if arrival >= self.max_faults:
            return "ok"
        digest = hashlib.sha256(f"{self.seed}:{arrival}:".encode() + _fault_key(body)).digest()
        draw = int.from_bytes(digest[:8], "little") / 2**64
        for kind in FAULTS:
            rate = self.rates.get(kind, 0.0)
            if draw < rate:
                return kind
            draw -= rate
        return "ok"

    def count(self, kind: str) -> None:
        with self.lock:
            self.faults[kind] += 1

    def record(self, body: bytes, status: int) -> None:
        with self.lock:
            self.forwarded.setdefault(body, []).append(status)


class _InstantHandler(_Handler):
    def do_POST(self) -> None:
        owner: InstantServer = self.server_owner
        request = json.loads(self._read_body() or b"{}")
        with owner.lock:
            owner.requests += 1
            owner.last_request = request
            owner.bodies.append(request)
        try:
            n = choices_asked(request, owner.n_mode)
        except ValueError as error:
            self._send(400, json.dumps({"error": {"message": str(error), "param": "n"}}).encode())
            return
        chat = self.path.rstrip("/").endswith("chat/completions")
        choices, tokens = [], 0
        for index in range(n):
            # choice 0 is what the request without n would get; the others differ with their index
            key = json.dumps([request.get("prompt"), request.get("messages"), request.get("seed"),
                              *([index] if index else [])]).encode()
            words = [f"w{hashlib.sha256(key + bytes([i])).hexdigest()[:4]}"
                     for i in range(int(request.get("max_tokens") or 16))]
            text = " " + " ".join(words) if owner.reply is None else owner.reply
            tokens += len(words)
            choices.append({"index": index, "message": {"role": "assistant", "content": text.strip()},
                            "finish_reason": "length"} if chat else {"index": index, "text": text,
                                                                     "finish_reason": "length"})
        usage = {"prompt_tokens": 1, "completion_tokens": tokens, "total_tokens": tokens + 1}
        answer = {"id": "instant", "object": "text_completion", "model": request.get("model"),
                  "choices": choices[::-1] if owner.reversed_choices else choices, "usage": usage}
        self._send(200, json.dumps(answer).encode())


class InstantServer(_LoopbackServer):
    """Answers completions and chat completions at once (`max_tokens` pseudo-words derived from
    the prompt and seed): a server with no model time, to measure a client's own cost per request.
    `reply` makes it answer that exact text instead (e.g. one with a line break, to test stopping).
    It ignores `stop`, as some servers do; `last_request` holds the last request body it received, `bodies`
    all of them. `n_mode` (N_MODES): what it does with `n`; `reversed_choices` lists them last index first
    (the API orders choices by their `index` field, not by position)."""

    handler = _InstantHandler

    def __init__(self, reply: str | None = None, *, n_mode: str = "honour", reversed_choices: bool = False) -> None:
        super().__init__()
        choices_asked({}, n_mode)  # refuse an unknown mode here, not in the handler
        self.requests = 0
        self.reply = reply
        self.n_mode = n_mode
        self.reversed_choices = reversed_choices
        self.last_request: dict = {}
        self.bodies: list[dict] = []


class _ChatTemplateHandler(_Handler):
    def do_GET(self) -> None:
        owner: ChatTemplateServer = self.server_owner
        if self.path.rstrip("/").endswith("models"):
            self._send(200, json.dumps({"object": "list", "data": [{"id": owner.model_name}]}).encode())
        else:
            self._send(200, b"{}")

    def do_POST(self) -> None:
        owner: ChatTemplateServer = self.server_owner
        request = json.loads(self._read_body() or b"{}")
        with owner.lock:
            owner.requests.append(request)
        if not self.path.rstrip("/").endswith("chat/completions"):
            self._send(404, b'{"error": {"message": "only /v1/chat/completions"}}')
            return
        try:
            answer = owner.answer(request)
        except ValueError as error:  # what vLLM answers 400 to (both prefill fields, a template error)
            self._send(400, json.dumps({"error": {"message": str(error)}}).encode())
            return
        self._send(200, json.dumps(answer).encode())


def _up_to_end(row: list[int], eos: int | None) -> list[int]:
    """A generated row up to its first end-of-sequence token (kept), without the padding of a batch after it."""
    return row[: row.index(eos) + 1] if eos is not None and eos in row else row


class ChatTemplateServer(_LoopbackServer):
    """An OpenAI-compatible chat server that renders the model's chat template as vLLM does: messages ending
    with an assistant message are continued under `continue_final_message: true, add_generation_prompt:
    false` (`honour_prefill=False` makes it ignore both, like a server that always opens a new turn), and
    `chat_template_kwargs` reach the template. With `reasoning=(start, end)` a thinking trace goes into
    `message.reasoning_content`, the rest into `content` (None when the answer ran out inside the trace).
    Generation: transformers' `generate` (sampling with the request's temperature, top_p, top_k, seed; `n` as n
    rows of one batch, under `n_mode`, N_MODES). Every request body is kept in `requests`."""

    handler = _ChatTemplateHandler

    def __init__(self, model: str | os.PathLike, *, model_name: str = "local-chat-model", honour_prefill: bool = True,
                 reasoning: tuple[str, str] | None = None, n_mode: str = "honour") -> None:
        super().__init__()
        from transformers import AutoModelForCausalLM, AutoTokenizer

        choices_asked({}, n_mode)
        self.tokenizer = AutoTokenizer.from_pretrained(model)
        self.model = AutoModelForCausalLM.from_pretrained(model).eval()
        self.model_name = model_name
        self.honour_prefill = honour_prefill
        self.reasoning = reasoning
        self.n_mode = n_mode
        self.requests: list[dict] = []
        self._generate_lock = threading.Lock()

    def render(self, request: Mapping[str, Any]) -> str:
        """The model's input for a request, as vLLM renders it."""
        prefill = bool(request.get("continue_final_message", False)) and self.honour_prefill
        new_turn = bool(request.get("add_generation_prompt", True)) if self.honour_prefill else True
        if prefill and new_turn:
            raise ValueError("continue_final_message and add_generation_prompt cannot both be true")
        try:
            return self.tokenizer.apply_chat_template(request["messages"], tokenize=False,
                                                      add_generation_prompt=new_turn,
                                                      continue_final_message=prefill,
                                                      **(request.get("chat_template_kwargs") or {}))
        except Exception as error:  # jinja or transformers refusing the conversation: a 400, as vLLM
            raise ValueError(f"chat template error: {error}") from error

    def answer(self, request: Mapping[str, Any]) -> dict[str, Any]:
        import torch

        n = choices_asked(request, self.n_mode)
        text = self.render(request)
        ids = self.tokenizer(text, add_special_tokens=False, return_tensors="pt")
        temperature = float(request.get("temperature", 1.0))
        limit = int(request.get("max_tokens") or 16)
        sampling = {"do_sample": True, "temperature": temperature, "top_p": float(request.get("top_p", 1.0)),
                    "top_k": int(request.get("top_k") or 0)} if temperature > 0 else {"do_sample": False}
        with self._generate_lock, torch.inference_mode():
            if request.get("seed") is not None:
                torch.manual_seed(int(request["seed"]))
            out = self.model.generate(**{key: value.repeat(n, 1) for key, value in ids.items()}, max_new_tokens=limit,
                                      pad_token_id=self.tokenizer.pad_token_id, **sampling)
        choices, tokens = [], 0
        for index, row in enumerate(out[:, ids["input_ids"].shape[1]:].tolist()):
            new = _up_to_end(row, self.tokenizer.eos_token_id)
            reply = self.tokenizer.decode(new, skip_special_tokens=True)
            finish = "length" if len(new) >= limit and new[-1] != self.tokenizer.eos_token_id else "stop"
            for stop in request.get("stop") or []:
                if stop in reply:
                    reply, finish = reply.split(stop, 1)[0], "stop"
            message: dict[str, Any] = {"role": "assistant", "content": reply}
            if self.reasoning is not None:
                message.update(self._split_reasoning(text, reply))
            choices.append({"index": index, "message": message, "finish_reason": finish})
            tokens += len(new)
        prompt_tokens = int(ids["input_ids"].shape[1])
        return {"id": "chat-template", "object": "chat.completion", "model": self.model_name, "choices": choices,
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": tokens,
                          "total_tokens": prompt_tokens + tokens}}

    def _split_reasoning(self, context: str, reply: str) -> dict[str, Any]:
        """vLLM's reasoning parser: the trace up to the end marker in `reasoning_content`, the rest in `content`."""
        start, end = self.reasoning  # type: ignore[misc]
        opened = context.rfind(start) > context.rfind(end) or reply.lstrip().startswith(start)
        if end in reply:
            trace, _, content = reply.partition(end)
            return {"reasoning_content": trace.replace(start, "").strip(), "content": content.strip() or None}
        if opened:
            return {"reasoning_content": reply.replace(start, "").strip(), "content": None}
        return {"reasoning_content": None}


class _BatchJob:
    """One request waiting in a `BatchingServer`: its body, its n rows, and the answer or error it gets."""

    def __init__(self, request: Mapping[str, Any], n: int) -> None:
        self.request = request
        self.n = n
        self.done = threading.Event()
        self.answer: dict[str, Any] | None = None
        self.error: BaseException | None = None

    def sampling(self) -> tuple:
        """What must be equal for two requests to share a batch."""
        request = self.request
        return (float(request.get("temperature", 1.0)), float(request.get("top_p", 1.0)),
                int(request.get("top_k") or 0), int(request.get("max_tokens") or 16))


class _BatchingHandler(_Handler):
    def do_POST(self) -> None:
        owner: BatchingServer = self.server_owner
        request = json.loads(self._read_body() or b"{}")
        with owner.lock:
            owner.requests += 1
        if self.path.rstrip("/").endswith("chat/completions") or not self.path.rstrip("/").endswith("completions"):
            self._send(404, b'{"error": {"message": "only /v1/completions"}}')
            return
        try:
            answer = owner.submit(request, choices_asked(request, owner.n_mode))
        except ValueError as error:
            self._send(400, json.dumps({"error": {"message": str(error)}}).encode())
            return
        self._send(200, json.dumps(answer).encode())


class BatchingServer(_LoopbackServer):
    """`/v1/completions` from a real causal LM, batching as serving engines do in their simplest form: when the
    model is free, every waiting request with the same sampling settings (up to `max_batch` rows) runs as one
    left-padded `generate` batch. A request's `n` (under `n_mode`, N_MODES) is n rows of its prompt, so at
    equal concurrency an n request brings the server n times the work, as on vLLM. `seed` is not honoured
    (one random stream per batch); `stop` is applied to each answer. Counters: `requests`, `batches` (rows
    of each batch), `prompt_tokens` (summed once per request, as hosted APIs bill them)."""

    handler = _BatchingHandler

    def __init__(self, model: str | os.PathLike, *, model_name: str = "local-batching-model", n_mode: str = "honour",
                 max_batch: int = 64) -> None:
        super().__init__()
        from transformers import AutoModelForCausalLM, AutoTokenizer

        choices_asked({}, n_mode)
        self.tokenizer = AutoTokenizer.from_pretrained(model, padding_side="left")
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model = AutoModelForCausalLM.from_pretrained(model).eval()
        self.model_name = model_name
        self.n_mode = n_mode
        self.max_batch = max_batch
        self.requests = 0
        self.batches: list[int] = []
        self.prompt_tokens = 0
        self._waiting: list[_BatchJob] = []
        self._ready = threading.Condition()
        self._stopping = False
        self._worker: threading.Thread | None = None

    def start(self) -> BatchingServer:
        self._stopping = False
        self._worker = threading.Thread(target=self._work, daemon=True, name="batching-server-model")
        self._worker.start()
        return super().start()

    def stop(self) -> None:
        with self._ready:
            self._stopping = True
            self._ready.notify_all()
        super().stop()

    def submit(self, request: Mapping[str, Any], n: int) -> dict[str, Any]:
        """Queue the request for the next batch and wait for its answer."""
        job = _BatchJob(request, n)
        with self._ready:
            self._waiting.append(job)
            self._ready.notify()
        job.done.wait()
        if job.error is not None:
            raise ValueError(f"generation failed: {job.error}")
        assert job.answer is not None
        return job.answer

    def _next_batch(self) -> list[_BatchJob]:
        """The oldest waiting request and every other that fits beside it (same sampling, `max_batch` rows)."""
        with self._ready:
            while not self._waiting and not self._stopping:
                self._ready.wait()
            if self._stopping:
                return []
            first = self._waiting[0]
            batch, rows = list[Any](), 0
            for job in list(self._waiting):
                if job.sampling() == first.sampling() and (not batch or rows + job.n <= self.max_batch):
                    batch.append(job)
                    rows += job.n
                    self._waiting.remove(job)
            return batch

    def _work(self) -> None:
        while True:
            batch = self._next_batch()
            if not batch:
                return
            try:
                self._run(batch)
            except Exception as error:  # noqa: BLE001 - handed to the requests, which answer 400
                for job in batch:
                    job.error = error
            for job in batch:
                job.done.set()

    def _run(self, batch: Sequence[_BatchJob]) -> None:
        import torch

        temperature, top_p, top_k, limit = batch[0].sampling()
        prompts = [str(job.request.get("prompt", "")) for job in batch for _ in range(job.n)]
        inputs = self.tokenizer(prompts, return_tensors="pt", padding=True)
        sampling = {"do_sample": True, "temperature": temperature, "top_p": top_p, "top_k": top_k} \
            if temperature > 0 else {"do_sample": False}
        with torch.inference_mode():
            out = self.model.generate(**inputs, max_new_tokens=limit, pad_token_id=self.tokenizer.pad_token_id,
                                      **sampling)
        rows = iter(out[:, inputs["input_ids"].shape[1]:].tolist())
        with self.lock:
            self.batches.append(len(prompts))
        for job in batch:
            choices, tokens = [], 0
            for index in range(job.n):
                new = _up_to_end(next(rows), self.tokenizer.eos_token_id)
                text = self.tokenizer.decode(new, skip_special_tokens=True)
                finish = "length" if len(new) >= limit else "stop"
                for stop in job.request.get("stop") or []:
                    if stop in text:
                        text, finish = text.split(stop, 1)[0], "stop"
                choices.append({"index": index, "text": text, "finish_reason": finish})
                tokens += len(new)
            prompt_tokens = len(self.tokenizer(str(job.request.get("prompt", "")))["input_ids"])
            with self.lock:
                self.prompt_tokens += prompt_tokens
            job.answer = {"id": "batching", "object": "text_completion", "model": self.model_name, "choices": choices,
                          "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": tokens,
                                    "total_tokens": prompt_tokens + tokens}}


class FakeHub(_LoopbackServer):
    """The few Hugging Face Hub routes that `snapshot_download` and `list_repo_files` use, served from local folders
    on 127.0.0.1 (point `HF_ENDPOINT` at `url`): repository info (`/api/models/<id>/revision/<rev>`), the file
    list (`/api/models/<id>/tree/<rev>`) and the files (`HEAD`/`GET /<id>/resolve/<rev>/<path>`, with the
    `X-Repo-Commit` and `ETag` headers huggingface_hub reads). `repos` maps a repository id to {revision: folder};
    each folder is one commit, whose hash is the sha1 of its files (so a changed file is a new commit), and its
    first revision is also `main` unless one is named so. `requests` counts (method, kind) of what was asked:
    a test reads how many files were fetched."""

    def __init__(self, repos: Mapping[str, Mapping[str, str | os.PathLike]]) -> None:
        super().__init__()
        self.repos: dict[str, dict[str, Path]] = {}
        self.commits: dict[str, dict[str, str]] = {}
        for repo_id, revisions in repos.items():
            folders = {name: Path(folder) for name, folder in revisions.items()}
            folders.setdefault("main", next(iter(folders.values())))
            self.repos[repo_id] = folders
            self.commits[repo_id] = {name: self.commit_of(folder) for name, folder in folders.items()}
        self.requests: Counter = Counter()

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    @staticmethod
    def files(folder: Path) -> list[str]:
        return sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file())

    @classmethod
    def commit_of(cls, folder: Path) -> str:
        digest = hashlib.sha1()
        for name in cls.files(folder):
            digest.update(name.encode() + b"\0" + (folder / name).read_bytes())
        return digest.hexdigest()

    def folder(self, repo_id: str, revision: str) -> tuple[Path, str] | None:
        """(folder, commit) of a revision: a name, or a commit hash."""
        commits = self.commits.get(repo_id, {})
        for name, commit in commits.items():
            if revision in (name, commit):
                return self.repos[repo_id][name], commit
        return None

    handler: type[BaseHTTPRequestHandler]


class _FakeHubHandler(_Handler):
    def do_HEAD(self) -> None:
        self._answer(head=True)

    def do_GET(self) -> None:
        self._answer(head=False)

    def _not_found(self, what: str) -> None:
        self._send(404, json.dumps({"error": f"{what} not found"}).encode(),
                   {"X-Error-Code": "RepoNotFound" if what.startswith("repository") else "RevisionNotFound"})

    def _answer(self, head: bool) -> None:
        hub: FakeHub = self.server_owner
        path = self.path.split("?", 1)[0]
        parts = [part for part in path.split("/") if part]
        if parts[:2] == ["api", "models"] and len(parts) >= 6 and parts[4] in ("revision", "tree"):
            repo_id, kind, revision = f"{parts[2]}/{parts[3]}", parts[4], parts[5]
            found = hub.folder(repo_id, urllib_unquote(revision))
            hub.requests[("GET", kind)] += 1
            if found is None:
                self._not_found("repository" if repo_id not in hub.repos else "revision")
                return
            folder, commit = found
            files = FakeHub.files(folder)
            body: object
            if kind == "revision":
                body = {"id": repo_id, "modelId": repo_id, "sha": commit, "private": False,
                        "siblings": [{"rfilename": name} for name in files]}
            else:
                body = [{"type": "file", "path": name, "size": (folder / name).stat().st_size,
                         "oid": hashlib.sha1((folder / name).read_bytes()).hexdigest()} for name in files]
            self._send(200, json.dumps(body).encode())
            return
        if len(parts) >= 5 and parts[2] == "resolve":
            repo_id, revision, name = f"{parts[0]}/{parts[1]}", urllib_unquote(parts[3]), "/".join(parts[4:])
            found = hub.folder(repo_id, revision)
            if found is None or not (found[0] / name).is_file():
                hub.requests[("HEAD" if head else "GET", "missing")] += 1
                self.send_response(404)
                self.send_header("X-Error-Code", "EntryNotFound")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            folder, commit = found
            data = (folder / name).read_bytes()
            hub.requests[("HEAD" if head else "GET", "file")] += 1
            headers = {"X-Repo-Commit": commit, "ETag": f'"{hashlib.sha1(data).hexdigest()}"'}
            if head:
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
            else:
                self._send(200, data, headers, content_type="application/octet-stream")
            return
        hub.requests[("GET", "unknown")] += 1
        self._send(404, b'{"error": "no such route"}')


def urllib_unquote(text: str) -> str:
    from urllib.parse import unquote

    return unquote(text)


FakeHub.handler = _FakeHubHandler
