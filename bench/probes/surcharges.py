"""Issue 24 item 11: fields that change the vendor's price are not costed at list price."""

import http.client
import json

NAME = "surcharges"
ITEM = "24.11"
DESCRIPTION = ("on a $0.05 route: service_tier priority, Anthropic speed fast and inference_geo us, "
               "a Responses web_search tool; each is refused by name before dispatch (and sent on "
               "a route without a budget)")

CONFIG = """
[[providers]]
name = "primary"
kind = "openai"
model = "bench-model"
base_url = "http://127.0.0.1:MOCK/v1"
price = { input_per_mtok = 0.15, output_per_mtok = 0.6 }

[[providers]]
name = "responses"
kind = "openai"
api = "responses"
model = "bench-model"
base_url = "http://127.0.0.1:MOCK/v1"
price = { input_per_mtok = 0.15, output_per_mtok = 0.6 }

[[routes]]
name = "budgeted"
providers = ["primary"]
budget_usd = 0.05

[[routes]]
name = "budgeted-responses"
providers = ["responses"]
budget_usd = 0.05

[[routes]]
name = "open"
providers = ["primary"]
"""

HI = [{"role": "user", "content": "hi"}]
CASES = [
    ("service_tier", "/v1/chat/completions", {"messages": HI, "service_tier": "priority"}, "budgeted"),
    ("speed", "/v1/messages", {"messages": HI, "max_tokens": 16, "speed": "fast"}, "budgeted"),
    ("inference_geo", "/v1/messages", {"messages": HI, "max_tokens": 16, "inference_geo": "us"}, "budgeted"),
    ("tools[0].type", "/v1/responses", {"input": "news?", "tools": [{"type": "web_search"}]}, "budgeted-responses"),
]


def post(port, path, body):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST", path, json.dumps(body),
                     {"content-type": "application/json", "anthropic-version": "2023-06-01"})
        resp = conn.getresponse()
        data = json.loads(resp.read() or b"{}")
        cost = float(resp.getheader("x-switchyard-cost-usd") or 0)
        return resp.status, data, cost
    finally:
        conn.close()


def run(ctx):
    mock = ctx.mock()
    _, port = ctx.serve(CONFIG.replace("MOCK", str(mock)))
    results = {}
    for field, path, body, route in CASES:
        status, data, cost = post(port, path, dict(body, model=route))
        error = data.get("error") or {}
        named = error.get("param") == field or str(error.get("message", "")).startswith(f"{field}:")
        results[field] = {"status": status, "named": named, "cost_usd": cost}
    status, _, _ = post(port, "/v1/chat/completions", {"model": "open", "messages": HI, "service_tier": "priority"})
    held = all(r["status"] == 400 and r["named"] for r in results.values()) and status == 200
    return {"held": held, "budgeted": results, "unbudgeted_priority_status": status}
