"""Issue 24 item 11: fields that change the vendor's price are not costed at list price."""

from _http import post, provider

NAME = "surcharges"
ITEM = "24.11"
DESCRIPTION = ("on a $0.05 route: service_tier priority, Anthropic speed fast and inference_geo us, "
               "a Responses web_search tool; each is refused by name before dispatch (and sent on "
               "a route without a budget)")

CONFIG = provider() + provider("responses", extra='api = "responses"') + """
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
ANTHROPIC = {"anthropic-version": "2023-06-01"}
CASES = [
    ("service_tier", "/v1/chat/completions", {"messages": HI, "service_tier": "priority"}, "budgeted"),
    ("speed", "/v1/messages", {"messages": HI, "max_tokens": 16, "speed": "fast"}, "budgeted"),
    ("inference_geo", "/v1/messages", {"messages": HI, "max_tokens": 16, "inference_geo": "us"}, "budgeted"),
    ("tools[0].type", "/v1/responses", {"input": "news?", "tools": [{"type": "web_search"}]}, "budgeted-responses"),
]


def run(ctx):
    mock = ctx.mock()
    _, port = ctx.serve(CONFIG.replace("MOCK", str(mock)))
    results = {}
    for field, path, body, route in CASES:
        reply = post(port, path, dict(body, model=route), headers=ANTHROPIC)
        error = reply.json().get("error") or {}
        named = error.get("param") == field or str(error.get("message", "")).startswith(f"{field}:")
        results[field] = {"status": reply.status, "named": named, "cost_usd": reply.cost}
    status = post(port, "/v1/chat/completions", {"model": "open", "messages": HI, "service_tier": "priority"}).status
    held = all(r["status"] == 400 and r["named"] for r in results.values()) and status == 200
    return {"held": held, "budgeted": results, "unbudgeted_priority_status": status}
