"""The exceptions switchyard raises: the gateway's outcomes and the typed hierarchy every
upstream failure is classified into (docs/python.md, "Errors").

``GatewayError`` is the root. A request refused by the budget raises ``BudgetExceeded``
before anything is dispatched; a request every provider failed raises
``AllProvidersFailed`` (``DeadlineExceeded`` when the deadline ran out first,
``AllProvidersRateLimited`` when every provider asked to slow down). A failure the route
does not fail over (a bad request, say) is raised as its own kind: a ``ProviderError``
subclass naming the provider.
"""

from __future__ import annotations

from typing import Any, Optional


class GatewayError(Exception):
    """Anything the gateway raises. ``attempts`` is the trail up to the failure."""

    def __init__(self, message: str, attempts: Optional[list] = None, errors: Optional[list] = None):
        super().__init__(message)
        self.message = message
        self.attempts = list(attempts or [])
        self.errors = list(errors or [])


class BudgetExceeded(GatewayError):
    """The budget cannot cover the request's worst case: nothing was dispatched."""

    limit_usd: Optional[float] = None
    spent_usd: Optional[float] = None
    reserved_usd: Optional[float] = None
    needed_usd: Optional[float] = None


class AllProvidersFailed(GatewayError):
    """Every provider failed or was skipped; ``attempts`` says what each did, ``errors``
    holds each failure as its typed ``ProviderError``."""


class DeadlineExceeded(AllProvidersFailed):
    """The request's deadline passed before any provider answered."""

    deadline_s: Optional[float] = None


class AllProvidersRateLimited(AllProvidersFailed):
    """Every provider was rate limited: come back in ``retry_after_s``."""

    retry_after_s: Optional[float] = None


class CannotHonour(GatewayError):
    """No provider of the route can honour fields the request uses (``fields``)."""

    fields: list = []


class InvalidRequest(GatewayError, ValueError):
    """The request is not usable (no messages, a bad parameter)."""


class Cancelled(GatewayError):
    """The request was cancelled (Ctrl-C, or the awaiting task was cancelled)."""


class ProviderError(GatewayError):
    """One provider's classified failure. ``kind`` is the library's label
    (``overloaded``, ``auth``, ...), ``status`` the HTTP status when there was one."""

    kind = "unknown"

    def __init__(self, message: str, provider: Optional[str] = None, status: Optional[int] = None,
                 attempts: Optional[list] = None, vendor_code: Optional[str] = None,
                 retry_after_s: Optional[float] = None):
        super().__init__(message, attempts)
        self.provider = provider
        self.status = status
        self.vendor_code = vendor_code
        self.retry_after_s = retry_after_s


class ProviderUnavailable(ProviderError):
    """The provider is down or overloaded (5xx, 529): retried, then failed over."""

    kind = "server"


class ProviderTimeout(ProviderUnavailable):
    """No answer in time."""

    kind = "timeout"


class ProviderConnectionError(ProviderUnavailable):
    """Refused, reset or unresolvable before any answer."""

    kind = "connection"


class MalformedResponse(ProviderError):
    """A success status with a body that is not what the vendor documents."""

    kind = "malformed"


class RateLimited(ProviderError):
    """429: slow down (Retry-After honoured)."""

    kind = "rate_limited"


class QuotaExhausted(ProviderError):
    """Out of credit (402, OpenAI's ``insufficient_quota``): opens the circuit at once."""

    kind = "quota_exhausted"


class AuthenticationError(ProviderError):
    """401 / 403: the key is wrong. Opens the circuit at once."""

    kind = "auth"


class ModelNotFound(ProviderError):
    """The configured model does not exist at this provider."""

    kind = "model_not_found"


class BadRequest(ProviderError):
    """The request itself is wrong (400 / 413 / 422): not retried."""

    kind = "bad_request"


class ContextLengthExceeded(BadRequest):
    """The prompt does not fit the model's context window."""

    kind = "context_length"


class ContentFiltered(BadRequest):
    """Refused by the vendor's safety system."""

    kind = "content_filtered"


class ProviderCancelled(ProviderError):
    """The call was cancelled."""

    kind = "cancelled"


#: The library's failure kinds and the class each is raised as.
KIND_CLASSES: dict[str, type[ProviderError]] = {
    "timeout": ProviderTimeout,
    "connection": ProviderConnectionError,
    "server": ProviderUnavailable,
    "overloaded": ProviderUnavailable,
    "malformed": MalformedResponse,
    "rate_limited": RateLimited,
    "quota_exhausted": QuotaExhausted,
    "auth": AuthenticationError,
    "model_not_found": ModelNotFound,
    "context_length": ContextLengthExceeded,
    "content_filtered": ContentFiltered,
    "bad_request": BadRequest,
    "cancelled": ProviderCancelled,
}


def kind_class(kind: Optional[str]) -> type[ProviderError]:
    """The class a failure of ``kind`` is raised as."""
    return KIND_CLASSES.get(kind or "", ProviderError)


def kind_of(cls: Any) -> Optional[str]:
    """The library's label for an error class (for ``BaseProvider.classify``)."""
    if isinstance(cls, type) and issubclass(cls, ProviderError):
        if cls is ProviderUnavailable:
            return "server"
        return cls.kind if cls.kind in KIND_CLASSES else None
    return None


__all__ = [
    "GatewayError", "BudgetExceeded", "AllProvidersFailed", "DeadlineExceeded",
    "AllProvidersRateLimited", "CannotHonour", "InvalidRequest", "Cancelled", "ProviderError",
    "ProviderUnavailable", "ProviderTimeout", "ProviderConnectionError", "MalformedResponse",
    "RateLimited", "QuotaExhausted", "AuthenticationError", "ModelNotFound", "BadRequest",
    "ContextLengthExceeded", "ContentFiltered", "ProviderCancelled",
]
