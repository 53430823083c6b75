#!/usr/bin/env python3
"""The official `anthropic` and `openai` Python SDKs, unchanged, sending every request field
they support through a running `switchyard serve`.

Usage: python test_sdk_fields.py BASE_URL API_KEY
    BASE_URL  the proxy's root, e.g. http://127.0.0.1:4000 (no /v1)
    API_KEY   a client key the proxy accepts on every route

The proxy must serve four routes (the Rust test `crates/switchyard-server/tests/e2e/
sdk_fields.rs` starts one like this, and checks what each mock upstream received):
`claude-fields` (an Anthropic provider), `gpt-fields` (an OpenAI provider),
`claude-beta-gpt` (an OpenAI provider that refuses what OpenAI refuses) and
`claude-json` (an Anthropic model without structured outputs, so JSON goes through a
forced tool).

Checks: the anthropic SDK's Messages call with every field (cache_control on system,
blocks and tools and at the top level, thinking, tool_choice with disable_parallel_tool_use,
metadata, stop sequences, service tier, output_config, inference_geo, speed, diagnostics,
beta headers, and the sampling fields its create() no longer lists, through extra_body)
answered; the beta client's new fields (a system turn inside messages with clear_at,
output_config and tool changes; output_config.task_budget, billing_policy, diagnostics,
fallbacks, fallback_credit_token) answered by Anthropic as written and by OpenAI with what
it cannot take named, and compaction refused where no Anthropic provider could serve it;
the openai SDK's Chat Completions call
with every field (seed, penalties, log probabilities, n, parallel_tool_calls,
reasoning_effort, service_tier, metadata, user, stop, response_format, the developer role,
cache_control parts) answered with two choices and `cache_control` named ignored (OpenAI
caches by itself); and the openai SDK's `parse` with a pydantic model against Claude,
plain and streamed, its JSON read back from the forced tool. Exits 1 on any mismatch.

Needs the packages: pip install -r tests/python/requirements.txt
"""

import json
import sys

from checks import check, finish

try:
    import anthropic
    import openai
    import pydantic
except ImportError:  # pragma: no cover - the message is the point
    sys.exit(
        "test_sdk_fields.py needs the official anthropic and openai packages: "
        "pip install -r tests/python/requirements.txt"
    )


WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}


def anthropic_fields(base_url, api_key):
    """Every Messages field the SDK takes, in one call (the Rust side checks the body)."""
    c = anthropic.Anthropic(base_url=base_url, api_key=api_key, max_retries=0)
    raw = c.messages.with_raw_response.create(
        model="claude-fields",
        max_tokens=2048,
        system=[
            {
                "type": "text",
                "text": "You are a terse weather assistant.",
                "cache_control": {"type": "ephemeral", "ttl": "1h"},
            }
        ],
        messages=[
            {
                "role": "user",
                "content": [
                    {
                        "type": "text",
                        "text": "Weather in Paris?",
                        "cache_control": {"type": "ephemeral"},
                    }
                ],
            }
        ],
        thinking={"type": "enabled", "budget_tokens": 1024},
        tools=[
            {
                "name": "get_weather",
                "description": "Current weather for a city",
                "input_schema": WEATHER_SCHEMA,
                "cache_control": {"type": "ephemeral"},
            }
        ],
        tool_choice={"type": "auto", "disable_parallel_tool_use": True},
        metadata={"user_id": "user-42"},
        stop_sequences=["END"],
        service_tier="standard_only",
        cache_control={"type": "ephemeral"},
        output_config={"effort": "high"},
        inference_geo="us",
        speed="fast",
        diagnostics={"previous_message_id": None},
        extra_headers={"anthropic-beta": "extended-cache-ttl-2025-04-11,fast-mode-2026-02-01"},
        # this SDK's create() no longer lists the sampling fields; the API still takes them
        extra_body={"temperature": 1.0, "top_k": 40, "top_p": 0.9},
    )
    m = raw.parse()
    check(
        raw.headers.get("x-switchyard-provider") == "claude",
        f"anthropic: answered by {raw.headers.get('x-switchyard-provider')!r}",
    )
    texts = [b.text for b in m.content if b.type == "text"]
    check(texts == ["Sunny."], f"anthropic: answer {m.content!r}")
    check(
        [b.type for b in m.content][0] == "thinking",
        f"anthropic: the thinking block came back first: {m.content!r}",
    )
    check(
        m.usage.cache_read_input_tokens == 1200,
        f"anthropic: cache reads came back: {m.usage!r}",
    )


