"""Issue 24 item 3: `n` must not escape a budget's reservation."""

import concurrent.futures

from _http import post, provider

NAME = "n_budget"
ITEM = "24.3"
DESCRIPTION = "20 concurrent n=128, max_tokens=1000 requests on a $0.05 route: spend stays under the budget"

CONFIG = """
[server]
request_log = "{run}/requests.jsonl"
""" + provider() + """
[[routes]]
name = "bench-model"
providers = ["primary"]
budget_usd = 0.05
"""


def one(port):
    reply = post(port, "/v1/chat/completions", {"model": "bench-model", "n": 128, "max_tokens": 1000,
                                               "messages": [{"role": "user", "content": "hi"}]})
    return reply.status, reply.cost if reply.status == 200 else 0.0, len(reply.data)


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
