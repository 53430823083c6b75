#!/usr/bin/env python3
"""The official `openai` Python SDK's embeddings, unchanged, against `switchyard serve`
routing to AWS Bedrock providers (Titan Text Embeddings V2 and Cohere Embed v4).

Usage: python test_bedrock_embeddings.py BASE_URL
    BASE_URL  the proxy's OpenAI root, e.g. http://127.0.0.1:4000/v1 (no client keys)

The proxy must serve the embeddings routes `titan` and `cohere` over Bedrock providers whose
mock (the Rust test `crates/switchyard-server/tests/e2e/bedrock.rs` starts one) checks every
call's SigV4 signature and answers Titan's `inputText` with `[len(text), dimensions]` and
`inputTextTokenCount = len(text)`, and Cohere's `texts` with one `[len(text)]` each and the
token count (the texts' summed lengths) in the `X-Amzn-Bedrock-Input-Token-Count` header.

Checks: several inputs to Titan (one InvokeModel call each upstream) come back in order with
the token counts summed, as floats and as the SDK's default base64; `dimensions` Titan does
not offer and a token input are refused as `BadRequestError` naming the field; 100 inputs to
Cohere (two calls upstream) come back in order with the header's usage and a cost. Prints
every mismatch and exits 1 if there was any.

Needs the `openai` package: pip install -r tests/python/requirements.txt
"""

import sys

from checks import check, finish

try:
    import openai
    from openai import OpenAI
except ImportError:  # pragma: no cover - the message is the point
    sys.exit(
        "test_bedrock_embeddings.py needs the official openai package: "
        "pip install -r tests/python/requirements.txt"
    )


def titan(c):
    texts = ["a", "bb", "ccc", "dddd", "eeeee"]
    expected = [[float(len(t)), 256.0] for t in texts]
    raw = c.embeddings.with_raw_response.create(
        model="titan", input=texts, dimensions=256, encoding_format="float")
    check(raw.headers.get("x-switchyard-provider") == "titan",
          f"titan: provider header {raw.headers.get('x-switchyard-provider')!r}")
    resp = raw.parse()
    check([d.index for d in resp.data] == list(range(len(texts))), "titan: indices")
    check([d.embedding for d in resp.data] == expected,
          f"titan: vectors {[d.embedding for d in resp.data]!r}")
    check(resp.usage.prompt_tokens == 15, f"titan: prompt_tokens {resp.usage.prompt_tokens}")
    # the SDK's default asks for base64 and decodes it itself
    decoded = c.embeddings.create(model="titan", input=texts, dimensions=256)
    check([d.embedding for d in decoded.data] == expected, "titan: base64 vectors")


def titan_refusals(c):
    try:
        c.embeddings.create(model="titan", input=["a"], dimensions=300)
        check(False, "titan: dimensions=300 was accepted")
    except openai.BadRequestError as e:
        check("dimensions" in str(e) and "256" in str(e), f"titan: dimensions error {e}")
    try:
        c.embeddings.create(model="titan", input=[[1, 2, 3]])
        check(False, "titan: a token input was accepted")
    except openai.BadRequestError as e:
        check("input" in str(e) and "token" in str(e), f"titan: token input error {e}")


def cohere(c):
    texts = ["x" * (i % 7 + 1) for i in range(100)]
    raw = c.embeddings.with_raw_response.create(
        model="cohere", input=texts, encoding_format="float")
    resp = raw.parse()
    check(len(resp.data) == 100, f"cohere: {len(resp.data)} vectors")
    check([d.embedding for d in resp.data] == [[float(len(t))] for t in texts],
          "cohere: vectors in input order")
    total = sum(len(t) for t in texts)
    check(resp.usage.prompt_tokens == total,
          f"cohere: prompt_tokens {resp.usage.prompt_tokens}, want {total}")
    cost = raw.headers.get("x-switchyard-cost-usd")
    check(cost is not None and float(cost) > 0, f"cohere: cost header {cost!r}")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    c = OpenAI(base_url=sys.argv[1], api_key="unused", max_retries=0)
    titan(c)
    titan_refusals(c)
    cohere(c)
    finish("all bedrock embeddings checks passed")


if __name__ == "__main__":
    main()
