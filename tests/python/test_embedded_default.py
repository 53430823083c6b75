#!/usr/bin/env python3
"""The official SDKs, unchanged, against `switchyard serve` on its embedded default (no
config: the simulated providers aurora and borealis behind the route `default`), using
tools and structured outputs as frameworks do, and the list endpoints.

Usage: python test_embedded_default.py BASE_URL
    BASE_URL  the proxy's root, e.g. http://127.0.0.1:4000

Checks, with the `openai` SDK: `chat.completions.parse(response_format=<pydantic model>)`
(plain and streamed), `responses.parse(text_format=...)`, a tool-call round trip with
`chat.completions.create(tools=...)` (arguments valid against the tool's schema, the same
call streamed, `tool_choice` none / named), `pydantic_function_tool` arguments parsed,
`responses.input_items.list` paged, `n=2` (two distinct choices, usage summed; streamed,
one choice per index); with the OpenAI Agents SDK: `Runner.run_sync` and
`Runner.run_streamed` with a function tool, and an agent with an `output_type`; with the
`anthropic` SDK: `messages.create(tools=...)` round trip (and streamed), a named
`tool_choice`, `output_config.format`, `models.list` paged and `models.retrieve`. Generated JSON is validated
against the schema the client sent with `jsonschema`. Prints every mismatch, exits 1 if
there was any.

Needs: pip install -r tests/python/requirements.txt (jsonschema comes with openai-agents).
"""

import asyncio
import json
import sys
from datetime import date
from typing import Dict, List, Literal, Optional

try:
    import anthropic
    import jsonschema
    import openai
    from agents import (Agent, Runner, function_tool, set_default_openai_api,
                        set_default_openai_client, set_tracing_disabled)
    from pydantic import BaseModel, Field
except ImportError as e:  # pragma: no cover - the message is the point
    sys.exit(f"test_embedded_default.py needs the SDKs ({e}): pip install -r tests/python/requirements.txt")

ROUTE = "default"
FAILURES = []


def check(ok, what):
    """Record a mismatch (and keep going, so one run reports all of them)."""
    if not ok:
        FAILURES.append(what)
        print(f"FAIL: {what}", flush=True)
    return ok


def valid(instance, schema, what):
    try:
        jsonschema.validate(instance, schema)
        return True
    except jsonschema.ValidationError as e:
        return check(False, f"{what}: {e.message} in {json.dumps(instance)[:400]}")


class Attendee(BaseModel):
    name: str
    email: Optional[str] = None


class Step(BaseModel):
    explanation: str
    substeps: List["Step"]


class Event(BaseModel):
    """A calendar event."""
    title: str = Field(min_length=3, max_length=40)
    day: date
    priority: Literal["low", "medium", "high"]
    attendees: List[Attendee] = Field(min_length=1, max_length=3)
    score: float = Field(gt=0, le=1)
    count: int = Field(ge=1, le=10)
    tags: Dict[str, int]
    notes: Optional[str]
    plan: List[Step]


WEATHER_PARAMETERS = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "minLength": 2},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 7},
    },
    "required": ["city", "unit", "days"],
    "additionalProperties": False,
}
CHAT_TOOLS = [
    {"type": "function", "function": {"name": "get_time", "description": "The time in a zone.",
                                      "parameters": {"type": "object", "properties": {
                                          "zone": {"type": "string"}}, "required": ["zone"]}}},
    {"type": "function", "function": {"name": "get_weather", "description": "The weather.",
                                      "parameters": WEATHER_PARAMETERS, "strict": True}},
]


def chat_parse(client):
    messages = [{"role": "user", "content": "Plan the launch review meeting."}]
    done = client.chat.completions.parse(model=ROUTE, messages=messages, response_format=Event)
    choice = done.choices[0]
    check(choice.finish_reason == "stop", f"parse: finish_reason {choice.finish_reason}")
    check(isinstance(choice.message.parsed, Event), f"parse: parsed {choice.message.parsed!r}")
    valid(json.loads(choice.message.content), Event.model_json_schema(), "parse: content")
    again = client.chat.completions.parse(model=ROUTE, messages=messages, response_format=Event)
    check(again.choices[0].message.content == choice.message.content,
          "parse: the same request gets the same JSON")
    with client.chat.completions.stream(model=ROUTE, messages=messages,
                                        response_format=Event) as stream:
        streamed = stream.get_final_completion()
    check(streamed.choices[0].message.parsed == choice.message.parsed,
          f"stream parse: {streamed.choices[0].message.parsed!r}")


