"""A provider written in Python (the seed README's MyProvider): prepare and parse in
Python, transport, retries and breakers in the core."""

import pytest

from switchyard import AllProvidersFailed, Gateway, ModelPrice, RateLimited
from switchyard.providers.base import BaseProvider, ParsedResponse, PreparedRequest


class MyProvider(BaseProvider):
    name = "mine"
    default_base_url = "https://api.example.com"

    def prepare(self, messages, params):
        return PreparedRequest(
            url=f"{self.base_url}/v1/generate",
            headers={"authorization": f"Bearer {self.api_key}"},
            json={"model": self.model,
                  "input": [{"role": m.role, "text": m.content} for m in messages]},
        )

    def parse(self, data):
        return ParsedResponse(
            text=data["output"]["text"],
            input_tokens=data["usage"]["in"],
            output_tokens=data["usage"]["out"],
        )


class Teapot(MyProvider):
    def classify(self, status, body):
        return RateLimited if status == 418 else None


def test_custom_provider_answers_through_the_core(mock):
    gateway = Gateway([MyProvider("m-1", base_url=mock.url("mine"), api_key="secret",
                                  price=ModelPrice(input_per_mtok=1.0, output_per_mtok=2.0))])
    reply = gateway.complete("hello")
    assert (reply.text, reply.provider, reply.model) == (mock.text, "mine", "m-1")
    assert reply.usage.cost_usd == pytest.approx((1412 * 1.0 + 96 * 2.0) / 1e6, abs=1e-12)
    headers, body = mock.requests["mine"][0]
    assert headers["authorization"] == "Bearer secret"
    assert body == {"model": "m-1", "input": [{"role": "user", "text": "hello"}]}


def test_custom_provider_is_retried_and_failed_over(mock, vendors):
    mock.plan("mine", [503])
    gateway = Gateway([MyProvider("m-1", base_url=mock.url("mine"), max_attempts=2), vendors.openai()])
    reply = gateway.complete("hello")
    assert reply.provider == "mine" and mock.calls["mine"] == 2
    assert reply.attempts[0].error_type == "ProviderUnavailable"
    mock.default["mine"] = 418
    reply = Gateway([Teapot("m-1", base_url=mock.url("mine"), max_attempts=1), vendors.openai()]).complete("x")
    assert reply.provider == "openai" and reply.attempts[0].error_type == "RateLimited"


def test_a_parse_failure_is_a_malformed_answer(mock):
    class Broken(MyProvider):
        def parse(self, data):
            return ParsedResponse(text=data["nope"])

    gateway = Gateway([Broken("m-1", base_url=mock.url("mine"), max_attempts=1)])
    with pytest.raises(AllProvidersFailed) as info:
        gateway.complete("hello")
    assert info.value.attempts[0].error_kind == "malformed"
