"""Issue 24 item 8: a Vertex OAuth token must not leak from an off-spec token answer."""

import http.client
import http.server
import json
import threading

NAME = "vertex_token_leak"
ITEM = "24.8"
DESCRIPTION = ("a Vertex token endpoint answers a good access_token with expires_in as a string: "
               "the token appears in no 502 body, log line or admin view")

TOKEN = "ya29.a0AfB_byProbeHostileVertexToken0123456789"

CONFIG = """
[server]
request_log = "{run}/requests.jsonl"

[[providers]]
name = "vertex"
kind = "vertex"
project = "probe"
location = "us-central1"
model = "gemini-2.5-flash"
base_url = "http://127.0.0.1:PORT/v1"
credentials_env = "SWITCHYARD_PROBE_VERTEX_KEY_FILE"

[[routes]]
name = "gem"
providers = ["vertex"]
retry = { max_attempts = 1 }
"""


class TokenEndpoint(http.server.BaseHTTPRequestHandler):
    """Google's token endpoint, off-spec: `expires_in` is a string."""

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length") or 0))
        body = json.dumps({"access_token": TOKEN, "expires_in": "3599", "token_type": "Bearer"}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def get(port, path):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read().decode(errors="replace")
    finally:
        conn.close()


def run(ctx):
    google = http.server.ThreadingHTTPServer(("127.0.0.1", 0), TokenEndpoint)
    threading.Thread(target=google.serve_forever, daemon=True).start()
    try:
        port = google.server_address[1]
        pem = (ctx.root / "crates/switchyard/tests/fixtures/vertex/TEST-ONLY-private-key.pem").read_text()
        key_file = ctx.run / "sa.json"
        key_file.write_text(json.dumps({
            "type": "service_account", "project_id": "probe", "private_key_id": "k1",
            "private_key": pem, "client_email": "probe@probe.iam.gserviceaccount.com",
            "client_id": "1", "token_uri": f"http://127.0.0.1:{port}/token"}))
        _, sy = ctx.serve(CONFIG.replace("PORT", str(port)),
                          env={"SWITCHYARD_PROBE_VERTEX_KEY_FILE": str(key_file)})
        conn = http.client.HTTPConnection("127.0.0.1", sy, timeout=30)
        body = json.dumps({"model": "gem", "messages": [{"role": "user", "content": "hi"}]})
        conn.request("POST", "/v1/chat/completions", body, {"content-type": "application/json"})
        resp = conn.getresponse()
        places = {"502 body": resp.read().decode(errors="replace")}
        status = resp.status
        conn.close()
        for path in ["/admin/requests", "/admin/health", "/admin/overview", "/metrics"]:
            places[path] = get(sy, path)[1]
        ctx.stop()  # the request log is complete once the server has stopped
        places["request log"] = (ctx.run / "requests.jsonl").read_text()
        places["stderr"] = ctx.log_text("switchyard")
        leaks = sorted(place for place, text in places.items() if TOKEN[5:25] in text)
        return {"held": status == 502 and not leaks, "status": status, "leaks": leaks}
    finally:
        google.shutdown()
