"""Issue 24 item 3: `n` must not escape a budget's reservation."""

import concurrent.futures
import http.client
import json

NAME = "n_budget"
ITEM = "24.3"
DESCRIPTION = "20 concurrent n=128, max_tokens=1000 requests on a $0.05 route: spend stays under the budget"

CONFIG = """
[server]
request_log = "{run}/requests.jsonl"

[[providers]]
name = "primary"
kind = "openai"
model = "bench-model"
base_url = "http://127.0.0.1:MOCK/v1"
price = { input_per_mtok = 0.15, output_per_mtok = 0.6 }

[[routes]]
name = "bench-model"
providers = ["primary"]
budget_usd = 0.05
"""


def one(port):
    body = json.dumps({"model": "bench-model", "n": 128, "max_tokens": 1000,
                       "messages": [{"role": "user", "content": "hi"}]})
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST", "/v1/chat/completions", body, {"content-type": "application/json"})
        resp = conn.getresponse()
        data = resp.read()
        cost = float(resp.getheader("x-switchyard-cost-usd") or 0) if resp.status == 200 else 0.0
        return resp.status, cost, len(data)
    finally:
        conn.close()


def run(ctx):
    mock = ctx.mock()
    _, port = ctx.serve(CONFIG.replace("MOCK", str(mock)))
    with concurrent.futures.ThreadPoolExecutor(20) as pool:
        answers = list(pool.map(lambda _: one(port), range(20)))
    spent = sum(cost for _, cost, _ in answers)
    statuses = {}
    for status, _, _ in answers:
        statuses[str(status)] = statuses.get(str(status), 0) + 1
    return {"held": spent <= 0.05, "spent_usd": round(spent, 6), "budget_usd": 0.05, "statuses": statuses}
