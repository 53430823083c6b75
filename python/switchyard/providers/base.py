"""Providers written in Python: subclass ``BaseProvider``, set ``name`` and
``default_base_url``, and write ``prepare`` and ``parse`` (and ``classify`` if the API
uses non-standard status codes). Transport, timeouts, retries, circuit breakers,
deadlines and latency measurement are the Rust core's: ``prepare`` and ``parse`` run in
Python around an HTTP call the core makes."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Optional, Union

from ..errors import ProviderError, kind_of
from ..types import Message, ModelPrice


@dataclass
class PreparedRequest:
    """The HTTP call to make: POST ``json`` to ``url`` with ``headers``."""

    url: str
    headers: dict = field(default_factory=dict)
    json: Any = None


@dataclass
class ParsedResponse:
    """What a successful answer said."""

    text: str
    input_tokens: int = 0
    output_tokens: int = 0


class BaseProvider:
    """A provider described in Python. ``self.model``, ``self.api_key`` and
    ``self.base_url`` are set from the constructor (``api_key`` defaults to the variable
    named by the class's ``api_key_env``)."""

    name: str = "custom"
    default_base_url: str = ""
    api_key_env: Optional[str] = None

    def __init__(self, model: str, *, api_key: Optional[str] = None, base_url: Optional[str] = None,
                 price: Optional[ModelPrice] = None, timeout_s: float = 30.0,
                 max_attempts: Optional[int] = None, max_retries: Optional[int] = None):
        self.model = model
        self.api_key = api_key if api_key is not None else (
            os.environ.get(self.api_key_env) if self.api_key_env else None)
        self.base_url = (base_url or self.default_base_url).rstrip("/")
        self.price = price
        self.timeout_s = timeout_s
        self.max_attempts = max_attempts if max_retries is None else max_retries + 1

    @property
    def key(self) -> str:
        """The provider's name in ``health()`` and the ledger: ``name:model``."""
        return f"{self.name}:{self.model}"

    def prepare(self, messages: list[Message], params: dict) -> PreparedRequest:
        """The call for ``messages`` with ``params`` (``max_tokens``, ``temperature``, ...)."""
        raise NotImplementedError

    def parse(self, data: Any) -> ParsedResponse:
        """Read a successful answer's JSON body."""
        raise NotImplementedError

    def classify(self, status: int, body: str) -> Union[type[ProviderError], str, None]:
        """The error class (or kind label) for a non-2xx answer; ``None`` classifies it by
        its status as an OpenAI-style API would (429 rate limited, 5xx unavailable, ...)."""
        return None

    # The core's hooks (python/src/lib.rs, `PyProvider`).

    def _entry(self, key: str) -> dict:
        entry: dict[str, Any] = {"name": key, "kind": "python", "timeout": f"{int(self.timeout_s * 1000)}ms"}
        if self.max_attempts is not None:
            entry["max_attempts"] = int(self.max_attempts)
        if self.price is not None:
            entry["price"] = self.price._entry()
        return entry

    def _sy_prepare(self, request: str) -> tuple:
        req = json.loads(request)
        messages = [_message(m) for m in req.get("messages", [])]
        params = {k: v for k, v in req.items() if k != "messages"}
        prepared = self.prepare(messages, params)
        headers = [(str(k), str(v)) for k, v in (prepared.headers or {}).items()]
        return prepared.url, headers, json.dumps(prepared.json)

    def _sy_parse(self, body: str) -> tuple:
        try:
            data = json.loads(body)
        except ValueError as e:
            raise ValueError(f"{self.name}: the answer is not JSON ({e})") from None
        parsed = self.parse(data)
        return str(parsed.text), int(parsed.input_tokens), int(parsed.output_tokens)

    def _sy_classify(self, status: int, body: str) -> Optional[str]:
        verdict = self.classify(status, body)
        if verdict is None or isinstance(verdict, str):
            return verdict
        return kind_of(verdict)


def _message(m: dict) -> Message:
    parts = m.get("content") or []
    text = "".join(p.get("text", "") for p in parts if p.get("type") == "text")
    return Message(role=m.get("role", "user"), content=text, tool_calls=m.get("tool_calls", []),
                   tool_call_id=m.get("tool_call_id"))


__all__ = ["BaseProvider", "PreparedRequest", "ParsedResponse", "Message"]