BETAS = [
    "per-turn-control-2026-07-01",
    "mid-conversation-tool-changes-2026-07-01",
    "inline-tools-2026-09-15",
    "task-budgets-2026-03-13",
    "server-side-fallback-2026-06-01",
    "fallback-credit-2026-06-01",
]


def beta_request(model):
    """The beta client's new fields (SDK 2.15): a system turn with per-turn settings and
    tool changes inside `messages`, and the new top-level fields."""
    time_tool = {"name": "get_time", "description": "Local time", "input_schema": {"type": "object"}}
    forecast = {"name": "get_forecast", "description": "Tomorrow", "input_schema": WEATHER_SCHEMA}
    return dict(
        model=model,
        max_tokens=2048,
        betas=BETAS,
        thinking={"type": "adaptive"},
        tools=[
            {"name": "get_weather", "description": "Current weather", "input_schema": WEATHER_SCHEMA},
            time_tool,
        ],
        messages=[
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "system",
                "content": [
                    {"type": "text", "text": "Answer in one word."},
                    {"type": "tool_removal", "tool": {"type": "tool_reference", "name": "get_time"}},
                    {"type": "tool_addition", "tool": {"type": "tool_definition", "definition": forecast}},
                ],
                "clear_at": "never",
                "output_config": {"effort": "low"},
            },
        ],
        output_config={"effort": "high", "task_budget": {"type": "tokens", "total": 200000}},
        billing_policy={"type": "billing_policy", "bill_to": "self"},
        diagnostics={"previous_message_id": "msg_e2e0"},
        fallbacks="default",
        fallback_credit_token={"token": "fct_e2e", "mode": "best_effort"},
    )


def anthropic_beta_fields(base_url, api_key):
    """The beta client's new fields: to Anthropic as written (the Rust side checks the
    body), and to an OpenAI model through the shared shape, the fields it cannot take
    named; `compaction` (it changes what the answer is) only where Anthropic answers."""
    c = anthropic.Anthropic(base_url=base_url, api_key=api_key, max_retries=0)
    raw = c.beta.messages.with_raw_response.create(**beta_request("claude-fields"))
    m = raw.parse()
    check(
        raw.headers.get("x-switchyard-provider") == "claude",
        f"beta: answered by {raw.headers.get('x-switchyard-provider')!r}",
    )
    check([b.text for b in m.content if b.type == "text"] == ["Sunny."], f"beta: {m.content!r}")
    check(raw.headers.get("x-switchyard-ignored") is None, "beta: Anthropic got every field")

    raw = c.beta.messages.with_raw_response.create(**beta_request("claude-beta-gpt"))
    m = raw.parse()
    check(
        raw.headers.get("x-switchyard-provider") == "gpt-strict",
        f"beta via OpenAI: answered by {raw.headers.get('x-switchyard-provider')!r}",
    )
    check([b.text for b in m.content if b.type == "text"] == ["Sunny."], f"beta via OpenAI: {m.content!r}")
    named = (raw.headers.get("x-switchyard-ignored") or "").split(", ")
    for field in ["billing_policy", "diagnostics", "fallbacks", "fallback_credit_token",
                  "output_config.task_budget", "anthropic-beta"]:
        check(field in named, f"beta via OpenAI: {field} named in {named!r}")

    compacting = dict(beta_request("claude-beta-gpt"), compaction={"instructions": "Keep decisions."})
    try:
        c.beta.messages.create(**compacting)
        check(False, "compaction on a route without Anthropic: no error")
    except anthropic.BadRequestError as e:
        check("only an Anthropic provider" in str(e), f"compaction 400: {e}")


