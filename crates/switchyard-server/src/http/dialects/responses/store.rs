//! Stored responses (`store`, `previous_response_id`, `GET` / `DELETE /v1/responses/{id}`,
//! `GET /v1/responses/{id}/input_items`: `items`),
//! kept in the state backend's key-value part (`crate::http::dialects::kept`): the
//! process's memory, or Redis for a fleet, so that a conversation continues on any replica
//! and with any vendor.
//!
//! A record holds the response object as the client got it, the conversation so far in the
//! shared shape (every input item and answer, without `instructions`, which OpenAI does not
//! carry over either), and the client key that made it: with keys configured, another key
//! finds nothing (404, as for an unknown id). Records live `[responses] store_ttl` (7 days
//! by default); one larger than `max_stored_bytes` (8 MiB) is not kept, and its answer says
//! so (`switchyard.stored: false`): `crate::http::state::StoredResponses`.

use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use switchyard::chat::Message;

use crate::http::bounds::{clip, longer_than, ECHO_BYTES, MAX_NAME_CHARS};
use crate::http::dialects::kept;
use crate::http::error::ApiError;
use crate::http::state::AppState;

mod items;

/// One stored response.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Record {
    /// The client key's name that made it (`None` without keys).
    pub key: Option<String>,
    /// The response object as returned.
    pub response: Value,
    /// Every message so far (input and answers), oldest first, without instructions.
    pub conversation: Vec<Message>,
    /// The same as Responses items as the vendor saw and returned them, when an OpenAI
    /// provider with `api = "responses"` answered natively (its built-in tools' items and
    /// encrypted reasoning included): what the next turn's native body starts with.
    /// Kept as written (a JSON array), never parsed: the next turn splices it in by text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<Box<serde_json::value::RawValue>>,
}

impl kept::Owned for Record {
    fn owner(&self) -> Option<&str> {
        self.key.as_deref()
    }
}

fn kv_key(id: &str) -> String {
    format!("responses:{id}")
}

/// The record of `id` if it exists and `key` may see it.
pub(crate) async fn load(state: &AppState, id: &str, key: Option<&str>) -> Option<Record> {
    let (record, _) = kept::load(state, &kv_key(id), key).await?;
    Some(record)
}

/// [`load`], for a request whose `previous_response_id` is `id`: the record's JSON held
/// to the request's memory bounds before it is parsed.
///
/// # Errors
/// 413 naming the bound the record and the request together would pass.
pub(crate) async fn load_within(
    state: &AppState,
    id: &str,
    ctx: &crate::http::dialects::Ctx,
) -> Result<Option<Record>, ApiError> {
    let what = format!("previous_response_id {:?}", clip(id, ECHO_BYTES));
    let found = kept::load_within(state, &kv_key(id), ctx, &what).await?;
    Ok(found.map(|(record, _)| record))
}

/// Keep `record` under `id`: false when it is too large or the store refused it.
pub(crate) async fn save(state: &AppState, id: &str, record: &Record) -> bool {
    let limits = state.stored_responses;
    kept::save(state, &kv_key(id), record, limits.ttl, limits.max_bytes).await
}

/// 404 for an id that is unknown, expired, or another key's.
pub(crate) fn not_found(id: &str, param: Option<&str>) -> ApiError {
    let id = clip(id, ECHO_BYTES);
    match param {
        Some(p) => ApiError::new(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            format!("Previous response with id '{id}' not found."),
        )
        .param(p)
        .code("previous_response_not_found"),
        None => ApiError::new(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            format!("Response with id '{id}' not found."),
        ),
    }
}

/// The caller's key name, or the 401.
fn caller(state: &AppState, headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    Ok(state.keys.authenticate(headers)?.map(|c| c.name))
}

fn checked(id: &str) -> Result<(), ApiError> {
    if longer_than(id, MAX_NAME_CHARS) {
        return Err(not_found(id, None));
    }
    Ok(())
}

/// `GET /v1/responses/{id}`: the stored response object.
pub async fn retrieve(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let found = async {
        let key = caller(&state, &headers)?;
        checked(&id)?;
        load(&state, &id, key.as_deref())
            .await
            .ok_or_else(|| not_found(&id, None))
    }
    .await;
    match found {
        Ok(record) => (StatusCode::OK, axum::Json(record.response)).into_response(),
        Err(e) => e.into_response(),
    }
}

