"""Failover, the attempt trail, cost and the budget gate — with no API keys and no network.

The three vendors are played by switchyard.testing.MockServer, a scripted mock of their
HTTP APIs on 127.0.0.1 inside this process; everything else is the real gateway: the real
Anthropic, OpenAI and Gemini adapters classify what the mock answers, retry it, trip the
breaker and fail over. Anthropic is having a bad afternoon (529 overloaded_error on every
call), so the request is retried twice there, then answered by OpenAI.

    python examples/failover_and_budget.py
"""

from switchyard import (AnthropicProvider, BudgetExceeded, CircuitBreaker, Gateway, GoogleProvider,
                        OpenAIProvider)
from switchyard.testing import MockServer


def trail(reply):
    """One line per provider tried: total latency, outcome, and what the gateway did."""
    groups = []
    for a in reply.attempts:
        if groups and groups[-1][0].key == a.key:
            groups[-1].append(a)
        else:
            groups.append([a])
    for tries in groups:
        last = tries[-1]
        latency = sum(a.latency_ms for a in tries)
        if last.ok:
            outcome, note = "ok", "answered"
        else:
            outcome = f"{last.error_type}: {last.error}"
            retries = len(tries) - 1
            note = {0: "gave up", 1: "retried once, then gave up"}.get(retries, f"retried {'twice' if retries == 2 else f'{retries} times'}, then gave up")
        print(f"{last.provider + ':' + last.model:<30}{latency:>7,.0f}ms   {outcome:<40}← {note}")


with MockServer() as mock:
    mock.default["anthropic"] = 529  # overloaded, every call

    def local(cls, model, vendor, **kw):
        return cls(model, base_url=mock.url(vendor), api_key="not-a-real-key", **kw)

    gateway = Gateway(
        [
            local(AnthropicProvider, "claude-sonnet-4-5", "anthropic", max_retries=2),  # primary
            local(OpenAIProvider, "gpt-5.4", "openai"),                                 # first fallback
            local(GoogleProvider, "gemini-2.5-flash", "google"),                        # last resort
        ],
        budget_usd=25.00,
        deadline_s=20.0,
        breaker=CircuitBreaker(failure_threshold=1, cooldown_s=30),
    )

    reply = gateway.complete("Explain retrieval-augmented generation in one sentence.")
    trail(reply)
    print()
    print(f"reply.text          {reply.text!r}")
    print(f"reply.provider      {reply.provider}")
    print(f"reply.failed_over   {reply.failed_over}")
    print(f"reply.usage         {reply.usage}")
    print(f"gateway.health()    {gateway.health()}")
    print()

    # The breaker is open: the next request skips Anthropic without calling it.
    reply = gateway.complete("And in five words?")
    print("second request:", ", ".join(
        f"{a.provider} {'ok' if a.ok else a.error_type}" for a in reply.attempts))
    print(f"anthropic calls so far: {mock.calls['anthropic']} (none for the second request)")
    print()

    # The budget is a gate before dispatch: a gateway with $0.01 left refuses a request
    # whose worst case (its input and max_tokens at the model's price) does not fit.
    small = Gateway([local(OpenAIProvider, "gpt-5.4", "openai")], budget_usd=0.01)
    reply = small.complete("Hello", max_tokens=100)
    print(f"spent {reply.usage.cost_usd:.6f}; ledger.remaining_usd = {small.ledger.remaining_usd:.6f}")
    try:
        small.complete("Write an essay.", max_tokens=4000)
    except BudgetExceeded as e:
        print(f"BudgetExceeded before dispatch: {e}")
    print(f"ledger.summary()    {small.ledger.summary()}")
