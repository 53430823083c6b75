"""The sync API against the mock: answers, failover across vendors, cost, budgets,
breakers, deadlines, errors, config files and threads."""

import os
import subprocess
import sys
import threading
import time

import pytest

import switchyard
from switchyard import (AllProvidersFailed, AuthenticationError, BadRequest, BudgetExceeded,
                        CircuitBreaker, DeadlineExceeded, Gateway, GatewayError, InvalidRequest,
                        ModelPrice, OpenAIProvider, ProviderUnavailable, RetryPolicy)

GPT_54 = (2.5, 15.0)  # the shipped price table's gpt-5.4, USD per million tokens


def cost(prices, n_in=1412, n_out=96):
    return (n_in * prices[0] + n_out * prices[1]) / 1e6


def test_complete_answers_with_usage_and_exact_cost(mock, vendors):
    gateway = Gateway([vendors.openai()])
    reply = gateway.complete("Explain retrieval-augmented generation in one sentence.")
    assert reply.text == mock.text
    assert (reply.provider, reply.model, reply.failed_over) == ("openai", "gpt-5.4", False)
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (1412, 96)
    assert reply.usage.cost_usd == pytest.approx(cost(GPT_54), abs=1e-12)
    assert [(a.provider, a.model, a.ok, a.error_type) for a in reply.attempts] == [
        ("openai", "gpt-5.4", True, None)]
    headers, body = mock.requests["openai"][0]
    assert headers["authorization"] == "Bearer k-oai"
    assert body["model"] == "gpt-5.4"
    assert body["messages"][-1]["content"] in ("Explain retrieval-augmented generation in one sentence.",
                                               [{"type": "text", "text": "Explain retrieval-augmented generation in one sentence."}])


