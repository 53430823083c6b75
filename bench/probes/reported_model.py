"""Issue 24 item 14: the model name an upstream reports must be bounded in the answer, the trail
and the request log."""

import http.server
import json
import threading
import time

from _http import post, provider

NAME = "reported_model"
ITEM = "24.14"
DESCRIPTION = ("an upstream answering with a 4 MiB `model`: the answer, its attempts[].model and the "
               "request-log line stay small (the name cut to 256 bytes with a marker)")

HUGE = 4 << 20

CONFIG = """
[server]
request_log = "{run}/requests.jsonl"

""" + provider("vendor") + """
[[routes]]
name = "bench-model"
providers = ["vendor"]
"""


class HugeModel(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible upstream whose every answer names a 4 MiB model."""

    body = json.dumps({
        "id": "chatcmpl-probe", "object": "chat.completion", "created": 1764410400,
        "model": "m" * HUGE,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
    }).encode()

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args):
        pass


def run(ctx):
    mock = http.server.ThreadingHTTPServer(("127.0.0.1", 0), HugeModel)
    threading.Thread(target=mock.serve_forever, daemon=True).start()
    try:
        _, port = ctx.serve(CONFIG.replace("MOCK", str(mock.server_address[1])))
        resp = post(port, "/v1/chat/completions",
                    {"model": "bench-model", "messages": [{"role": "user", "content": "hi"}]})
        answer = resp.data
        log_path = ctx.run / "requests.jsonl"
        line = ""
        for _ in range(100):
            text = log_path.read_text() if log_path.exists() else ""
            if text.strip():
                line = text.splitlines()[0]
                break
            time.sleep(0.05)
    finally:
        mock.shutdown()
    data = json.loads(answer or b"{}")
    model = data.get("model") or ""
    trail_model = ((data.get("switchyard") or {}).get("attempts") or [{}])[0].get("model") or ""
    held = (resp.status == 200 and len(answer) < 8192 and 0 < len(line) < 8192
            and len(model.encode()) < 300 and len(trail_model.encode()) < 300)
    return {
        "held": held,
        "status": resp.status,
        "reported_model_bytes": HUGE,
        "answer_bytes": len(answer),
        "answer_model_bytes": len(model.encode()),
        "attempts_model_bytes": len(trail_model.encode()),
        "log_line_bytes": len(line),
    }
