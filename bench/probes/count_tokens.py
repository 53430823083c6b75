"""Issue 24 item 17: count_tokens judges unknown fields as /v1/messages does, and goes
through the breaker."""

import http.server
import json
import threading

from _http import post

NAME = "count_tokens"
ITEM = "24.17"
DESCRIPTION = ("count_tokens with an unknown field (no beta) is refused before any upstream call; "
               "40 counts on a route whose first Anthropic provider is overloaded stop reaching it "
               "once its circuit opens")

CONFIG = """
[[providers]]
name = "claude-down"
kind = "anthropic"
model = "claude-probe"
api_key_env = "SWITCHYARD_PROBE_ANTHROPIC_KEY"
base_url = "http://127.0.0.1:PORT/down"

[[providers]]
name = "claude-up"
kind = "anthropic"
model = "claude-probe"
api_key_env = "SWITCHYARD_PROBE_ANTHROPIC_KEY"
base_url = "http://127.0.0.1:PORT/up"

[[routes]]
name = "claude"
providers = ["claude-down", "claude-up"]
"""


class Anthropic(http.server.BaseHTTPRequestHandler):
    """count_tokens: `/down` is overloaded (529), `/up` counts; every body is kept."""

    seen = []
    lock = threading.Lock()

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        with self.lock:
            Anthropic.seen.append((self.path, json.loads(body or b"{}")))
        if self.path.startswith("/down"):
            status, answer = 529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
        else:
            status, answer = 200, {"input_tokens": 12}
        out = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


def count(port, body):
    return post(port, "/v1/messages/count_tokens", body, headers={"anthropic-version": "2023-06-01"}).status


def run(ctx):
    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Anthropic)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    try:
        _, port = ctx.serve(CONFIG.replace("PORT", str(upstream.server_address[1])),
                            env={"SWITCHYARD_PROBE_ANTHROPIC_KEY": "sk-ant-probe"})
        hi = [{"role": "user", "content": "hi"}]
        unknown_status = count(port, {"model": "claude", "messages": hi, "bogus": "x" * 1000})
        leaked = sum(1 for _, body in Anthropic.seen if "bogus" in body)
        statuses = {}
        for _ in range(40):
            s = str(count(port, {"model": "claude", "messages": hi}))
            statuses[s] = statuses.get(s, 0) + 1
        to_down = sum(1 for path, _ in Anthropic.seen if path.startswith("/down"))
        held = unknown_status == 400 and leaked == 0 and to_down <= 6 and statuses.get("200") == 40
        return {"held": held, "unknown_field_status": unknown_status, "unknown_field_sent": leaked,
                "calls_to_overloaded_provider": to_down, "statuses": statuses}
    finally:
        upstream.shutdown()
