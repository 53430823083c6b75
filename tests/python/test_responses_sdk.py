#!/usr/bin/env python3
"""The official `openai` Python SDK's Responses API, unchanged, against two replicas of
`switchyard serve` that share Redis.

Usage: python test_responses_sdk.py BASE_URL_A BASE_URL_B API_KEY

Both replicas serve the route `assistant`, whose first provider (OpenAI) is broken, so an
Anthropic provider answers (the Rust test `crates/switchyard-server/tests/e2e/
responses_sdk.rs` starts them, with a mock Anthropic upstream that answers
"turns=N first=TEXT", calls `get_weather` when given tools, and repeats a tool's result).

Checks: `responses.create` (output_text, the failover in the headers), `responses.stream`
(the event sequence, `get_final_response`), a function-tool loop with
`function_call_output`, a reasoning item's round trip (Anthropic's thinking kept across a
stateless tool loop), `previous_response_id` made on replica A and continued on B,
`retrieve` and `delete` across replicas, and the SDK's typed errors for a built-in tool and
an unknown response id. Prints every mismatch and exits 1 if there was any.
"""

import json
import sys

from checks import check, finish

try:
    import openai
    from openai import OpenAI
except ImportError:  # pragma: no cover - the message is the point
    sys.exit("test_responses_sdk.py needs the official openai package: "
             "pip install -r tests/python/requirements.txt")

ROUTE = "assistant"
CREATED = []


def client(base_url, api_key):
    return OpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=20.0)


def create(c):
    raw = c.responses.with_raw_response.create(
        model=ROUTE, input="Hello there", instructions="Be brief.", max_output_tokens=64)
    check(raw.headers.get("x-switchyard-failed-over") == "true",
          f"create: failed-over header {raw.headers.get('x-switchyard-failed-over')!r}")
    check(raw.headers.get("x-switchyard-provider") == "claude",
          f"create: provider header {raw.headers.get('x-switchyard-provider')!r}")
    resp = raw.parse()
    CREATED.append(resp.id)
    check(resp.object == "response" and resp.id.startswith("resp_"), f"create: {resp.id!r}")
    check(resp.status == "completed", f"create: status {resp.status!r}")
    check(resp.output_text == "turns=1 first=Hello there",
          f"create: output_text {resp.output_text!r}")
    check(resp.instructions == "Be brief.", f"create: instructions {resp.instructions!r}")
    check(resp.usage is not None and resp.usage.input_tokens == 20
          and resp.usage.output_tokens == 8, f"create: usage {resp.usage!r}")
    extra = (resp.model_extra or {}).get("switchyard") or {}
    check(extra.get("provider") == "claude" and extra.get("failed_over") is True,
          f"create: switchyard object {extra!r}")


def stream(c):
    kinds, deltas = [], []
    with c.responses.stream(model=ROUTE, input="Stream this") as s:
        for event in s:
            kinds.append(event.type)
            if event.type == "response.output_text.delta":
                deltas.append(event.delta)
        final = s.get_final_response()
    CREATED.append(final.id)
    check(kinds[:2] == ["response.created", "response.in_progress"], f"stream: opens {kinds[:2]}")
    check(kinds[-1] == "response.completed", f"stream: ends {kinds[-1:]}")
    for k in ["response.output_item.added", "response.content_part.added",
              "response.output_text.done", "response.content_part.done",
              "response.output_item.done"]:
        check(k in kinds, f"stream: no {k} in {kinds}")
    check("".join(deltas) == "turns=1 first=Stream this", f"stream: deltas {deltas!r}")
    check(final.output_text == "turns=1 first=Stream this",
          f"stream: final output_text {final.output_text!r}")
    check(final.usage is not None and final.usage.output_tokens == 8,
          f"stream: final usage {final.usage!r}")


WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"], "additionalProperties": False},
    "strict": True,
}


def tool_loop(c, streamed):
    what = "tool loop (streamed)" if streamed else "tool loop"
    items = [{"role": "user", "content": "What is the weather in Paris?"}]
    if streamed:
        with c.responses.stream(model=ROUTE, input=items, tools=[WEATHER], store=False) as s:
            kinds = [e.type for e in s]
            first = s.get_final_response()
        check("response.function_call_arguments.delta" in kinds, f"{what}: kinds {kinds}")
        check("response.function_call_arguments.done" in kinds, f"{what}: kinds {kinds}")
    else:
        first = c.responses.create(model=ROUTE, input=items, tools=[WEATHER], store=False)
    calls = [o for o in first.output if o.type == "function_call"]
    if not check(len(calls) == 1, f"{what}: output {first.output!r}"):
        return
    call = calls[0]
    check(call.name == "get_weather" and json.loads(call.arguments) == {"city": "Paris"},
          f"{what}: call {call!r}")
    items += first.output
    items.append({"type": "function_call_output", "call_id": call.call_id,
                  "output": "sunny, 21 C"})
    second = c.responses.create(model=ROUTE, input=items, tools=[WEATHER], store=False)
    check(second.output_text == "The tool said: sunny, 21 C",
          f"{what}: answer {second.output_text!r}")


