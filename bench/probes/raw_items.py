"""Issue 24 item 4: input items the shared shape does not model go upstream in the client's own
body, so a budget's reservation must count them."""

import http.server
import json
import threading
import time

from _http import get, key, post as send, provider, route

NAME = "raw_items"
ITEM = "24.4"
DESCRIPTION = ("a 3 MiB custom_tool_call_output (max_output_tokens 100) on a $0.01 key, a $0.05 route and both, "
               "and a 3 MiB key under an anthropic-beta on a $0.05 route: refused before dispatch; "
               "unbudgeted, the same request costs $1.57 (an upstream counting 4 bytes a token), and on "
               "a $100 route it reserves more than it spends")

BIG = 3 << 20
CAPPED = "sy-probe-capped-token-0123456789abcdef0123456789abcdef"
OPEN = "sy-probe-open-token-0123456789abcdef0123456789abcdef00"
OPS = "sy-probe-ops-token-0123456789abcdef0123456789abcdef000"

CONFIG = (provider("responses", model="gpt-probe", port="PORT", price=(2.0, 8.0), extra='api = "responses"')
          + provider("claude", kind="anthropic", model="claude-probe", port="PORT", price=(3.0, 15.0), path="",
                     extra='api_key_env = "SWITCHYARD_PROBE_ANTHROPIC_KEY"')
          + route("capped", ["responses"], "budget_usd = 0.05")
          + route("claude-capped", ["claude"], "budget_usd = 0.05")
          + route("wide", ["responses"], "budget_usd = 100.0")
          + route("open", ["responses"])
          + key("capped-key", CAPPED, extra="budget_usd = 0.01")
          + key("open-key", OPEN)
          + key("ops", OPS, routes="[]", extra="admin = true"))


class Upstream(http.server.BaseHTTPRequestHandler):
    """OpenAI Responses and Anthropic Messages, reporting a token per 4 bytes of the body it got
    (as a vendor's tokenizer roughly does for text); `delay` seconds before answering."""

    calls = 0
    delay = 0.0
    lock = threading.Lock()

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        with self.lock:
            Upstream.calls += 1
        time.sleep(Upstream.delay)
        tokens = (len(body) + 3) // 4
        if self.path.endswith("/responses"):
            answer = {"id": "resp_probe", "object": "response", "created_at": 1764410400,
                      "status": "completed", "model": "gpt-probe",
                      "output": [{"type": "message", "id": "msg_probe", "role": "assistant",
                                  "status": "completed",
                                  "content": [{"type": "output_text", "text": "ok", "annotations": []}]}],
                      "usage": {"input_tokens": tokens, "output_tokens": 1, "total_tokens": tokens + 1}}
        else:
            answer = {"id": "msg_probe", "type": "message", "role": "assistant", "model": "claude-probe",
                      "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
                      "stop_sequence": None, "usage": {"input_tokens": tokens, "output_tokens": 1}}
        out = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


def responses_body(route):
    return {"model": route, "max_output_tokens": 100, "input": [
        {"type": "custom_tool_call", "call_id": "c1", "name": "grep", "input": "TODO"},
        {"type": "custom_tool_call_output", "call_id": "c1", "output": "x" * BIG},
        {"role": "user", "content": "summarise"}]}


def messages_body(route):
    return {"model": route, "max_tokens": 100, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "hi", "future_context": "x" * BIG}]}]}


def post(port, path, body, token, beta=None):
    headers = {"anthropic-version": "2023-06-01"}
    if beta:
        headers["anthropic-beta"] = beta
    reply = send(port, path, body, headers=headers, token=token, timeout=60)
    return reply.status, reply.cost if reply.status == 200 else 0.0, reply.json()


def wide_books(port):
    data = get(port, "/admin/health", token=OPS, timeout=10).json()
    return (data.get("budgets") or {}).get("wide") or {}


def refused(port, path, body, token, beta=None):
    before = Upstream.calls
    status, cost, data = post(port, path, body, token, beta)
    error = data.get("error") or {}
    return {"status": status, "spent_usd": cost, "sent_upstream": Upstream.calls - before,
            "error": str(error.get("message", ""))[:160]}


def run(ctx):
    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    config = CONFIG.replace("PORT", str(upstream.server_address[1]))
    try:
        _, port = ctx.serve(config, env={"SWITCHYARD_PROBE_ANTHROPIC_KEY": "sk-ant-probe"})
        by_key = refused(port, "/v1/responses", responses_body("open"), CAPPED)
        by_route = refused(port, "/v1/responses", responses_body("capped"), OPEN)
        both = refused(port, "/v1/responses", responses_body("capped"), CAPPED)
        beta = refused(port, "/v1/messages", messages_body("claude-capped"), OPEN, beta="future-2026-01-01")
        # what the budget would have paid: the same request where no budget applies
        status, true_cost, data = post(port, "/v1/responses", responses_body("open"), OPEN)
        true_tokens = (data.get("usage") or {}).get("input_tokens")
        # reserved at its true size: the books of a $100 route while the request is in flight
        Upstream.delay = 1.5
        peak = {}
        done = {}
        t = threading.Thread(target=lambda: done.update(
            zip(("status", "cost", "data"), post(port, "/v1/responses", responses_body("wide"), OPEN))))
        t.start()
        while t.is_alive():
            books = wide_books(port)
            if books.get("reserved_usd", 0) > peak.get("reserved_usd", 0):
                peak = books
            time.sleep(0.1)
        t.join()
        after = wide_books(port)
    finally:
        upstream.shutdown()
    reserved = peak.get("reserved_usd", 0.0)
    held = (all(c["status"] == 402 and c["sent_upstream"] == 0 for c in (by_key, by_route, both, beta))
            and done.get("status") == 200 and reserved >= after.get("spent_usd", 0) > 0)
    return {
        "held": held,
        "body_bytes": BIG,
        "key_cap_0.01": by_key,
        "route_budget_0.05": by_route,
        "key_0.01_and_route_0.05": both,
        "messages_beta_key_route_0.05": beta,
        "unbudgeted": {"status": status, "cost_usd": true_cost, "input_tokens": true_tokens},
        "route_budget_100": {"status": done.get("status"), "reserved_usd_in_flight": round(reserved, 6),
                             "spent_usd": after.get("spent_usd"), "reserved_usd_after": after.get("reserved_usd")},
    }
