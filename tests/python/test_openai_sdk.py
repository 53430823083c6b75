#!/usr/bin/env python3
"""The official `openai` Python SDK, unchanged, against a running `switchyard serve`.

Usage: python test_openai_sdk.py BASE_URL API_KEY
    BASE_URL  the proxy's OpenAI root, e.g. http://127.0.0.1:4000/v1
    API_KEY   a client key the proxy accepts on every route

The proxy must serve two routes (the Rust test `crates/switchyard-server/tests/e2e/
python_sdk.rs` starts one like this): `default`, answered by the simulated provider
`steady`, and `failover`, whose first provider always fails so `steady` answers.

Checks: a plain call, a streamed call (text and finish_reason), a failover visible in the
`x-switchyard-*` headers (via `with_raw_response`), and the typed exceptions the SDK raises
for the proxy's 401, 404 and 400. Prints every mismatch and exits 1 if there was any.

Needs the `openai` package: pip install -r tests/python/requirements.txt
"""

import sys

from checks import check, finish

try:
    import openai
    from openai import OpenAI
except ImportError:  # pragma: no cover - the message is the point
    sys.exit(
        "test_openai_sdk.py needs the official openai package: "
        "pip install -r tests/python/requirements.txt"
    )

PROMPT = "Name the capital of France in one word."


def client(base_url, api_key):
    return OpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=20.0)


def messages():
    return [{"role": "user", "content": PROMPT}]


def plain(c):
    resp = c.chat.completions.create(model="default", messages=messages(), max_tokens=32)
    text = resp.choices[0].message.content or ""
    check(resp.object == "chat.completion", f"plain: object is {resp.object!r}")
    check(text.startswith("[steady] "), f"plain: unexpected text {text!r}")
    check(resp.choices[0].finish_reason == "stop",
          f"plain: finish_reason {resp.choices[0].finish_reason!r}")
    check(resp.usage is not None and resp.usage.completion_tokens > 0,
          f"plain: usage {resp.usage!r}")
    extra = (resp.model_extra or {}).get("switchyard")
    check(isinstance(extra, dict) and extra.get("provider") == "steady",
          f"plain: switchyard object {extra!r}")
    print(f"plain: {text!r}")
    return text


def streamed(c, expected):
    stream = c.chat.completions.create(
        model="default",
        messages=messages(),
        max_tokens=32,
        stream=True,
        stream_options={"include_usage": True},
    )
    pieces, finish, usage, chunks = [], None, None, 0
    for chunk in stream:
        chunks += 1
        check(chunk.object == "chat.completion.chunk", f"stream: object {chunk.object!r}")
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            if choice.delta.content:
                pieces.append(choice.delta.content)
            if choice.finish_reason is not None:
                check(finish is None, "stream: two finish reasons")
                finish = choice.finish_reason
    text = "".join(pieces)
    check(chunks >= 3, f"stream: only {chunks} chunks")
    check(text == expected, f"stream: text {text!r} != plain text {expected!r}")
    check(finish == "stop", f"stream: finish_reason {finish!r}")
    check(usage is not None and usage.completion_tokens > 0, f"stream: usage {usage!r}")
    print(f"stream: {len(pieces)} pieces, finish_reason={finish}")


def failover(c):
    raw = c.chat.completions.with_raw_response.create(
        model="failover", messages=messages(), max_tokens=32
    )
    failed_over = raw.headers.get("x-switchyard-failed-over")
    provider = raw.headers.get("x-switchyard-provider")
    attempts = raw.headers.get("x-switchyard-attempts")
    check(failed_over == "true", f"failover: x-switchyard-failed-over is {failed_over!r}")
    check(provider == "steady", f"failover: x-switchyard-provider is {provider!r}")
    check(attempts is not None and int(attempts) >= 2,
          f"failover: x-switchyard-attempts is {attempts!r}")
    check(bool(raw.headers.get("x-request-id")), "failover: no x-request-id")
    resp = raw.parse()
    text = resp.choices[0].message.content or ""
    check(text.startswith("[steady] "), f"failover: text {text!r}")
    print(f"failover: provider={provider} attempts={attempts}")


def expect_error(what, exc_type, status, call):
    try:
        call()
    except exc_type as e:
        check(e.status_code == status, f"{what}: status {e.status_code}, wanted {status}")
        print(f"{what}: {exc_type.__name__} ({e.status_code}) code={e.code!r} param={e.param!r}")
        return e
    except openai.APIError as e:  # the wrong typed exception
        check(False, f"{what}: raised {type(e).__name__}, wanted {exc_type.__name__}: {e}")
        return None
    check(False, f"{what}: no exception, wanted {exc_type.__name__}")
    return None


def errors(base_url, c):
    bad_key = client(base_url, "sy-not-a-valid-key")
    e = expect_error(
        "401", openai.AuthenticationError, 401,
        lambda: bad_key.chat.completions.create(model="default", messages=messages()),
    )
    if e is not None:
        check(e.code == "invalid_api_key", f"401: code {e.code!r}")

    e = expect_error(
        "404", openai.NotFoundError, 404,
        lambda: c.chat.completions.create(model="no-such-route", messages=messages()),
    )
    if e is not None:
        check(e.code == "model_not_found", f"404: code {e.code!r}")
        check("default" in e.message and "failover" in e.message,
              f"404: the message lists the routes: {e.message!r}")

    e = expect_error(
        "400", openai.BadRequestError, 400,
        lambda: c.chat.completions.create(model="default", messages=messages(), temperature=5),
    )
    if e is not None:
        check(e.param == "temperature", f"400: param {e.param!r}")


def fields(c):
    """Sampling and output fields reach the OpenAI upstream (the Rust side checks its body),
    and the log probabilities it returned come back."""
    r = c.chat.completions.create(
        model="fields",
        messages=[
            {"role": "developer", "content": "Answer in one word."},
            {"role": "user", "content": "Capital of France?"},
        ],
        seed=7,
        logprobs=True,
        top_logprobs=2,
        presence_penalty=0.5,
        frequency_penalty=0.25,
        parallel_tool_calls=False,
        reasoning_effort="low",
        tools=[{"type": "function", "function": {"name": "noop", "parameters": {"type": "object"}}}],
    )
    check(r.choices[0].message.content == "Paris", f"fields: answer {r.choices[0].message!r}")
    lp = r.choices[0].logprobs
    check(
        lp is not None and lp.content and lp.content[0].token == "Paris",
        f"fields: logprobs came back: {lp!r}",
    )
    check(
        lp is not None and lp.content and len(lp.content[0].top_logprobs) == 2,
        f"fields: top_logprobs came back: {lp!r}",
    )


def section(name, run):
    """Run one group of checks; an unexpected SDK error fails it, not the whole run."""
    try:
        return run()
    except openai.APIError as e:
        check(False, f"{name}: unexpected {type(e).__name__}: {e}")
        return None


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    base_url, api_key = sys.argv[1], sys.argv[2]
    print(f"openai {openai.__version__} against {base_url}")
    c = client(base_url, api_key)
    text = section("plain", lambda: plain(c))
    section("stream", lambda: streamed(c, text))
    section("failover", lambda: failover(c))
    section("errors", lambda: errors(base_url, c))
    section("fields", lambda: fields(c))
    finish("all openai SDK checks passed")


if __name__ == "__main__":
    main()