def openai_fields(base_url, api_key):
    """Every Chat Completions field the SDK takes, in one call (the Rust side checks it)."""
    c = openai.OpenAI(base_url=f"{base_url}/v1", api_key=api_key, max_retries=0)
    raw = c.chat.completions.with_raw_response.create(
        model="gpt-fields",
        messages=[
            {"role": "developer", "content": "Answer in JSON."},
            {
                "role": "system",
                "content": [
                    {
                        "type": "text",
                        "text": "A long static context.",
                        "cache_control": {"type": "ephemeral"},
                    }
                ],
            },
            {"role": "user", "content": "Capital of France?"},
        ],
        seed=7,
        presence_penalty=0.5,
        frequency_penalty=0.25,
        logprobs=True,
        top_logprobs=2,
        n=2,
        parallel_tool_calls=False,
        reasoning_effort="low",
        service_tier="flex",
        metadata={"team": "e2e"},
        user="user-42",
        stop=["END"],
        max_completion_tokens=300,
        temperature=0.2,
        top_p=0.9,
        response_format={
            "type": "json_schema",
            "json_schema": {
                "name": "answer",
                "schema": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                    "additionalProperties": False,
                },
                "strict": True,
            },
        },
        tools=[
            {
                "type": "function",
                "function": {"name": "noop", "parameters": {"type": "object"}},
            }
        ],
    )
    r = raw.parse()
    check(
        raw.headers.get("x-switchyard-ignored") == "cache_control",
        f"openai: cache_control named ignored: {raw.headers.get('x-switchyard-ignored')!r}",
    )
    check(len(r.choices) == 2, f"openai: n=2 answered twice: {r.choices!r}")
    check(
        [c.message.content for c in r.choices] == ['{"city":"Paris"}', '{"city":"Lyon"}'],
        f"openai: answers {r.choices!r}",
    )
    lp = r.choices[0].logprobs
    check(
        lp is not None and lp.content and len(lp.content[0].top_logprobs) == 2,
        f"openai: top_logprobs came back: {lp!r}",
    )


class Place(pydantic.BaseModel):
    city: str


def claude_json(base_url, api_key):
    """`parse` with a pydantic model against Claude without structured outputs: the forced
    tool's input comes back as the message's content, plain and streamed."""
    c = openai.OpenAI(base_url=f"{base_url}/v1", api_key=api_key, max_retries=0)
    messages = [
        {
            "role": "system",
            "content": [
                {
                    "type": "text",
                    "text": "You extract places.",
                    "cache_control": {"type": "ephemeral", "ttl": "1h"},
                }
            ],
        },
        {"role": "user", "content": "I flew to Paris."},
    ]
    r = c.chat.completions.parse(
        model="claude-json", messages=messages, response_format=Place, max_tokens=200
    )
    msg = r.choices[0].message
    check(msg.parsed == Place(city="Paris"), f"claude-json: parsed {msg!r}")
    check(not msg.tool_calls, f"claude-json: no tool call shown: {msg.tool_calls!r}")
    check(r.choices[0].finish_reason == "stop", f"claude-json: {r.choices[0].finish_reason}")
    with c.chat.completions.stream(
        model="claude-json", messages=messages, response_format=Place, max_tokens=200
    ) as stream:
        pieces = [e.delta for e in stream if e.type == "content.delta"]
        final = stream.get_final_completion()
    check(len(pieces) >= 2, f"claude-json stream: content arrived in pieces: {pieces!r}")
    check(
        json.loads("".join(pieces)) == {"city": "Paris"},
        f"claude-json stream: {pieces!r}",
    )
    check(
        final.choices[0].message.parsed == Place(city="Paris"),
        f"claude-json stream: parsed {final.choices[0].message!r}",
    )


def section(name, run):
    """Run one group of checks; an unexpected SDK error fails it, not the whole run."""
    try:
        return run()
    except (anthropic.APIError, openai.APIError) as e:
        check(False, f"{name}: unexpected {type(e).__name__}: {e}")
        return None


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    base_url, api_key = sys.argv[1], sys.argv[2]
    print(f"anthropic {anthropic.__version__}, openai {openai.__version__} against {base_url}")
    section("anthropic", lambda: anthropic_fields(base_url, api_key))
    section("anthropic beta", lambda: anthropic_beta_fields(base_url, api_key))
    section("openai", lambda: openai_fields(base_url, api_key))
    section("claude-json", lambda: claude_json(base_url, api_key))
    finish("all SDK field checks passed")


if __name__ == "__main__":
    main()
