"""Issue 24 item 6: slow request bodies must not exhaust the in-flight slots."""

import hashlib
import selectors
import socket
import time

from _http import post, provider

NAME = "slow_bodies"
ITEM = "24.6"
DESCRIPTION = ("[server] max_in_flight = 64: 64 connections trickle request bodies from a key with no "
               "route, then from a key with rpm = 5, then from a key with no limits; another key's "
               "request is still answered each time")

CONFIG = """
[server]
max_in_flight = 64
""" + provider() + """
[[routes]]
name = "bench-model"
providers = ["primary"]
"""

KEYS = {"lost": "routes = []", "slow": "routes = [\"*\"]\nrpm = 5", "team": "routes = [\"*\"]",
        "good": "routes = [\"*\"]"}
CONNECTIONS = 64


def token(name):
    return f"sy-probe-slow-bodies-{name}-0123456789abcdef0123456789"


def keys_toml():
    out = ""
    for name, extra in KEYS.items():
        digest = hashlib.sha256(token(name).encode()).hexdigest()
        out += f"\n[[keys]]\nname = \"{name}\"\nsha256 = \"{digest}\"\n{extra}\n"
    return out


def trickle(port, name):
    """A connection that sends a head for a 100,000-byte body and 10 bytes of it."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n"
            f"content-type: application/json\r\nauthorization: Bearer {token(name)}\r\n"
            f"content-length: 100000\r\n\r\n{{\"model\":")
    s.sendall(head.encode())
    return s


def answered(socks, within):
    """The statuses answered on `socks` within `within` seconds (unanswered: "none")."""
    sel = selectors.DefaultSelector()
    for s in socks:
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
    got = {}
    deadline = time.monotonic() + within
    while len(got) < len(socks) and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=max(0.0, deadline - time.monotonic())):
            try:
                data = key.fileobj.recv(64)
            except OSError:
                data = b""
            got[key.fileobj] = data[9:12].decode(errors="replace") if data else "closed"
            sel.unregister(key.fileobj)
    sel.close()
    counts = {}
    for s in socks:
        status = got.get(s, "none")
        counts[status] = counts.get(status, 0) + 1
    return counts


def good_request(port):
    body = {"model": "bench-model", "messages": [{"role": "user", "content": "hi"}]}
    return post(port, "/v1/chat/completions", body, token=token("good")).status


def run(ctx):
    mock = ctx.mock()
    _, port = ctx.serve(CONFIG.replace("MOCK", str(mock)) + keys_toml())
    phases = {}
    for name in ("lost", "slow", "team"):
        socks = [trickle(port, name) for _ in range(CONNECTIONS)]
        statuses = answered(socks, within=2.0)
        phases[name] = {"trickling": statuses, "other_key_status": good_request(port)}
        for s in socks:
            s.close()
    held = all(p["other_key_status"] == 200 for p in phases.values())
    return {"held": held, "phases": phases}
