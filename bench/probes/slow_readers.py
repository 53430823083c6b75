"""Issue 24 item 1: clients that stop reading a stream must not hold a slot or memory past the
route's deadline."""

import concurrent.futures
import json
import socket
import time
import urllib.request

from _http import post, provider

NAME = "slow_readers"
ITEM = "24.1"
DESCRIPTION = ("64 streams that stop reading after 200 bytes (4 KiB receive buffers) on a route with a "
               "10 s deadline, max_in_flight = 64: another client is served, RSS comes back, every "
               "line is logged (499 client_stopped_reading) and every upstream call cancelled by the deadline")

STREAMS = 64
DEADLINE_S = 10
# time allowed past the deadline for the edge to act and the log writer to write
SLACK_S = 2.0
WATCH_S = 25
# the share of RSS's growth the process may keep once every stream is let go (the
# allocator keeps some freed memory)
RSS_KEPT_SHARE = 1 / 3

CONFIG = """
[server]
request_log = "{run}/requests.jsonl"
max_in_flight = 64

""" + provider("flooder", model="flood-model") + provider() + """
[[routes]]
name = "flood-model"
providers = ["flooder"]
deadline = "10s"

[[routes]]
name = "bench-model"
providers = ["primary"]
"""


def stuck_stream(port):
    """A stream whose client reads its first 200 bytes, then nothing."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    body = json.dumps({"model": "flood-model", "stream": True,
                       "messages": [{"role": "user", "content": "tell me everything"}]}).encode()
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
              + f"content-length: {len(body)}\r\n\r\n".encode() + body)
    got = b""
    s.settimeout(10)
    while len(got) < 200:
        data = s.recv(200 - len(got))
        if not data:
            break
        got += data
    return s


def served(port):
    """One plain request from another client: its status (0 when it failed to connect)."""
    body = {"model": "bench-model", "messages": [{"role": "user", "content": "hi"}]}
    try:
        return post(port, "/v1/chat/completions", body, timeout=5).status
    except OSError:
        return 0


def lines(path):
    try:
        return [json.loads(l) for l in path.read_text().splitlines() if l.strip()]
    except (OSError, ValueError):
        return []


def upstream_attempts(mock):
    with urllib.request.urlopen(f"http://127.0.0.1:{mock}/control/attempts?model=flood-model", timeout=5) as r:
        data = json.load(r)
    return data if isinstance(data, list) else data.get("attempts", [])


def run(ctx):
    mock = ctx.free_port()
    script = json.dumps({"model": "flood-model", "then": {"kind": "flood", "chunk_bytes": 60000}})
    ctx.start([str(ctx.faultline), "--threads", "1", "--listen", f"127.0.0.1:{mock}", "--script", script],
              "faultline", "listening")
    proc, port = ctx.serve(CONFIG.replace("MOCK", str(mock)))
    log_path = ctx.run / "requests.jsonl"
    rss_before = ctx.rss_kb(proc.pid)
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(STREAMS) as pool:
        socks = list(pool.map(lambda _: stuck_stream(port), range(STREAMS)))
    opened_s = time.monotonic() - start
    rss_peak, served_at, logged_at, statuses = rss_before, None, None, {}
    while time.monotonic() - start < WATCH_S:
        rss_peak = max(rss_peak, ctx.rss_kb(proc.pid) or 0)
        if served_at is None:
            status = served(port)
            statuses[str(status)] = statuses.get(str(status), 0) + 1
            if status == 200:
                served_at = time.monotonic() - start
        stuck = [l for l in lines(log_path) if l.get("route") == "flood-model"]
        if logged_at is None and len(stuck) >= STREAMS:
            logged_at = time.monotonic() - start
        if served_at is not None and logged_at is not None:
            break
        time.sleep(0.25)
    time.sleep(1.0)
    rss_after = ctx.rss_kb(proc.pid)
    stuck = [l for l in lines(log_path) if l.get("route") == "flood-model"]
    stopped = sum(1 for l in stuck if l.get("status") == 499 and l.get("error") == "client_stopped_reading")
    produced = sum((l.get("usage") or {}).get("output_tokens", 0) for l in stuck)
    endings = {}
    for l in stuck:
        key = f"{l.get('status')} {l.get('error')}"
        n, slowest = endings.get(key, (0, 0))
        endings[key] = (n + 1, max(slowest, round((l.get("latency_ms") or 0) / 1000, 2)))
    latest_ms = max((l.get("latency_ms") or 0 for l in stuck), default=0)
    cancelled = sum(1 for a in upstream_attempts(mock) if a.get("outcome") == "client_gone")
    for s in socks:
        s.close()
    by_deadline = DEADLINE_S + SLACK_S
    # a client that stopped reading is let go at the deadline: by the edge (its writes were
    # waiting: 499 client_stopped_reading) or, when the kernel was still taking its bytes,
    # by the stream's own deadline (a 200 whose stream failed with deadline_exceeded)
    honest = stopped + endings.get("200 stream_failed:deadline_exceeded", (0, 0))[0]
    rss_back = rss_after is not None and rss_after - rss_before <= (rss_peak - rss_before) * RSS_KEPT_SHARE
    held = (served_at is not None and served_at <= by_deadline
            and logged_at is not None and len(stuck) == STREAMS and latest_ms <= by_deadline * 1000
            and honest == STREAMS and cancelled == STREAMS and rss_back)
    return {
        "held": held,
        "streams": STREAMS,
        "deadline_s": DEADLINE_S,
        "opened_in_s": round(opened_s, 2),
        "other_client_served_at_s": served_at and round(served_at, 2),
        "other_client_statuses_until_then": statuses,
        "all_lines_logged_at_s": logged_at and round(logged_at, 2),
        "lines_client_stopped_reading": stopped,
        "line_endings": endings,
        "longest_logged_latency_s": round(latest_ms / 1000, 2),
        "output_tokens_billed": produced,
        "upstream_calls_cancelled": cancelled,
        "rss_before_mb": round((rss_before or 0) / 1024, 1),
        "rss_peak_mb": round(rss_peak / 1024, 1),
        "rss_after_mb": round((rss_after or 0) / 1024, 1),
    }
