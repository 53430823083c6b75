"""The values the API hands back and takes: messages, replies, usage, attempts, prices and
policies (docs/python.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass
class Message:
    """One message of a conversation (what ``BaseProvider.prepare`` receives)."""

    role: str
    content: str
    tool_calls: list = field(default_factory=list)
    tool_call_id: Optional[str] = None


@dataclass(frozen=True)
class ModelPrice:
    """A model's price in USD per million tokens, overriding the shipped table."""

    input_per_mtok: float
    output_per_mtok: float
    cached_input_per_mtok: Optional[float] = None
    cache_write_per_mtok: Optional[float] = None
    max_output_tokens: Optional[int] = None

    def _entry(self) -> dict:
        entry: dict[str, Any] = {"input_per_mtok": float(self.input_per_mtok),
                                 "output_per_mtok": float(self.output_per_mtok)}
        if self.cached_input_per_mtok is not None:
            entry["cached_input_per_mtok"] = float(self.cached_input_per_mtok)
        if self.cache_write_per_mtok is not None:
            entry["cache_write_per_mtok"] = float(self.cache_write_per_mtok)
        if self.max_output_tokens is not None:
            entry["max_output_tokens"] = int(self.max_output_tokens)
        return entry


@dataclass(frozen=True)
class RetryPolicy:
    """Retries on one provider: full-jitter exponential backoff between ``base_delay_s``
    and ``max_delay_s``; a Retry-After up to ``max_retry_after_s`` is waited out, a longer
    one fails over. Unset fields keep the library's defaults (2 attempts, 0.25 s, 4 s, 5 s)."""

    max_attempts: Optional[int] = None
    base_delay_s: Optional[float] = None
    max_delay_s: Optional[float] = None
    max_retry_after_s: Optional[float] = None

    def _entry(self) -> dict:
        entry: dict[str, Any] = {}
        if self.max_attempts is not None:
            entry["max_attempts"] = int(self.max_attempts)
        for key, value in (("base_delay", self.base_delay_s), ("max_delay", self.max_delay_s),
                           ("max_retry_after", self.max_retry_after_s)):
            if value is not None:
                entry[key] = _dur(value)
        return entry


@dataclass(frozen=True)
class CircuitBreaker:
    """A provider's circuit opens after ``failure_threshold`` failed turns in a row (auth,
    quota and unknown-model failures open it at once) for ``cooldown_s``; then exactly one
    probe is let through: success closes it, failure re-opens it with the cooldown doubled
    up to ``max_cooldown_s``. Unset fields keep the library's defaults (3, 10 s, 15 s)."""

    failure_threshold: Optional[int] = None
    cooldown_s: Optional[float] = None
    max_cooldown_s: Optional[float] = None

    def _entry(self) -> dict:
        entry: dict[str, Any] = {}
        if self.failure_threshold is not None:
            entry["failure_threshold"] = int(self.failure_threshold)
        if self.cooldown_s is not None:
            entry["cooldown"] = _dur(self.cooldown_s)
        if self.max_cooldown_s is not None:
            entry["max_cooldown"] = _dur(self.max_cooldown_s)
        return entry


def _dur(seconds: float) -> str:
    """Seconds as the config's duration text (whole milliseconds)."""
    if seconds is None or seconds < 0:
        raise ValueError(f"a duration must be a non-negative number of seconds, not {seconds!r}")
    return f"{int(round(float(seconds) * 1000))}ms"


@dataclass(slots=True)
class Usage:
    """Tokens and cost of a call. ``cost_usd`` is ``None`` when the model has no known
    price, never a made-up 0.0."""

    input_tokens: int
    output_tokens: int
    cost_usd: Optional[float]
    cached_input_tokens: int = 0
    reasoning_tokens: int = 0

    def __str__(self) -> str:
        cost = "unpriced" if self.cost_usd is None else f"${self.cost_usd:.6f}"
        return f"{self.input_tokens:,} in / {self.output_tokens:,} out  ·  {cost}"


@dataclass(slots=True)
class Attempt:
    """One try (or skip) of a request, in order. ``provider`` is the vendor
    (``anthropic``), ``key`` the provider's name in ``health()`` and the ledger
    (``anthropic:claude-sonnet-4-5``). ``error_type`` is the name of the error class the
    failure was classified as (``ProviderUnavailable``), ``error`` its message;
    ``skipped`` the reason a provider was not called (``circuit_open``)."""

    provider: str
    model: str
    latency_ms: float
    ok: bool
    error_type: Optional[str] = None
    error: Optional[str] = None
    error_kind: Optional[str] = None
    status: Optional[int] = None
    attempt: int = 1
    skipped: Optional[str] = None
    probe: bool = False
    key: str = ""


@dataclass(slots=True)
class ToolCall:
    """A tool call the model made; ``arguments`` is the JSON text it wrote."""

    id: str
    name: str
    arguments: str


@dataclass(slots=True)
class Reply:
    """A completion and its trail."""

    text: str
    provider: str
    model: str
    failed_over: bool
    usage: Optional[Usage]
    attempts: list
    finish_reason: Optional[str] = None
    tool_calls: list = field(default_factory=list)
    latency_ms: float = 0.0
    key: str = ""

    @property
    def cost_usd(self) -> Optional[float]:
        return None if self.usage is None else self.usage.cost_usd
