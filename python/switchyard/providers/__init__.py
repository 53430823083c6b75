"""The vendors switchyard speaks natively (the same adapters as the proxy), and
``BaseProvider`` for writing one in Python.

Each takes the model id, then: ``api_key=`` (default: the vendor's usual environment
variable, read only for the vendor's own endpoint — a key is never sent to a ``base_url``
it was not given for), ``base_url=``, ``price=ModelPrice(...)``, ``timeout_s=``,
``connect_timeout_s=``, ``first_token_timeout_s=``, ``stall_timeout_s=``,
``probe_timeout_s=``, ``max_attempts=`` / ``max_retries=`` and ``headers=``.
"""

from __future__ import annotations

import os
from typing import Any, Optional

from ..types import ModelPrice, _dur
from .base import BaseProvider, ParsedResponse, PreparedRequest


class Provider:
    """A natively supported vendor (a ``[[providers]]`` entry of the proxy's config)."""

    name: str = ""
    kind: str = ""
    api_key_env: Optional[str] = None
    alt_key_envs: tuple = ()

    def __init__(self, model: str, *, api_key: Optional[str] = None, base_url: Optional[str] = None,
                 price: Optional[ModelPrice] = None, timeout_s: Optional[float] = None,
                 connect_timeout_s: Optional[float] = None, first_token_timeout_s: Optional[float] = None,
                 stall_timeout_s: Optional[float] = None, probe_timeout_s: Optional[float] = None,
                 max_attempts: Optional[int] = None, max_retries: Optional[int] = None,
                 headers: Optional[dict] = None, **options: Any):
        if not isinstance(model, str) or not model:
            raise ValueError(f"{type(self).__name__}: model must be a non-empty string")
        if price is not None and not isinstance(price, ModelPrice):
            raise TypeError("price must be a ModelPrice")
        self.model = model
        self.api_key = api_key
        self.base_url = base_url
        self.price = price
        self.timeouts = {"timeout": timeout_s, "connect_timeout": connect_timeout_s,
                         "first_token_timeout": first_token_timeout_s,
                         "stall_timeout": stall_timeout_s, "probe_timeout": probe_timeout_s}
        self.max_attempts = max_attempts if max_retries is None else max_retries + 1
        self.headers = dict(headers or {})
        self.options = options

    @property
    def key(self) -> str:
        """The provider's name in ``health()`` and the ledger: ``vendor:model``."""
        return f"{self.name}:{self.model}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model!r})"

    def _model_fields(self) -> dict:
        return {"model": self.model}

    def _entry(self, key: str, keys: dict) -> dict:
        entry: dict[str, Any] = {"name": key, "kind": self.kind, **self._model_fields()}
        if self.base_url is not None:
            entry["base_url"] = self.base_url
        api_key = self.api_key
        if api_key is None and self.base_url is None:
            # the vendor's own endpoint: its usual variable, or an alternative spelling
            for var in self.alt_key_envs:
                if not os.environ.get(self.api_key_env or "") and os.environ.get(var):
                    api_key = os.environ[var]
        if api_key is not None:
            var = f"__SWITCHYARD_PY_KEY_{len(keys)}"
            keys[var] = api_key
            entry["api_key_env"] = var
        elif self.api_key_env is not None and self.kind not in ("openai", "anthropic", "gemini"):
            entry["api_key_env"] = self.api_key_env
        for name, seconds in self.timeouts.items():
            if seconds is not None:
                entry[name] = _dur(seconds)
        if self.max_attempts is not None:
            entry["max_attempts"] = int(self.max_attempts)
        if self.price is not None:
            entry["price"] = self.price._entry()
        if self.headers:
            entry["headers"] = {str(k): str(v) for k, v in self.headers.items()}
        entry.update(self.options)
        return entry


class AnthropicProvider(Provider):
    """Anthropic's Messages API (``ANTHROPIC_API_KEY``)."""

    name = kind = "anthropic"
    api_key_env = "ANTHROPIC_API_KEY"


class OpenAIProvider(Provider):
    """OpenAI's Chat Completions API (``OPENAI_API_KEY``), or any OpenAI-compatible server
    (vLLM, Ollama, OpenRouter, Together, ...) by ``base_url``;
    ``use_legacy_max_tokens=True`` sends ``max_tokens`` instead of
    ``max_completion_tokens``."""

    name = kind = "openai"
    api_key_env = "OPENAI_API_KEY"

    def __init__(self, model: str, *, use_legacy_max_tokens: bool = False, **kwargs: Any):
        super().__init__(model, **kwargs)
        if use_legacy_max_tokens:
            self.options["use_max_tokens"] = True


class GoogleProvider(Provider):
    """Google's Gemini API (``GEMINI_API_KEY``, or ``GOOGLE_API_KEY``)."""

    name = "google"
    kind = "gemini"
    api_key_env = "GEMINI_API_KEY"
    alt_key_envs = ("GOOGLE_API_KEY",)


class AzureOpenAIProvider(Provider):
    """Azure OpenAI: ``deployment`` on ``endpoint`` (``https://NAME.openai.azure.com``),
    ``api_version`` ``"v1"`` (default) or a dated one; the key from ``api_key=`` or
    ``AZURE_OPENAI_API_KEY``, or a Microsoft Entra ID token from ``token_env=`` /
    ``token_file=``."""

    name = kind = "azure"
    api_key_env = "AZURE_OPENAI_API_KEY"

    def __init__(self, deployment: str, *, endpoint: str, api_version: str = "v1",
                 token_env: Optional[str] = None, token_file: Optional[str] = None, **kwargs: Any):
        super().__init__(deployment, **kwargs)
        self.options["endpoint"] = endpoint
        for name, value in (("api_version", api_version), ("token_env", token_env), ("token_file", token_file)):
            if value is not None:
                self.options[name] = value
        if token_env is not None or token_file is not None:
            self.api_key_env = None

    def _model_fields(self) -> dict:
        return {"deployment": self.model}


class BedrockProvider(Provider):
    """AWS Bedrock's Converse API: any Converse model id, inference profile or ARN in
    ``region``; credentials from the AWS default chain (environment keys, web identity,
    profile, container, instance metadata), or a Bedrock API key by ``api_key=``."""

    name = kind = "bedrock"

    def __init__(self, model: str, *, region: str, **kwargs: Any):
        super().__init__(model, **kwargs)
        self.options["region"] = region


class VertexProvider(Provider):
    """Google Vertex AI (Gemini and Claude models) in ``project`` / ``location``, with the
    service-account key file named by ``GOOGLE_APPLICATION_CREDENTIALS`` (or
    ``credentials_env=``)."""

    name = kind = "vertex"

    def __init__(self, model: str, *, project: str, location: str = "global",
                 publisher: Optional[str] = None, credentials_env: Optional[str] = None, **kwargs: Any):
        super().__init__(model, **kwargs)
        self.options.update({"project": project, "location": location})
        if publisher is not None:
            self.options["publisher"] = publisher
        if credentials_env is not None:
            self.options["credentials_env"] = credentials_env


__all__ = [
    "Provider", "AnthropicProvider", "OpenAIProvider", "GoogleProvider", "AzureOpenAIProvider",
    "BedrockProvider", "VertexProvider", "BaseProvider", "PreparedRequest", "ParsedResponse",
]
