//! Sockets a mock server cannot provide: a port nobody listens on, and a hand-written
//! HTTP/1.1 server that sends a body in chosen pieces (one HTTP chunk each, so the client's
//! reads split exactly there) and can keep the connection open after the last one.

use std::future::Future;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// A local address nothing listens on.
pub async fn closed_port_uri() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}")
}

/// Serve one request with a 200 event stream written as one HTTP chunk per piece, then
/// (if `hold_open`) keep the connection open until `client` is done. wiremock always
/// completes its bodies, so it cannot show a stream ending without `[DONE]`.
pub async fn with_raw_sse<F, Fut, T>(pieces: Vec<Vec<u8>>, hold_open: bool, client: F) -> T
where
    F: FnOnce(String) -> Fut,
    Fut: Future<Output = T>,
{
    with_raw_server("text/event-stream", pieces, hold_open, client).await
}

/// [`with_raw_sse`] for any content type: a 200 with a chunked body, one HTTP chunk per
/// piece (so the client's reads are split exactly there).
pub async fn with_raw_server<F, Fut, T>(
    content_type: &str,
    pieces: Vec<Vec<u8>>,
    hold_open: bool,
    client: F,
) -> T
where
    F: FnOnce(String) -> Fut,
    Fut: Future<Output = T>,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let uri = format!("http://{}", listener.local_addr().unwrap());
    let (done, finished) = tokio::sync::oneshot::channel::<()>();
    let server = async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        socket.set_nodelay(true).unwrap();
        read_request(&mut socket).await;
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ntransfer-encoding: chunked\r\n\r\n"
        );
        socket.write_all(head.as_bytes()).await.unwrap();
        for piece in pieces {
            let mut frame = format!("{:x}\r\n", piece.len()).into_bytes();
            frame.extend_from_slice(&piece);
            frame.extend_from_slice(b"\r\n");
            // The client may have finished (and hung up) already; that is its right.
            if socket.write_all(&frame).await.is_err() {
                break;
            }
            tokio::task::yield_now().await;
        }
        if !hold_open {
            let _ = socket.write_all(b"0\r\n\r\n").await;
        }
        let _ = finished.await;
    };
    let client = async move {
        let out = client(uri).await;
        let _ = done.send(());
        out
    };
    let ((), out) = tokio::join!(server, client);
    out
}

/// Read one HTTP/1.1 request (head and `content-length` body) off `socket`.
async fn read_request(socket: &mut tokio::net::TcpStream) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = socket.read(&mut chunk).await.unwrap();
        assert!(n > 0, "client hung up mid-request");
        buf.extend_from_slice(&chunk[..n]);
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .map_or(0, |v| v.trim().parse().unwrap());
        if buf.len() >= end + 4 + length {
            return;
        }
    }
}
