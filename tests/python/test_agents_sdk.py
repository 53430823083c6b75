#!/usr/bin/env python3
"""The OpenAI Agents SDK (`openai-agents`), unchanged, against `switchyard serve`'s
Responses API: `Runner.run_sync` and `Runner.run_streamed` with a function tool.

Usage: python test_agents_sdk.py BASE_URL API_KEY

The proxy serves the route `assistant` (the Rust test `crates/switchyard-server/tests/e2e/
responses_sdk.rs` starts it, failing over from a broken OpenAI provider to a mock Anthropic
upstream that calls `get_weather` when given tools and repeats a tool's result). The agent
must call the tool, send its result back as a `function_call_output`, and end with the
model's answer. Tracing is off: nothing leaves the machine.
"""

import asyncio
import sys

from checks import check, finish

try:
    from agents import (Agent, Runner, function_tool, set_default_openai_api,
                        set_default_openai_client, set_tracing_disabled)
    from openai import AsyncOpenAI
except ImportError:  # pragma: no cover - the message is the point
    sys.exit("test_agents_sdk.py needs openai-agents: pip install -r tests/python/requirements.txt")

CALLS = []


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    CALLS.append(city)
    return f"sunny in {city}"


def agent():
    return Agent(name="weather", instructions="Answer with the tool's result.",
                 tools=[get_weather], model="assistant")


def run_sync():
    result = Runner.run_sync(agent(), "What is the weather in Paris?")
    check(CALLS == ["Paris"], f"run_sync: tool calls {CALLS}")
    check(result.final_output == "The tool said: sunny in Paris",
          f"run_sync: final output {result.final_output!r}")


async def run_streamed(base, key):
    CALLS.clear()
    # a client of this event loop (run_sync's loop is gone)
    use_client(base, key)
    result = Runner.run_streamed(agent(), "What is the weather in Paris?")
    kinds = []
    async for event in result.stream_events():
        kinds.append(event.type)
    check(CALLS == ["Paris"], f"run_streamed: tool calls {CALLS}")
    check(result.final_output == "The tool said: sunny in Paris",
          f"run_streamed: final output {result.final_output!r}")
    check("raw_response_event" in kinds, f"run_streamed: events {set(kinds)}")


def use_client(base, key):
    set_default_openai_client(AsyncOpenAI(base_url=base, api_key=key, max_retries=0,
                                          timeout=20.0), use_for_tracing=False)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    base, key = sys.argv[1:]
    set_tracing_disabled(True)
    set_default_openai_api("responses")
    use_client(base, key)
    runs = [("run_sync", run_sync),
            ("run_streamed", lambda: asyncio.run(run_streamed(base, key)))]
    for name, run in runs:
        try:
            run()
        except Exception as e:  # noqa: BLE001 - report and keep going
            check(False, f"{name}: raised {type(e).__name__}: {e}")
    finish("all agents SDK checks passed")


if __name__ == "__main__":
    main()
