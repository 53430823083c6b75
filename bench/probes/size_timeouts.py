"""Issue 24 item 10: a client must not open a shared circuit by asking for answers long enough to
time out."""

import json
import time

from _http import get, post, provider

NAME = "size_timeouts"
ITEM = "24.10"
DESCRIPTION = ("4 requests with max_tokens 30000 to a provider that writes slowly (a plain answer takes "
               "~12 s) past its 3 s timeout: its circuit stays closed and each request fails over; "
               "3 requests with max_tokens 50 still open it")

CONFIG = """
[server]
request_log = "{run}/requests.jsonl"

""" + provider(model="slow-model", extra='timeout = "3s"') + provider("backup") + """
[[routes]]
name = "chat"
providers = ["primary", "backup"]
deadline = "30s"
"""


def ask(port, max_tokens):
    """One plain request: (status, the trail's first attempt as `provider:outcome`)."""
    reply = post(port, "/v1/chat/completions", {"model": "chat", "max_tokens": max_tokens,
                 "messages": [{"role": "user", "content": "write it all"}]}, timeout=40)
    data = reply.json()
    attempts = (data.get("switchyard") or {}).get("attempts") or [{}]
    first = attempts[0]
    outcome = first.get("outcome")
    label = outcome if isinstance(outcome, str) else json.dumps(outcome, sort_keys=True)
    return reply.status, f"{first.get('provider')}:{label}"


def circuit(port):
    health = get(port, "/admin/health", timeout=10).json()
    return next(p["state"] for p in health["providers"] if p["name"] == "primary")


def run(ctx):
    slow = {"model": "slow-model", "then": {"kind": "slow", "first_token_ms": 0, "token_ms": 200}}
    mock = ctx.mock(script=slow)
    _, port = ctx.serve(CONFIG.replace("MOCK", str(mock)))
    start = time.monotonic()
    long_asks = [ask(port, 30_000) for _ in range(4)]
    after_long = circuit(port)
    short_asks = [ask(port, 50) for _ in range(3)]
    after_short = circuit(port)
    # the fourth long request still reached the primary (failed over from a timeout there),
    # rather than being skipped as circuit_open
    reached = sum(1 for _, first in long_asks if first.startswith("primary:") and "circuit_open" not in first)
    held = after_long == "closed" and reached == 4 and after_short == "open"
    return {
        "held": held,
        "long_requests": len(long_asks),
        "long_statuses": sorted({s for s, _ in long_asks}),
        "long_requests_reaching_primary": reached,
        "circuit_after_long": after_long,
        "circuit_after_3_short": after_short,
        "first_attempts": [first for _, first in long_asks + short_asks],
        "secs": round(time.monotonic() - start, 1),
    }
