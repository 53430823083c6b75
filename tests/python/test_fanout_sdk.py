#!/usr/bin/env python3
"""The official `openai` Python SDK, unchanged, asking for `n=2` answers on a route whose
first provider (OpenAI) is down and whose second (Anthropic) has no `n`: the proxy fails
over and Anthropic answers twice, once per call, plain and streamed (issue 23).

Usage: python test_fanout_sdk.py BASE_URL API_KEY
    BASE_URL  the proxy's OpenAI base, e.g. http://127.0.0.1:4000/v1
    API_KEY   a client key the proxy accepts on the route `fanout`

The Rust test `crates/switchyard-server/tests/e2e/fanout_sdk.rs` starts the proxy and the
mock upstreams (OpenAI answering 500; Anthropic answering "Red." or "Blue.", 7 input and 2
output tokens a call, refusing `n` as Anthropic does) and checks what they received.

Checks: two choices with indices 0 and 1, each its own answer and finish reason, usage
summed over both calls, answered by the Anthropic provider after the failover; streamed,
each choice's pieces at its index, each finishing once, the usage chunk summed.

Needs the package: pip install -r tests/python/requirements.txt
"""

import sys

from checks import check, finish

try:
    import openai
except ImportError:  # pragma: no cover - the message is the point
    sys.exit(
        "test_fanout_sdk.py needs the official openai package: "
        "pip install -r tests/python/requirements.txt"
    )

ANSWERS = ["Blue.", "Red."]


def ask(client, **extra):
    return dict(
        model="fanout",
        messages=[{"role": "user", "content": "Name a colour."}],
        n=2,
        max_tokens=50,
        **extra,
    )


def plain(client):
    raw = client.chat.completions.with_raw_response.create(**ask(client))
    r = raw.parse()
    check(
        raw.headers.get("x-switchyard-provider") == "claude",
        f"plain: answered by {raw.headers.get('x-switchyard-provider')!r}",
    )
    check([c.index for c in r.choices] == [0, 1], f"plain: indices {r.choices!r}")
    check(
        sorted(c.message.content for c in r.choices) == ANSWERS,
        f"plain: answers {r.choices!r}",
    )
    check(
        all(c.finish_reason == "stop" for c in r.choices),
        f"plain: finish reasons {[c.finish_reason for c in r.choices]!r}",
    )
    check(
        (r.usage.prompt_tokens, r.usage.completion_tokens) == (14, 4),
        f"plain: usage summed over both calls: {r.usage!r}",
    )


def streamed(client):
    raw = client.chat.completions.with_raw_response.create(
        **ask(client, stream=True, stream_options={"include_usage": True})
    )
    check(
        raw.headers.get("x-switchyard-provider") == "claude",
        f"stream: answered by {raw.headers.get('x-switchyard-provider')!r}",
    )
    texts, finishes, usage = {}, {}, None
    for chunk in raw.parse():
        if chunk.usage is not None:
            usage = chunk.usage
        for c in chunk.choices:
            texts[c.index] = texts.get(c.index, "") + (c.delta.content or "")
            if c.finish_reason is not None:
                finishes.setdefault(c.index, []).append(c.finish_reason)
    check(sorted(texts) == [0, 1], f"stream: indices {texts!r}")
    check(sorted(texts.values()) == ANSWERS, f"stream: answers {texts!r}")
    check(
        finishes == {0: ["stop"], 1: ["stop"]},
        f"stream: each answer finishes once: {finishes!r}",
    )
    check(
        usage is not None and (usage.prompt_tokens, usage.completion_tokens) == (14, 4),
        f"stream: usage summed over both calls: {usage!r}",
    )


def section(name, run):
    """Run one group of checks; an unexpected SDK error fails it, not the whole run."""
    try:
        run()
    except openai.APIError as e:
        check(False, f"{name}: unexpected {type(e).__name__}: {e}")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    base_url, api_key = sys.argv[1], sys.argv[2]
    print(f"openai {openai.__version__} against {base_url}")
    client = openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0)
    section("plain", lambda: plain(client))
    section("stream", lambda: streamed(client))
    finish("all fan-out SDK checks passed")


if __name__ == "__main__":
    main()