def test_messages_and_parameters_reach_the_vendor(mock, vendors):
    gateway = Gateway([vendors.openai()])
    tools = [{"type": "function", "function": {"name": "lookup", "description": "Look up",
                                               "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}]
    gateway.complete([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
                     max_tokens=50, temperature=0.2, tools=tools,
                     response_format={"type": "json_object"})
    _, body = mock.requests["openai"][0]
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body.get("max_completion_tokens", body.get("max_tokens")) == 50
    assert body["temperature"] == pytest.approx(0.2)
    assert body["tools"][0]["function"]["name"] == "lookup"
    assert body["response_format"] == {"type": "json_object"}


def test_failover_across_vendors_keeps_the_trail(mock, vendors):
    mock.default["anthropic"] = 529
    mock.default["openai"] = 500
    gateway = Gateway([vendors.anthropic(max_retries=2), vendors.openai(max_attempts=1), vendors.google()],
                      retry=RetryPolicy(base_delay_s=0.001, max_delay_s=0.002))
    reply = gateway.complete("hello")
    assert (reply.provider, reply.model, reply.failed_over) == ("google", "gemini-2.5-flash", True)
    trail = [(a.provider, a.ok, a.error_type, a.error_kind) for a in reply.attempts]
    assert trail == [("anthropic", False, "ProviderUnavailable", "overloaded")] * 3 + [
        ("openai", False, "ProviderUnavailable", "server"), ("google", True, None, None)]
    assert mock.calls["anthropic"] == 3 and mock.calls["openai"] == 1
    assert reply.usage.cost_usd == pytest.approx(cost((0.3, 2.5)), abs=1e-12)
    assert mock.requests["anthropic"][0][0]["x-api-key"] == "k-ant"
    assert mock.requests["google"][0][0]["x-goog-api-key"] == "k-goo"


def test_all_failed_raises_with_typed_errors(mock, vendors):
    mock.default["anthropic"] = 529
    mock.default["openai"] = 401
    gateway = Gateway([vendors.anthropic(max_attempts=1), vendors.openai()])
    with pytest.raises(AllProvidersFailed) as info:
        gateway.complete("hello")
    err = info.value
    assert [type(e) for e in err.errors] == [ProviderUnavailable, AuthenticationError]
    assert [a.error_type for a in err.attempts] == ["ProviderUnavailable", "AuthenticationError"]
    assert err.errors[1].provider == "openai" and err.errors[1].status == 401
    # an auth failure opens the circuit at once
    assert gateway.health()["openai:gpt-5.4"] == "open"
    assert gateway.health(detailed=True)[1]["state"] == "auth_failed"


def test_a_bad_request_is_not_retried(mock, vendors):
    mock.default["openai"] = 400
    gateway = Gateway([vendors.openai(max_attempts=3)])
    with pytest.raises(GatewayError) as info:
        gateway.complete("hello")
    errors = info.value.errors or [info.value]
    assert isinstance(errors[0], BadRequest)
    assert mock.calls["openai"] == 1


def test_invalid_requests_are_refused_before_dispatch(mock, vendors):
    gateway = Gateway([vendors.openai()])
    with pytest.raises(InvalidRequest):
        gateway.complete([])
    with pytest.raises(TypeError, match="frobnicate"):
        gateway.complete("hi", frobnicate=1)
    with pytest.raises(ValueError, match="order"):
        Gateway([vendors.openai()], order="random")
    with pytest.raises(ValueError):
        Gateway([])
    assert mock.calls["openai"] == 0


def test_breaker_opens_then_admits_exactly_one_probe(mock, vendors):
    mock.default["anthropic"] = 529
    gateway = Gateway([vendors.anthropic(max_attempts=1), vendors.openai()],
                      breaker=CircuitBreaker(failure_threshold=1, cooldown_s=0.3, max_cooldown_s=0.3))
    gateway.complete("one")
    assert gateway.health() == {"anthropic:claude-sonnet-4-5": "open", "openai:gpt-5.4": "closed"}
    reply = gateway.complete("two")
    assert mock.calls["anthropic"] == 1  # skipped while open
    assert reply.attempts[0].skipped == "circuit_open" and reply.attempts[0].error_type == "skipped:circuit_open"
    time.sleep(0.5)  # the cooldown passes
    mock.default["anthropic"] = 1.0  # the probe answers, slowly (the others arrive meanwhile)
    results = []
    threads = [threading.Thread(target=lambda: results.append(gateway.complete("probe?"))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert mock.calls["anthropic"] == 2  # exactly one probe
    assert sorted(r.provider for r in results) == ["anthropic", "openai", "openai", "openai"]
    probe = next(r for r in results if r.provider == "anthropic")
    assert probe.attempts[0].probe
    assert gateway.health()["anthropic:claude-sonnet-4-5"] == "closed"


def test_deadline_bounds_the_request(mock, vendors):
    mock.default["anthropic"] = 3.0  # answers too late
    gateway = Gateway([vendors.anthropic()], deadline_s=0.3)
    with pytest.raises(AllProvidersFailed) as info:
        gateway.complete("hello")
    assert isinstance(info.value, DeadlineExceeded) or info.value.attempts[0].error_kind == "timeout"
    # the call was dropped at the deadline, not waited out (the mock sees the hang-up)
    for _ in range(300):
        if mock.abandoned["anthropic"] >= 1:
            break
        time.sleep(0.01)
    assert mock.abandoned["anthropic"] >= 1


def test_budget_gate_refuses_before_dispatch_and_tracks_remaining(mock, vendors):
    gateway = Gateway([vendors.openai()], budget_usd=0.01)
    assert gateway.ledger.remaining_usd == pytest.approx(0.01)
    reply = gateway.complete("hello", max_tokens=100)
    assert gateway.ledger.remaining_usd == pytest.approx(0.01 - reply.usage.cost_usd, abs=1e-12)
    with pytest.raises(BudgetExceeded) as info:
        gateway.complete("an essay", max_tokens=4000)
    assert mock.calls["openai"] == 1
    assert info.value.limit_usd == pytest.approx(0.01)
    summary = gateway.ledger.summary()["openai:gpt-5.4"]
    assert (summary["calls"], summary["input_tokens"], summary["output_tokens"], summary["unpriced_calls"]) == (1, 1412, 96, 0)
    assert summary["cost_usd"] == pytest.approx(cost(GPT_54), abs=1e-12)


def test_unknown_prices_are_none_never_zero(mock, vendors):
    gateway = Gateway([vendors.openai("my-finetune")])
    reply = gateway.complete("hello")
    assert reply.usage.cost_usd is None
    assert gateway.ledger.summary()["openai:my-finetune"]["unpriced_calls"] == 1
    assert gateway.ledger.summary()["openai:my-finetune"]["cost_usd"] is None
    assert gateway.ledger.remaining_usd is None


def test_model_price_overrides_the_table(mock, vendors):
    gateway = Gateway([vendors.openai("my-finetune", price=ModelPrice(input_per_mtok=0.6, output_per_mtok=2.4))])
    reply = gateway.complete("hello")
    assert reply.usage.cost_usd == pytest.approx(cost((0.6, 2.4)), abs=1e-12)
    assert gateway.ledger.unpriced_calls == 0


def test_cheapest_first(mock, vendors):
    gateway = Gateway([vendors.openai(), vendors.google()], order="cheapest")
    assert gateway.complete("hello").provider == "google"
    assert mock.calls["openai"] == 0


def test_use_legacy_max_tokens(mock):
    gateway = Gateway([OpenAIProvider("llama-3.3-70b", base_url=mock.url("openai"), api_key="x",
                                      use_legacy_max_tokens=True)])
    gateway.complete("hi", max_tokens=7)
    assert mock.requests["openai"][0][1]["max_tokens"] == 7


def test_eight_threads(mock, vendors):
    gateway = Gateway([vendors.anthropic(), vendors.openai()])
    mock.default["anthropic"] = 0.1
    errors, replies = [], []

    def work():
        try:
            for _ in range(5):
                replies.append(gateway.complete("hello"))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(replies) == 40 and all(r.provider == "anthropic" for r in replies)
    assert gateway.ledger.summary()["anthropic:claude-sonnet-4-5"]["calls"] == 40
    # the GIL is released while waiting: the threads' 100 ms calls overlapped at the upstream
    assert mock.most_in_flight["anthropic"] >= 2


def test_ctrl_c_cancels_a_sync_request(mock, vendors):
    import _thread
    mock.default["openai"] = 5.0
    gateway = Gateway([vendors.openai()], budget_usd=1.0)
    timer = threading.Timer(0.2, _thread.interrupt_main)
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        gateway.complete("hello", max_tokens=10)
    # the cancelled request's reservation is released and its upstream call dropped
    for _ in range(300):
        if gateway._core.budget()[2] == 0 and mock.abandoned["openai"] == 1:
            break
        time.sleep(0.01)
    assert gateway._core.budget()[2] == 0
    assert mock.abandoned["openai"] == 1


def test_from_config(mock, tmp_path, monkeypatch):
    monkeypatch.setenv("MOCK_KEY", "k-config")
    path = tmp_path / "switchyard.toml"
    path.write_text(f"""
[[providers]]
name = "claude"
kind = "anthropic"
model = "claude-sonnet-4-5"
base_url = "{mock.url('anthropic')}"
api_key_env = "MOCK_KEY"
max_attempts = 1

[[providers]]
name = "gpt"
kind = "openai"
model = "gpt-5.4"
base_url = "{mock.url('openai')}"
api_key_env = "MOCK_KEY"

[[routes]]
name = "smart"
providers = ["claude", "gpt"]
budget_usd = 5.0
""")
    mock.default["anthropic"] = 529
    gateway = Gateway.from_config(path)
    reply = gateway.complete("hello")
    assert (reply.provider, reply.failed_over) == ("gpt", True)
    assert mock.requests["openai"][0][0]["authorization"] == "Bearer k-config"
    assert gateway.ledger.remaining_usd == pytest.approx(5.0 - reply.usage.cost_usd)
    assert set(gateway.health()) == {"claude", "gpt"}
    bad = tmp_path / "bad.toml"
    bad.write_text('[[providers]]\nname = "x"\nkind = "openai"\nmodel = "m"\ntimout = "5s"\n')
    with pytest.raises(ValueError, match="timeout"):
        Gateway.from_config(bad)


def test_the_command_line_runs_from_the_package(tmp_path):
    path = tmp_path / "switchyard.toml"
    path.write_text('[[providers]]\nname = "sim"\nkind = "simulated"\n\n[[routes]]\nname = "r"\nproviders = ["sim"]\n')
    run = subprocess.run([sys.executable, "-m", "switchyard", "check", "--config", str(path)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "sim" in run.stdout
    run = subprocess.run([sys.executable, "-m", "switchyard", "--version"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and "switchyard" in run.stdout
    assert switchyard.__version__


def test_scripted_providers_fail_over_in_process():
    from switchyard.testing import ScriptedProvider
    gateway = Gateway([ScriptedProvider("claude-sonnet-4-5", name="anthropic", script=["overloaded"] * 3, max_attempts=1),
                       ScriptedProvider("gpt-5.4", name="openai", text="hi there")],
                      retry=RetryPolicy(base_delay_s=0.001, max_delay_s=0.001))
    reply = gateway.complete("hello")
    assert (reply.text, reply.provider, reply.failed_over) == ("hi there", "openai", True)
    assert reply.attempts[0].error_type == "ProviderUnavailable" and reply.attempts[0].error_kind == "overloaded"
    assert reply.usage.cost_usd == pytest.approx((10 * 2.5 + 8 * 15.0) / 1e6, abs=1e-12)
    with pytest.raises(ValueError, match="unknown failure kind"):
        Gateway([ScriptedProvider("m", script=["exploded"])])


def test_the_clouds_build_from_their_settings(monkeypatch):
    from switchyard import AzureOpenAIProvider, BedrockProvider, VertexProvider
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-a-secret")
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    gateway = Gateway([AzureOpenAIProvider("gpt-4o-prod", endpoint="https://res.openai.azure.com", api_key="k"),
                       BedrockProvider("anthropic.claude-3-5-haiku-20241022-v1:0", region="us-east-1"),
                       VertexProvider("gemini-2.5-flash", project="p", location="us-central1")])
    assert list(gateway.health()) == ["azure:gpt-4o-prod", "bedrock:anthropic.claude-3-5-haiku-20241022-v1:0",
                                      "vertex:gemini-2.5-flash"]
    assert any("GOOGLE_APPLICATION_CREDENTIALS" in w for w in gateway.warnings)
    with pytest.raises(ValueError, match="base_url"):
        Gateway([OpenAIProvider("m", base_url="not a url")])


def test_message_objects_system_and_tool_turns(mock, vendors):
    from switchyard import Message
    gateway = Gateway([vendors.anthropic()])
    gateway.complete([Message("user", "What is 2+2?"),
                      {"role": "assistant", "content": None, "tool_calls": [
                          {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a":2,"b":2}'}}]},
                      {"role": "tool", "tool_call_id": "call_1", "content": "4"}],
                     system="Be brief.", max_tokens=20,
                     tools=[{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}])
    _, body = mock.requests["anthropic"][0]
    assert body["system"] in ("Be brief.", [{"type": "text", "text": "Be brief."}])
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][1]["content"][-1]["type"] == "tool_use"
    assert body["messages"][2]["content"][0]["type"] == "tool_result"
    assert body["max_tokens"] == 20 and body["tools"][0]["name"] == "add"
