"""A scripted mock of the vendors' HTTP APIs for tests and examples: OpenAI's Chat
Completions (plain and streamed), Anthropic's Messages, Gemini's generateContent, and a
made-up ``mine`` API for ``BaseProvider`` examples — on 127.0.0.1, in a thread of this
process, no keys and no network needed.

    with MockServer() as mock:
        mock.plan("anthropic", [529, 529, 529])      # overloaded three times, then answers
        gateway = Gateway([AnthropicProvider("claude-sonnet-4-5", base_url=mock.url("anthropic"),
                                             api_key="test"), ...])

A plan's steps are taken one per call: an int is that HTTP status with the vendor's error
body, a float is a delay in seconds before answering, ``"ok"`` answers. After the plan,
``mock.default[vendor]`` (``"ok"`` unless set) answers every call.
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict, deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterable, Optional, Sequence, Union

from .providers import Provider

Step = Union[int, float, str]

_PREFIX = {"openai": "/openai/v1", "anthropic": "/anthropic", "google": "/google/v1beta", "mine": "/mine"}


def _error_body(vendor: str, status: int) -> dict:
    if vendor == "anthropic":
        kind = {529: "overloaded_error", 429: "rate_limit_error", 401: "authentication_error",
                400: "invalid_request_error", 404: "not_found_error"}.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": kind.replace("_", " ")}}
    if vendor == "google":
        name = {429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE", 400: "INVALID_ARGUMENT",
                401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED"}.get(status, "INTERNAL")
        return {"error": {"code": status, "message": name.lower(), "status": name}}
    kind = {429: "rate_limit_exceeded", 401: "invalid_api_key", 400: "invalid_request_error"}.get(
        status, "server_error")
    return {"error": {"message": kind.replace("_", " "), "type": kind, "code": kind}}


class MockServer:
    """The mock; a context manager. ``calls[vendor]`` counts the calls each API got,
    ``requests[vendor]`` keeps their ``(headers, json)``, ``most_in_flight[vendor]`` is the
    most calls it held at once, and ``abandoned[vendor]`` counts the calls whose client
    hung up during a delay step (the gateway dropped the call: a deadline, a cancel)."""

    def __init__(self, text: str = "RAG retrieves relevant documents and feeds them to a model as context.",
                 input_tokens: int = 1412, output_tokens: int = 96):
        self.text = text
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens
        self.default: dict = defaultdict(lambda: "ok")
        self.calls: dict = defaultdict(int)
        self.requests: dict = defaultdict(list)
        self.in_flight: dict = defaultdict(int)
        self.most_in_flight: dict = defaultdict(int)
        self.abandoned: dict = defaultdict(int)
        self._plans: dict = defaultdict(deque)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                server._serve(self)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    def url(self, vendor: str) -> str:
        """The ``base_url`` a provider of ``vendor`` (openai, anthropic, google, mine) takes."""
        return f"http://127.0.0.1:{self.port}{_PREFIX[vendor]}"

    def plan(self, vendor: str, steps: Iterable[Step]) -> None:
        """Queue steps for ``vendor``'s next calls."""
        with self._lock:
            self._plans[vendor].extend(steps)

    def close(self) -> None:
        self._stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> "MockServer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ---- serving

    def _serve(self, h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("content-length") or 0)
        raw = h.rfile.read(length)
        vendor = next((v for v, p in _PREFIX.items() if h.path.startswith(p + "/")), None)
        if vendor is None:
            return self._send(h, 404, {"error": {"message": f"no route {h.path}"}})
        body = json.loads(raw or b"{}")
        with self._lock:
            self.calls[vendor] += 1
            self.requests[vendor].append((dict(h.headers), body))
            step = self._plans[vendor].popleft() if self._plans[vendor] else self.default[vendor]
            self.in_flight[vendor] += 1
            self.most_in_flight[vendor] = max(self.most_in_flight[vendor], self.in_flight[vendor])
        try:
            if isinstance(step, float):
                if self._wait(h, step):
                    with self._lock:
                        self.abandoned[vendor] += 1
                    return
                step = "ok"
        finally:
            with self._lock:
                self.in_flight[vendor] -= 1
        if isinstance(step, int):
            return self._send(h, step, _error_body(vendor, step))
        model = body.get("model") or h.path.rsplit("/", 1)[-1].split(":")[0]
        if vendor == "openai" and body.get("stream"):
            return self._stream_openai(h, model)
        return self._send(h, 200, self._answer(vendor, model))

    def _wait(self, h: BaseHTTPRequestHandler, seconds: float) -> bool:
        """Wait ``seconds``; True (stop waiting) when the mock closes or the client hangs up."""
        import select
        import socket
        import time
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            if self._stop.wait(0):
                return True
            ready, _, _ = select.select([h.connection], [], [], min(left, 0.02))
            if ready:
                try:
                    if h.connection.recv(1, socket.MSG_PEEK) == b"":
                        return True
                except OSError:
                    return True
        return False

    def _answer(self, vendor: str, model: str) -> dict:
        text, n_in, n_out = self.text, self.input_tokens, self.output_tokens
        if vendor == "anthropic":
            return {"id": "msg_mock", "type": "message", "role": "assistant", "model": model,
                    "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                    "usage": {"input_tokens": n_in, "output_tokens": n_out}}
        if vendor == "google":
            return {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                                    "finishReason": "STOP"}],
                    "usageMetadata": {"promptTokenCount": n_in, "candidatesTokenCount": n_out,
                                      "totalTokenCount": n_in + n_out}, "modelVersion": model}
        if vendor == "mine":
            return {"output": {"text": text}, "usage": {"in": n_in, "out": n_out}}
        return {"id": "chatcmpl-mock", "object": "chat.completion", "created": 0, "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                             "finish_reason": "stop"}],
                "usage": {"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out}}

    def _stream_openai(self, h: BaseHTTPRequestHandler, model: str) -> None:
        h.send_response(200)
        h.send_header("content-type", "text/event-stream")
        h.send_header("connection", "close")
        h.end_headers()
        base = {"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0, "model": model}
        words = self.text.split(" ")
        events = []
        for i, w in enumerate(words):
            piece = w if i == 0 else " " + w
            events.append({**base, "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]})
        events.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        events.append({**base, "choices": [], "usage": {
            "prompt_tokens": self.input_tokens, "completion_tokens": self.output_tokens,
            "total_tokens": self.input_tokens + self.output_tokens}})
        for e in events:
            h.wfile.write(f"data: {json.dumps(e)}\n\n".encode())
        h.wfile.write(b"data: [DONE]\n\n")
        h.wfile.flush()
        h.close_connection = True

    @staticmethod
    def _send(h: BaseHTTPRequestHandler, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        h.send_response(status)
        h.send_header("content-type", "application/json")
        h.send_header("content-length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)


class ScriptedProvider(Provider):
    """The Rust library's scripted provider, in-process (no HTTP at all): fails with each
    failure kind of ``script`` in turn (``"overloaded"``, ``"timeout"``, ``"auth"``, ...),
    then answers ``text`` (default ``"ok from <model>"``) with 10 input tokens and one
    output token per byte. ``name`` is the vendor it stands in for; its price is the
    shipped table's for ``model`` unless ``price=`` is given."""

    kind = "scripted"

    def __init__(self, model: str, *, script: Sequence[str] = (), text: Optional[str] = None,
                 name: str = "scripted", **kwargs: Any):
        super().__init__(model, **kwargs)
        self.name = name
        self.options["script"] = list(script)
        if text is not None:
            self.options["text"] = text


__all__ = ["MockServer", "ScriptedProvider"]
