"""The official anthropic SDK's tool runner, with its defaults, through switchyard.

`client.beta.messages.tool_runner(...)` keeps a message thread on the server by default
(`anthropic-beta: message-threads-2026-08-12`): its first request says `thread: create`
and sends everything; each later one says `thread: continue` with the previous answer's
id and sends only what is new. Run by crates/switchyard-server/tests/e2e/anthropic_threads.rs,
which stands up the mock vendors and the gateway(s), then checks what the vendors saw:

    python test_anthropic_threads.py failover BASE_URL TOKEN
        one gateway, route [anthropic (529), openai]: the loop fails over to OpenAI
    python test_anthropic_threads.py replicas BASE_URL_A BASE_URL_B TOKEN
        two gateways sharing Redis: turn 1 goes to A, turn 2 to B

Each mode runs the loop and checks, on the client side, that the SDK really threaded it
(the wire requests it sent) and that each turn reached the gateway it was meant for.
"""

import json
import sys

import anthropic
import httpx2
from anthropic import Anthropic, beta_tool

THREADS_BETA = "message-threads-2026-08-12"


@beta_tool
def get_weather(city: str) -> str:
    """Look up the current weather in a city.

    Args:
        city: The city's name.
    """
    return f"It is sunny in {city}."


class Turns(httpx2.BaseTransport):
    """Sends each request to the next of `bases` in turn, and records what went where:
    (base, request body, response headers)."""

    def __init__(self, bases):
        self.bases = [httpx2.URL(b) for b in bases]
        self.inner = httpx2.HTTPTransport()
        self.sent = []

    def handle_request(self, request):
        base = self.bases[len(self.sent) % len(self.bases)]
        request.url = request.url.copy_with(scheme=base.scheme, host=base.host, port=base.port)
        request.headers["host"] = f"{base.host}:{base.port}"
        body = json.loads(request.read())
        response = self.inner.handle_request(request)
        self.sent.append((str(base), body, request.headers.get("anthropic-beta", ""), response))
        return response


def run_loop(bases, token):
    turns = Turns(bases)
    client = Anthropic(base_url=bases[0], api_key=token, http_client=httpx2.Client(transport=turns))
    runner = client.beta.messages.tool_runner(
        model="claude-sonnet-5",
        max_tokens=256,
        tools=[get_weather],
        messages=[{"role": "user", "content": "What is the weather in Paris?"}],
    )
    answers = list(runner)
    return turns, answers


def check_threaded(turns, answers):
    """Two requests: a `create` with everything, then a `continue` from the first answer
    with only the tool result; the loop ends on the weather."""
    assert len(answers) == 2, answers
    first, last = answers
    assert first.stop_reason == "tool_use", first
    call = next(b for b in first.content if b.type == "tool_use")
    assert call.name == "get_weather" and call.input == {"city": "Paris"}, call
    assert last.stop_reason == "end_turn", last
    assert "sunny in Paris" in last.content[0].text, last

    assert len(turns.sent) == 2, [s[1] for s in turns.sent]
    (_, create, betas1, r1), (_, cont, betas2, r2) = turns.sent
    for betas, r in ((betas1, r1), (betas2, r2)):
        assert THREADS_BETA in betas, betas
        assert r.status_code == 200, r.status_code
    assert create["thread"] == {"type": "create"}, create
    assert [t["name"] for t in create["tools"]] == ["get_weather"], create
    assert len(create["messages"]) == 1, create
    # the SDK continued from the id the gateway gave the first answer, sending only the result
    assert cont["thread"] == {"type": "continue", "previous_message_id": first.id}, cont
    assert "tools" not in cont and "system" not in cont, cont
    assert len(cont["messages"]) == 1, cont
    result = cont["messages"][0]
    assert result["role"] == "user", result
    assert result["content"][0]["type"] == "tool_result", result
    assert result["content"][0]["tool_use_id"] == call.id, result
    assert first.id != last.id
    return r1, r2


def failover(base, token):
    turns, answers = run_loop([base], token)
    r1, r2 = check_threaded(turns, answers)
    for r in (r1, r2):
        assert r.headers["x-switchyard-provider"] == "gpt", dict(r.headers)
        assert r.headers["x-switchyard-failed-over"] == "true", dict(r.headers)


def replicas(base_a, base_b, token):
    turns, answers = run_loop([base_a, base_b], token)
    check_threaded(turns, answers)
    went = [s[0].rstrip("/") for s in turns.sent]
    assert went == [base_a.rstrip("/"), base_b.rstrip("/")], went
    for _, _, _, r in turns.sent:
        assert r.headers["x-switchyard-provider"] == "claude", dict(r.headers)
    # a continue from an answer of the thread that already has its successor: the SDK's
    # typed error, with its code
    client = Anthropic(base_url=base_a, api_key=token)
    try:
        client.beta.messages.create(
            model="claude-sonnet-5",
            max_tokens=64,
            betas=[THREADS_BETA],
            thread={"type": "continue", "previous_message_id": answers[0].id},
            messages=[{"role": "user", "content": "again?"}],
        )
    except anthropic.BadRequestError as e:
        assert e.error_code == "thread_already_continued", e.body
    else:
        raise AssertionError("a second continue from the same answer was answered")


def main():
    mode, *args = sys.argv[1:]
    {"failover": failover, "replicas": replicas}[mode](*args)
    print(f"all anthropic threads checks passed ({mode}, anthropic {anthropic.__version__})")


if __name__ == "__main__":
    main()
