"""Issue 24 item 12: `/metrics` must not show every key's spend to anyone in keys mode."""

from _http import call, key, provider, route

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

CONFIG = (provider() + route("bench-model", ["primary"])
          + key("team-secret-project", TEAM, extra="budget_usd = 5.0")
          + key("ops", OPS, routes="[]", extra="admin = true"))


def exposure(port, who_tokens):
    """Who (of `who_tokens`) gets `/metrics` with the keys' budgets in it."""
    seen = {}
    for who, token in who_tokens:
        reply = call(port, "GET", "/metrics", token=token, timeout=10)
        seen[who] = {"status": reply.status, "shows_budgets": "switchyard_budget_remaining_usd" in reply.text()}
    return seen


def run(ctx):
    mock = ctx.mock()
    config = CONFIG.replace("MOCK", str(mock))
    _, port = ctx.serve(config)
    chat = {"model": "bench-model", "messages": [{"role": "user", "content": "hi"}]}
    call(port, "POST", "/v1/chat/completions", chat, token=TEAM, timeout=10)
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
