//! A Messages thread is the fleet's, not a replica's: created on one replica, continued on
//! the other, and one `continue` at a time across both (the lease is in Redis).

use std::time::Duration;

use faultline::{Fault, Script};
use serde_json::{json, Value};

use crate::common::http::client;
use crate::redis::SharedRedis;
use crate::support::{pair, poll, upstream, Conf, Replica, Reply};

const BETA: &str = "message-threads-2026-08-12";

/// `POST /v1/messages` with the threads beta to `replica`.
async fn messages(replica: &Replica, body: &Value) -> Reply {
    let resp = client()
        .post(replica.url("/v1/messages"))
        .header("content-type", "application/json")
        .header("anthropic-version", "2023-06-01")
        .header("anthropic-beta", BETA)
        .body(body.to_string())
        .send()
        .await
        .unwrap_or_else(|e| panic!("POST /v1/messages to replica {}: {e}", replica.name));
    Reply::read(resp).await
}

fn turn(thread: Value, text: &str) -> Value {
    json!({"model": crate::common::conf::ROUTE, "max_tokens": 64, "thread": thread,
           "messages": [{"role": "user", "content": text}]})
}

fn continuing(id: &str, text: &str) -> Value {
    turn(json!({"type": "continue", "previous_message_id": id}), text)
}

fn error_code(reply: &Reply) -> String {
    let body = reply.json();
    body["error"]["details"]["error_code"]
        .as_str()
        .unwrap_or_else(|| panic!("no error code: {}", reply.text))
        .to_owned()
}

/// A thread created on A continues on B; while A's `continue` is still waiting on its
/// upstream, B refuses another `continue` from the same answer
/// (`thread_continue_in_flight`); once A's is answered, continuing from that answer again
/// is `thread_already_continued` on either replica, and B continues from A's new answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_continues_on_any_replica_one_continue_at_a_time() {
    let up = upstream().await;
    // the create, then a continue that takes a while
    up.script(
        "primary",
        Script::queue(
            [Fault::Ok, Fault::slow_first_token(Duration::from_secs(3))],
            Fault::Ok,
        ),
    );
    let redis = SharedRedis::new("threads");
    let conf = Conf::fleet(&up, redis.backend("2s"));
    let (a, b, _dirs) = pair("threads", &conf).await;

    let created = messages(&a, &turn(json!({"type": "create"}), "hi")).await;
    assert_eq!(created.status, 200, "{}", created.text);
    let id = created.json()["id"].as_str().unwrap().to_owned();

    let slow_body = continuing(&id, "take your time");
    let slow = messages(&a, &slow_body);
    let racing = async {
        // A's continue holds its lease once it is at the upstream
        poll("A's continue to reach the upstream", || async {
            let n = up.attempts("primary").len();
            if n >= 2 {
                Ok(())
            } else {
                Err(format!("{n} attempts"))
            }
        })
        .await;
        messages(&b, &continuing(&id, "me too")).await
    };
    let (slow, racing) = tokio::join!(slow, racing);
    assert_eq!(slow.status, 200, "{}", slow.text);
    assert_eq!(racing.status, 400, "{}", racing.text);
    assert_eq!(error_code(&racing), "thread_continue_in_flight");

    for replica in [&a, &b] {
        let again = messages(replica, &continuing(&id, "again")).await;
        assert_eq!(again.status, 400, "{}", again.text);
        assert_eq!(error_code(&again), "thread_already_continued");
    }
    let next = slow.json()["id"].as_str().unwrap().to_owned();
    let on_b = messages(&b, &continuing(&next, "still there?")).await;
    assert_eq!(on_b.status, 200, "{}", on_b.text);
    assert_eq!(
        up.attempts("primary").len(),
        3,
        "the refused continues reached no upstream"
    );
}
