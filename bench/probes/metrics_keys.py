"""Issue 24 item 12: `/metrics` must not show every key's spend to anyone in keys mode."""

import hashlib
import http.client
import json

NAME = "metrics_keys"
ITEM = "24.12"
DESCRIPTION = ("keys mode: GET /metrics without a key, with a client key, with an admin key and with "
               "the metrics token; only the last two see the keys' names and spend")

TEAM = "sy-probe-team-token-0123456789abcdef0123456789abcdef"
OPS = "sy-probe-ops-token-0123456789abcdef0123456789abcdef0"
SCRAPER = "sy-probe-scraper-token-0123456789abcdef0123456789ab"

TOKEN_CONFIG = """
[telemetry]
metrics_token_env = "SWITCHYARD_PROBE_METRICS_TOKEN"
"""

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

[[keys]]
name = "team-secret-project"
sha256 = "TEAM_HASH"
routes = ["*"]
budget_usd = 5.0

[[keys]]
name = "ops"
sha256 = "OPS_HASH"
routes = []
admin = true
"""


def request(port, method, path, token=None, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    headers = {"content-type": "application/json"}
    if token:
        headers["authorization"] = f"Bearer {token}"
    try:
        conn.request(method, path, body, headers)
        resp = conn.getresponse()
        return resp.status, resp.read().decode(errors="replace")
    finally:
        conn.close()


def exposure(port, who_tokens):
    """Who (of `who_tokens`) gets `/metrics` with the keys' budgets in it."""
    seen = {}
    for who, token in who_tokens:
        status, text = request(port, "GET", "/metrics", token)
        seen[who] = {"status": status, "shows_budgets": "switchyard_budget_remaining_usd" in text}
    return seen


def run(ctx):
    mock = ctx.mock()
    config = (CONFIG.replace("MOCK", str(mock))
              .replace("TEAM_HASH", hashlib.sha256(TEAM.encode()).hexdigest())
              .replace("OPS_HASH", hashlib.sha256(OPS.encode()).hexdigest()))
    _, port = ctx.serve(config)
    chat = json.dumps({"model": "bench-model", "messages": [{"role": "user", "content": "hi"}]})
    request(port, "POST", "/v1/chat/completions", TEAM, chat)
    seen = exposure(port, [("anonymous", None), ("client key", TEAM), ("admin key", OPS)])
    ctx.stop()
    try:
        _, port = ctx.serve(TOKEN_CONFIG + config, name="switchyard-token",
                            env={"SWITCHYARD_PROBE_METRICS_TOKEN": SCRAPER})
        seen.update(exposure(port, [("metrics token", SCRAPER), ("wrong token", SCRAPER[:-1] + "x")]))
    except (Exception, SystemExit) as e:  # a build without metrics_token_env refuses it
        seen["metrics token"] = {"error": str(e)[:200]}
    exposed = [who for who in ("anonymous", "client key", "wrong token") if seen.get(who, {}).get("shows_budgets")]
    readable = all(seen.get(who, {}).get("shows_budgets") for who in ("admin key", "metrics token"))
    return {"held": not exposed and readable, "exposed_to": exposed, "seen": seen}
