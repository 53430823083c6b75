#!/usr/bin/env python3
"""The official `openai` Python SDK reading log probabilities, a refusal, the
`system_fingerprint` and several streamed choices back through `switchyard serve`.

Usage: python test_fidelity_sdk.py BASE_URL API_KEY
    BASE_URL  the proxy's OpenAI root, e.g. http://127.0.0.1:4000/v1
    API_KEY   a client key the proxy accepts on the route `fidelity`

The route `fidelity` is an OpenAI Chat Completions mock (the Rust test
`crates/switchyard-server/tests/e2e/fidelity_sdk.rs`) that answers "Hi" with log
probabilities, then refuses ("No."), with system fingerprint `fp_e2e`; asked for `n=2` it
streams a second choice "Yo". Checks, as the SDK's typed objects: a Chat Completions
stream (logprobs per chunk, `delta.refusal`, `system_fingerprint`), a stream of two
choices, and a Responses stream and plain response (`response.output_text.delta`
logprobs, `response.refusal.delta` / `.done`, the `output_text` part's logprobs and the
`refusal` part). Prints every mismatch and exits 1 if there was any.

Needs the `openai` package: pip install -r tests/python/requirements.txt
"""

import sys

from checks import check, finish

try:
    from openai import OpenAI
except ImportError:  # pragma: no cover - the message is the point
    sys.exit(
        "test_fidelity_sdk.py needs the official openai package: "
        "pip install -r tests/python/requirements.txt"
    )

ROUTE = "fidelity"


def chat_stream(c):
    stream = c.chat.completions.create(
        model=ROUTE,
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
        logprobs=True,
        top_logprobs=1,
    )
    text, refusal, tokens, fingerprints = "", "", [], set()
    for chunk in stream:
        if chunk.system_fingerprint:
            fingerprints.add(chunk.system_fingerprint)
        for choice in chunk.choices:
            text += choice.delta.content or ""
            refusal += choice.delta.refusal or ""
            if choice.logprobs and choice.logprobs.content:
                tokens += [(t.token, len(t.top_logprobs)) for t in choice.logprobs.content]
    check(text == "Hi", f"chat stream: text {text!r}")
    check(refusal == "No.", f"chat stream: refusal {refusal!r}")
    check(tokens == [("Hi", 1)], f"chat stream: logprobs {tokens!r}")
    check(fingerprints == {"fp_e2e"}, f"chat stream: system_fingerprint {fingerprints!r}")


def chat_two_choices(c):
    stream = c.chat.completions.create(
        model=ROUTE, messages=[{"role": "user", "content": "hi"}], stream=True, n=2
    )
    texts, finishes = {}, {}
    for chunk in stream:
        for choice in chunk.choices:
            texts[choice.index] = texts.get(choice.index, "") + (choice.delta.content or "")
            if choice.finish_reason:
                finishes[choice.index] = choice.finish_reason
    check(texts == {0: "Hi", 1: "Yo"}, f"n=2 stream: texts {texts!r}")
    check(finishes == {0: "stop", 1: "stop"}, f"n=2 stream: finishes {finishes!r}")


def responses_stream(c):
    stream = c.responses.create(
        model=ROUTE,
        input="hi",
        include=["message.output_text.logprobs"],
        top_logprobs=1,
        stream=True,
    )
    deltas, refusal_deltas, refusal_done, final = [], "", None, None
    for event in stream:
        if event.type == "response.output_text.delta":
            deltas += [(lp.token, lp.logprob) for lp in (event.logprobs or [])]
        elif event.type == "response.refusal.delta":
            refusal_deltas += event.delta
        elif event.type == "response.refusal.done":
            refusal_done = event.refusal
        elif event.type == "response.completed":
            final = event.response
    check(deltas == [("Hi", -0.25)], f"responses stream: delta logprobs {deltas!r}")
    check(refusal_deltas == "No.", f"responses stream: refusal deltas {refusal_deltas!r}")
    check(refusal_done == "No.", f"responses stream: refusal done {refusal_done!r}")
    if check(final is not None, "responses stream: no response.completed"):
        parts(final, "responses stream")


def responses_plain(c):
    resp = c.responses.create(
        model=ROUTE, input="hi", include=["message.output_text.logprobs"], top_logprobs=1
    )
    parts(resp, "responses plain")
    check(resp.top_logprobs == 1, f"responses plain: top_logprobs {resp.top_logprobs!r}")


def parts(resp, what):
    content = resp.output[0].content
    kinds = [p.type for p in content]
    check(kinds == ["output_text", "refusal"], f"{what}: parts {kinds!r}")
    if kinds == ["output_text", "refusal"]:
        lps = [(lp.token, [t.token for t in lp.top_logprobs]) for lp in content[0].logprobs]
        check(lps == [("Hi", ["Hi"])], f"{what}: output_text logprobs {lps!r}")
        check(content[1].refusal == "No.", f"{what}: refusal {content[1].refusal!r}")
    check(resp.output_text == "Hi", f"{what}: output_text {resp.output_text!r}")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    c = OpenAI(base_url=sys.argv[1], api_key=sys.argv[2], max_retries=0, timeout=20.0)
    for name, run in [
        ("chat stream", chat_stream),
        ("chat n=2 stream", chat_two_choices),
        ("responses stream", responses_stream),
        ("responses plain", responses_plain),
    ]:
        try:
            run(c)
        except Exception as e:  # noqa: BLE001 - report and keep going
            check(False, f"{name}: raised {type(e).__name__}: {e}")
    finish("all fidelity SDK checks passed")


if __name__ == "__main__":
    main()
