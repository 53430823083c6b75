"""``Gateway``: the Rust gateway behind the seed library's API (docs/python.md).

Every call crosses into ``switchyard._core`` as JSON: the request in the library's shape,
the answer back as a reply or an error description that is raised here as its typed
exception. Sync calls wait with the GIL released (other threads run; Ctrl-C cancels the
request); async calls resolve an asyncio future from the core's runtime thread, and
cancelling the awaiting task cancels the request.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, AsyncIterator, Iterable, Iterator, Optional, Sequence, Union

from . import _core
from . import errors as E
from .providers import Provider
from .providers.base import BaseProvider
from .types import Attempt, CircuitBreaker, Message, Reply, RetryPolicy, ToolCall, Usage, _dur

Prompt = Union[str, Sequence[Any]]

_ORDERS = ("ordered", "cheapest", "fastest")


class Ledger:
    """What the gateway has spent, per provider, and what its budget has left."""

    def __init__(self, gateway: "Gateway"):
        self._gateway = gateway

    def summary(self) -> dict:
        """Per provider: ``calls``, ``input_tokens``, ``output_tokens``, ``cost_usd`` (of
        the priced calls; ``None`` when every call was unpriced) and ``unpriced_calls``,
        plus ``failures`` by kind."""
        return json.loads(self._gateway._core.ledger())

    @property
    def total_cost_usd(self) -> float:
        """The priced spend of every provider together."""
        return sum(row["cost_usd"] or 0.0 for row in self.summary().values())

    @property
    def unpriced_calls(self) -> int:
        """Calls whose cost is unknown (a model without a price)."""
        return sum(row["unpriced_calls"] for row in self.summary().values())

    @property
    def budget_usd(self) -> Optional[float]:
        budget = self._gateway._core.budget()
        return None if budget is None else budget[0]

    @property
    def spent_usd(self) -> float:
        budget = self._gateway._core.budget()
        return self.total_cost_usd if budget is None else budget[1]

    @property
    def remaining_usd(self) -> Optional[float]:
        """The budget less settled spend; ``None`` without a budget."""
        budget = self._gateway._core.budget()
        return None if budget is None else max(0.0, budget[0] - budget[1])

    def __len__(self) -> int:
        return sum(row["calls"] for row in self.summary().values())

    def __bool__(self) -> bool:
        # an empty ledger is still a ledger (the seed's regression test)
        return True


class Gateway:
    """Failover across ``providers`` (in order, or ``order="cheapest"``), with retries,
    circuit breakers, a deadline per request (``deadline_s``), a budget gate
    (``budget_usd``) and exact cost."""

    def __init__(self, providers: Iterable[Union[Provider, BaseProvider]], *, order: str = "ordered",
                 budget_usd: Optional[float] = None, deadline_s: float = 60.0,
                 retry: Union[RetryPolicy, int, None] = None, breaker: Optional[CircuitBreaker] = None,
                 allow_unpriced: bool = True, default_max_tokens: Optional[int] = None):
        providers = list(providers)
        if not providers:
            raise ValueError("Gateway needs at least one provider")
        if order not in _ORDERS:
            raise ValueError(f"order must be one of {', '.join(_ORDERS)}, not {order!r}")
        if budget_usd is not None and not budget_usd >= 0:
            raise ValueError(f"budget_usd must be a non-negative number, not {budget_usd!r}")
        if isinstance(retry, int):
            retry = RetryPolicy(max_attempts=retry)
        entries: list = []
        custom: dict = {}
        keys: dict = {}
        self._labels: dict = {}
        self.providers = providers
        for p in providers:
            key = p.key
            n = 2
            while key in self._labels:
                key, n = f"{p.key}#{n}", n + 1
            self._labels[key] = p.name
            if isinstance(p, BaseProvider):
                custom[key] = p
                entries.append(p._entry(key))
            elif isinstance(p, Provider):
                entries.append(p._entry(key, keys))
            else:
                raise TypeError(f"not a provider: {p!r}")
        route: dict = {"name": "default", "providers": list(self._labels), "order": order,
                       "deadline": _dur(deadline_s), "allow_unpriced": bool(allow_unpriced)}
        if budget_usd is not None:
            route["budget_usd"] = float(budget_usd)
        if retry is not None:
            route["retry"] = retry._entry()
        if breaker is not None:
            route["breaker"] = breaker._entry()
        if default_max_tokens is not None:
            route["default_max_tokens"] = int(default_max_tokens)
        spec = json.dumps({"providers": entries, "route": route})
        self._core = _core.Core(spec, custom, keys)
        self.ledger = Ledger(self)

    @classmethod
    def from_config(cls, path: str, route: Optional[str] = None) -> "Gateway":
        """The gateway a proxy config file (``switchyard.toml``) describes, built as
        ``switchyard serve`` builds it; calls go through ``route`` (default: the first)."""
        core, providers = _core.Core.from_config(str(path), route)
        self = cls.__new__(cls)
        self._core = core
        self._labels = {p["name"]: p["name"] for p in json.loads(providers)}
        self.providers = []
        self.ledger = Ledger(self)
        return self

    @property
    def warnings(self) -> list:
        """What will not work as configured (a missing key, an unpriced model under a budget)."""
        return list(self._core.warnings())

    # ---- calls

    def complete(self, prompt: Prompt, **params: Any) -> Reply:
        """One completion (see ``_request`` for the parameters)."""
        ok, payload = self._core.complete(_request(prompt, params))
        return self._answer(ok, payload)

    async def acomplete(self, prompt: Prompt, **params: Any) -> Reply:
        """``complete`` as an awaitable that does not block the event loop."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        handle = self._core.start(_request(prompt, params), _resolver(loop, future))
        try:
            ok, payload = await future
        except asyncio.CancelledError:
            handle.cancel()
            raise
        return self._answer(ok, payload)

    def stream(self, prompt: Prompt, **params: Any) -> "Stream":
        """A streamed completion: iterate it for text pieces; ``.reply`` is the whole
        completion once the iteration ends. Failover is invisible until the first piece."""
        return Stream(self, self._core.stream(_request(prompt, params)))

    def astream(self, prompt: Prompt, **params: Any) -> "AsyncStream":
        """``stream`` for ``async for``."""
        return AsyncStream(self, self._core.stream(_request(prompt, params)))

    # ---- state

    def health(self, detailed: bool = False) -> Any:
        """Each provider's circuit: ``{'anthropic:claude-sonnet-4-5': 'open', ...}``
        (``closed``, ``open``, ``half_open``); ``detailed=True`` gives the library's whole
        record per provider (``auth_failed``, failures, latency, cooldown end, ...)."""
        rows = json.loads(self._core.health())
        if detailed:
            return rows
        return {r["name"]: ("open" if r["state"] == "auth_failed" else r["state"]) for r in rows}

    # ---- decoding

    def _label(self, key: str) -> str:
        return self._labels.get(key, key)

    def _attempts(self, rows: list) -> list:
        out = []
        for a in rows:
            if a["ok"]:
                error_type = None
            elif a["skipped"]:
                error_type = f"skipped:{a['skipped']}"
            else:
                error_type = E.kind_class(a["error_kind"]).__name__
            out.append(Attempt(provider=self._label(a["provider"]), model=a["model"],
                               latency_ms=a["latency_ms"], ok=a["ok"], error_type=error_type,
                               error=a["error"], error_kind=a["error_kind"], status=a["status"],
                               attempt=a["attempt"], skipped=a["skipped"], probe=a["probe"],
                               key=a["provider"]))
        return out

    def _reply(self, r: dict) -> Reply:
        u = r["usage"]
        usage = None if u is None else Usage(
            input_tokens=u["input_tokens"], output_tokens=u["output_tokens"], cost_usd=r["cost_usd"],
            cached_input_tokens=u["cached_input_tokens"], reasoning_tokens=u["reasoning_tokens"])
        return Reply(text=r["text"], provider=self._label(r["provider"]), model=r["model"],
                     failed_over=r["failed_over"], usage=usage, attempts=self._attempts(r["attempts"]),
                     finish_reason=r["finish_reason"],
                     tool_calls=[ToolCall(**t) for t in r["tool_calls"]],
                     latency_ms=r["latency_ms"], key=r["provider"])

    def _answer(self, ok: bool, payload: str) -> Reply:
        data = json.loads(payload)
        if ok:
            return self._reply(data)
        raise self._error(data)

    def _provider_error(self, e: dict, attempts: list) -> E.ProviderError:
        cls = E.kind_class(e["kind"])
        return cls(f"{self._label(e['provider'])}: {e['message']}", provider=self._label(e["provider"]),
                   status=e["status"], attempts=attempts, vendor_code=e["vendor_code"],
                   retry_after_s=e["retry_after_s"])

    def _error(self, data: dict) -> E.GatewayError:
        attempts = self._attempts(data.get("attempts", []))
        errors = [self._provider_error(e, attempts) for e in data.get("errors", [])]
        kind, message = data["type"], data["message"]
        if kind == "provider":
            return self._provider_error(data["error"], attempts)
        cls = {"budget_exceeded": E.BudgetExceeded, "all_failed": E.AllProvidersFailed,
               "deadline_exceeded": E.DeadlineExceeded, "rate_limited": E.AllProvidersRateLimited,
               "cannot_honour": E.CannotHonour, "cancelled": E.Cancelled,
               "invalid_request": E.InvalidRequest}.get(kind, E.GatewayError)
        err = cls(message, attempts, errors)
        for field in ("limit_usd", "spent_usd", "reserved_usd", "needed_usd", "deadline_s",
                      "retry_after_s", "fields"):
            if field in data:
                setattr(err, field, data[field])
        return err


