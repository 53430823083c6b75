#!/usr/bin/env python3
"""The tutorial's gateway (docs/tutorial.md), in Python, as switchyard's test oracle.

Reads a demo scenario TOML (the same file `switchyard demo --scenario FILE --json` reads)
and prints the same JSON object: completed, errors, responses, every log row, each
breaker's opened_until_request, and the pandas per-provider summary. The classes below
follow the tutorial's semantics line for line (random.Random, Python's round, the
CircuitBreaker and Gateway loops, groupby/agg/round(3)); the Rust test
`crates/switchyard-server/tests/demo.rs` runs both on generated scenarios and requires
equal values.

Usage: python tutorial_reference.py SCENARIO.toml

Needs pandas 3.0.x, the tutorial's version (it printed its table with 3.0.3):
    pip install "pandas==3.0.3"
pandas 3.0 sums and averages every group with Kahan compensation. pandas 3.1 added a fast
path for group ids already in sorted order (one provider only, say) that uses numpy's
add.reduceat (pairwise summation), which can differ in the last bit and so flip a
rounded third decimal; the tutorial's numbers are 3.0's.
"""

import json
import random
import sys
import tomllib
from dataclasses import dataclass

PANDAS = "3.0"
INSTALL = 'pip install "pandas==3.0.3"'

try:
    import pandas as pd
except ImportError:  # pragma: no cover - the message is the point
    sys.exit(f"tutorial_reference.py needs pandas {PANDAS}.x: {INSTALL}")
if not pd.__version__.startswith(PANDAS + "."):
    sys.exit(
        f"tutorial_reference.py needs pandas {PANDAS}.x (the tutorial's), found "
        f"{pd.__version__}: {INSTALL}"
    )

DEFAULTS = {
    "requests": 40,
    "max_tokens": 200,
    "prompt": "request-{i}",
    "retries_per_provider": 2,
    "breaker_threshold": 3,
    "breaker_cooldown_requests": 5,
}


@dataclass
class LLMRequest:
    prompt: str
    max_tokens: int = 200


@dataclass
class LLMResponse:
    text: str
    provider: str
    latency_ms: float
    cost_usd: float


class ProviderError(Exception):
    pass


class GatewayError(Exception):
    pass


class SimulatedProvider:
    def __init__(self, name, failure_rate, latency_range_ms, cost_per_1k_tokens, seed):
        self.name = name
        self.failure_rate = failure_rate
        self.latency_range_ms = latency_range_ms
        self.cost_per_1k_tokens = cost_per_1k_tokens
        self._rng = random.Random(seed)

    def complete(self, request):
        if self._rng.random() < self.failure_rate:
            raise ProviderError(f"{self.name} timed out")
        latency = round(self._rng.uniform(*self.latency_range_ms), 1)
        cost = round((request.max_tokens / 1000) * self.cost_per_1k_tokens, 5)
        text = f"[{self.name}] {request.prompt[:30]}..."
        return LLMResponse(text=text, provider=self.name, latency_ms=latency, cost_usd=cost)


class CircuitBreaker:
    def __init__(self, failure_threshold, cooldown_requests):
        self.failure_threshold = failure_threshold
        self.cooldown_requests = cooldown_requests
        self.consecutive_failures = 0
        self.open_until_request = 0

    def is_open(self, request_index):
        return request_index < self.open_until_request

    def record_success(self):
        self.consecutive_failures = 0

    def record_failure(self, request_index):
        self.consecutive_failures += 1
        if self.consecutive_failures >= self.failure_threshold:
            self.open_until_request = request_index + 1 + self.cooldown_requests


class Gateway:
    def __init__(self, providers, retries_per_provider, breaker_threshold, breaker_cooldown):
        self.providers = providers
        self.retries_per_provider = retries_per_provider
        self.breakers = {
            p.name: CircuitBreaker(breaker_threshold, breaker_cooldown) for p in providers
        }
        self._request_index = 0
        self.log = []

    def _note(self, idx, provider, outcome):
        self.log.append({"request": idx, "provider": provider.name, "outcome": outcome})

    def complete(self, request):
        idx = self._request_index
        self._request_index += 1
        for provider in self.providers:
            breaker = self.breakers[provider.name]
            if breaker.is_open(idx):
                self._note(idx, provider, "skipped_open_circuit")
                continue
            for attempt in range(1, self.retries_per_provider + 1):
                try:
                    response = provider.complete(request)
                except ProviderError:
                    self._note(idx, provider, f"failed_attempt_{attempt}")
                    continue
                breaker.record_success()
                self._note(idx, provider, "success")
                return response
            breaker.record_failure(idx)
        raise GatewayError(f"all providers exhausted for request {idx}")


def summarize(results):
    """The tutorial's pandas table as records, sorted by provider; [] when nothing succeeded."""
    if not results:
        return []
    df = pd.DataFrame(
        [{"provider": r.provider, "latency_ms": r.latency_ms, "cost_usd": r.cost_usd} for r in results]
    )
    summary = df.groupby("provider").agg(
        requests_served=("provider", "count"),
        avg_latency_ms=("latency_ms", "mean"),
        total_cost_usd=("cost_usd", "sum"),
    ).round(3)
    return [
        {
            "provider": str(name),
            "requests_served": int(row["requests_served"]),
            "avg_latency_ms": float(row["avg_latency_ms"]),
            "total_cost_usd": float(row["total_cost_usd"]),
        }
        for name, row in zip(summary.index, summary.to_dict("records"))
    ]


def run(scenario):
    cfg = {**DEFAULTS, **{k: v for k, v in scenario.items() if k != "providers"}}
    providers = [
        SimulatedProvider(
            p["name"], p["failure_rate"], tuple(p["latency_range_ms"]),
            p["cost_per_1k_tokens"], p["seed"],
        )
        for p in scenario["providers"]
    ]
    gateway = Gateway(
        providers, cfg["retries_per_provider"], cfg["breaker_threshold"],
        cfg["breaker_cooldown_requests"],
    )
    results, errors = [], 0
    for i in range(cfg["requests"]):
        prompt = cfg["prompt"].replace("{i}", str(i))
        try:
            results.append(gateway.complete(LLMRequest(prompt=prompt, max_tokens=cfg["max_tokens"])))
        except GatewayError:
            errors += 1
    return {
        "completed": len(results),
        "errors": errors,
        "responses": [
            {"text": r.text, "provider": r.provider, "latency_ms": r.latency_ms, "cost_usd": r.cost_usd}
            for r in results
        ],
        "log": gateway.log,
        "breakers": {
            name: {"opened_until_request": b.open_until_request} for name, b in gateway.breakers.items()
        },
        "summary": summarize(results),
    }


def main(argv):
    paths = [a for a in argv[1:] if a != "--json"]
    if len(paths) != 1:
        sys.exit("usage: tutorial_reference.py SCENARIO.toml [--json]")
    with open(paths[0], "rb") as f:
        scenario = tomllib.load(f)
    print(json.dumps(run(scenario)))


if __name__ == "__main__":
    main(sys.argv)
