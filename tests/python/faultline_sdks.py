"""faultline as the official SDKs see it: the `openai` SDK's Responses API and the
`anthropic` SDK's Messages API, plain and streamed, and their typed errors for faultline's
faults. Run by crates/faultline/tests/sdks.rs:

    faultline_sdks.py BASE_URI CANONICAL_ANSWER

with models scripted there: `limited` answers 429 (Retry-After: 2), `overloaded` 529,
`broken` streams 5 tokens then an in-band error. Prints a final line on success.
"""

import sys

import anthropic
import openai

BASE, CANON = sys.argv[1], sys.argv[2]


def check(cond, what):
    if not cond:
        raise SystemExit(f"FAILED: {what}")


def openai_responses():
    client = openai.OpenAI(base_url=f"{BASE}/v1", api_key="sk-faultline-not-a-secret", max_retries=0)
    r = client.responses.create(model="gpt-r", instructions="Be terse.", input="Why a gateway?")
    check(r.object == "response" and r.status == "completed", f"plain response: {r}")
    check(r.output_text == CANON, f"output_text: {r.output_text!r}")
    u = r.usage
    check(u.output_tokens == 60 and u.total_tokens == u.input_tokens + 60, f"usage: {u}")
    check(u.input_tokens_details.cached_tokens == 0 and u.output_tokens_details.reasoning_tokens == 0, f"details: {u}")

    events = list(client.responses.create(model="gpt-r", input="Why a gateway?", stream=True))
    types = [e.type for e in events]
    want = (["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"]
            + ["response.output_text.delta"] * 60
            + ["response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"])
    check(types == want, f"event order: {types}")
    check([e.sequence_number for e in events] == list(range(len(events))), "sequence numbers")
    check(type(events[4]).__name__ == "ResponseTextDeltaEvent", f"typed events: {type(events[4])}")

    with client.responses.stream(model="gpt-r", input="Why a gateway?") as stream:
        text = "".join(e.delta for e in stream if e.type == "response.output_text.delta")
        final = stream.get_final_response()
    check(text == CANON and final.output_text == CANON, f"responses.stream: {text!r}")
    check(final.usage.output_tokens == 60, f"final usage: {final.usage}")

    try:
        client.responses.create(model="limited", input="hi")
        check(False, "429 raised")
    except openai.RateLimitError as e:
        check(e.response.headers.get("retry-after") == "2", f"retry-after: {e.response.headers}")
        check(e.code == "rate_limit_exceeded", f"code: {e.code}")

    events = list(client.responses.create(model="broken", input="hi", stream=True))
    check(events[-1].type == "error" and events[-1].code == "server_error", f"in-band error: {events[-1]}")
    check(not any(e.type == "response.completed" for e in events), "no completed after the error")


def anthropic_messages():
    client = anthropic.Anthropic(base_url=BASE, api_key="sk-ant-faultline-not-a-secret", max_retries=0)
    ask = dict(max_tokens=1024, system="Be terse.", messages=[{"role": "user", "content": "Why a gateway?"}])
    m = client.messages.create(model="claude-x", **ask)
    check(m.type == "message" and m.role == "assistant" and m.model == "claude-x", f"message: {m}")
    check(m.content[0].type == "text" and m.content[0].text == CANON, f"content: {m.content}")
    check(m.stop_reason == "end_turn" and m.usage.output_tokens == 60 and m.usage.input_tokens > 0, f"usage: {m}")

    events = list(client.messages.create(model="claude-x", stream=True, **ask))
    types = [e.type for e in events]  # the SDK drops pings
    want = ["message_start", "content_block_start"] + ["content_block_delta"] * 60 + [
        "content_block_stop", "message_delta", "message_stop"]
    check(types == want, f"event order: {types}")

    with client.messages.stream(model="claude-x", **ask) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    check(text == CANON and final.content[0].text == CANON, f"messages.stream: {text!r}")
    check(final.stop_reason == "end_turn" and final.usage.output_tokens == 60, f"final: {final}")

    try:
        client.messages.create(model="overloaded", **ask)
        check(False, "529 raised")
    except anthropic.APIStatusError as e:
        check(e.status_code == 529 and e.body["error"]["type"] == "overloaded_error", f"529: {e.body}")
    try:
        client.messages.create(model="limited", **ask)
        check(False, "429 raised")
    except anthropic.RateLimitError as e:
        check(e.response.headers.get("retry-after") == "2", f"retry-after: {e.response.headers}")
        check(e.body["error"]["type"] == "rate_limit_error", f"429: {e.body}")
    got = ""
    try:
        with client.messages.stream(model="broken", **ask) as stream:
            for t in stream.text_stream:
                got += t
        check(False, "the in-band error raised")
    except anthropic.APIStatusError as e:
        check(e.body["error"]["type"] == "overloaded_error", f"in-band error: {e.body}")
    check(got == " ".join(CANON.split(" ")[:5]), f"text before the error: {got!r}")


openai_responses()
anthropic_messages()
print(f"all faultline SDK checks passed (openai {openai.__version__}, anthropic {anthropic.__version__})")