def _resolver(loop: asyncio.AbstractEventLoop, future: asyncio.Future):
    """A callback for the core's runtime thread that settles ``future`` on its loop."""

    def settle(*value: Any) -> None:
        if not future.done():
            future.set_result(value)

    def callback(*value: Any) -> None:
        try:
            loop.call_soon_threadsafe(settle, *value)
        except RuntimeError:
            pass  # the loop is closed: nobody is waiting

    return callback


class Stream:
    """A streamed completion (sync). Iterating yields text pieces; after the last one
    ``reply`` holds the whole completion (usage, cost, trail). ``close()`` (or leaving a
    ``with`` block) cancels the upstream call."""

    def __init__(self, gateway: Gateway, core: Any):
        self._gateway = gateway
        self._core = core
        self.reply: Optional[Reply] = None
        self.provider: Optional[str] = None
        self.model: Optional[str] = None
        self._done = False

    def _event(self, kind: Optional[str], payload: Optional[str]) -> Optional[str]:
        """The text of one event; ``None`` for an event without text. Raises at the end."""
        if kind is None:
            self._done = True
            raise StopIteration
        if kind == "chunk":
            return payload
        if kind == "open":
            opened = json.loads(payload)
            self.provider = self._gateway._label(opened["provider"])
            self.model = opened["model"]
            return None
        if kind == "done":
            self.reply = self._gateway._reply(json.loads(payload))
            return None
        self._done = True
        raise self._gateway._error(json.loads(payload))

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        while not self._done:
            item = self._core.next()
            text = self._event(*(item or (None, None)))
            if text is not None:
                return text
        raise StopIteration

    @property
    def text(self) -> str:
        """The whole text (reads the rest of the stream)."""
        pieces = list(self)
        return self.reply.text if self.reply is not None else "".join(pieces)

    def close(self) -> None:
        self._done = True
        self._core.cancel()

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class AsyncStream(Stream):
    """A streamed completion for ``async for``; cancelling the task cancels the call."""

    def __aiter__(self) -> AsyncIterator[str]:
        return self

    async def __anext__(self) -> str:
        while not self._done:
            loop = asyncio.get_running_loop()
            future = loop.create_future()
            handle = self._core.next_async(_resolver(loop, future))
            try:
                kind, payload = await future
            except asyncio.CancelledError:
                handle.cancel()
                self.close()
                raise
            try:
                text = self._event(kind, payload)
            except StopIteration:
                raise StopAsyncIteration from None
            if text is not None:
                return text
        raise StopAsyncIteration

    async def __aenter__(self) -> "AsyncStream":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.close()


