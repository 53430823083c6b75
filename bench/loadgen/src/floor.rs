//! `floor`: the least a Rust proxy on switchyard's own HTTP stack does per request, for
//! bench/count to count beside the gateway (`bench/count --floor`).
//!
//! One hyper HTTP/1 server connection per client connection (as switchyard's edge,
//! crates/switchyard-server/src/http/edge/conn.rs), the request body read whole (switchyard
//! must read it to route), then the same method, path and body sent upstream through
//! hyper-util's pooled legacy client (switchyard's transport,
//! crates/switchyard/src/provider/http/), and the upstream's status, content type and body
//! passed back as they arrive (a stream frame by frame, as nginx with `proxy_buffering off`).
//! No JSON, no routing, no accounting: what is left when a gateway does nothing but proxy,
//! on the same tokio runtime, hyper and hyper-util versions as the gateway.
//!
//! `floor --listen 127.0.0.1:PORT --upstream http://127.0.0.1:PORT` prints
//! `listening on http://ADDR` once it accepts, as `switchyard serve` does.

use std::convert::Infallible;
use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::{TokioExecutor, TokioIo};

type Upstream = Client<HttpConnector, Full<Bytes>>;

fn main() {
    let mut listen = None;
    let mut upstream = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--listen" => listen = args.next(),
            "--upstream" => upstream = args.next(),
            _ => fail(&format!("unknown argument {a:?}")),
        }
    }
    let listen: SocketAddr = listen
        .unwrap_or_else(|| fail("--listen ADDR is required"))
        .parse()
        .unwrap_or_else(|e| fail(&format!("--listen: {e}")));
    let upstream = upstream.unwrap_or_else(|| fail("--upstream URL is required"));
    let upstream: &'static str =
        Box::leak(upstream.trim_end_matches('/').to_owned().into_boxed_str());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| fail(&format!("runtime: {e}")));
    runtime.block_on(serve(listen, upstream));
}

fn fail(why: &str) -> ! {
    eprintln!("floor: {why}");
    std::process::exit(2)
}

async fn serve(listen: SocketAddr, upstream: &'static str) {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .unwrap_or_else(|e| fail(&format!("bind {listen}: {e}")));
    let addr = listener.local_addr().unwrap_or(listen);
    println!("listening on http://{addr}");
    let client: Upstream = Client::builder(TokioExecutor::new()).build_http();
    let mut shutdown = std::pin::pin!(tokio::signal::ctrl_c());
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .unwrap_or_else(|e| fail(&format!("SIGTERM: {e}")));
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(_) => continue,
            },
            _ = &mut shutdown => return,
            _ = term.recv() => return,
        };
        let _ = stream.set_nodelay(true);
        let client = client.clone();
        // a benchmark tool, not the server: its connections need no shutdown tracker
        #[allow(clippy::disallowed_methods)]
        tokio::spawn(async move {
            let service =
                hyper::service::service_fn(move |req| forward(client.clone(), upstream, req));
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn forward(
    client: Upstream,
    upstream: &'static str,
    req: Request<Incoming>,
) -> Result<Response<BoxBody<Bytes, hyper::Error>>, Infallible> {
    let (parts, body) = req.into_parts();
    let Ok(body) = body.collect().await.map(|b| b.to_bytes()) else {
        return Ok(status(400));
    };
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let mut out = Request::builder()
        .method(parts.method)
        .uri(format!("{upstream}{path}"));
    if let Some(ct) = parts.headers.get(hyper::header::CONTENT_TYPE) {
        out = out.header(hyper::header::CONTENT_TYPE, ct);
    }
    let Ok(out) = out.body(Full::new(body)) else {
        return Ok(status(400));
    };
    let Ok(answer) = client.request(out).await else {
        return Ok(status(502));
    };
    let (parts, body) = answer.into_parts();
    let mut back = Response::builder().status(parts.status);
    if let Some(ct) = parts.headers.get(hyper::header::CONTENT_TYPE) {
        back = back.header(hyper::header::CONTENT_TYPE, ct);
    }
    Ok(back.body(body.boxed()).unwrap_or_else(|_| status(502)))
}

fn status(code: u16) -> Response<BoxBody<Bytes, hyper::Error>> {
    let mut r = Response::new(
        Full::new(Bytes::new())
            .map_err(|never| match never {})
            .boxed(),
    );
    *r.status_mut() = hyper::StatusCode::from_u16(code).unwrap_or(hyper::StatusCode::BAD_GATEWAY);
    r
}
