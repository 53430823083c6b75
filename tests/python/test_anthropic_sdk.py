#!/usr/bin/env python3
"""The official `anthropic` Python SDK, unchanged, against a running `switchyard serve`.

Usage: python test_anthropic_sdk.py BASE_URL API_KEY
    BASE_URL  the proxy's root, e.g. http://127.0.0.1:4000 (the SDK appends /v1/messages)
    API_KEY   a client key the proxy accepts on every route (sent as x-api-key)

The proxy must serve (the Rust test `crates/switchyard-server/tests/e2e/anthropic_sdk.rs`
starts one like this): `claude-sonnet-5`, whose Anthropic providers are overloaded so an
OpenAI provider answers (and whose second Anthropic provider counts tokens: 42), and
`gpt-only`, with no Anthropic provider. The OpenAI upstream answers a tool result with
"It is sunny in Paris.", a request offering `get_weather` with a call to it, a stream with
"The capital of France is Paris.", anything else with "Paris".

Checks: count_tokens first (before the overloaded Messages calls open the Anthropic
providers' circuits, which a count respects), messages.create, messages.stream (text_stream, get_final_message), a tool-use
loop with tool_result (and the call streamed), Claude Code's request shape (betas, adaptive thinking, effort,
context management, cached system blocks, system turns, one with a per-turn output_config) streamed through the beta
client, and the typed exceptions for the proxy's 400, 401 and 404. Prints
every mismatch and exits 1 if there was any.

Needs the `anthropic` package: pip install -r tests/python/requirements.txt
"""

import sys

try:
    import anthropic
    from anthropic import Anthropic
except ImportError:  # pragma: no cover - the message is the point
    sys.exit(
        "test_anthropic_sdk.py needs the official anthropic package: "
        "pip install -r tests/python/requirements.txt"
    )

