//! `switchyard._core`: the native half of the Python package (docs/python.md).
//!
//! The Python half (`python/switchyard/`) owns the API's names and shapes; this module owns
//! what must be Rust: one tokio runtime per process (started on first use), the gateway
//! built from the proxy's own config code (`switchyard_server::config`), and the calls.
//! Requests, replies and errors cross as JSON text, so the Python side decides every name
//! and this side never raises for a gateway error: a call answers `(ok, json)`.
//!
//! - Sync calls (`Core::complete`, `Stream::next`) spawn the request on the runtime and wait
//!   with the GIL released, waking every [`SIGNAL_POLL`] to let Python run its signal
//!   handlers: a `KeyboardInterrupt` aborts the task, which drops the request's future and
//!   so cancels the upstream call (the gateway releases reservations and probe leases as
//!   for any cancelled request).
//! - Async calls (`Core::start`, `Stream::next_async`) spawn the request and hand its
//!   answer to a Python callback from the runtime's thread; the Python side resolves an
//!   asyncio future with `loop.call_soon_threadsafe`, and cancels the returned [`Handle`]
//!   when the awaiting task is cancelled.
//! - Providers written in Python (`BaseProvider` subclasses) are [`PyProvider`]s: Python
//!   prepares the request and parses the answer; transport, timeouts, retries, breakers,
//!   deadlines and latency are the Rust core's.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use futures_util::StreamExt;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use serde_json::{json, Value};
use switchyard::chat::FinishReason;
use switchyard::clock::Clock;
use switchyard::gateway::StreamEvent;
use switchyard::provider::http::{
    insert_header, Endpoint, HttpClient, HttpSettings, Transport, TransportConfig,
};
use switchyard::provider::scripted::{ScriptedProvider, Step};
use switchyard::trail::{Attempt, Outcome};
use switchyard::{
    ChatRequest, ChatResponse, ErrorKind, Gateway, GatewayError, Provider, ProviderError,
    ProviderReply, ProviderSpec, Usage,
};
use switchyard_server::config::{self, Config, ProviderToml, RouteToml};
use tokio::sync::{mpsc, Mutex};

/// How often a thread waiting on the gateway wakes to run Python's signal handlers.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// Events a stream may hold before its producer waits for Python to read.
const STREAM_BUFFER: usize = 64;

static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();

/// The process's runtime, started on first use.
fn runtime() -> PyResult<&'static tokio::runtime::Runtime> {
    if let Some(rt) = RUNTIME.get() {
        return Ok(rt);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("switchyard")
        .build()
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start the runtime: {e}")))?;
    // two threads racing here: the loser's runtime is dropped (it ran nothing)
    Ok(RUNTIME.get_or_init(|| rt))
}

/// A gateway and the route its calls go through.
#[pyclass(frozen, module = "switchyard._core")]
struct Core {
    gateway: Gateway,
    route: String,
    warnings: Vec<String>,
}

/// A request in flight on the runtime: cancelling it drops the request.
#[pyclass(frozen, module = "switchyard._core")]
struct Handle {
    task: tokio::task::AbortHandle,
}

#[pymethods]
impl Handle {
    /// Cancel the request (nothing when it already finished).
    fn cancel(&self) {
        self.task.abort();
    }
}

