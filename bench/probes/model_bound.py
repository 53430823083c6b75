"""Issue 24 item 16: every dialect checks `model` against the 256-character bound before it uses it."""

import re

from _http import post, provider

NAME = "model_bound"
ITEM = "24.16"
DESCRIPTION = ("a 1 MiB `model` on chat, responses, messages, count_tokens and embeddings: each a small "
               "400 naming `model`, none a 404 quoting it")

HUGE = 1 << 20

CONFIG = provider() + """
[[routes]]
name = "bench-model"
providers = ["primary"]
"""

HI = [{"role": "user", "content": "hi"}]
CASES = [
    ("chat", "/v1/chat/completions", {"messages": HI}),
    ("responses", "/v1/responses", {"input": "hi"}),
    ("messages", "/v1/messages", {"messages": HI, "max_tokens": 16}),
    ("count_tokens", "/v1/messages/count_tokens", {"messages": HI}),
    ("embeddings", "/v1/embeddings", {"input": "hi"}),
]


def run(ctx):
    mock = ctx.mock()
    _, port = ctx.serve(CONFIG.replace("MOCK", str(mock)))
    results = {}
    for name, path, body in CASES:
        resp = post(port, path, dict(body, model="m" * HUGE), headers={"anthropic-version": "2023-06-01"})
        answer = resp.data
        error = resp.json().get("error") or {}
        message = str(error.get("message", ""))
        results[name] = {"status": resp.status, "answer_bytes": len(answer),
                         "model_bytes_quoted": max((len(run) for run in re.findall("m+", message)), default=0),
                         "names_model": message.startswith("model:")}
    held = all(r["status"] == 400 and r["names_model"] and r["answer_bytes"] < 512 for r in results.values())
    return {"held": held, "model_bytes": HUGE, "dialects": results}
