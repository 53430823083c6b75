"""What the probes share: one HTTP call to 127.0.0.1 and the TOML of a priced OpenAI-shaped
provider. Not a probe itself (bench/hostile loads only files whose name has no leading `_`)."""

import hashlib
import http.client
import json


class Reply:
    """One answer: its status, headers (lower-case names), body bytes."""

    def __init__(self, status, headers, data):
        self.status = status
        self.headers = headers
        self.data = data

    def json(self):
        """The body as JSON; {} when empty or not JSON."""
        try:
            return json.loads(self.data or b"{}")
        except ValueError:
            return {}

    def text(self):
        return self.data.decode(errors="replace")

    @property
    def cost(self):
        """`x-switchyard-cost-usd` as a float (0.0 when absent)."""
        return float(self.headers.get("x-switchyard-cost-usd") or 0)


def call(port, method, path, body=None, headers=None, timeout=30, token=None):
    """One request on a fresh connection to 127.0.0.1:`port`. `body` may be bytes, text or
    a JSON-able object (sent as JSON); `token` adds `authorization: Bearer …`."""
    sent = {"content-type": "application/json"}
    if token:
        sent["authorization"] = f"Bearer {token}"
    sent.update(headers or {})
    if body is not None and not isinstance(body, (bytes, str)):
        body = json.dumps(body)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body, sent)
        resp = conn.getresponse()
        data = resp.read()
        return Reply(resp.status, {k.lower(): v for k, v in resp.getheaders()}, data)
    finally:
        conn.close()


def post(port, path, body, **kw):
    return call(port, "POST", path, body, **kw)


def get(port, path, **kw):
    return call(port, "GET", path, **kw)


def provider(name="primary", model="bench-model", kind="openai", port="MOCK", extra="",
             price=(0.15, 0.6), path="/v1"):
    """A `[[providers]]` block priced like a small model (`price`: input and output per Mtok),
    on the mock at `port` (`MOCK`: a placeholder the probe replaces)."""
    return f"""
[[providers]]
name = "{name}"
kind = "{kind}"
model = "{model}"
base_url = "http://127.0.0.1:{port}{path}"
price = {{ input_per_mtok = {price[0]}, output_per_mtok = {price[1]} }}
{extra}"""


def route(name, providers, extra=""):
    """A `[[routes]]` block over `providers` (names)."""
    listed = ", ".join(f'"{p}"' for p in providers)
    return f"""
[[routes]]
name = "{name}"
providers = [{listed}]
{extra}"""


def key(name, token, routes='["*"]', extra=""):
    """A `[[keys]]` block for the secret `token` (stored as its SHA-256, as configs do)."""
    digest = hashlib.sha256(token.encode()).hexdigest()
    return f"""
[[keys]]
name = "{name}"
sha256 = "{digest}"
routes = {routes}
{extra}"""
