"""Issue 24 item 7: an embeddings fan-out whose last call fails must record what it spent."""

import http.server
import json
import threading

from _http import get, post

NAME = "embed_fanout_spend"
ITEM = "24.7"
DESCRIPTION = ("2,048 inputs to Bedrock Titan (one input per call) whose last call fails on both "
               "attempts: the 2,047 billed calls are in the log and the budget; when it fails once, "
               "the route's retry sends only that call")

INPUTS = 2048

CONFIG = """
[server]
request_log = "{run}/requests.jsonl"

[[providers]]
name = "titan"
kind = "bedrock"
region = "us-east-1"
model = "amazon.titan-embed-text-v2:0"
base_url = "http://127.0.0.1:MOCK"
serves = ["embeddings"]
price = { input_per_mtok = 0.02, output_per_mtok = 0.0 }

[[routes]]
name = "embed"
providers = ["titan"]
budget_usd = 10.0
retry = { max_attempts = 2, base_delay = "10ms", max_delay = "20ms" }
"""

ENV = {"AWS_ACCESS_KEY_ID": "AKIAPROBEPROBEPROBE00", "AWS_SECRET_ACCESS_KEY": "probe-secret-key-not-real-0000000000000"}


class Titan(http.server.BaseHTTPRequestHandler):
    """Titan's InvokeModel: `[len(text)]` and its token count; `last` fails its first
    `failures` times."""

    calls = 0
    failures = 2
    lock = threading.Lock()

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        text = body.get("inputText", "")
        with Titan.lock:
            Titan.calls += 1
            fail = text == "last" and Titan.failures > 0
            Titan.failures -= fail
        if fail:
            out, status = {"message": "Service unavailable"}, 503
        else:
            out, status = {"embedding": [len(text), 1.0], "inputTextTokenCount": len(text)}, 200
        data = json.dumps(out).encode()
        self.send_response(status)
        if status != 200:
            self.send_header("x-amzn-ErrorType", "ServiceUnavailableException")
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def embed(port, texts):
    return post(port, "/v1/embeddings", {"model": "embed", "input": texts}, timeout=120).status


def run(ctx):
    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Titan)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    try:
        _, port = ctx.serve(CONFIG.replace("MOCK", str(upstream.server_address[1])), env=ENV)
        texts = [f"input {i:04d}" for i in range(INPUTS - 1)] + ["last"]
        failed_status = embed(port, texts)  # `last` fails on both attempts
        calls_failed = Titan.calls
        health = get(port, "/admin/health").json()
        spent = health.get("budgets", {}).get("embed", {}).get("spent_usd")
        lines = [json.loads(l) for l in (ctx.run / "requests.jsonl").read_text().splitlines() if l.strip()]
        logged = lines[-1].get("cost_usd") if lines else None
        expected = sum(len(t) for t in texts[:-1]) * 0.02 / 1e6
        Titan.failures, Titan.calls = 1, 0
        ok_status = embed(port, texts)  # `last` fails once: the retry sends it alone
        calls_retried = Titan.calls
    finally:
        upstream.shutdown()
    close = lambda a, b: a is not None and abs(a - b) < 1e-9
    held = (failed_status != 200 and close(spent, expected) and close(logged, expected)
            and ok_status == 200 and calls_retried == INPUTS + 1)
    return {
        "held": held,
        "inputs": INPUTS,
        "failed_status": failed_status,
        "upstream_calls_failed_request": calls_failed,
        "budget_spent_usd": spent,
        "log_cost_usd": logged,
        "answered_calls_cost_usd": round(expected, 12),
        "retried_request_status": ok_status,
        "upstream_calls_retried_request": calls_retried,
    }
