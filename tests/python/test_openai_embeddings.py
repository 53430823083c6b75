#!/usr/bin/env python3
"""The official `openai` Python SDK's embeddings, unchanged, against `switchyard serve`.

Usage: python test_openai_embeddings.py BASE_URL [PROVIDER]
    BASE_URL  the proxy's OpenAI root, e.g. http://127.0.0.1:4000/v1 (no client keys)
    PROVIDER  the provider that answers: `gemini` (the default) or `vertex`

The proxy must serve the embeddings route `embed` over a broken OpenAI provider and a
Gemini (or Vertex AI) provider whose mock answers each text with [len(text), 0.5, -0.25]
(the Rust tests in `crates/switchyard-server/tests/e2e/embeddings.rs` start them like this),
and a chat route `chat`. A `vertex` mock reports each text's length as its token_count, and
its model (gemini-embedding-001) is priced: the usage and the cost are checked too.

Checks: `embeddings.create` with `encoding_format="float"`, with the SDK's default (it asks
for base64 and decodes it itself) and with an explicit `"base64"` (decoded here as
little-endian float32) all give the same vectors; the failover shows in the headers and
the `switchyard` object; `models.retrieve`; the SDK's typed exceptions for a chat route, an
unknown route and a token input Gemini cannot take. Prints every mismatch and exits 1 if
there was any.

Needs the `openai` package: pip install -r tests/python/requirements.txt
"""

import base64
import struct
import sys

from checks import check, finish

try:
    import openai
    from openai import OpenAI
except ImportError:  # pragma: no cover - the message is the point
    sys.exit(
        "test_openai_embeddings.py needs the official openai package: "
        "pip install -r tests/python/requirements.txt"
    )

TEXTS = ["hello", "switchyard embeds"]
EXPECTED = [[float(len(t)), 0.5, -0.25] for t in TEXTS]
PROVIDER = "gemini"
# gemini-embedding-001's price: $0.15 per 1M input tokens
USD_PER_TOKEN = 0.15 / 1_000_000


def floats(c):
    raw = c.embeddings.with_raw_response.create(model="embed", input=TEXTS, encoding_format="float")
    check(raw.headers.get("x-switchyard-provider") == PROVIDER,
          f"float: provider header {raw.headers.get('x-switchyard-provider')!r}")
    check(raw.headers.get("x-switchyard-failed-over") == "true",
          f"float: failed-over header {raw.headers.get('x-switchyard-failed-over')!r}")
    check(raw.headers.get("x-request-id", "").startswith("req_"), "float: x-request-id")
    resp = raw.parse()
    check(resp.object == "list", f"float: object {resp.object!r}")
    check([d.index for d in resp.data] == [0, 1], f"float: indices {[d.index for d in resp.data]}")
    check(all(d.object == "embedding" for d in resp.data), "float: data objects")
    vectors = [d.embedding for d in resp.data]
    check(vectors == EXPECTED, f"float: vectors {vectors!r}")
    extra = (resp.model_extra or {}).get("switchyard") or {}
    check(extra.get("provider") == PROVIDER, f"float: switchyard object {extra!r}")
    check(extra.get("failed_over") is True, f"float: failed_over {extra!r}")
    tried = [(a.get("provider"), a.get("outcome"), a.get("kind")) for a in extra.get("attempts", [])]
    check(tried == [("openai-broken", "failed", "overloaded"), (PROVIDER, "success", None)],
          f"float: attempts {extra.get('attempts')!r}")
    check(resp.usage is not None, "float: usage present")
    if PROVIDER == "vertex":
        tokens = sum(len(t) for t in TEXTS)
        check(resp.usage.prompt_tokens == tokens, f"float: usage {resp.usage!r}")
        cost = extra.get("cost_usd")
        check(cost is not None and abs(cost - tokens * USD_PER_TOKEN) < 1e-12,
              f"float: cost_usd {cost!r}")
    return vectors


def sdk_default(c, want):
    # the SDK asks for base64 when the caller names no format, and decodes it itself
    resp = c.embeddings.create(model="embed", input=TEXTS)
    vectors = [list(d.embedding) for d in resp.data]
    check(vectors == want, f"default (SDK-decoded base64): vectors {vectors!r}")


def explicit_base64(c, want):
    resp = c.embeddings.create(model="embed", input=TEXTS, encoding_format="base64")
    got = []
    for d in resp.data:
        e = d.embedding
        if isinstance(e, str):
            raw = base64.b64decode(e)
            e = list(struct.unpack(f"<{len(raw) // 4}f", raw))
        got.append(list(e))
    check(got == want, f"base64: vectors {got!r}")


def single_string(c):
    resp = c.embeddings.create(model="embed", input="one", encoding_format="float")
    check([d.embedding for d in resp.data] == [[3.0, 0.5, -0.25]], f"string input: {resp.data!r}")


def models(c):
    m = c.models.retrieve("embed")
    check(m.id == "embed", f"models.retrieve: id {m.id!r}")
    check((m.model_extra or {}).get("api") == "embeddings", f"models.retrieve: {m!r}")
    try:
        c.models.retrieve("no-such-route")
        check(False, "models.retrieve of an unknown id did not raise")
    except openai.NotFoundError:
        pass
    apis = {m.id: (m.model_extra or {}).get("api") for m in c.models.list()}
    check(apis == {"embed": "embeddings", "chat": "chat"}, f"models.list: {apis!r}")


def errors(c):
    for what, kwargs, exc in [
        ("chat route", {"model": "chat", "input": "x"}, openai.BadRequestError),
        ("unknown route", {"model": "nope", "input": "x"}, openai.NotFoundError),
        (f"token input to {PROVIDER}", {"model": "embed", "input": [[1, 2, 3]]}, openai.BadRequestError),
    ]:
        try:
            c.embeddings.create(encoding_format="float", **kwargs)
            check(False, f"{what}: no error")
        except exc:
            pass
        except openai.APIError as e:  # the wrong class
            check(False, f"{what}: {type(e).__name__}: {e}")


def main():
    global PROVIDER
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    if len(sys.argv) == 3:
        PROVIDER = sys.argv[2]
    c = OpenAI(base_url=sys.argv[1], api_key="unused", max_retries=0, timeout=20.0)
    want = floats(c)
    sdk_default(c, want)
    explicit_base64(c, want)
    single_string(c)
    models(c)
    errors(c)
    finish("all openai SDK embeddings checks passed")


if __name__ == "__main__":
    main()
