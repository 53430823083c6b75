//! Hot reload of the real binary: SIGHUP re-reads the file (a new route answers, a bad
//! file changes nothing), and reloads under load fail no request.

use crate::support::{
    chat_body, eventually, metric, route, simulated_provider, stream_body, Scratch, Server,
};

/// Two simulated providers; `routes` decides which routes exist.
fn config(routes: &[(&str, &[&str])]) -> String {
    let mut text = format!(
        "{}{}",
        simulated_provider("sim-a", 0.0),
        simulated_provider("sim-b", 0.0)
    );
    for (name, providers) in routes {
        text.push_str(&route(name, providers, ""));
    }
    text
}

#[tokio::test]
async fn sighup_reloads_the_file_a_new_route_answers_and_a_bad_file_changes_nothing() {
    let scratch = Scratch::new("e2e", "sighup");
    let path = scratch.file("switchyard.toml");
    let server = Server::start(scratch, &config(&[("first", &["sim-a"])]), &[]);
    server
        .chat(&chat_body("first", "hi"))
        .await
        .expect_status(200);
    server
        .chat(&chat_body("second", "hi"))
        .await
        .expect_status(404);

    std::fs::write(
        &path,
        config(&[("first", &["sim-a"]), ("second", &["sim-b"])]),
    )
    .unwrap();
    server.hangup();
    eventually("the SIGHUP reload is logged", || {
        server.stderr().contains("config reloaded (SIGHUP)")
    })
    .await;
    let reply = server.chat(&chat_body("second", "hi")).await;
    reply.expect_status(200);
    assert!(
        server.stderr().contains("routes added second"),
        "{}",
        server.stderr()
    );

    // a file with a mistake: refused, said why, and everything still served
    std::fs::write(
        &path,
        "[[routes]]\nname = \"second\"\nproviders = [\"nope\"]\n",
    )
    .unwrap();
    server.hangup();
    eventually("the refusal is logged", || {
        server.stderr().contains("reload refused, nothing changed")
    })
    .await;
    assert!(
        server.stderr().contains("no provider named \"nope\""),
        "{}",
        server.stderr()
    );
    server
        .chat(&chat_body("first", "hi"))
        .await
        .expect_status(200);
    server
        .chat(&chat_body("second", "hi"))
        .await
        .expect_status(200);
    let metrics = server.get("/metrics", &[]).await;
    let text = metrics.expect_status(200).text.clone();
    assert_eq!(
        metric(
            &text,
            "switchyard_config_reloads_total",
            &[("result", "ok")]
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        metric(
            &text,
            "switchyard_config_reloads_total",
            &[("result", "error")]
        ),
        Some(1.0),
        "{text}"
    );
}

/// Requests from several clients at once on 127.0.0.1 while the config is reloaded again
/// and again (alternating files that both keep the route the clients use, in another
/// provider order): every request is answered, every stream ends with `[DONE]`. Each client keeps sending until the reloads
/// are over (and at least `REQUESTS`, at most `MAX_REQUESTS`).
#[tokio::test]
async fn reloads_under_load_fail_no_request() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    const CLIENTS: usize = 4;
    const REQUESTS: usize = 20;
    const MAX_REQUESTS: usize = 5_000;
    const RELOADS: usize = 8;
    let scratch = Scratch::new("e2e", "reload-load");
    let path = scratch.file("switchyard.toml");
    let one = config(&[("chat", &["sim-a", "sim-b"])]);
    let two = config(&[("chat", &["sim-b", "sim-a"]), ("extra", &["sim-a"])]);
    let server = Arc::new(Server::start(scratch, &one, &[]));
    let reloading = Arc::new(AtomicBool::new(true));
    let mut clients = Vec::new();
    for c in 0..CLIENTS {
        let server = Arc::clone(&server);
        let reloading = Arc::clone(&reloading);
        clients.push(tokio::spawn(async move {
            let (mut failed, mut during) = (Vec::new(), 0);
            for i in 0..MAX_REQUESTS {
                let busy = reloading.load(Ordering::SeqCst);
                if !busy && i >= REQUESTS {
                    break;
                }
                during += usize::from(busy);
                // half the clients stream: open streams are untouched by a reload
                let prompt = format!("{c}-{i}");
                let streamed = c % 2 == 1;
                let body = if streamed {
                    stream_body("chat", &prompt)
                } else {
                    chat_body("chat", &prompt)
                };
                let reply = server.chat(&body).await;
                if reply.status != 200 || (streamed && !reply.text.contains("data: [DONE]")) {
                    failed.push(format!("{c}-{i}: {} {}", reply.status, reply.text));
                }
            }
            (failed, during)
        }));
    }
    for n in 0..RELOADS {
        std::fs::write(&path, if n % 2 == 0 { &two } else { &one }).unwrap();
        let reply = server.post_raw("/admin/reload", Vec::new(), &[]).await;
        reply.expect_status(200);
        assert_eq!(reply.json()["applied"], true, "{}", reply.text);
    }
    reloading.store(false, Ordering::SeqCst);
    let (mut failed, mut during) = (Vec::new(), 0);
    for c in clients {
        let (f, d) = c.await.unwrap();
        failed.extend(f);
        during += d;
    }
    assert!(failed.is_empty(), "failed requests: {failed:#?}");
    assert!(during > 0, "no request was sent while reloading");
}