def reasoning(c, streamed):
    """Codex's stateless reasoning continuity: Anthropic's thinking comes back as a
    reasoning item with `encrypted_content`; sent back with the tool's answer, it reaches
    Anthropic as the thinking block it was (the mock says so in its answer)."""
    what = "reasoning (streamed)" if streamed else "reasoning"
    items = [{"role": "user", "content": "Think, then get the weather in Paris."}]
    args = dict(model=ROUTE, input=items, tools=[WEATHER], store=False,
                include=["reasoning.encrypted_content"], reasoning={"summary": "auto"})
    if streamed:
        with c.responses.stream(**args) as s:
            kinds = [e.type for e in s]
            first = s.get_final_response()
        check("response.reasoning_summary_text.delta" in kinds, f"{what}: kinds {kinds}")
    else:
        first = c.responses.create(**args)
    kinds = [o.type for o in first.output]
    if not check(kinds == ["reasoning", "function_call"], f"{what}: output {first.output!r}"):
        return
    thought = first.output[0]
    check(thought.summary and thought.summary[0].text == "Look it up.",
          f"{what}: summary {thought.summary!r}")
    check((thought.encrypted_content or "").startswith("swy1:"),
          f"{what}: encrypted_content {thought.encrypted_content!r}")
    items += first.output
    items.append({"type": "function_call_output", "call_id": first.output[1].call_id,
                  "output": "sunny"})
    second = c.responses.create(model=ROUTE, input=items, tools=[WEATHER], store=False,
                                include=["reasoning.encrypted_content"])
    check(second.output_text == 'The tool said: sunny (thinking kept: "Look it up.")',
          f"{what}: answer {second.output_text!r}")


def continued(a, b):
    first = a.responses.create(model=ROUTE, input="My name is Ada.")
    CREATED.append(first.id)
    second = b.responses.create(model=ROUTE, input="What is my name?",
                                previous_response_id=first.id)
    CREATED.append(second.id)
    check(second.output_text == "turns=3 first=My name is Ada.",
          f"continued on B: {second.output_text!r}")
    check(second.previous_response_id == first.id,
          f"continued: previous_response_id {second.previous_response_id!r}")
    got = b.responses.retrieve(first.id)
    check(got.id == first.id and got.output_text == first.output_text,
          f"retrieve on B: {got.id!r} {got.output_text!r}")
    a.responses.delete(second.id)
    CREATED.remove(second.id)
    expect_error("retrieve after delete", openai.NotFoundError, 404,
                 lambda: b.responses.retrieve(second.id))
    err = expect_error("unknown previous_response_id", openai.NotFoundError, 404,
                       lambda: a.responses.create(model=ROUTE, input="x",
                                                  previous_response_id="resp_nope"))
    if err is not None:
        check(err.param == "previous_response_id", f"unknown previous: param {err.param!r}")


def expect_error(what, exc_type, status, call):
    try:
        call()
    except exc_type as e:
        check(e.status_code == status, f"{what}: status {e.status_code}")
        return e
    except Exception as e:  # noqa: BLE001 - any other exception is the failure
        check(False, f"{what}: raised {type(e).__name__}: {e}")
        return None
    check(False, f"{what}: no error raised")
    return None


def errors(c):
    err = expect_error("built-in tool", openai.BadRequestError, 400,
                       lambda: c.responses.create(model=ROUTE, input="x",
                                                  tools=[{"type": "web_search"}]))
    if err is not None:
        check(err.param == "tools[0].type", f"built-in tool: param {err.param!r}")
        check("web_search" in str(err), f"built-in tool: message {err}")


def section(name, run):
    try:
        run()
    except Exception as e:  # noqa: BLE001 - report and keep going
        check(False, f"{name}: raised {type(e).__name__}: {e}")


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    base_a, base_b, key = sys.argv[1:]
    a, b = client(base_a, key), client(base_b, key)
    print(f"openai {openai.__version__}", flush=True)
    section("create", lambda: create(a))
    section("stream", lambda: stream(b))
    section("tool loop", lambda: tool_loop(a, False))
    section("tool loop (streamed)", lambda: tool_loop(b, True))
    section("reasoning", lambda: reasoning(a, False))
    section("reasoning (streamed)", lambda: reasoning(b, True))
    section("continued", lambda: continued(a, b))
    section("errors", lambda: errors(a))
    for rid in CREATED:
        section("cleanup", lambda rid=rid: a.responses.delete(rid))
    finish("all responses SDK checks passed")


if __name__ == "__main__":
    main()
