"""Fixtures: a scripted mock of the vendors' APIs on 127.0.0.1 (switchyard.testing)."""

import pytest

from switchyard import AnthropicProvider, GoogleProvider, OpenAIProvider
from switchyard.testing import MockServer


@pytest.fixture
def mock():
    with MockServer() as server:
        yield server


@pytest.fixture
def vendors(mock):
    """Provider factories pointed at the mock: vendors.anthropic("claude-sonnet-4-5", ...)."""

    class Vendors:
        @staticmethod
        def anthropic(model="claude-sonnet-4-5", **kw):
            return AnthropicProvider(model, base_url=mock.url("anthropic"), api_key="k-ant", **kw)

        @staticmethod
        def openai(model="gpt-5.4", **kw):
            return OpenAIProvider(model, base_url=mock.url("openai"), api_key="k-oai", **kw)

        @staticmethod
        def google(model="gemini-2.5-flash", **kw):
            return GoogleProvider(model, base_url=mock.url("google"), api_key="k-goo", **kw)

    return Vendors
