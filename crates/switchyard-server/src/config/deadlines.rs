//! Timeouts a route's deadline leaves no room for: a provider's `timeout` (or its
//! `first_token_timeout`, `stall_timeout`, `probe_timeout`, `connect_timeout`) that is not
//! shorter than the deadline of a route it serves can never fire — every attempt is
//! clamped to the time left (docs/design.md, "Deadlines"), so the deadline ends the request
//! first and a hung provider leaves no time to fail over. A warning each, in the list
//! `check` prints and `serve` writes at start-up ([`super::build_gateway`]'s).

use std::time::Duration;

use switchyard::provider::http::DEFAULT_CONNECT_TIMEOUT;
use switchyard::route::Api;
use switchyard::{Gateway, ProviderSpec, Route};

use super::{duration, Config, ProviderToml, RouteToml};

/// One warning per route and provider whose timeouts the route's deadline outlasts none of.
pub(super) fn warnings(config: &Config, gateway: &Gateway) -> Vec<String> {
    let mut out = Vec::new();
    for route in gateway.routes() {
        let toml = config.routes.iter().find(|r| r.name == route.name);
        for name in &route.providers {
            let spec = gateway.providers().into_iter().find(|p| &p.name == name);
            let prov = config.providers.iter().find(|p| &p.name == name);
            let (Some(spec), Some(prov)) = (spec, prov) else {
                continue;
            };
            out.extend(warning(route, toml, spec, prov));
        }
    }
    out
}

/// The warning for `spec` on `route`, if any of its timeouts cannot fire there.
fn warning(
    route: &Route,
    toml: Option<&RouteToml>,
    spec: &ProviderSpec,
    prov: &ProviderToml,
) -> Option<String> {
    let deadline = route.deadline;
    let outlived: Vec<String> = settings(route, spec, prov)
        .into_iter()
        .filter(|s| s.value >= deadline)
        .map(|s| {
            let default = if s.set { "" } else { ", the default" };
            format!("{} ({}{default})", s.name, human(s.value))
        })
        .collect();
    if outlived.is_empty() {
        return None;
    }
    let set = toml.is_some_and(|r| r.deadline.is_some());
    let default = if set { "" } else { ", the default" };
    let (them, it) = if outlived.len() == 1 {
        ("that timeout", "it")
    } else {
        ("those timeouts", "them")
    };
    Some(format!(
        "route {:?}: its deadline ({}{default}) is not longer than provider {:?}'s {}: {them} can never fire (the deadline ends the request first, leaving no time to fail over); shorten {it} or lengthen the route's deadline",
        route.name,
        human(deadline),
        spec.name,
        outlived.join(", ")
    ))
}

/// One timeout of a provider: its setting's name, value in force, and whether the config
/// sets it.
struct Setting {
    name: &'static str,
    value: Duration,
    set: bool,
}

/// The timeouts of `spec` that bound a request on `route` (the stream ones on chat routes
/// only: embeddings are never streamed; the connect one for providers with a connection).
fn settings(route: &Route, spec: &ProviderSpec, prov: &ProviderToml) -> Vec<Setting> {
    let mut out = vec![Setting {
        name: "timeout",
        value: spec.timeout,
        set: prov.timeout.is_some(),
    }];
    if route.api == Api::Chat {
        out.push(Setting {
            name: "first_token_timeout",
            value: spec.first_token_timeout,
            set: prov.first_token_timeout.is_some(),
        });
        out.push(Setting {
            name: "stall_timeout",
            value: spec.stall_timeout,
            set: prov.stall_timeout.is_some(),
        });
    }
    if let Some(probe) = spec.probe_timeout {
        out.push(Setting {
            name: "probe_timeout",
            value: probe,
            set: true,
        });
    }
    let connect = prov.connect_timeout.as_deref().map(duration);
    let connect = connect.unwrap_or(Ok(DEFAULT_CONNECT_TIMEOUT));
    // a simulated provider connects to nothing
    if let (Ok(value), false) = (connect, prov.kind == "simulated") {
        out.push(Setting {
            name: "connect_timeout",
            value,
            set: prov.connect_timeout.is_some(),
        });
    }
    out
}

/// `30s`, `1m 30s`, `250ms`.
fn human(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{build_gateway, parse, Wiring};

    fn warnings_for(text: &str) -> Vec<String> {
        let config = parse(text, "test").unwrap();
        let built = build_gateway(&config, &|_| Some("k".to_owned()), false, Wiring::default());
        warnings(&config, &built.unwrap().gateway)
    }

    const PROVIDERS: &str =
        "[[providers]]\nname = \"gpt\"\nkind = \"openai\"\nmodel = \"gpt-4.1-mini\"\n\
         [[providers]]\nname = \"claude\"\nkind = \"anthropic\"\nmodel = \"claude-haiku-5-5\"\n\
         stall_timeout = \"20s\"\nfirst_token_timeout = \"5s\"\n";

    /// A deadline of 20 s on a chat route of a provider at its defaults (timeout 30 s) and
    /// one whose stall timeout is 20 s: each named, with its settings and whether each is
    /// the default.
    #[test]
    fn a_deadline_shorter_than_a_timeout_is_named_with_route_provider_and_setting() {
        let text = format!(
            "{PROVIDERS}[[routes]]\nname = \"quick\"\nproviders = [\"gpt\", \"claude\"]\ndeadline = \"20s\"\n"
        );
        let w = warnings_for(&text);
        assert_eq!(w.len(), 2, "{w:#?}");
        assert_eq!(
            w[0],
            "route \"quick\": its deadline (20s) is not longer than provider \"gpt\"'s timeout (30s, the default): that timeout can never fire (the deadline ends the request first, leaving no time to fail over); shorten it or lengthen the route's deadline"
        );
        assert!(
            w[1].starts_with(
                "route \"quick\": its deadline (20s) is not longer than provider \"claude\"'s timeout (30s, the default), stall_timeout (20s): those timeouts can never fire"
            ),
            "{}",
            w[1]
        );
    }

    /// The defaults leave room (deadline 60 s, timeout 30 s, stream 10 s / 15 s, connect 5 s);
    /// a provider timeout past the default deadline is named against the default.
    #[test]
    fn the_defaults_leave_room_and_a_long_timeout_meets_the_default_deadline() {
        let text =
            format!("{PROVIDERS}[[routes]]\nname = \"r\"\nproviders = [\"gpt\", \"claude\"]\n");
        assert_eq!(warnings_for(&text), Vec::<String>::new());
        let slow = text.replace(
            "model = \"gpt-4.1-mini\"\n",
            "model = \"gpt-4.1-mini\"\ntimeout = \"2m\"\nprobe_timeout = \"90s\"\n",
        );
        let w = warnings_for(&slow);
        assert_eq!(w.len(), 1, "{w:#?}");
        assert!(
            w[0].starts_with("route \"r\": its deadline (1m, the default) is not longer than provider \"gpt\"'s timeout (2m), probe_timeout (1m 30s): those timeouts can never fire"),
            "{}",
            w[0]
        );
    }

    /// Equal is not shorter: a timeout of exactly the deadline cannot fire first either.
    #[test]
    fn a_timeout_equal_to_the_deadline_cannot_fire_first() {
        let text = format!(
            "{PROVIDERS}[[routes]]\nname = \"r\"\nproviders = [\"gpt\"]\ndeadline = \"30s\"\n"
        );
        let w = warnings_for(&text);
        assert_eq!(w.len(), 1, "{w:#?}");
        assert!(
            w[0].contains("provider \"gpt\"'s timeout (30s, the default)"),
            "{}",
            w[0]
        );
    }
}
