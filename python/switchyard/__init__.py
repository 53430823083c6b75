"""switchyard: the Rust LLM gateway inside a Python process.

Failover across vendors, retries with full jitter and Retry-After, circuit breakers with
exactly one probe, deadlines, budgets checked before dispatch, and exact cost with unknown
prices as ``None`` — the ``llm_gateway`` library's API on switchyard's core.

    from switchyard import Gateway, AnthropicProvider, OpenAIProvider
    gateway = Gateway([AnthropicProvider("claude-sonnet-4-5"), OpenAIProvider("gpt-5.4")],
                      budget_usd=25.00, deadline_s=20.0)
    reply = gateway.complete("Explain retrieval-augmented generation in one sentence.")

The whole API: docs/python.md.
"""

from ._core import VERSION as __version__
from .errors import (
    AllProvidersFailed, AllProvidersRateLimited, AuthenticationError, BadRequest, BudgetExceeded,
    Cancelled, CannotHonour, ContentFiltered, ContextLengthExceeded, DeadlineExceeded, GatewayError,
    InvalidRequest, MalformedResponse, ModelNotFound, ProviderCancelled, ProviderConnectionError,
    ProviderError, ProviderTimeout, ProviderUnavailable, QuotaExhausted, RateLimited,
)
from .gateway import AsyncStream, Gateway, Ledger, Stream
from .providers import (
    AnthropicProvider, AzureOpenAIProvider, BedrockProvider, GoogleProvider, OpenAIProvider, Provider,
    VertexProvider,
)
from .providers.base import BaseProvider, ParsedResponse, PreparedRequest
from .types import Attempt, CircuitBreaker, Message, ModelPrice, Reply, RetryPolicy, ToolCall, Usage

__all__ = [
    "Gateway", "Ledger", "Stream", "AsyncStream",
    "Provider", "AnthropicProvider", "OpenAIProvider", "GoogleProvider", "AzureOpenAIProvider",
    "BedrockProvider", "VertexProvider", "BaseProvider", "PreparedRequest", "ParsedResponse",
    "ModelPrice", "RetryPolicy", "CircuitBreaker", "Message", "Reply", "Usage", "Attempt", "ToolCall",
    "GatewayError", "BudgetExceeded", "AllProvidersFailed", "DeadlineExceeded",
    "AllProvidersRateLimited", "CannotHonour", "InvalidRequest", "Cancelled", "ProviderError",
    "ProviderUnavailable", "ProviderTimeout", "ProviderConnectionError", "MalformedResponse",
    "RateLimited", "QuotaExhausted", "AuthenticationError", "ModelNotFound", "BadRequest",
    "ContextLengthExceeded", "ContentFiltered", "ProviderCancelled",
]
