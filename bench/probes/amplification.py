"""Issue 24 item 2: memory amplification. Request bodies made of tiny items, and a tiny
request continuing a large stored conversation, must not make the process hold many times
what the requests carry."""

import http.client
import json
import threading
import time

from _http import post, provider

NAME = "amplification"
ITEM = "24.2"
DESCRIPTION = ("16 concurrent 4 MiB bodies of ~131,000 tiny items on /v1/responses, /v1/messages and "
               "chat, then 16 at the items bound ([server] max_request_items) on each, then 16 ~100-byte "
               "Responses requests continuing an ~8 MiB stored conversation; peak and after RSS")

CONFIG = """
[server]
max_body_bytes = 4194304
""" + provider() + """
[[routes]]
name = "bench-model"
providers = ["primary"]
"""

CONCURRENT = 16
BODY = 4 * 1024 * 1024 - 4096
# what one request may make the process hold, above the idle server, on average over the 16
# (the bodies themselves are 4 MiB each): the bound this probe holds the server to
PEAK_PER_REQUEST_MB = 40
PATHS = {"responses": ("/v1/responses", "input"), "messages": ("/v1/messages", "messages"),
         "chat": ("/v1/chat/completions", "messages")}


def body(path_key, item_bytes):
    """A body of user messages of `item_bytes` each, filling BODY."""
    _, field = PATHS[path_key]
    pad = max(1, item_bytes - len('{"role":"user","content":""},'))
    item = json.dumps({"role": "user", "content": "x" * pad}, separators=(",", ":"))
    n = BODY // (len(item) + 1)
    head = {"model": "bench-model"}
    if path_key == "messages":
        head["max_tokens"] = 16
    text = json.dumps(head, separators=(",", ":"))[:-1] + f',"{field}":[' + ",".join([item] * n) + "]}"
    return text.encode(), n


def send(port, path, data, out):
    try:
        reply = post(port, path, data, headers={"anthropic-version": "2023-06-01"}, timeout=120)
        out.append((reply.status, reply.data[:300].decode(errors="replace")))
    except (OSError, http.client.HTTPException) as e:
        out.append((0, str(e)))


class Sampler(threading.Thread):
    def __init__(self, ctx, pid):
        super().__init__(daemon=True)
        self.ctx, self.pid, self.peak, self.stop = ctx, pid, 0, threading.Event()

    def run(self):
        while not self.stop.is_set():
            self.peak = max(self.peak, self.ctx.rss_kb(self.pid) or 0)
            time.sleep(0.02)


def burst(ctx, pid, port, path, datas):
    """Send `datas` at once; (peak RSS MB, RSS MB 2 s after, statuses, a sample answer)."""
    sampler = Sampler(ctx, pid)
    sampler.start()
    out = []
    threads = [threading.Thread(target=send, args=(port, path, d, out)) for d in datas]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    time.sleep(2)
    sampler.stop.set()
    sampler.join()
    statuses = {}
    for status, _ in out:
        statuses[str(status)] = statuses.get(str(status), 0) + 1
    sample = next((text for status, text in out if status != 200), out[0][1] if out else "")
    return round(sampler.peak / 1024, 1), round((ctx.rss_kb(pid) or 0) / 1024, 1), statuses, sample[:200]


def stored(port, previous, n, item_bytes):
    """Store a response whose input is `n` messages of `item_bytes` (continuing `previous`):
    its id, or None and why."""
    item = {"role": "user", "content": "y" * item_bytes}
    req = {"model": "bench-model", "input": [item] * n}
    if previous:
        req["previous_response_id"] = previous
    reply = post(port, "/v1/responses", req, timeout=120)
    if reply.status != 200:
        return None, f"{reply.status} {reply.data[:200]}"
    answer = reply.json()
    if not answer.get("switchyard", {}).get("stored", True):
        return None, "not stored"
    return answer.get("id"), None


def fresh(ctx, mock, name):
    """A server of its own for one scenario (RSS freed by a burst is not all given back to the
    OS, so each burst is measured from a fresh process): (pid, port, idle RSS MB)."""
    proc, port = ctx.serve(CONFIG.replace("MOCK", str(mock)), name=name)
    time.sleep(0.5)
    return proc.pid, port, round((ctx.rss_kb(proc.pid) or 0) / 1024, 1)


def measured(ctx, pid, port, idle, path, datas, **extra):
    peak, after, statuses, sample = burst(ctx, pid, port, path, datas)
    per_request = round((peak - idle) / CONCURRENT, 1)
    return {**extra, "idle_rss_mb": idle, "peak_rss_mb": peak, "after_rss_mb": after,
            "per_request_mb": per_request, "statuses": statuses, "answer": sample,
            "held": per_request <= PEAK_PER_REQUEST_MB}


def run(ctx):
    mock = ctx.mock()
    results = {}
    for shape, item_bytes in (("tiny", 32), ("at_bound", 128)):
        for key, (path, _) in PATHS.items():
            pid, port, idle = fresh(ctx, mock, f"{shape}_{key}")
            data, n = body(key, item_bytes)
            results[f"{shape}_{key}"] = measured(ctx, pid, port, idle, path, [data] * CONCURRENT, items=n)
    # a large stored conversation: two turns of ~3.7 MiB of 2 KiB messages each
    pid, port, _ = fresh(ctx, mock, "stored")
    first, note = stored(port, None, 1800, 2048)
    second, note2 = stored(port, first, 1800, 2048) if first else (None, None)
    if second:
        idle = round((ctx.rss_kb(pid) or 0) / 1024, 1)
        tiny = json.dumps({"model": "bench-model", "input": "go on", "previous_response_id": second}).encode()
        results["previous_response_id"] = measured(ctx, pid, port, idle, "/v1/responses", [tiny] * CONCURRENT,
                                                   request_bytes=len(tiny))
    else:
        results["previous_response_id"] = {"stored": False, "why": [note, note2], "held": False}
    results["bound_per_request_mb"] = PEAK_PER_REQUEST_MB
    results["held"] = all(r.get("held") for r in results.values() if isinstance(r, dict))
    return results