ROUTE = "claude-sonnet-5"
FAILURES = []
WEATHER_TOOL = {
    "name": "get_weather",
    "description": "The current weather in a city.",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
CLAUDE_CODE_BETAS = [
    "claude-code-20250219",
    "interleaved-thinking-2025-05-14",
    "context-management-2025-06-27",
    "prompt-caching-scope-2026-01-05",
    "mid-conversation-system-2026-03-01",
    "effort-2025-11-24",
    "context-1m-2025-08-07",
    "fine-grained-tool-streaming-2025-05-14",
    "per-turn-control-2026-07-01",
]


def check(ok, what):
    """Record a mismatch (and keep going, so one run reports all of them)."""
    if not ok:
        FAILURES.append(what)
        print(f"FAIL: {what}", flush=True)
    return ok


def client(base_url, api_key):
    return Anthropic(base_url=base_url, api_key=api_key, max_retries=0, timeout=20.0)


def ask(text):
    return [{"role": "user", "content": text}]


def plain(c):
    raw = c.messages.with_raw_response.create(
        model=ROUTE, max_tokens=64, messages=ask("Capital of France, one word?")
    )
    check(raw.headers.get("x-switchyard-failed-over") == "true",
          f"create: failed over? {raw.headers.get('x-switchyard-failed-over')!r}")
    check(raw.headers.get("x-switchyard-provider") == "gpt",
          f"create: provider {raw.headers.get('x-switchyard-provider')!r}")
    msg = raw.parse()
    check(msg.type == "message" and msg.role == "assistant", f"create: {msg.type} {msg.role}")
    check(msg.id.startswith("msg_"), f"create: id {msg.id!r}")
    check([b.type for b in msg.content] == ["text"], f"create: blocks {msg.content!r}")
    check(msg.content[0].text == "Paris", f"create: text {msg.content[0].text!r}")
    check(msg.stop_reason == "end_turn", f"create: stop_reason {msg.stop_reason!r}")
    check(msg.usage.input_tokens == 20 and msg.usage.cache_read_input_tokens == 5
          and msg.usage.output_tokens == 12, f"create: usage {msg.usage!r}")
    trail = (msg.model_extra or {}).get("switchyard") or {}
    check(trail.get("provider") == "gpt" and trail.get("failed_over") is True,
          f"create: switchyard object {trail!r}")
    print(f"create: {msg.content[0].text!r}")


def streamed(c):
    with c.messages.stream(model=ROUTE, max_tokens=64, messages=ask("Capital of France?")) as s:
        text = "".join(s.text_stream)
        final = s.get_final_message()
    check(text == "The capital of France is Paris.", f"stream: text {text!r}")
    check(final.content[0].text == text, f"stream: final {final.content!r}")
    check(final.stop_reason == "end_turn", f"stream: stop_reason {final.stop_reason!r}")
    check(final.usage.output_tokens == 12, f"stream: usage {final.usage!r}")
    print(f"stream: {text!r}")


def tool_loop(c):
    history = ask("What is the weather in Paris?")
    first = c.messages.create(model=ROUTE, max_tokens=128, tools=[WEATHER_TOOL],
                              messages=history)
    check(first.stop_reason == "tool_use", f"tools: stop_reason {first.stop_reason!r}")
    uses = [b for b in first.content if b.type == "tool_use"]
    if not check(len(uses) == 1, f"tools: blocks {first.content!r}"):
        return
    use = uses[0]
    check(use.name == "get_weather" and use.input == {"city": "Paris"},
          f"tools: call {use!r}")
    history += [
        {"role": "assistant", "content": first.content},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": use.id, "content": "18°C and sunny"}]},
    ]
    second = c.messages.create(model=ROUTE, max_tokens=128, tools=[WEATHER_TOOL],
                               messages=history)
    check(second.content[0].text == "It is sunny in Paris.", f"tools: answer {second.content!r}")
    print(f"tools: {use.name}({use.input}) -> {second.content[0].text!r}")

    # the same call streamed: a tool_use block built from input_json_delta events
    with c.messages.stream(model=ROUTE, max_tokens=128, tools=[WEATHER_TOOL],
                           messages=ask("What is the weather in Paris?")) as s:
        final = s.get_final_message()
    uses = [b for b in final.content if b.type == "tool_use"]
    check(final.stop_reason == "tool_use", f"streamed tools: stop_reason {final.stop_reason!r}")
    check(len(uses) == 1 and uses[0].input == {"city": "Paris"} and uses[0].id == "call_w1",
          f"streamed tools: blocks {final.content!r}")


def claude_code(c):
    """Claude Code's request shape, streamed through the beta client (?beta=true)."""
    tools = [
        {"name": f"Tool{i}", "description": f"tool {i}",
         "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}
        for i in range(24)
    ]
    tools[-1]["cache_control"] = {"type": "ephemeral"}
    cached = {"type": "ephemeral"}
    events = []
    stream = c.beta.messages.create(
        model=ROUTE,
        max_tokens=64000,
        betas=CLAUDE_CODE_BETAS,
        stream=True,
        thinking={"type": "adaptive"},
        output_config={"effort": "high"},
        context_management={"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
        metadata={"user_id": "user_5e1f_account__session_0b7a2c3d-1e2f-4a5b-8c9d-0e1f2a3b4c5d"},
        system=[
            {"type": "text", "text": "You are Claude Code.", "cache_control": cached},
            {"type": "text", "text": "Follow the rules.", "cache_control": cached},
            {"type": "text", "text": "Platform: linux.", "cache_control": cached},
        ],
        tools=tools,
        messages=[
            {"role": "user", "content": [{"type": "text", "text": "hello", "cache_control": cached}]},
            {"role": "system", "content": "The user is in plan mode."},
            {"role": "user", "content": "Capital of France?"},
            # Claude Code 2.1.332's per-turn statement (SDK 2.15's BetaSystemMessageParam)
            {"role": "system", "output_config": {"effort": "high"},
             "content": [{"type": "text", "text": "<system-reminder>env</system-reminder>",
                          "cache_control": cached}]},
        ],
        extra_headers={"x-app": "cli"},
    )
    text = ""
    for event in stream:
        events.append(event.type)
        if event.type == "content_block_delta" and event.delta.type == "text_delta":
            text += event.delta.text
    check(events[0] == "message_start" and events[-1] == "message_stop",
          f"claude code: events {events!r}")
    check("message_delta" in events, f"claude code: events {events!r}")
    check(text == "The capital of France is Paris.", f"claude code: text {text!r}")
    print(f"claude code: {len(events)} events, {text!r}")


def count(c):
    raw = c.messages.with_raw_response.count_tokens(
        model=ROUTE, messages=ask("How many tokens is this?"))
    check(raw.headers.get("x-switchyard-provider") == "claude-counting"
          and raw.headers.get("x-switchyard-failed-over") == "true",
          f"count_tokens: headers {dict(raw.headers)!r}")
    counted = raw.parse()
    check(counted.input_tokens == 42, f"count_tokens: {counted!r}")
    try:
        c.messages.count_tokens(model="gpt-only", messages=ask("How many?"))
        check(False, "count_tokens on a route without Anthropic: no error")
    except anthropic.BadRequestError as e:
        check("no Anthropic provider" in str(e), f"count_tokens 400: {e}")
    print(f"count_tokens: {counted.input_tokens}")


def errors(c, base_url):
    try:
        c.messages.create(model="no-such-route", max_tokens=5, messages=ask("x"))
        check(False, "unknown route: no error")
    except anthropic.NotFoundError as e:
        check(e.body["error"]["type"] == "not_found_error", f"404 body {e.body!r}")
    try:
        c.messages.create(model=ROUTE, max_tokens=5, messages=ask("x"), extra_body={"temperature": 3})
        check(False, "bad temperature: no error")
    except anthropic.BadRequestError as e:
        check(e.body["error"]["type"] == "invalid_request_error", f"400 body {e.body!r}")
        check("temperature" in e.body["error"]["message"], f"400 message {e.body!r}")
    try:
        client(base_url, "not-a-key").messages.create(model=ROUTE, max_tokens=5, messages=ask("x"))
        check(False, "bad key: no error")
    except anthropic.AuthenticationError as e:
        check(e.body["error"]["type"] == "authentication_error", f"401 body {e.body!r}")
    print("errors: 404, 400, 401 typed")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    base_url, api_key = sys.argv[1], sys.argv[2]
    c = client(base_url, api_key)
    print(f"anthropic {anthropic.__version__} against {base_url}")
    # count first: the overloaded Messages calls that follow open both Anthropic providers'
    # circuits, and a count, like any call, skips a provider whose circuit is open
    for step in (count, plain, streamed, tool_loop, claude_code):
        try:
            step(c)
        except Exception as e:  # keep going: report every failing step
            check(False, f"{step.__name__}: {type(e).__name__}: {e}")
    errors(c, base_url)
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed")
        sys.exit(1)
    print("all anthropic SDK checks passed")


if __name__ == "__main__":
    main()