/// A streamed completion: events as `(kind, json)` — `open`, `chunk`, `done`, `error`.
#[pyclass(frozen, module = "switchyard._core")]
struct Stream {
    events: Arc<Mutex<mpsc::Receiver<(&'static str, String)>>>,
    task: tokio::task::AbortHandle,
}

#[pymethods]
impl Core {
    /// A gateway from the Python constructor's description: `spec` is JSON with
    /// `providers` (each a `[[providers]]` entry; a `kind = "python"` one is `custom`'s
    /// object of the same name) and `route` (a `[[routes]]` entry); `keys` maps the
    /// synthetic variable names the entries' `api_key_env` use to the keys passed in.
    #[new]
    fn new(
        py: Python<'_>,
        spec: &str,
        custom: HashMap<String, Py<PyAny>>,
        keys: HashMap<String, String>,
    ) -> PyResult<Self> {
        let mut spec: Value = serde_json::from_str(spec).map_err(value_error)?;
        // a scripted provider's script is no `[[providers]]` field: kept aside by name
        let mut scripts = HashMap::new();
        if let Some(list) = spec["providers"].as_array_mut() {
            for entry in list.iter_mut().filter(|e| e["kind"] == "scripted") {
                if let Some(fields) = entry.as_object_mut() {
                    let name = fields["name"].as_str().unwrap_or_default().to_owned();
                    let script = fields.remove("script");
                    let text = fields.remove("text");
                    scripts.insert(name, (script, text));
                }
            }
        }
        let providers: Vec<ProviderToml> =
            serde_json::from_value(spec["providers"].clone()).map_err(value_error)?;
        let route: RouteToml =
            serde_json::from_value(spec["route"].clone()).map_err(value_error)?;
        // the proxy's own validation, over the entries it knows how to build
        let known: Vec<ProviderToml> = (providers.iter())
            .filter(|p| p.kind != "python" && p.kind != "scripted")
            .cloned()
            .collect();
        let mut check_route = route.clone();
        check_route.providers = known.iter().map(|p| p.name.clone()).collect();
        let check = Config {
            providers: known,
            routes: vec![check_route],
            ..Config::default()
        };
        let problems: Vec<String> = config::validate(&check)
            .into_iter()
            .filter(|p| !p.starts_with("routes[0].providers"))
            .collect();
        if !problems.is_empty() {
            return Err(PyValueError::new_err(problems.join("; ")));
        }
        let rt = runtime()?;
        let _entered = rt.enter();
        let transport = Transport::new(TransportConfig::default());
        let clock = Clock::system();
        let env = |var: &str| keys.get(var).cloned().or_else(|| std::env::var(var).ok());
        let mut builder = Gateway::builder().clock(clock);
        let mut warnings = Vec::new();
        for prov in &providers {
            let spec = if prov.kind == "python" {
                let obj = custom.get(&prov.name).ok_or_else(|| {
                    PyValueError::new_err(format!("no provider object for {:?}", prov.name))
                })?;
                let model: String = obj.getattr(py, "model")?.extract(py)?;
                let http = transport
                    .client(HttpSettings::default())
                    .map_err(|e| PyValueError::new_err(e.0))?;
                let provider = PyProvider {
                    model,
                    obj: obj.clone_ref(py),
                    http,
                    clock,
                };
                local_spec(prov, Arc::new(provider))?
            } else if prov.kind == "scripted" {
                let (script, text) = scripts.remove(&prov.name).unwrap_or_default();
                local_spec(prov, Arc::new(scripted(prov, script, text)?))?
            } else {
                let (spec, warning) = config::provider_spec(prov, &env, &transport, clock)
                    .map_err(PyValueError::new_err)?;
                warnings.extend(warning);
                spec
            };
            builder = builder.provider(spec);
        }
        builder = builder.route(config::route_of(&route).map_err(PyValueError::new_err)?);
        let gateway = builder.build().map_err(value_error)?;
        Ok(Self {
            gateway,
            route: route.name,
            warnings,
        })
    }

    /// A gateway from a proxy config file, built exactly as `switchyard serve` builds it;
    /// calls go through `route` (default: the file's first route). Answers the core and
    /// the JSON list of its providers (`name`, `kind`, `model`).
    #[staticmethod]
    #[pyo3(signature = (path, route=None))]
    fn from_config(path: &str, route: Option<String>) -> PyResult<(Self, String)> {
        let config = config::load(std::path::Path::new(path))
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        let rt = runtime()?;
        let _entered = rt.enter();
        let env = |var: &str| std::env::var(var).ok();
        let built = config::build_gateway(&config, &env, false, Default::default())
            .map_err(PyValueError::new_err)?;
        let route = match route {
            Some(r) => r,
            None => built.gateway.default_route().to_owned(),
        };
        built
            .gateway
            .route(&route)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        let providers: Vec<Value> = (built.gateway.providers().iter())
            .map(
                |s| json!({"name": s.name, "kind": s.provider.kind(), "model": s.provider.model()}),
            )
            .collect();
        let core = Self {
            gateway: built.gateway,
            route,
            warnings: built.warnings,
        };
        Ok((core, Value::Array(providers).to_string()))
    }

    /// What will not work as configured (missing keys, unpriced models under a budget).
    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }

    /// One request, waited for with the GIL released: `(ok, reply or error JSON)`.
    fn complete(&self, py: Python<'_>, request: &str) -> PyResult<(bool, String)> {
        let req = parse_request(request)?;
        let (gateway, route) = (self.gateway.clone(), self.route.clone());
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let task = runtime()?.spawn(async move {
            let answer = encode(gateway.chat(&route, &req).await);
            let _ = tx.send(answer);
        });
        wait(py, rx, &task.abort_handle())
    }