def responses_parse(client):
    r = client.responses.parse(model=ROUTE, input="Plan the launch review meeting.",
                               text_format=Event)
    check(isinstance(r.output_parsed, Event), f"responses.parse: {r.output_parsed!r}")
    valid(json.loads(r.output_text), Event.model_json_schema(), "responses.parse: text")


def tool_round_trip(client):
    messages = [{"role": "user", "content": "What is the weather in Paris this week?"}]
    r = client.chat.completions.create(model=ROUTE, messages=messages, tools=CHAT_TOOLS)
    choice = r.choices[0]
    check(choice.finish_reason == "tool_calls", f"tools: finish_reason {choice.finish_reason}")
    calls = choice.message.tool_calls or []
    if not check(len(calls) == 1 and calls[0].function.name == "get_weather", f"tools: calls {calls}"):
        return
    call = calls[0]
    valid(json.loads(call.function.arguments), WEATHER_PARAMETERS, "tools: arguments")
    # the same call streamed: id, name and arguments in deltas
    pieces, ids, names = [], set(), set()
    for chunk in client.chat.completions.create(model=ROUTE, messages=messages, tools=CHAT_TOOLS,
                                                stream=True):
        for c in chunk.choices:
            for d in c.delta.tool_calls or []:
                ids.add(d.id) if d.id else None
                names.add(d.function.name) if d.function and d.function.name else None
                pieces.append(d.function.arguments or "" if d.function else "")
    check(ids == {call.id} and names == {"get_weather"}, f"tools stream: {ids} {names}")
    check("".join(pieces) == call.function.arguments, f"tools stream: {''.join(pieces)!r}")
    # the tool's result ends the turn with text
    messages += [choice.message.model_dump(exclude_none=True),
                 {"role": "tool", "tool_call_id": call.id, "content": "sunny, 21 degrees"}]
    r2 = client.chat.completions.create(model=ROUTE, messages=messages, tools=CHAT_TOOLS)
    check(r2.choices[0].finish_reason == "stop", f"tool result: {r2.choices[0].finish_reason}")
    check((r2.choices[0].message.content or "").endswith("get_weather returned: sunny, 21 degrees"),
          f"tool result: {r2.choices[0].message.content!r}")
    none = client.chat.completions.create(model=ROUTE, messages=messages[:1], tools=CHAT_TOOLS,
                                          tool_choice="none")
    check(not none.choices[0].message.tool_calls and none.choices[0].message.content,
          "tool_choice none: text")
    named = client.chat.completions.create(
        model=ROUTE, messages=messages[:1], tools=CHAT_TOOLS,
        tool_choice={"type": "function", "function": {"name": "get_time"}})
    check(named.choices[0].message.tool_calls[0].function.name == "get_time", "named tool_choice")


class GetForecast(BaseModel):
    """The forecast for a city."""
    city: str
    days: int = Field(ge=1, le=14)
    hourly: bool


def parsed_tool_arguments(client):
    r = client.chat.completions.parse(
        model=ROUTE, messages=[{"role": "user", "content": "Forecast for Oslo?"}],
        tools=[openai.pydantic_function_tool(GetForecast)])
    calls = r.choices[0].message.tool_calls or []
    check(calls and isinstance(calls[0].function.parsed_arguments, GetForecast),
          f"pydantic_function_tool: {calls}")


def input_items(client):
    first = client.responses.create(model=ROUTE, input="hello")
    second = client.responses.create(model=ROUTE, input="and again", previous_response_id=first.id)
    items = list(client.responses.input_items.list(second.id, limit=1))
    check([i.type for i in items] == ["message"] * 3, f"input_items: {[i.type for i in items]}")
    roles = [i.role for i in items]
    check(roles == ["user", "assistant", "user"], f"input_items: roles {roles}")
    check(len({i.id for i in items}) == 3, "input_items: distinct ids")
    asc = client.responses.input_items.list(second.id, order="asc")
    check(asc.data[0].content[0].text == "hello", f"input_items asc: {asc.data[0]}")
    check(asc.has_more is False, "input_items: one page")
    try:
        client.responses.input_items.list("resp_unknown")
        check(False, "input_items: unknown id accepted")
    except openai.NotFoundError:
        pass