/// `GET /v1/responses/{id}/input_items`: a page of the items the stored response was
/// generated from (see `items`); the same 404 as `GET` for an id another key made.
pub async fn input_items(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    let listed = async {
        let key = caller(&state, &headers)?;
        checked(&id)?;
        let page = items::Page::parse(query.as_deref().unwrap_or_default())?;
        let record = load(&state, &id, key.as_deref())
            .await
            .ok_or_else(|| not_found(&id, None))?;
        // the last message is the response's own answer
        let input = match record.conversation.split_last() {
            Some((last, before)) if last.role == switchyard::Role::Assistant => before,
            _ => &record.conversation[..],
        };
        page.list(&id, input)
    }
    .await;
    match listed {
        Ok(list) => (StatusCode::OK, axum::Json(list)).into_response(),
        Err(e) => e.into_response(),
    }
}

/// `DELETE /v1/responses/{id}`: forget a stored response.
pub async fn delete(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let deleted = async {
        let key = caller(&state, &headers)?;
        checked(&id)?;
        // only the key that made it may delete it
        load(&state, &id, key.as_deref())
            .await
            .ok_or_else(|| not_found(&id, None))?;
        let now = state.gateway.clock().unix_ms();
        state.gateway.state().kv_delete(&kv_key(&id), now).await;
        Ok::<_, ApiError>(())
    }
    .await;
    match deleted {
        Ok(()) => (
            StatusCode::OK,
            axum::Json(json!({"id": id, "object": "response.deleted", "deleted": true})),
        )
            .into_response(),
        Err(e) => e.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use switchyard::provider::scripted::ScriptedProvider;
    use switchyard::{Gateway, ProviderSpec, Route};

    use super::*;
    use crate::access::keys::KeyStore;
    use crate::http::state::Shared;
    use crate::telemetry::metrics::Metrics;

    /// One scripted provider `p` (model `m`) on route `r`, and `keys`.
    fn state_with(keys: &[crate::config::KeyToml]) -> AppState {
        let gateway = Gateway::builder()
            .provider(ProviderSpec::new("p", Arc::new(ScriptedProvider::new("m"))))
            .route(Route::new("r", &["p"]))
            .build()
            .unwrap();
        AppState(Arc::new(Shared::for_tests(
            gateway,
            KeyStore::new(keys),
            Arc::new(Metrics::new()),
        )))
    }

    fn state() -> AppState {
        state_with(&[])
    }

    fn record(text: String, key: Option<&str>) -> Record {
        Record {
            key: key.map(str::to_owned),
            response: json!({"id": "resp_1"}),
            conversation: vec![Message::user(text)],
            items: None,
        }
    }

    #[tokio::test]
    async fn a_record_over_the_bound_is_not_kept() {
        let state = state();
        let big = record("x".repeat(state.stored_responses.max_bytes), None);
        assert!(!save(&state, "resp_big", &big).await);
        assert!(load(&state, "resp_big", None).await.is_none());
        assert!(save(&state, "resp_small", &record("x".repeat(1000), None)).await);
        assert!(load(&state, "resp_small", None).await.is_some());
    }

    #[tokio::test]
    async fn a_record_is_only_its_keys() {
        let state = state();
        assert!(save(&state, "resp_a", &record("hi".into(), Some("alice"))).await);
        assert!(load(&state, "resp_a", Some("alice")).await.is_some());
        assert!(load(&state, "resp_a", Some("bob")).await.is_none());
        assert!(load(&state, "resp_a", None).await.is_none());
    }

    /// Over HTTP (the Responses routes as `http/app.rs` mounts them): two keys, a
    /// conversation of two stored turns made by `alice`.
    mod input_items {
        use axum::body::Body;
        use axum::http::Request;
        use axum::routing::{get, post};
        use axum::Router;
        use http_body_util::BodyExt as _;
        use tower::ServiceExt as _;

        use super::*;
        use crate::access::keys::hash_token;
        use crate::config::KeyToml;
        use crate::http::dialects::flow;
        use crate::http::dialects::responses::Responses;

        fn keyed() -> AppState {
            let keys: Vec<KeyToml> = ["alice", "bob"]
                .iter()
                .map(|n| KeyToml {
                    name: (*n).into(),
                    sha256: hash_token(&format!("sy-{n}")),
                    routes: vec!["*".into()],
                    ..KeyToml::default()
                })
                .collect();
            state_with(&keys)
        }

        async fn send(state: &AppState, req: Request<Body>) -> (StatusCode, Value) {
            let mut req = req;
            req.headers_mut()
                .insert("host", "127.0.0.1:4000".parse().unwrap());
            let router = Router::new()
                .route("/v1/responses", post(flow::serve::<Responses>))
                .route("/v1/responses/{id}", get(retrieve))
                .route("/v1/responses/{id}/input_items", get(input_items))
                .with_state(state.clone());
            let resp = router.oneshot(req).await.unwrap();
            let status = resp.status();
            let bytes = resp.into_body().collect().await.unwrap().to_bytes();
            (status, serde_json::from_slice(&bytes).unwrap())
        }

        async fn create(state: &AppState, body: Value) -> String {
            let req = Request::post("/v1/responses")
                .header("content-type", "application/json")
                .header("authorization", "Bearer sy-alice")
                .body(Body::from(body.to_string()))
                .unwrap();
            let (status, resp) = send(state, req).await;
            assert_eq!(status, StatusCode::OK, "{resp}");
            resp["id"].as_str().unwrap().to_owned()
        }

        async fn list(state: &AppState, path: &str, token: Option<&str>) -> (StatusCode, Value) {
            let mut req = Request::get(path);
            if let Some(t) = token {
                req = req.header("authorization", format!("Bearer {t}"));
            }
            send(state, req.body(Body::empty()).unwrap()).await
        }

        fn texts(list: &Value) -> Vec<String> {
            (list["data"].as_array().unwrap().iter())
                .map(|i| {
                    i["content"][0]["text"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned()
                })
                .collect()
        }

        #[tokio::test]
        async fn a_continued_response_lists_the_whole_conversation_before_it() {
            let state = keyed();
            let first = create(
                &state,
                json!({"model": "r", "input": "hi",
                "instructions": "be brief"}),
            )
            .await;
            let second = create(
                &state,
                json!({"model": "r", "input": [{"role": "user",
                "content": "again"}], "previous_response_id": first}),
            )
            .await;
            let path = format!("/v1/responses/{second}/input_items");
            let (status, page) = list(&state, &path, Some("sy-alice")).await;
            assert_eq!(status, StatusCode::OK, "{page}");
            assert_eq!(page["object"], "list");
            assert_eq!(texts(&page), ["again", "ok from m", "hi"], "newest first");
            assert_eq!(page["data"][1]["role"], "assistant");
            assert_eq!(page["data"][0]["type"], "message");
            let (_, one) = list(
                &state,
                &format!("{path}?limit=1&order=asc"),
                Some("sy-alice"),
            )
            .await;
            assert_eq!(texts(&one), ["hi"]);
            assert_eq!(one["has_more"], true);
            let after = one["last_id"].as_str().unwrap();
            let (_, rest) = list(
                &state,
                &format!("{path}?limit=5&order=asc&after={after}"),
                Some("sy-alice"),
            )
            .await;
            assert_eq!(texts(&rest), ["ok from m", "again"]);
            assert_eq!(rest["has_more"], false);
            let (_, first_items) = list(
                &state,
                &format!("/v1/responses/{first}/input_items"),
                Some("sy-alice"),
            )
            .await;
            assert_eq!(texts(&first_items), ["hi"], "instructions are not items");
        }

        #[tokio::test]
        async fn another_keys_response_is_the_same_404_as_get() {
            let state = keyed();
            let id = create(&state, json!({"model": "r", "input": "secret"})).await;
            let (status, items) = list(
                &state,
                &format!("/v1/responses/{id}/input_items"),
                Some("sy-bob"),
            )
            .await;
            let (get_status, get) =
                list(&state, &format!("/v1/responses/{id}"), Some("sy-bob")).await;
            assert_eq!(
                (status, get_status),
                (StatusCode::NOT_FOUND, StatusCode::NOT_FOUND)
            );
            assert_eq!(items, get);
            let (status, unknown) = list(
                &state,
                "/v1/responses/resp_nope/input_items",
                Some("sy-alice"),
            )
            .await;
            assert_eq!(status, StatusCode::NOT_FOUND);
            assert_eq!(
                unknown["error"]["message"],
                "Response with id 'resp_nope' not found."
            );
            let (status, _) = list(&state, &format!("/v1/responses/{id}/input_items"), None).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED);
            let (status, bad) = list(
                &state,
                &format!("/v1/responses/{id}/input_items?limit=500"),
                Some("sy-alice"),
            )
            .await;
            assert_eq!(status, StatusCode::BAD_REQUEST);
            assert_eq!(bad["error"]["param"], "limit");
            let long = format!("/v1/responses/{}/input_items", "r".repeat(5000));
            let (status, _) = list(&state, &long, Some("sy-alice")).await;
            assert_eq!(status, StatusCode::NOT_FOUND);
        }
    }
}