    /// One request whose answer goes to `callback(ok, json)` from the runtime's thread.
    fn start(&self, request: &str, callback: Py<PyAny>) -> PyResult<Handle> {
        let req = parse_request(request)?;
        let (gateway, route) = (self.gateway.clone(), self.route.clone());
        let task = runtime()?.spawn(async move {
            let (ok, payload) = encode(gateway.chat(&route, &req).await);
            deliver(&callback, ok, payload);
        });
        Ok(Handle {
            task: task.abort_handle(),
        })
    }

    /// Open a stream; its events are read with `Stream.next` / `Stream.next_async`.
    fn stream(&self, request: &str) -> PyResult<Stream> {
        let req = parse_request(request)?;
        let (gateway, route) = (self.gateway.clone(), self.route.clone());
        let (tx, rx) = mpsc::channel(STREAM_BUFFER);
        let task = runtime()?.spawn(async move {
            let mut stream = match gateway.stream(&route, req).await {
                Ok(s) => s,
                Err(e) => {
                    let _ = tx.send(("error", error_json(&e).to_string())).await;
                    return;
                }
            };
            let open = json!({"provider": stream.provider, "model": stream.model});
            if tx.send(("open", open.to_string())).await.is_err() {
                return;
            }
            while let Some(event) = stream.next().await {
                let item = match event {
                    StreamEvent::Chunk(c) if c.text.is_empty() => continue,
                    StreamEvent::Chunk(c) => ("chunk", c.text),
                    StreamEvent::Done(r) => ("done", reply_json(&r).to_string()),
                    StreamEvent::Failed(e) => ("error", error_json(&e).to_string()),
                };
                // the reader went away: dropping the stream cancels the upstream call
                if tx.send(item).await.is_err() {
                    return;
                }
            }
        });
        Ok(Stream {
            events: Arc::new(Mutex::new(rx)),
            task: task.abort_handle(),
        })
    }

    /// Every provider's health (JSON list of the library's `ProviderHealth`).
    fn health(&self, py: Python<'_>) -> PyResult<String> {
        let gateway = self.gateway.clone();
        let rt = runtime()?;
        let health = py.detach(|| rt.block_on(gateway.health()));
        serde_json::to_string(&health).map_err(value_error)
    }

    /// The ledger per provider (JSON object).
    fn ledger(&self) -> String {
        let rows: serde_json::Map<String, Value> = (self.gateway.ledger().summary())
            .into_iter()
            .map(|(name, row)| {
                let cost =
                    (row.unpriced_calls < row.calls || row.calls == 0).then(|| row.cost.to_usd());
                let failures: serde_json::Map<String, Value> = (row.failures.iter())
                    .map(|(k, n)| (k.label().to_owned(), json!(n)))
                    .collect();
                let v = json!({
                    "calls": row.calls,
                    "input_tokens": row.input_tokens,
                    "output_tokens": row.output_tokens,
                    "cost_usd": cost,
                    "unpriced_calls": row.unpriced_calls,
                    "failures": failures,
                });
                (name, v)
            })
            .collect();
        Value::Object(rows).to_string()
    }

    /// The Rust library's own time for `n` calls of `request` made one after another on the
    /// runtime (no Python between them), in seconds: the baseline the binding's cost per
    /// call is measured against (BENCHMARKS.md, "The Python binding").
    fn bench_library(&self, py: Python<'_>, request: &str, n: u32) -> PyResult<f64> {
        let req = parse_request(request)?;
        let (gateway, route) = (self.gateway.clone(), self.route.clone());
        let rt = runtime()?;
        let elapsed = py.detach(|| {
            rt.block_on(async move {
                let start = tokio::time::Instant::now();
                for _ in 0..n {
                    let _ = std::hint::black_box(gateway.chat(&route, &req).await);
                }
                start.elapsed()
            })
        });
        Ok(elapsed.as_secs_f64())
    }

    /// The route's budget as `(limit, spent, reserved)` in USD; `None` without a budget.
    fn budget(&self, py: Python<'_>) -> PyResult<Option<(f64, f64, f64)>> {
        let (gateway, route) = (self.gateway.clone(), self.route.clone());
        let rt = runtime()?;
        let state = py.detach(|| rt.block_on(async move { gateway.budget(&route).await }));
        Ok(state.map(|b| (b.limit.to_usd(), b.spent.to_usd(), b.reserved.to_usd())))
    }
}

