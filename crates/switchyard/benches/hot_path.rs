//! Micro-benchmarks of the library's hot path, one request's worth of each step:
//! route plan, breaker admit + record (pure, and through the in-memory state store),
//! OpenAI mapping (`ChatRequest` → request body; response body → `ProviderReply`), SSE
//! parsing of a whole 60-token stream, and `Gateway::chat` / `Gateway::stream` end to end
//! over an in-process provider that does the real OpenAI mapping but no I/O.
//!
//! Run with `cargo bench -p switchyard --bench hot_path` (`-- --quick` for a short run).
//! `bench/run --micro` runs it as part of the overhead benchmark; the test suite only
//! compiles it. The payloads are the ones faultline (the benchmark's mock upstream) sends.

// `criterion_group!` generates an undocumented `pub fn benches`.
#![allow(missing_docs)]

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use futures_util::StreamExt as _;
use switchyard::breaker::{Breaker, BreakerConfig, Cooldown, Op};
use switchyard::gateway::StreamEvent;
use switchyard::provider::http::Transport;
use switchyard::provider::openai::{self, OpenAi, OpenAiConfig};
use switchyard::provider::sse::{Parsed, SseEvent, SseParser};
use switchyard::provider::ChunkStream;
use switchyard::retry::RetryPolicy;
use switchyard::route::{self, Candidate, Order};
use switchyard::state::MemoryState;
use switchyard::{
    ChatChunk, ChatRequest, Gateway, Message, Money, Price, Provider, ProviderError, ProviderReply,
    ProviderSpec, Route,
};

/// The answer faultline gives (60 word tokens).
const ANSWER: &str = "A gateway earns trust when things go wrong. It retries what is worth retrying, waits exactly as long as the vendor asks, and moves on when the deadline draws near. After repeated failures it opens a circuit, sends one probe when the cooldown passes, and closes again on success. Every answer says who served it, what it cost, and why.";

/// The model every payload names.
const MODEL: &str = "bench-model";

/// A chat completion body as faultline sends it.
fn response_body() -> Vec<u8> {
    let body = serde_json::json!({
        "id": "chatcmpl-faultline", "object": "chat.completion", "created": 1_700_000_000,
        "model": MODEL,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": ANSWER,
            "refusal": null}, "logprobs": null, "finish_reason": "stop"}],
        "usage": {"completion_tokens": 60, "prompt_tokens": 24, "total_tokens": 84}
    });
    serde_json::to_vec(&body).unwrap_or_default()
}

/// One SSE event per frame, as faultline streams it: role, 60 tokens, finish, usage, DONE.
fn stream_frames() -> Vec<Vec<u8>> {
    let chunk = |delta: serde_json::Value, finish: Option<&str>| {
        serde_json::json!({
            "id": "chatcmpl-faultline", "object": "chat.completion.chunk",
            "created": 1_700_000_000, "model": MODEL,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]
        })
    };
    let mut events = vec![chunk(
        serde_json::json!({"role": "assistant", "content": ""}),
        None,
    )];
    events.extend(tokens().map(|t| chunk(serde_json::json!({ "content": t }), None)));
    events.push(chunk(serde_json::json!({}), Some("stop")));
    events.push(serde_json::json!({
        "id": "chatcmpl-faultline", "object": "chat.completion.chunk",
        "created": 1_700_000_000, "model": MODEL, "choices": [],
        "usage": {"completion_tokens": 60, "prompt_tokens": 24, "total_tokens": 84}
    }));
    let mut frames: Vec<Vec<u8>> = events
        .iter()
        .map(|e| format!("data: {e}\n\n").into_bytes())
        .collect();
    frames.push(b"data: [DONE]\n\n".to_vec());
    frames
}

/// The answer's tokens, each word with the space before it.
fn tokens() -> impl Iterator<Item = String> {
    ANSWER.split(' ').enumerate().map(|(i, w)| {
        if i == 0 {
            w.to_owned()
        } else {
            format!(" {w}")
        }
    })
}

/// The request the benchmark's clients send, as the server maps it.
fn chat_request() -> ChatRequest {
    ChatRequest {
        messages: vec![
            Message::system("You are terse."),
            Message::user("Say something about gateways."),
        ],
        max_tokens: Some(100),
        ..ChatRequest::default()
    }
}

/// An OpenAI adapter that is never asked to connect.
fn adapter() -> Result<OpenAi, Box<dyn std::error::Error>> {
    let config = OpenAiConfig::new(MODEL).base_url("http://127.0.0.1:9/v1");
    Ok(OpenAi::new(config, &Transport::default())?)
}

/// An upstream without the network: builds the real OpenAI body and parses faultline's
/// canned response (or stream) with the real adapter code.
struct Canned {
    adapter: OpenAi,
    body: Vec<u8>,
    frames: Vec<Vec<u8>>,
}

#[async_trait]
impl Provider for Canned {
    fn kind(&self) -> &'static str {
        "canned"
    }

    fn model(&self) -> &str {
        MODEL
    }

    async fn send(&self, req: &ChatRequest) -> Result<ProviderReply, ProviderError> {
        black_box(self.adapter.build_request(req, false)?);
        openai::parse_response(&self.body)
    }

    async fn stream(&self, req: &ChatRequest) -> Result<ChunkStream, ProviderError> {
        black_box(self.adapter.build_request(req, true)?);
        let chunks = parse_stream(&self.frames)?;
        Ok(Box::pin(futures_util::stream::iter(
            chunks.into_iter().map(Ok),
        )))
    }
}

