"""The seed library's README snippets, with `switchyard` in place of `llm_gateway`. The
first builds the gateway exactly as written (no call: it would go to the real vendors);
the rest run against the mock."""

import asyncio

from switchyard import AnthropicProvider, Gateway, GoogleProvider, OpenAIProvider


def test_quickstart_builds_as_written(monkeypatch):
    for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    gateway = Gateway(
        [
            AnthropicProvider("claude-sonnet-4-5"),   # primary
            OpenAIProvider("gpt-5.4"),                # first fallback
            GoogleProvider("gemini-2.5-flash"),       # last resort
        ],
        budget_usd=25.00,
        deadline_s=20.0,
    )
    assert gateway.health() == {"anthropic:claude-sonnet-4-5": "closed", "openai:gpt-5.4": "closed",
                                "google:gemini-2.5-flash": "closed"}
    assert gateway.ledger.remaining_usd == 25.0
    assert any("ANTHROPIC_API_KEY" in w for w in gateway.warnings)


def test_snippets_run(mock, vendors, capsys):
    from switchyard import ModelPrice
    mock.default["anthropic"] = 529
    gateway = Gateway([vendors.anthropic(max_retries=2), vendors.openai()],
                      budget_usd=10.00, order="ordered")
    reply = gateway.complete("Explain retrieval-augmented generation in one sentence.")

    for a in reply.attempts:
        print(a.provider, a.model, f"{a.latency_ms:.0f}ms", "ok" if a.ok else a.error_type)

    gateway.health()   # {'anthropic:claude-sonnet-4-5': 'open', 'openai:gpt-5.4': 'closed'}
    gateway.ledger.summary()
    gateway.ledger.remaining_usd   # 4.17

    OpenAIProvider("my-finetune", price=ModelPrice(input_per_mtok=0.6, output_per_mtok=2.4))
    OpenAIProvider("llama-3.3-70b", base_url="http://localhost:8000", use_legacy_max_tokens=True)
    Gateway([OpenAIProvider("gpt-5.4")], order="cheapest")   # ranked by a nominal 1k-in / 1k-out call

    reply = asyncio.run(gateway.acomplete("hello"))
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("anthropic claude-sonnet-4-5 ") and out[0].endswith(" ProviderUnavailable")
    assert out[-1].startswith("openai gpt-5.4 ") and out[-1].endswith(" ok")
    assert reply.failed_over is False or reply.provider == "openai"
    assert 0 < gateway.ledger.remaining_usd < 10.0