#[pymethods]
impl Stream {
    /// The next event, waited for with the GIL released; `None` at the end.
    fn next(&self, py: Python<'_>) -> PyResult<Option<(&'static str, String)>> {
        let rt = runtime()?;
        loop {
            let events = self.events.clone();
            let got = py.detach(|| {
                rt.block_on(async move {
                    let mut rx = events.lock().await;
                    tokio::time::timeout(SIGNAL_POLL, rx.recv()).await
                })
            });
            match got {
                Ok(item) => return Ok(item),
                Err(_elapsed) => {
                    if let Err(e) = py.check_signals() {
                        self.task.abort();
                        return Err(e);
                    }
                }
            }
        }
    }

    /// The next event, handed to `callback(kind, json)` (`None, None` at the end) from the
    /// runtime's thread.
    fn next_async(&self, callback: Py<PyAny>) -> PyResult<Handle> {
        let events = self.events.clone();
        let task = runtime()?.spawn(async move {
            let item = events.lock().await.recv().await;
            Python::attach(|py| {
                let args = match item {
                    Some((kind, payload)) => (Some(kind), Some(payload)),
                    None => (None, None),
                };
                if let Err(e) = callback.call1(py, args) {
                    e.print(py);
                }
            });
        });
        Ok(Handle {
            task: task.abort_handle(),
        })
    }