/// Every chunk of a stream, parsed frame by frame with the real SSE parser and adapter.
fn parse_stream(frames: &[Vec<u8>]) -> Result<Vec<ChatChunk>, ProviderError> {
    let mut parser = SseParser::new();
    let mut chunks = Vec::new();
    for frame in frames {
        for event in parser.push(frame) {
            if let Parsed::Chunk(c) = openai::parse_event(&event)? {
                chunks.push(c);
            }
        }
    }
    Ok(chunks)
}

/// The benchmark's route: two providers, retries, a breaker, prices (ledger), a budget.
fn gateway() -> Result<Gateway, Box<dyn std::error::Error>> {
    let price = Price::from_usd_per_mtok(0.15, 0.6, None, None)?;
    let mut builder = Gateway::builder();
    for name in ["primary", "fallback"] {
        let upstream = Arc::new(Canned {
            adapter: adapter()?,
            body: response_body(),
            frames: stream_frames(),
        });
        builder = builder.provider(ProviderSpec::new(name, upstream).price(price));
    }
    let route = Route::new(MODEL, &["primary", "fallback"])
        .retry(RetryPolicy {
            max_attempts: 2,
            base_delay: Duration::from_millis(50),
            max_delay: Duration::from_secs(1),
            max_retry_after: Duration::from_secs(5),
        })
        .breaker(breaker_config())
        .budget(Money::from_usd(1_000_000.0));
    Ok(builder.route(route).build()?)
}

fn breaker_config() -> BreakerConfig {
    BreakerConfig {
        failure_threshold: 5,
        cooldown: Cooldown {
            base: Duration::from_secs(5),
            max: Duration::from_secs(300),
        },
    }
}

fn route_plan(c: &mut Criterion) {
    let priced = |usd: f64, ms: f64| Candidate {
        nominal_cost: Some(Money::from_usd(usd)),
        latency_ms: Some(ms),
    };
    let candidates = [priced(0.02, 300.0), priced(0.01, 120.0), priced(0.03, 90.0)];
    let mut g = c.benchmark_group("route");
    for order in [Order::Ordered, Order::Cheapest, Order::Fastest] {
        g.bench_function(format!("plan_{order:?}_3").to_lowercase(), |b| {
            b.iter(|| route::plan(black_box(order), black_box(&candidates)));
        });
    }
    g.finish();
}

fn breaker(c: &mut Criterion) {
    let cfg = breaker_config();
    let lease_for = Duration::from_secs(30);
    let mut g = c.benchmark_group("breaker");
    g.bench_function("admit_then_success_pure", |b| {
        let mut breaker = Breaker::default();
        let mut ms = 1_700_000_000_000u64;
        b.iter(|| {
            ms += 1;
            let now = ms;
            let admitted = breaker.admit(now, lease_for);
            black_box(breaker.on_success(now, admitted.lease()))
        });
    });
    g.bench_function("admit_then_success_memory_state", |b| {
        let state = MemoryState::new();
        let mut ms = 1_700_000_000_000u64;
        b.iter(|| {
            ms += 1;
            let now = ms;
            let applied = state.apply("primary", &cfg, now, Op::Admit { lease_for });
            let lease = applied.admission.lease();
            black_box(state.apply("primary", &cfg, now, Op::Succeeded { lease }))
        });
    });
    g.finish();
}

fn mapping(c: &mut Criterion) {
    let Ok(adapter) = adapter() else {
        eprintln!("mapping: cannot build the adapter; skipped");
        return;
    };
    let req = chat_request();
    let body = response_body();
    let mut g = c.benchmark_group("openai_mapping");
    g.bench_function("chat_request_to_body", |b| {
        b.iter(|| adapter.build_request(black_box(&req), false));
    });
    g.throughput(Throughput::Bytes(body.len() as u64));
    g.bench_function("response_body_to_reply", |b| {
        b.iter(|| openai::parse_response(black_box(&body)));
    });
    g.finish();
}

fn sse(c: &mut Criterion) {
    let frames = stream_frames();
    let bytes: Vec<u8> = frames.concat();
    let mut g = c.benchmark_group("sse");
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.bench_function("parse_events_60_tokens", |b| {
        b.iter(|| {
            let mut parser = SseParser::new();
            let events: Vec<SseEvent> = frames.iter().flat_map(|f| parser.push(f)).collect();
            black_box(events)
        });
    });
    g.bench_function("parse_events_and_chunks_60_tokens", |b| {
        b.iter(|| parse_stream(black_box(&frames)));
    });
    g.finish();
}

fn gateway_end_to_end(c: &mut Criterion) {
    let built = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())
        .and_then(|rt| Ok((rt, gateway().map_err(|e| e.to_string())?)));
    let (rt, gateway) = match built {
        Ok(pair) => pair,
        Err(e) => {
            eprintln!("gateway: {e}; skipped");
            return;
        }
    };
    let req = chat_request();
    let mut g = c.benchmark_group("gateway");
    g.bench_function("chat_two_provider_route", |b| {
        b.iter(|| rt.block_on(gateway.chat(MODEL, black_box(&req))));
    });
    g.bench_function("stream_two_provider_route_60_tokens", |b| {
        b.iter(|| {
            rt.block_on(async {
                let Ok(mut stream) = gateway.stream(MODEL, req.clone()).await else {
                    return 0;
                };
                let mut events = 0usize;
                while let Some(e) = stream.next().await {
                    events += usize::from(matches!(black_box(e), StreamEvent::Chunk(_)));
                }
                events
            })
        });
    });
    g.finish();
}

criterion_group!(
    benches,
    route_plan,
    breaker,
    mapping,
    sse,
    gateway_end_to_end
);
criterion_main!(benches);