def _content(content: Any) -> list:
    """A message's content in the library's shape: text and image parts."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    parts = []
    for part in content:
        if isinstance(part, str):
            parts.append({"type": "text", "text": part})
        elif part.get("type") == "text":
            parts.append({"type": "text", "text": part["text"]})
        elif part.get("type") == "image_url":
            url = part["image_url"]["url"] if isinstance(part["image_url"], dict) else part["image_url"]
            parts.append({"type": "image", "source": {"type": "url", "url": url}})
        elif part.get("type") == "image":
            parts.append(part)
        else:
            raise ValueError(f"unsupported content part type {part.get('type')!r}")
    return parts


def _messages(prompt: Prompt, system: Optional[str]) -> list:
    out = []
    if system is not None:
        out.append({"role": "system", "content": _content(system)})
    if isinstance(prompt, str):
        out.append({"role": "user", "content": _content(prompt)})
        return out
    for m in prompt:
        if isinstance(m, Message):
            m = {"role": m.role, "content": m.content, "tool_calls": m.tool_calls,
                 "tool_call_id": m.tool_call_id}
        elif not isinstance(m, dict):
            m = {"role": getattr(m, "role"), "content": getattr(m, "content")}
        msg: dict = {"role": m["role"], "content": _content(m.get("content"))}
        calls = []
        for c in m.get("tool_calls") or []:
            if "function" in c:  # OpenAI's shape
                calls.append({"id": c["id"], "name": c["function"]["name"],
                              "arguments": c["function"].get("arguments", "{}")})
            else:
                calls.append({"id": c["id"], "name": c["name"], "arguments": c.get("arguments", "{}")})
        if calls:
            msg["tool_calls"] = calls
        if m.get("tool_call_id"):
            msg["tool_call_id"] = m["tool_call_id"]
        if m.get("name"):
            msg["name"] = m["name"]
        out.append(msg)
    return out


def _tools(tools: list) -> list:
    out = []
    for t in tools:
        f = t.get("function", t) if t.get("type", "function") == "function" else t
        tool = {"name": f["name"], "parameters": f.get("parameters") or {"type": "object", "properties": {}}}
        if f.get("description"):
            tool["description"] = f["description"]
        out.append(tool)
    return out


def _tool_choice(choice: Any) -> dict:
    if isinstance(choice, str):
        if choice not in ("auto", "none", "required"):
            return {"type": "tool", "name": choice}
        return {"type": choice}
    name = choice.get("function", {}).get("name") or choice.get("name")
    return {"type": "tool", "name": name}


def _response_format(rf: dict) -> dict:
    if rf.get("type") == "json_schema" and "json_schema" in rf:
        js = rf["json_schema"]
        out = {"type": "json_schema", "name": js.get("name", "response"), "schema": js.get("schema", {})}
        if js.get("strict") is not None:
            out["strict"] = js["strict"]
        return out
    return rf


_PASSED = ("max_tokens", "temperature", "top_p", "seed", "user", "presence_penalty",
           "frequency_penalty", "n", "top_k", "parallel_tool_calls", "reasoning_effort",
           "metadata", "logprobs", "top_logprobs", "service_tier")


def _request(prompt: Prompt, params: dict) -> str:
    """The request as the library's JSON. Parameters: ``system``, ``max_tokens``,
    ``temperature``, ``top_p``, ``stop``, ``tools`` (OpenAI's shape or
    ``{name, description, parameters}``), ``tool_choice``, ``response_format`` (OpenAI's
    shape), ``seed``, ``user``, ``presence_penalty``, ``frequency_penalty``, ``n``,
    ``top_k``, ``parallel_tool_calls``, ``reasoning_effort``, ``metadata``, ``logprobs``,
    ``top_logprobs``, ``service_tier``."""
    params = dict(params)
    req: dict = {"messages": _messages(prompt, params.pop("system", None))}
    stop = params.pop("stop", None)
    if stop is not None:
        req["stop"] = [stop] if isinstance(stop, str) else list(stop)
    tools = params.pop("tools", None)
    if tools:
        req["tools"] = _tools(tools)
    choice = params.pop("tool_choice", None)
    if choice is not None:
        req["tool_choice"] = _tool_choice(choice)
    rf = params.pop("response_format", None)
    if rf is not None:
        req["response_format"] = _response_format(rf)
    for name in _PASSED:
        value = params.pop(name, None)
        if value is not None:
            req[name] = value
    if params:
        raise TypeError(f"unexpected parameter(s): {', '.join(sorted(params))}")
    return json.dumps(req)