def several_answers(client):
    messages = [{"role": "user", "content": "Suggest a name for a ship."}]
    r = client.chat.completions.create(model=ROUTE, messages=messages, n=2, max_tokens=30)
    texts = [c.message.content for c in r.choices]
    check([c.index for c in r.choices] == [0, 1], f"n=2: indexes {[c.index for c in r.choices]}")
    check(len(texts) == 2 and texts[0] != texts[1], f"n=2: choices {texts}")
    check(all(c.finish_reason == "stop" for c in r.choices), f"n=2: {r.choices}")
    check(r.usage.completion_tokens == 60, f"n=2: usage {r.usage}")
    again = client.chat.completions.create(model=ROUTE, messages=messages, n=2, max_tokens=30)
    again = [c.message.content for c in again.choices]
    if again[0].split("]")[0] == texts[0].split("]")[0]:  # the same provider answered
        check(again == texts, f"n=2: the same request, other choices: {texts} then {again}")
    joined, finishes, usage = ["", ""], [None, None], None
    for chunk in client.chat.completions.create(model=ROUTE, messages=messages, n=2,
                                                max_tokens=30, stream=True,
                                                stream_options={"include_usage": True}):
        for c in chunk.choices:
            joined[c.index] += c.delta.content or ""
            finishes[c.index] = c.finish_reason or finishes[c.index]
        usage = chunk.usage or usage
    check(joined[0] != joined[1] and all(joined), f"n=2 stream: {joined}")
    check(joined[1].endswith("(choice 1)"), f"n=2 stream: {joined}")
    check(finishes == ["stop", "stop"], f"n=2 stream: finishes {finishes}")
    check(usage is not None and usage.completion_tokens == 60, f"n=2 stream: usage {usage}")


CALLS = []


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    CALLS.append(city)
    return f"sunny in {city}"


class Weather(BaseModel):
    city: str
    summary: str


def agents(base):
    set_tracing_disabled(True)
    set_default_openai_api("responses")

    def use_client():
        set_default_openai_client(openai.AsyncOpenAI(base_url=f"{base}/v1", api_key="unused",
                                                     max_retries=2, timeout=20.0),
                                  use_for_tracing=False)
    use_client()
    agent = Agent(name="weather", instructions="Use the tool.", tools=[get_weather], model=ROUTE)
    result = Runner.run_sync(agent, "What is the weather in Paris?")
    check(len(CALLS) == 1 and isinstance(CALLS[0], str), f"agents: tool calls {CALLS}")
    check(str(result.final_output).endswith(f"get_weather returned: sunny in {CALLS[0]}"),
          f"agents: final output {result.final_output!r}")

    async def streamed():
        CALLS.clear()
        use_client()
        run = Runner.run_streamed(agent, "What is the weather in Paris?")
        kinds = {event.type async for event in run.stream_events()}
        check(len(CALLS) == 1, f"agents stream: tool calls {CALLS}")
        check("raw_response_event" in kinds, f"agents stream: events {kinds}")
        check("returned: sunny in" in str(run.final_output), f"agents stream: {run.final_output!r}")
        CALLS.clear()
        typed = Agent(name="typed", instructions="Use the tool.", tools=[get_weather],
                      model=ROUTE, output_type=Weather)
        out = await Runner.run(typed, "What is the weather in Paris?")
        check(len(CALLS) == 1, f"agents output_type: tool calls {CALLS}")
        check(isinstance(out.final_output, Weather), f"agents output_type: {out.final_output!r}")
    asyncio.run(streamed())


WEATHER_TOOL = {"name": "get_weather", "description": "The weather in a city.",
                "input_schema": WEATHER_PARAMETERS}
