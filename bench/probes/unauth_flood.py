"""Issue 24 item 15: a flood of unauthenticated requests must not write a log line each."""

import concurrent.futures
import http.client
import json
import time

from _http import get, key, provider, route

NAME = "unauth_flood"
ITEM = "24.15"
DESCRIPTION = ("keys mode, request log and access log on: 4,000 requests without a valid key (half "
               "missing, half invalid) write a few lines, not one each, and are all counted")

OPS = "sy-probe-unauth-ops-0123456789abcdef0123456789abcdef"
REQUESTS = 4000
THREADS = 8

CONFIG = """
[server]
request_log = "{run}/requests.jsonl"

[telemetry]
access_log = true
""" + provider() + route("bench-model", ["primary"]) + key("ops", OPS, routes="[]", extra="admin = true")


def flood(port, n, worker):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    body = json.dumps({"model": "bench-model", "messages": [{"role": "user", "content": "hi"}]})
    statuses = {}
    for i in range(n):
        headers = {"content-type": "application/json"}
        if (i + worker) % 2:
            headers["authorization"] = f"Bearer sy-wrong-{i}"
        # a connection the server closed after a refusal loses the request sent on it next:
        # sent again once on a fresh connection
        for _ in range(2):
            try:
                conn.request("POST", "/v1/chat/completions", body, headers)
                resp = conn.getresponse()
                resp.read()
                statuses[resp.status] = statuses.get(resp.status, 0) + 1
                break
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.close()
    return statuses


def metric(port, name):
    text = get(port, "/metrics", token=OPS, timeout=10).text()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name))


def run(ctx):
    mock = ctx.mock()
    config = CONFIG.replace("MOCK", str(mock))
    _, port = ctx.serve(config)
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(THREADS) as pool:
        results = list(pool.map(lambda w: flood(port, REQUESTS // THREADS, w), range(THREADS)))
    secs = time.monotonic() - started
    counted = metric(port, "switchyard_unauthenticated_total")
    ctx.stop()
    log_lines = (ctx.run / "requests.jsonl").read_text().count("\n")
    output = ctx.log_text("switchyard")
    access_lines = sum(1 for line in output.splitlines() if line.startswith("{") and '"status":401' in line)
    statuses = {}
    for r in results:
        for k, v in r.items():
            statuses[str(k)] = statuses.get(str(k), 0) + v
    # at most the first of each of the two reasons per second (and the window in progress)
    allowed = 2 * (int(secs) + 2)
    refused = statuses.get("401", 0)
    held = refused >= REQUESTS * 0.95 and log_lines <= allowed and counted == refused
    return {"held": held, "requests": REQUESTS, "secs": round(secs, 2), "statuses": statuses,
            "request_log_lines": log_lines, "access_log_lines": access_lines, "allowed_lines": allowed,
            "counted_by_metric": counted, "summary_said": "more unauthenticated request" in output}