    /// Stop the stream: the upstream call is cancelled.
    fn cancel(&self) {
        self.task.abort();
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Wait for a spawned request's answer with the GIL released, running Python's signal
/// handlers every [`SIGNAL_POLL`]; an exception from them (Ctrl-C) cancels the request.
fn wait(
    py: Python<'_>,
    mut rx: std::sync::mpsc::Receiver<(bool, String)>,
    task: &tokio::task::AbortHandle,
) -> PyResult<(bool, String)> {
    use std::sync::mpsc::RecvTimeoutError;
    loop {
        // the receiver is `Send` but not `Sync`: it goes to the detached closure and back
        let (got, back) = py.detach(move || (rx.recv_timeout(SIGNAL_POLL), rx));
        rx = back;
        match got {
            Ok(answer) => return Ok(answer),
            Err(RecvTimeoutError::Timeout) => {
                if let Err(e) = py.check_signals() {
                    task.abort();
                    return Err(e);
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(PyRuntimeError::new_err(
                    "the request's task ended unanswered",
                ))
            }
        }
    }
}

/// Hand `(ok, payload)` to a Python callback (from a runtime thread).
fn deliver(callback: &Py<PyAny>, ok: bool, payload: String) {
    Python::attach(|py| {
        if let Err(e) = callback.call1(py, (ok, payload)) {
            e.print(py);
        }
    });
}

fn value_error(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

fn parse_request(text: &str) -> PyResult<ChatRequest> {
    serde_json::from_str(text).map_err(|e| PyValueError::new_err(format!("invalid request: {e}")))
}

/// A call's answer as `(ok, json)`.
fn encode(result: Result<ChatResponse, GatewayError>) -> (bool, String) {
    match result {
        Ok(reply) => (true, reply_json(&reply).to_string()),
        Err(e) => (false, error_json(&e).to_string()),
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn usage_json(usage: Option<&Usage>) -> Value {
    usage.map_or(Value::Null, |u| {
        json!({
            "input_tokens": u.input_tokens,
            "output_tokens": u.output_tokens,
            "cached_input_tokens": u.cached_input_tokens,
            "cache_write_tokens": u.cache_write_tokens,
            "reasoning_tokens": u.reasoning_tokens,
        })
    })
}

fn reply_json(r: &ChatResponse) -> Value {
    let tool_calls: Vec<Value> = (r.tool_calls.iter())
        .map(|t| json!({"id": t.id, "name": t.name, "arguments": t.arguments}))
        .collect();
    json!({
        "text": r.text,
        "provider": r.provider,
        "model": r.model,
        "failed_over": r.failed_over,
        "finish_reason": r.finish_reason.as_ref().map(FinishReason::as_openai),
        "tool_calls": tool_calls,
        "usage": usage_json(r.usage.as_ref()),
        "cost_usd": r.cost.map(switchyard::Money::to_usd),
        "latency_ms": ms(r.latency),
        "attempts": attempts_json(&r.attempts),
        "refusal": r.refusal,
    })
}

fn attempts_json(attempts: &[Attempt]) -> Vec<Value> {
    attempts
        .iter()
        .map(|a| {
            let (kind, error, skipped) = match &a.outcome {
                Outcome::Failed { kind, message } => {
                    (Some(kind.label()), Some(message.clone()), None)
                }
                Outcome::Skipped { reason, .. } => (None, None, Some(reason.label())),
                _ => (None, None, None),
            };
            json!({
                "provider": a.provider,
                "model": a.model,
                "attempt": a.attempt,
                "latency_ms": ms(a.latency),
                "ok": matches!(a.outcome, Outcome::Success),
                "outcome": a.outcome.label(),
                "error_kind": kind,
                "error": error,
                "skipped": skipped,
                "status": a.status,
                "probe": a.probe,
            })
        })
        .collect()
}

fn provider_error_json(provider: &str, e: &ProviderError) -> Value {
    json!({
        "provider": provider,
        "kind": e.kind.label(),
        "message": e.message,
        "status": e.status,
        "vendor_code": e.vendor_code,
        "retry_after_s": e.retry_after.map(|d| d.as_secs_f64()),
    })
}

fn error_json(e: &GatewayError) -> Value {
    let message = e.to_string();
    let errors = |list: &[switchyard::error::AttemptError]| -> Vec<Value> {
        (list.iter())
            .map(|a| provider_error_json(&a.provider, &a.error))
            .collect()
    };
    match e {
        GatewayError::BudgetExceeded {
            scope,
            needed,
            limit,
            spent,
            reserved,
            attempts,
        } => json!({
            "type": "budget_exceeded", "message": message, "scope": scope,
            "needed_usd": needed.to_usd(), "limit_usd": limit.to_usd(),
            "spent_usd": spent.to_usd(), "reserved_usd": reserved.to_usd(),
            "attempts": attempts_json(attempts), "errors": [],
        }),
        GatewayError::DeadlineExceeded {
            deadline,
            errors: list,
            attempts,
        } => json!({
            "type": "deadline_exceeded", "message": message,
            "deadline_s": deadline.as_secs_f64(),
            "attempts": attempts_json(attempts), "errors": errors(list),
        }),
        GatewayError::Provider {
            provider,
            error,
            attempts,
        } => json!({
            "type": "provider", "message": message,
            "error": provider_error_json(provider, error),
            "attempts": attempts_json(attempts),
            "errors": [provider_error_json(provider, error)],
        }),
        GatewayError::AllFailed {
            errors: list,
            attempts,
        } => json!({
            "type": "all_failed", "message": message,
            "attempts": attempts_json(attempts), "errors": errors(list),
        }),
        GatewayError::RateLimited {
            retry_after,
            errors: list,
            attempts,
        } => json!({
            "type": "rate_limited", "message": message,
            "retry_after_s": retry_after.as_secs_f64(),
            "attempts": attempts_json(attempts), "errors": errors(list),
        }),
        GatewayError::CannotHonour {
            fields, attempts, ..
        } => json!({
            "type": "cannot_honour", "message": message, "fields": fields,
            "attempts": attempts_json(attempts), "errors": [],
        }),
        GatewayError::Cancelled { attempts, .. } => json!({
            "type": "cancelled", "message": message,
            "attempts": attempts_json(attempts), "errors": [],
        }),
        GatewayError::InvalidRequest(_) => {
            json!({"type": "invalid_request", "message": message, "attempts": [], "errors": []})
        }
        _ => json!({"type": "gateway", "message": message, "attempts": [], "errors": []}),
    }
}

/// A provider written in Python (a `BaseProvider` subclass): its `_sy_prepare`,
/// `_sy_parse` and `_sy_classify` (python/switchyard/providers/base.py) shape the call;
/// the HTTP call is the shared transport's.
struct PyProvider {
    model: String,
    obj: Py<PyAny>,
    http: HttpClient,
    clock: Clock,
}

/// The spec of a provider the proxy's config cannot build (a Python or scripted one): its
/// entry's timeouts, attempts and price.
fn local_spec(prov: &ProviderToml, provider: Arc<dyn Provider>) -> PyResult<ProviderSpec> {
    let secs = |v: &Option<String>, default: u64| -> PyResult<Duration> {
        v.as_deref()
            .map_or(Ok(Duration::from_secs(default)), config::duration)
            .map_err(PyValueError::new_err)
    };
    let mut spec = ProviderSpec::new(&prov.name, provider)
        .timeout(secs(&prov.timeout, 30)?)
        .stream_timeouts(
            secs(&prov.first_token_timeout, 10)?,
            secs(&prov.stall_timeout, 15)?,
        );
    spec.max_attempts = prov.max_attempts;
    if let Some(p) = prov.price {
        spec.price = Some(p.to_price().map_err(value_error)?);
        spec.max_output_tokens = p.max_output_tokens;
    }
    Ok(spec)
}

/// The library's scripted provider (`switchyard.testing.ScriptedProvider`): fails with each
/// kind of `script` in turn (`"overloaded"`, ...), then answers `text`, at once, in-process.
fn scripted(
    prov: &ProviderToml,
    script: Option<Value>,
    text: Option<Value>,
) -> PyResult<ScriptedProvider> {
    let mut provider = ScriptedProvider::new(prov.model.as_deref().unwrap_or("scripted"));
    if let Some(text) = text.as_ref().and_then(Value::as_str) {
        provider = provider.otherwise(Step::text(text));
    }
    for label in script
        .as_ref()
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let label = label.as_str().unwrap_or_default();
        let kind = ErrorKind::from_label(label)
            .ok_or_else(|| PyValueError::new_err(format!("unknown failure kind {label:?}")))?;
        provider = provider.then(Step::fail(kind));
    }
    Ok(provider)
}

impl PyProvider {
    /// Call one of the object's hooks; a Python exception becomes `kind`.
    fn hook<T>(
        &self,
        kind: ErrorKind,
        f: impl FnOnce(Python<'_>, &Py<PyAny>) -> PyResult<T>,
    ) -> Result<T, ProviderError> {
        Python::attach(|py| f(py, &self.obj)).map_err(|e| ProviderError::new(kind, e.to_string()))
    }
}

#[async_trait]
impl Provider for PyProvider {
    fn kind(&self) -> &'static str {
        "python"
    }

    fn model(&self) -> &str {
        &self.model
    }

    async fn send(&self, req: &ChatRequest) -> Result<ProviderReply, ProviderError> {
        let request = serde_json::to_string(req)
            .map_err(|e| ProviderError::new(ErrorKind::BadRequest, e.to_string()))?;
        let (url, headers, body): (String, Vec<(String, String)>, String) = self
            .hook(ErrorKind::BadRequest, |py, obj| {
                obj.call_method1(py, "_sy_prepare", (request,))?.extract(py)
            })?;
        let bad =
            |e: &dyn std::fmt::Display| ProviderError::new(ErrorKind::BadRequest, e.to_string());
        let url = url::Url::parse(&url).map_err(|e| bad(&e))?;
        let endpoint = Endpoint::new(url).map_err(|e| bad(&e.0))?;
        let mut map = http::HeaderMap::new();
        for (name, value) in &headers {
            insert_header(&mut map, name, value).map_err(|e| bad(&e.0))?;
        }
        let response = self
            .http
            .post_json(&endpoint, &map, body.into_bytes())
            .await?;
        if !response.is_success() {
            let failure = response.into_failure().await;
            let status = failure.status;
            let text = String::from_utf8_lossy(&failure.body).into_owned();
            let custom: Option<String> = self.hook(ErrorKind::Malformed, |py, obj| {
                obj.call_method1(py, "_sy_classify", (status, text))?
                    .extract(py)
            })?;
            let now = self.clock.system_time();
            let base = switchyard::provider::openai::classify(&failure, now);
            return Err(match custom.as_deref().and_then(ErrorKind::from_label) {
                Some(kind) => ProviderError { kind, ..base },
                None => base,
            });
        }
        let body = response.body().await?;
        let text = String::from_utf8_lossy(&body).into_owned();
        let (answer, input_tokens, output_tokens): (String, u64, u64) = self
            .hook(ErrorKind::Malformed, |py, obj| {
                obj.call_method1(py, "_sy_parse", (text,))?.extract(py)
            })?;
        Ok(ProviderReply {
            text: answer,
            finish_reason: Some(FinishReason::Stop),
            model: Some(self.model.clone()),
            usage: Some(Usage {
                input_tokens,
                output_tokens,
                ..Usage::default()
            }),
            ..ProviderReply::default()
        })
    }
}

/// Run the `switchyard` command line (`args` without the program name) with the GIL
/// released; answers the exit code.
#[pyfunction]
fn cli(py: Python<'_>, args: Vec<String>) -> i32 {
    let argv = std::iter::once("switchyard".to_owned()).chain(args);
    let code = py.detach(|| switchyard_server::cli::main(argv));
    i32::from(code != std::process::ExitCode::SUCCESS)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Core>()?;
    m.add_class::<Handle>()?;
    m.add_class::<Stream>()?;
    m.add_function(wrap_pyfunction!(cli, m)?)?;
    m.add("VERSION", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
