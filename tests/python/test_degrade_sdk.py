#!/usr/bin/env python3
"""The official `openai` Python SDK against routes with no field settings, where OpenAI is
down and Anthropic (which takes no `seed`, penalties or log probabilities) is next.

Usage: python test_degrade_sdk.py BASE_URL API_KEY
    BASE_URL  the proxy's OpenAI root, e.g. http://127.0.0.1:4000/v1
    API_KEY   a client key the proxy accepts on every route

The proxy must serve (the Rust test `crates/switchyard-server/tests/e2e/degrade_sdk.rs`
starts one like this): `failover` = [an OpenAI provider answering 500, an Anthropic one],
and `claude-first` = [the Anthropic one, the OpenAI one].

Checks:
- `logprobs` (a contract field Anthropic cannot honour): the SDK's typed 5xx error, whose
  message names OpenAI's failure and the skipped Anthropic provider with `logprobs`;
- `seed`, then `frequency_penalty` / `presence_penalty` (degradable): answered by
  Anthropic, the fields named in `x-switchyard-dropped` and `switchyard.dropped`;
- `reasoning_effort="low"` with `max_tokens=64` on `claude-first`: answered by Anthropic
  without thinking (no budget fits 64 tokens), `reasoning_effort` named as dropped.
Prints every mismatch and exits 1 if there was any.

Needs the `openai` package: pip install -r tests/python/requirements.txt
"""

import sys

from checks import check, finish

try:
    import openai
    from openai import OpenAI
except ImportError:  # pragma: no cover - the message is the point
    sys.exit(
        "test_degrade_sdk.py needs the official openai package: "
        "pip install -r tests/python/requirements.txt"
    )


def messages():
    return [{"role": "user", "content": "Name the capital of France in one word."}]


def logprobs_is_refused_naming_the_skip(c):
    try:
        c.chat.completions.create(model="failover", messages=messages(), logprobs=True,
                                  top_logprobs=2)
    except openai.APIStatusError as e:
        message = str(e)
        check(e.status_code >= 500, f"logprobs: status {e.status_code}, want a 5xx")
        check("openai-down" in message, f"logprobs: OpenAI's failure unnamed: {message}")
        check("claude skipped: cannot honour logprobs" in message,
              f"logprobs: the skip unnamed: {message}")
        return
    check(False, "logprobs: answered, but no provider of the route can give them")


def answered_by_claude_without(c, what, want_dropped, **fields):
    raw = c.chat.completions.with_raw_response.create(
        model="failover", messages=messages(), max_tokens=32, **fields)
    resp = raw.parse()
    check(raw.headers.get("x-switchyard-provider") == "claude",
          f"{what}: answered by {raw.headers.get('x-switchyard-provider')!r}")
    check(raw.headers.get("x-switchyard-failed-over") == "true",
          f"{what}: not marked as failed over")
    check(raw.headers.get("x-switchyard-dropped") == ", ".join(want_dropped),
          f"{what}: x-switchyard-dropped {raw.headers.get('x-switchyard-dropped')!r}")
    extra = (resp.model_extra or {}).get("switchyard") or {}
    check(extra.get("dropped") == want_dropped,
          f"{what}: switchyard.dropped {extra.get('dropped')!r}")
    check(resp.choices[0].message.content == "Paris.",
          f"{what}: text {resp.choices[0].message.content!r}")


def thinking_that_cannot_fit_is_dropped(c):
    raw = c.chat.completions.with_raw_response.create(
        model="claude-first", messages=messages(), max_tokens=64, reasoning_effort="low")
    resp = raw.parse()
    check(raw.headers.get("x-switchyard-provider") == "claude",
          f"thinking: answered by {raw.headers.get('x-switchyard-provider')!r}")
    check(raw.headers.get("x-switchyard-failed-over") == "false",
          "thinking: Anthropic, first, should answer itself")
    check(raw.headers.get("x-switchyard-dropped") == "reasoning_effort",
          f"thinking: x-switchyard-dropped {raw.headers.get('x-switchyard-dropped')!r}")
    check(resp.choices[0].message.content == "Paris.",
          f"thinking: text {resp.choices[0].message.content!r}")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    base_url, api_key = sys.argv[1], sys.argv[2]
    c = OpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=20.0)
    logprobs_is_refused_naming_the_skip(c)
    answered_by_claude_without(c, "seed", ["seed"], seed=7)
    answered_by_claude_without(c, "penalties", ["presence_penalty", "frequency_penalty"],
                               frequency_penalty=0.5, presence_penalty=0.25)
    thinking_that_cannot_fit_is_dropped(c)
    finish("all degrade checks passed")


if __name__ == "__main__":
    main()
