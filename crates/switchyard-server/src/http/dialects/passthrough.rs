//! Unknown top-level fields of a dialect whose API is also a vendor's (Responses, Messages):
//! refused with a 400 naming them, unless the route sets `passthrough_unknown = true` and
//! has a provider that takes the dialect's body natively. Then they ride in the client's
//! own body (`switchyard::chat::Native`), which only such providers send, and the body is
//! made required: every other provider is skipped for the request (`needs_native` in the
//! trail), since it could not honour fields nobody modelled. Chat Completions passes its
//! unknown fields through the shared shape instead (`ChatRequest::passthrough`).

use super::Decoded;
use crate::http::bounds::{clip, ECHO_BYTES};
use crate::http::error::ApiError;
use crate::http::state::AppState;

/// How many unknown fields a skipped provider's trail entry names.
const MAX_NAMED: usize = 8;

/// Whether `route` has a provider taking bodies of native `kind`.
pub(crate) fn route_takes_native(state: &AppState, route: &str, kind: &str) -> bool {
    let Ok(route) = state.gateway.route(route) else {
        return false;
    };
    state
        .gateway
        .providers()
        .iter()
        .any(|p| route.providers.contains(&p.name) && p.provider.native_kind() == Some(kind))
}

/// Whether `route` passes fields unknown to the gateway through (`passthrough_unknown`).
pub(crate) fn passes_unknown(state: &AppState, route: &str) -> bool {
    state
        .gateway
        .route(route)
        .is_ok_and(|r| r.passthrough_unknown)
}

/// Admit `decoded`'s unknown fields for `route`, or refuse them: `refuse(first, list)`
/// phrases the 400 in the dialect's terms when the route does not pass unknown fields
/// through. When it does, the request's native body becomes required (only native
/// providers answer).
///
/// # Errors
/// `refuse`'s 400; or a 400 naming the first field when the route passes unknown fields
/// through but has no provider of `kind` to send them to.
pub(crate) fn admit<E>(
    state: &AppState,
    route: &str,
    decoded: &mut Decoded<E>,
    (kind, vendor): (&str, &str),
    refuse: impl FnOnce(&str, &str) -> ApiError,
) -> Result<(), ApiError> {
    let Some(first) = decoded.unknown.first() else {
        return Ok(());
    };
    let first = clip(first, ECHO_BYTES);
    let list = clip(&decoded.unknown.join(", "), ECHO_BYTES).into_owned();
    if !passes_unknown(state, route) {
        return Err(refuse(&first, &list));
    }
    if !route_takes_native(state, route, kind) {
        return Err(ApiError::bad_request(
            Some(first.into_owned()),
            format!(
                "{list}: unknown to this gateway; route {:?} passes unknown fields through \
                 (`passthrough_unknown = true`) but has no {vendor} provider to send them to",
                clip(route, ECHO_BYTES)
            ),
        ));
    }
    if let Some(native) = decoded.request.native.as_mut() {
        native.required = true;
        // the client's names, bounded: they go into the trail, errors and the log
        let names = decoded.unknown.iter().take(MAX_NAMED);
        (native.required_by).extend(names.map(|n| clip(n, ECHO_BYTES).into_owned()));
    }
    Ok(())
}
