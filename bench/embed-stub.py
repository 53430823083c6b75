#!/usr/bin/env python3
"""bench/embed-stub.py PORT: a deterministic OpenAI embeddings upstream for bench/count.

faultline has no embeddings endpoint; this answers `POST .../embeddings` over HTTP/1.1
keep-alive with one vector per input (`dimensions` floats, default 1536; the same values
for every request) and OpenAI's usage, and 404 to anything else. Prints
"embed-stub listening on PORT" once bound. Standard library only; 127.0.0.1 only.
"""
import http.server
import json
import sys

VECTORS = {}


def vector(dims):
    """The same `dims` floats every time (6 significant digits, like OpenAI's)."""
    if dims not in VECTORS:
        VECTORS[dims] = [round(((k * 7919) % 2000 - 1000) / 1000 * 0.0625, 6) or 0.001 for k in range(dims)]
    return VECTORS[dims]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        if not self.path.endswith("/embeddings"):
            return self.answer(404, b'{"error":{"message":"not found","type":"invalid_request_error"}}')
        req = json.loads(body)
        inputs = req["input"] if isinstance(req["input"], list) and req["input"] and not isinstance(req["input"][0], int) else [req["input"]]
        tokens = sum(len(i.split()) if isinstance(i, str) else len(i) for i in inputs)
        dims = int(req.get("dimensions") or 1536)
        out = {
            "object": "list",
            "data": [{"object": "embedding", "index": k, "embedding": vector(dims)} for k in range(len(inputs))],
            "model": req["model"],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }
        self.answer(200, json.dumps(out, separators=(",", ":")).encode())

    def answer(self, status, data):
        # head and body in one write: in two, whether the gateway reads them at once or
        # wakes twice depends on timing, which moved bench/count's embeddings count by ~2 %
        reason = {200: "OK", 404: "Not Found"}[status]
        head = f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {len(data)}\r\n\r\n"
        self.wfile.write(head.encode() + data)

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    server = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    print(f"embed-stub listening on {server.server_address[1]}", flush=True)
    server.serve_forever()
