"""Issue 24 item 13: stored conversations must not reset or inflate the budget books in Redis."""

import subprocess

from _http import get, post, provider

NAME = "redis_store_apart"
ITEM = "24.13"
DESCRIPTION = ("a budget Redis with maxmemory-policy allkeys-lru is refused at start; with stored "
               "conversations on their own small allkeys-lru Redis (store_url), 24 MB of stored "
               "responses leave the budget's books exact")

REQUESTS = 12        # budgeted chat requests between the stored responses
STORED = 240         # stored responses of ~100 KB each (about 3 times the store Redis's memory)

CONFIG = provider() + """
[[routes]]
name = "bench-model"
providers = ["primary"]
budget_usd = 100.0

[state]
backend = "redis"
url = "redis://127.0.0.1:BUDGET"
prefix = "probe"
timeout = "250ms"
STORE
"""


def redis(ctx, name, *args):
    port = ctx.free_port()
    cmd = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
           "--appendonly", "no", "--dir", str(ctx.run), *args]
    ctx.start(cmd, name, "Ready to accept connections")
    return port


def refused_on(ctx, config):
    """`serve` on `config`: (exited non-zero, what it said)."""
    path = ctx.run / "refused.toml"
    path.write_text(config)
    cmd = [str(ctx.switchyard), "serve", "--config", str(path), "--listen", f"127.0.0.1:{ctx.free_port()}"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        return False, "still serving after 30 s"
    return done.returncode != 0, done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""


def run(ctx):
    mock = ctx.mock()
    base = CONFIG.replace("MOCK", str(mock))

    evicting = redis(ctx, "redis-lru", "--maxmemory", "16mb", "--maxmemory-policy", "allkeys-lru")
    refused, said = refused_on(ctx, base.replace("BUDGET", str(evicting)).replace("STORE", ""))

    budget = redis(ctx, "redis-budget", "--maxmemory", "64mb", "--maxmemory-policy", "noeviction")
    store = redis(ctx, "redis-store", "--maxmemory", "8mb", "--maxmemory-policy", "allkeys-lru")
    config = base.replace("BUDGET", str(budget)).replace("STORE", f'store_url = "redis://127.0.0.1:{store}"')
    _, port = ctx.serve(config)

    costs, failures = 0.0, 0
    filler = "x" * 100_000
    for i in range(STORED):
        # every answer spends against the route's budget: the books must be their sum
        reply = post(port, "/v1/responses", {"model": "bench-model", "input": f"{i} {filler}",
                                             "store": True, "max_output_tokens": 16})
        failures += reply.status != 200
        costs += reply.cost
        if i % (STORED // REQUESTS) == 0:
            reply = post(port, "/v1/chat/completions", {
                "model": "bench-model", "max_tokens": 16,
                "messages": [{"role": "user", "content": "hi"}]})
            failures += reply.status != 200
            costs += reply.cost
    health = get(port, "/admin/health").json()
    spent = health.get("budgets", {}).get("bench-model", {}).get("spent_usd")
    state = health.get("state", {})
    exact = spent is not None and abs(spent - costs) < 1e-6
    held = refused and "allkeys-lru" in said and exact and state.get("connected") is True and failures == 0
    return {
        "held": held,
        "allkeys_lru_refused": refused,
        "refusal": said[:240],
        "stored_responses": STORED,
        "budgeted_chat_requests": REQUESTS,
        "failures": failures,
        "books_spent_usd": spent,
        "answers_cost_usd": round(costs, 9),
        "state_connected": state.get("connected"),
        "state_last_error": state.get("last_error"),
    }
