"""Issue 24 item 9: models that never answer must not use up a wildcard route's places."""

import http.client
import json

NAME = "wildcard_slots"
ITEM = "24.9"
DESCRIPTION = ("8 requests for made-up models (404 upstream) on a wildcard route with max_models = 8, "
               "then 8 real models from another client: every real one is answered")

CONFIG = """
[[providers]]
name = "openai"
kind = "openai"
model = "gpt-4.1-mini"
base_url = "http://127.0.0.1:MOCK/v1"

[[routes]]
name = "openai/*"
providers = ["openai"]
models = ["gpt-4.1*"]
max_models = 8
"""

# faultline: every model 404s (OpenAI's model_not_found) but the real ones
REAL = [f"gpt-4.1-real{i}" for i in range(8)]
SCRIPTS = [{"model": "*", "then": {"kind": "status", "status": 404, "code": "model_not_found",
                                   "message": "The model does not exist"}}]
SCRIPTS += [{"model": m, "then": {"kind": "ok"}} for m in REAL]


def chat(port, model):
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": "hi"}]})
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST", "/v1/chat/completions", body, {"content-type": "application/json"})
        resp = conn.getresponse()
        resp.read()
        return resp.status
    finally:
        conn.close()


def run(ctx):
    mock = ctx.mock(script=SCRIPTS)
    _, port = ctx.serve(CONFIG.replace("MOCK", str(mock)))
    bogus = [chat(port, f"openai/gpt-4.1-bogus{i}") for i in range(8)]
    real = [chat(port, f"openai/{m}") for m in REAL]
    again = [chat(port, f"openai/{m}") for m in REAL]
    return {
        "held": all(s == 200 for s in real + again),
        "bogus_statuses": sorted(set(bogus)),
        "real_answered": sum(s == 200 for s in real),
        "real_refused": sum(s == 404 for s in real),
        "real_answered_again": sum(s == 200 for s in again),
    }
