"""Issue 24 item 16: every dialect checks `model` against the 256-character bound before it uses it."""

import http.client
import json
import re

NAME = "model_bound"
ITEM = "24.16"
DESCRIPTION = ("a 1 MiB `model` on chat, responses, messages, count_tokens and embeddings: each a small "
               "400 naming `model`, none a 404 quoting it")

HUGE = 1 << 20

CONFIG = """
[[providers]]
name = "primary"
kind = "openai"
model = "bench-model"
base_url = "http://127.0.0.1:MOCK/v1"
price = { input_per_mtok = 0.15, output_per_mtok = 0.6 }

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
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            conn.request("POST", path, json.dumps(dict(body, model="m" * HUGE)),
                         {"content-type": "application/json", "anthropic-version": "2023-06-01"})
            resp = conn.getresponse()
            answer = resp.read()
        finally:
            conn.close()
        error = json.loads(answer or b"{}").get("error") or {}
        message = str(error.get("message", ""))
        results[name] = {"status": resp.status, "answer_bytes": len(answer),
                         "model_bytes_quoted": max((len(run) for run in re.findall("m+", message)), default=0),
                         "names_model": message.startswith("model:")}
    held = all(r["status"] == 400 and r["names_model"] and r["answer_bytes"] < 512 for r in results.values())
    return {"held": held, "model_bytes": HUGE, "dialects": results}