TIME_TOOL = {"name": "get_time", "description": "The time in a zone.",
             "input_schema": {"type": "object", "properties": {"zone": {"type": "string"}},
                              "required": ["zone"]}}


def anthropic_tools(client):
    messages = [{"role": "user", "content": "What is the weather in Paris this week?"}]
    tools = [TIME_TOOL, WEATHER_TOOL]
    msg = client.messages.create(model=ROUTE, max_tokens=256, tools=tools, messages=messages)
    check(msg.stop_reason == "tool_use", f"anthropic: stop_reason {msg.stop_reason}")
    uses = [b for b in msg.content if b.type == "tool_use"]
    if not check(len(uses) == 1 and uses[0].name == "get_weather", f"anthropic: {msg.content}"):
        return
    use = uses[0]
    valid(use.input, WEATHER_PARAMETERS, "anthropic: tool input")
    with client.messages.stream(model=ROUTE, max_tokens=256, tools=tools, messages=messages) as s:
        final = s.get_final_message()
    streamed = [b for b in final.content if b.type == "tool_use"]
    check(streamed and streamed[0].input == use.input and streamed[0].id == use.id,
          f"anthropic stream: {final.content}")
    messages += [{"role": "assistant", "content": [b.model_dump() for b in msg.content]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id,
                                               "content": "sunny"}]}]
    done = client.messages.create(model=ROUTE, max_tokens=256, tools=tools, messages=messages)
    check(done.stop_reason == "end_turn", f"anthropic tool result: {done.stop_reason}")
    check(done.content[0].text.endswith("get_weather returned: sunny"),
          f"anthropic tool result: {done.content}")
    schema = Event.model_json_schema()
    structured = client.messages.create(
        model=ROUTE, max_tokens=256, messages=messages[:1],
        extra_body={"output_config": {"format": {"type": "json_schema", "schema": schema}}})
    if valid(json.loads(structured.content[0].text), schema, "anthropic output_config.format"):
        Event.model_validate_json(structured.content[0].text)
    named = client.messages.create(model=ROUTE, max_tokens=256, tools=tools,
                                   messages=messages[:1],
                                   tool_choice={"type": "tool", "name": "get_time"})
    check([b.name for b in named.content if b.type == "tool_use"] == ["get_time"],
          f"anthropic named tool_choice: {named.content}")


def anthropic_models(client):
    listed = [m.id for m in client.models.list()]
    check(listed == ["default", "cheapest"], f"anthropic models: {listed}")
    paged = [m.id for m in client.models.list(limit=1)]
    check(paged == listed, f"anthropic models paged: {paged}")
    page = client.models.list(limit=1)
    check(page.has_more and page.first_id == "default" and page.last_id == "default",
          f"anthropic models page: {page}")
    one = client.models.retrieve("default")
    check(one.type == "model" and one.display_name == "default", f"anthropic retrieve: {one}")
    try:
        client.models.retrieve("claude-nope")
        check(False, "anthropic retrieve: unknown id accepted")
    except anthropic.NotFoundError as e:
        check(e.body["error"]["type"] == "not_found_error", f"anthropic 404: {e.body}")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    base = sys.argv[1]
    client = openai.OpenAI(base_url=f"{base}/v1", api_key="unused", max_retries=2, timeout=20.0)
    claude = anthropic.Anthropic(base_url=base, api_key="unused", max_retries=2, timeout=20.0)
    runs = [("chat_parse", lambda: chat_parse(client)),
            ("responses_parse", lambda: responses_parse(client)),
            ("tool_round_trip", lambda: tool_round_trip(client)),
            ("parsed_tool_arguments", lambda: parsed_tool_arguments(client)),
            ("input_items", lambda: input_items(client)),
            ("several_answers", lambda: several_answers(client)),
            ("agents", lambda: agents(base)),
            ("anthropic_tools", lambda: anthropic_tools(claude)),
            ("anthropic_models", lambda: anthropic_models(claude))]
    for name, run in runs:
        try:
            run()
        except Exception as e:  # noqa: BLE001 - report and keep going
            check(False, f"{name}: raised {type(e).__name__}: {e}")
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed", flush=True)
        sys.exit(1)
    print("all embedded default checks passed", flush=True)


if __name__ == "__main__":
    main()
