use super::*;

fn problems(text: &str) -> Vec<String> {
    match parse(text, "test.toml") {
        Ok(_) => Vec::new(),
        Err(e) => e.problems,
    }
}

#[test]
fn the_example_file_parses() {
    let text = include_str!("../../../../switchyard.example.toml");
    let config = parse(text, "switchyard.example.toml").unwrap();
    assert_eq!(config.routes.len(), 4);
    assert_eq!(config.providers.len(), 11);
    assert_eq!(config.routes[3].name, "openai/*");
    let built = build_gateway(&config, &|_| None, false, Wiring::default()).unwrap();
    let route = built.gateway.route("openai/gpt-4.1-mini").unwrap();
    assert_eq!(route.wildcard.as_ref().unwrap().max_models, 32);
    assert!(built.gateway.route("openai/gpt-4o").is_err());
    assert_eq!(config.keys[0].routes, ["smart", "cheap"]);
    let checks = health_checks(&config);
    assert_eq!(checks.len(), 1);
    assert_eq!(
        (checks[0].0.as_str(), checks[0].1.probe),
        ("claude", switchyard::health::Probe::Listing)
    );
    // placeholders nobody holds a token for: serving the example verbatim admits no one
    assert_eq!(
        crate::access::keys::weak_token_warnings(&config.keys),
        Vec::<String>::new()
    );
    for k in &config.keys {
        assert_ne!(
            k.sha256,
            crate::access::keys::hash_token("test"),
            "{}",
            k.name
        );
    }
}

#[test]
fn wildcard_routes_need_an_allow_list_of_model_patterns() {
    let base =
        "[[providers]]\nname = \"s\"\nkind = \"simulated\"\n[[routes]]\nproviders = [\"s\"]\n";
    assert!(problems(&format!("{base}name = \"s/*\"\nmodels = [\"a*\", \"b\"]\n")).is_empty());
    let p = problems(&format!("{base}name = \"s/*\"\n"));
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(
        p[0].starts_with("routes[0].models: a wildcard route needs an allow-list"),
        "{p:?}"
    );
    let p = problems(&format!(
        "{base}name = \"s/*\"\nmodels = [\"ok\", \"a/*\", \"x*y\"]\nmax_models = 0\n"
    ));
    assert_eq!(p.len(), 3, "{p:?}");
    assert!(
        p[0].starts_with(
            "routes[0].models[1]: \"a/*\" holds a /, which this route's template cannot take"
        ),
        "{p:?}"
    );
    assert!(
        p[1].starts_with("routes[0].models[2]: \"x*y\" is not a model id"),
        "{p:?}"
    );
    assert_eq!(p[2], "routes[0].max_models: must be at least 1");
    let p = problems(&format!(
        "{base}name = \"plain\"\nmodels = [\"a\"]\nmax_models = 3\n"
    ));
    assert_eq!(
        p,
        [
            "routes[0].models: applies to wildcard routes only (a name ending in \"/*\")",
            "routes[0].max_models: applies to wildcard routes only (a name ending in \"/*\")"
        ]
    );
    let p = problems(&format!("{base}name = \"/*\"\nmodels = [\"a\"]\n"));
    assert!(
        p[0].starts_with("routes[0].name: a wildcard route is a prefix"),
        "{p:?}"
    );
    let clash = "[[providers]]\nname = \"s\"\nkind = \"simulated\"\n[[providers]]\nname = \"s/m\"\nkind = \"simulated\"\n[[routes]]\nname = \"s/*\"\nproviders = [\"s\"]\nmodels = [\"*\"]\n";
    let p = problems(clash);
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(
        p[0].starts_with("providers[1].name: \"s/m\" would share names"),
        "{p:?}"
    );
}

#[test]
fn wildcard_patterns_hold_slashes_where_the_template_sends_its_model_in_the_body() {
    let route = |kind: &str, models: &str| {
        format!("[[providers]]\nname = \"t\"\nkind = \"{kind}\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"K\"\n[[routes]]\nname = \"t/*\"\nproviders = [\"t\"]\nmodels = {models}\n")
    };
    for kind in ["openai", "anthropic"] {
        let text = route(kind, r#"["meta-llama/*", "Qwen/Qwen2.5-72B-Instruct"]"#);
        assert!(problems(&text).is_empty(), "{kind}: {:?}", problems(&text));
        let config = parse(&text, "t.toml").unwrap();
        let built = build_gateway(&config, &|_| None, false, Wiring::default()).unwrap();
        let r = built.gateway.route("t/meta-llama/x").unwrap();
        assert!(r.wildcard.as_ref().unwrap().slashes, "{kind}");
        // malformed even where slashes are allowed
        let p = problems(&route(kind, r#"["meta-llama//*", "/x"]"#));
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(p[0].contains("segments joined by single /"), "{p:?}");
    }
    let p = problems(&route("gemini", r#"["tunedModels/*"]"#));
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(
        p[0].starts_with("routes[0].models[0]: \"tunedModels/*\" holds a /"),
        "{p:?}"
    );
}

#[test]
fn key_names_follow_the_keys_new_rule() {
    let base = "[[providers]]\nname = \"s\"\nkind = \"simulated\"\n[[routes]]\nname = \"r\"\nproviders = [\"s\"]\n";
    let hash = crate::access::keys::hash_token("sy-a-long-enough-random-token-for-this-test");
    let key =
        |name: &str| format!("[[keys]]\nname = {name:?}\nsha256 = \"{hash}\"\nroutes = [\"*\"]\n");
    assert!(problems(&format!("{base}{}", key("ci-bot.prod_2"))).is_empty());
    for bad in ["", "two\nlines", "team a", "x:y"] {
        let p = problems(&format!("{base}{}", key(bad)));
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(p[0].starts_with("keys[0].name: key name "), "{p:?}");
        assert!(
            p[0].ends_with("use 1 to 64 characters of A-Z, a-z, 0-9, '.', '_' and '-'"),
            "{p:?}"
        );
    }
}

#[test]
fn the_embedded_default_parses_and_builds() {
    let config = parse(EMBEDDED_DEFAULT, "embedded default").unwrap();
    let built = build_gateway(&config, &|_| None, false, Wiring::default()).unwrap();
    assert!(built.warnings.is_empty(), "{:?}", built.warnings);
    assert_eq!(built.gateway.default_route(), "default");
    assert!(config.keys.is_empty());
}

#[test]
fn every_problem_is_reported_at_once_with_its_path() {
    let text = r#"
        [[providers]]
        name = "gpt"
        kind = "openai"
        model = "gpt-4o"
        timeout = "soon"

        [[providers]]
        name = "gpt"
        kind = "opneai"

        [[routes]]
        name = "a"
        providers = ["gpt"]

        [[routes]]
        name = "b"
        providers = ["gpt", "claude", "gtp"]
        breaker = { failure_threshold = 0 }
        retry = { base_delay = "5s", max_delay = "1s" }
    "#;
    let p = problems(text);
    let expect = [
        "providers[0].timeout: \"soon\" is not a duration",
        "providers[1].name: provider \"gpt\" is defined twice",
        "providers[1].kind: \"opneai\" is not one of openai, anthropic, gemini, azure, vertex, bedrock, simulated",
        "routes[1].providers[1]: no provider named \"claude\"",
        "routes[1].providers[2]: no provider named \"gtp\"",
        "routes[1].breaker.failure_threshold: must be at least 1",
        "routes[1].retry.base_delay: must not exceed max_delay",
    ];
    for e in expect {
        assert!(
            p.iter().any(|line| line.starts_with(e)),
            "missing {e:?} in {p:#?}"
        );
    }
    assert_eq!(p.len(), expect.len(), "{p:#?}");
}

#[test]
fn server_workers_must_be_a_sane_thread_count() {
    let base = "[[providers]]\nname = \"s\"\nkind = \"simulated\"\n[[routes]]\nname = \"r\"\nproviders = [\"s\"]\n";
    for n in [0, 100_000] {
        let p = problems(&format!("[server]\nworkers = {n}\n{base}"));
        assert_eq!(
            p,
            vec![format!(
                "server.workers: {n} is out of range: between 1 and 1024 threads"
            )],
        );
    }
    for n in [1, 2, 1024] {
        assert!(problems(&format!("[server]\nworkers = {n}\n{base}")).is_empty());
    }
}

#[test]
fn the_memory_bounds_of_a_request_are_read_and_checked() {
    let base = "[[providers]]\nname = \"s\"\nkind = \"simulated\"\n[[routes]]\nname = \"r\"\nproviders = [\"s\"]\n";
    let bad =
        "[server]\nmax_request_items = 0\nmax_request_depth = 129\nmax_expanded_bytes = 1000\n";
    assert_eq!(
        problems(&format!("{bad}{base}")),
        vec![
            "server.max_request_items: must be greater than zero".to_owned(),
            "server.max_request_depth: 129 is out of range: between 1 and 128".to_owned(),
            "server.max_expanded_bytes: 1000 is less than max_body_bytes (4194304): a whole \
             body must fit"
                .to_owned(),
        ]
    );
    let good = "[server]\nmax_request_items = 5000\nmax_request_depth = 32\nmax_expanded_bytes = 8388608\n";
    let config = parse(&format!("{good}{base}"), "t.toml").unwrap();
    let limits = crate::config::expansion_limits(&config);
    assert_eq!(
        (
            limits.max_items,
            limits.max_depth,
            limits.max_expanded_bytes
        ),
        (5000, 32, 8 << 20)
    );
    let example = parse(
        include_str!("../../../../switchyard.example.toml"),
        "switchyard.example.toml",
    )
    .unwrap();
    assert_eq!(
        crate::config::expansion_limits(&example),
        crate::config::ExpansionLimits::default(),
        "the example states the defaults"
    );
}

#[test]
fn unknown_fields_are_rejected_with_their_name() {
    let text = r#"
        [[providers]]
        name = "x"
        kind = "simulated"
        failure_rat = 0.3
    "#;
    let p = problems(text);
    assert_eq!(p.len(), 1);
    assert!(p[0].contains("unknown field `failure_rat`"), "{p:?}");
}

/// Every unknown field at once, each with the field meant, before any other problem;
/// nothing of a secret written where its variable's name goes is shown.
#[test]
fn unknown_fields_are_all_named_with_the_field_meant() {
    let secret = "sk-proj-Qz8vT1xLm0RkP4wN";
    let text = format!(
        "[[providers]]\nname = \"gpt\"\nkind = \"openai\"\nmodel = \"gpt-4.1-mini\"\n\
         api_key = \"{secret}\"\ntimout = \"5s\"\ndeadline = \"20s\"\n\
         [[routes]]\nname = \"r\"\nproviders = [\"nope\"]\n"
    );
    let p = problems(&text);
    assert_eq!(p.len(), 3, "unknown fields first, every one: {p:?}");
    assert!(
        p[0].starts_with(
            "providers[0].api_key: unknown field `api_key`: did you mean `api_key_env`?"
        ),
        "{p:?}"
    );
    assert_eq!(
        p[1],
        "providers[0].deadline: unknown field `deadline`: `deadline` is a setting of a route ([[routes]]), not of a provider ([[providers]])"
    );
    assert_eq!(
        p[2],
        "providers[0].timout: unknown field `timout`: did you mean `timeout`?"
    );
    let said = parse(&text, "c.toml").unwrap_err().to_string();
    assert!(!said.contains("Qz8v"), "{said}");
}

/// What a TOML error quotes of the file, and what validation echoes, has secrets masked.
#[test]
fn a_secret_in_the_file_is_never_echoed() {
    let secret = "sk-ant-api03-Hq2Zr7LmX0vB9tKc";
    // unquoted: a TOML syntax error whose snippet is the line itself
    let p = problems(&format!(
        "[[providers]]\nname = \"c\"\napi_key_env = {secret}\n"
    ));
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(p[0].contains("TOML parse error at line 3"), "{p:?}");
    assert!(p[0].contains("api_key_env = ***"), "{p:?}");
    assert!(!p[0].contains("Hq2Z"), "{p:?}");
    // the secret itself as the variable's name: refused, not shown
    let p = problems(&format!(
        "[[providers]]\nname = \"c\"\nkind = \"anthropic\"\nmodel = \"claude-haiku-5-5\"\n\
         api_key_env = \"{secret}\"\n[[routes]]\nname = \"r\"\nproviders = [\"c\"]\n"
    ));
    assert_eq!(
        p,
        ["providers[0].api_key_env: looks like a secret itself (not shown): put it in an environment variable and give that variable's NAME here"]
    );
    // a schema error quoting the value
    let p = problems(&format!(
        "[[providers]]\nname = \"c\"\nsupports_prefill = \"{secret}\"\n"
    ));
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(
        p[0].contains("supports_prefill") && !p[0].contains("Hq2Z"),
        "{p:?}"
    );
}

#[test]
fn secrets_are_env_var_names_and_never_sent_to_a_custom_base_url() {
    let mut prov = ProviderToml {
        name: "p".into(),
        kind: "openai".into(),
        model: Some("m".into()),
        ..ProviderToml::default()
    };
    assert_eq!(resolve_key(&prov).as_deref(), Some("OPENAI_API_KEY"));
    prov.base_url = Some("http://127.0.0.1:8000/v1".into());
    assert_eq!(
        resolve_key(&prov),
        None,
        "ambient key must not go to a custom base_url"
    );
    prov.api_key_env = Some("LOCAL_KEY".into());
    assert_eq!(resolve_key(&prov).as_deref(), Some("LOCAL_KEY"));
    let p = problems(
        r#"
        [[providers]]
        name = "p"
        kind = "openai"
        model = "m"
        api_key_env = "sk-abc=def"
        [[routes]]
        name = "r"
        providers = ["p"]
        "#,
    );
    assert_eq!(p.len(), 1);
    assert!(p[0].starts_with("providers[0].api_key_env:"), "{p:?}");
}

#[test]
fn routes_and_keys_are_cross_checked() {
    let text = r#"
        [[providers]]
        name = "s"
        kind = "simulated"
        [[routes]]
        name = "r"
        providers = ["s"]
        policy.timout = { retry = true }
        [[keys]]
        name = "k"
        sha256 = "abc"
        routes = ["nope"]
        [state]
        backend = "redis"
    "#;
    let p = problems(text);
    for e in [
        "routes[0].policy.timout: is not an error kind",
        "keys[0].sha256: must be 64 hex characters",
        "keys[0].routes[0]: no route named \"nope\"",
        "state.url: is required for backend \"redis\"",
    ] {
        assert!(
            p.iter().any(|l| l.starts_with(e)),
            "missing {e:?} in {p:#?}"
        );
    }
}

#[test]
fn the_memory_store_bound_is_read_and_a_tiny_one_refused() {
    let base = "[[providers]]\nname = \"s\"\nkind = \"simulated\"\n[[routes]]\nname = \"r\"\nproviders = [\"s\"]\n";
    let config = parse(
        &format!("{base}[state]\nmemory_store_bytes = 33554432\n"),
        "t.toml",
    )
    .unwrap();
    assert_eq!(memory_store_bytes(&config), 32 << 20);
    let config = parse(base, "t.toml").unwrap();
    assert_eq!(
        memory_store_bytes(&config),
        switchyard::state::KV_MEMORY_BYTES
    );
    let p = problems(&format!("{base}[state]\nmemory_store_bytes = 4096\n"));
    assert!(
        p.iter()
            .any(|l| l.starts_with("state.memory_store_bytes: must be at least 1048576")),
        "{p:?}"
    );
}

#[test]
fn a_store_url_is_for_the_redis_backend_and_checked_like_its_url() {
    let base = "[[providers]]\nname = \"s\"\nkind = \"simulated\"\n[[routes]]\nname = \"r\"\nproviders = [\"s\"]\n";
    let p = problems(&format!(
        "{base}[state]\nstore_url = \"redis://127.0.0.1:6380\"\n"
    ));
    assert!(
        p.iter()
            .any(|l| l.starts_with("state.store_url: applies to backend \"redis\" only")),
        "{p:?}"
    );
    let redis = "[state]\nbackend = \"redis\"\nurl = \"redis://127.0.0.1:6379\"\n";
    let p = problems(&format!("{base}{redis}store_url = \"http://x\"\n"));
    assert!(
        p.iter()
            .any(|l| l.starts_with("state.store_url: must start with redis://")),
        "{p:?}"
    );
    let p = problems(&format!(
        "{base}{redis}store_url = \"redis://:pa/ss@127.0.0.1:6380\"\n"
    ));
    assert!(
        p.iter()
            .any(|l| l.starts_with("state.store_url:") && !l.contains("pa/ss")),
        "{p:?}"
    );
    let config = parse(
        &format!("{base}{redis}store_url = \"redis://127.0.0.1:6380/2\"\n"),
        "t.toml",
    )
    .unwrap();
    let cfg = redis_config(&config).unwrap().unwrap();
    assert_eq!(cfg.store_url.as_deref(), Some("redis://127.0.0.1:6380/2"));
}

#[test]
fn the_example_file_builds_every_adapter_and_warns_of_missing_keys() {
    let text = include_str!("../../../../switchyard.example.toml");
    let config = parse(text, "switchyard.example.toml").unwrap();
    let env = |name: &str| (name == "OPENAI_API_KEY").then(|| "sk-test".to_owned());
    let built = build_gateway(&config, &env, false, Wiring::default()).unwrap();
    let kinds: Vec<_> = built
        .gateway
        .providers()
        .iter()
        .map(|p| p.provider.kind())
        .collect();
    assert_eq!(
        kinds,
        [
            "anthropic",
            "openai",
            "gemini",
            "openai",
            "simulated",
            "openai",
            "gemini",
            "azure",
            "vertex",
            "bedrock",
            "bedrock"
        ]
    );
    let api = |name: &str| built.gateway.route(name).unwrap().api;
    assert_eq!(api("smart"), switchyard::Api::Chat);
    assert_eq!(api("embed"), switchyard::Api::Embeddings);
    let missing: Vec<_> = built
        .warnings
        .iter()
        .filter(|w| w.contains("is not set"))
        .collect();
    assert_eq!(missing.len(), 5, "{:?}", built.warnings);
    assert!(missing.iter().any(|w| w.contains("AZURE_OPENAI_API_KEY")));
    assert!(missing
        .iter()
        .any(|w| w.contains("GOOGLE_APPLICATION_CREDENTIALS")));
    assert!(missing.iter().any(|w| w.contains("ANTHROPIC_API_KEY")));
    assert!(built
        .warnings
        .iter()
        .any(|w| w.contains("\"bedrock-claude\": no AWS credentials")));
    assert!(missing.iter().any(|w| w.contains("GEMINI_API_KEY")));
    assert!(built.warnings.iter().all(|w| !w.contains("sk-test")));
}

#[test]
fn the_rescue_buffer_is_configured_under_server() {
    let text = r#"
        [server]
        rescue_buffer_bytes = 65536

        [[providers]]
        name = "sim"
        kind = "simulated"

        [[routes]]
        name = "r"
        providers = ["sim"]
    "#;
    let config = parse(text, "test.toml").unwrap();
    let built = build_gateway(&config, &|_| None, false, Wiring::default()).unwrap();
    assert_eq!(built.gateway.rescue_buffer_bytes(), 65_536);
    let config = parse(EMBEDDED_DEFAULT, "embedded default").unwrap();
    let built = build_gateway(&config, &|_| None, false, Wiring::default()).unwrap();
    assert_eq!(
        built.gateway.rescue_buffer_bytes(),
        switchyard::gateway::DEFAULT_RESCUE_BUFFER_BYTES
    );
}

#[test]
fn output_limits_and_route_default_max_tokens_are_read_and_checked() {
    let text = |limit: u32, default: u32| {
        format!(
            r#"
            [[providers]]
            name = "local"
            kind = "openai"
            model = "my-model"
            base_url = "http://127.0.0.1:8000/v1"
            price = {{ input_per_mtok = 1.0, output_per_mtok = 2.0, max_output_tokens = {limit} }}

            [[routes]]
            name = "r"
            providers = ["local"]
            budget_usd = 1.0
            default_max_tokens = {default}
        "#
        )
    };
    let config = parse(&text(8192, 512), "test.toml").unwrap();
    let built = build_gateway(&config, &|_| None, false, Wiring::default()).unwrap();
    assert_eq!(built.gateway.providers()[0].max_output_tokens, Some(8192));
    assert_eq!(built.gateway.routes()[0].default_max_tokens, 512);
    assert!(built.warnings.is_empty(), "{:?}", built.warnings);
    let unknown = text(8192, 512).replace(", max_output_tokens = 8192", "");
    let config = parse(&unknown, "test.toml").unwrap();
    let built = build_gateway(&config, &|_| None, false, Wiring::default()).unwrap();
    assert!(
        built.warnings.iter().any(|w| w.contains(
            "provider \"local\"'s model has no known output limit; requests without max_tokens are sent max_tokens = 512"
        )),
        "{:?}",
        built.warnings
    );
    let p = problems(&text(0, 0));
    assert!(
        p.iter()
            .any(|l| l.starts_with("providers[0].price.max_output_tokens: must be between 1")),
        "{p:#?}"
    );
    assert!(
        p.iter()
            .any(|l| l.starts_with("routes[0].default_max_tokens: must be at least 1")),
        "{p:#?}"
    );
}

#[test]
fn the_example_routes_state_the_recovery_defaults() {
    let text = include_str!("../../../../switchyard.example.toml");
    let config = parse(text, "switchyard.example.toml").unwrap();
    let built = build_gateway(&config, &|_: &str| None, false, Wiring::default()).unwrap();
    let smart = built.gateway.route("smart").unwrap();
    assert_eq!(smart.breaker, switchyard::breaker::BreakerConfig::default());
    assert_eq!(smart.retry, switchyard::retry::RetryPolicy::default());
    let claude = built.gateway.providers()[0].clone();
    assert_eq!(claude.probe_limit(), Duration::from_secs(10));
}

#[test]
fn probe_timeout_must_be_a_positive_duration_within_the_timeout() {
    let conf = |provider_line: &str| {
        format!("[[providers]]\nname = \"s\"\nkind = \"simulated\"\n{provider_line}\n[[routes]]\nname = \"r\"\nproviders = [\"s\"]\n")
    };
    assert!(problems(&conf("probe_timeout = \"5s\"")).is_empty());
    let cases = [
        (
            "probe_timeout = \"0s\"",
            "providers[0].probe_timeout: must be greater than zero",
        ),
        (
            "probe_timeout = \"soon\"",
            "providers[0].probe_timeout: \"soon\" is not a duration",
        ),
        (
            "probe_timeout = \"31s\"",
            "providers[0].probe_timeout: must not exceed timeout (30s)",
        ),
        (
            "timeout = \"5s\"\nprobe_timeout = \"6s\"",
            "providers[0].probe_timeout: must not exceed timeout (5s)",
        ),
    ];
    for (line, expect) in cases {
        let p = problems(&conf(line));
        assert_eq!(p.len(), 1, "{line}: {p:?}");
        assert!(p[0].starts_with(expect), "{line}: {p:?}");
    }
}

#[test]
fn health_checks_are_opt_in_validated_with_their_path_and_default_to_listing() {
    let base = "[[routes]]\nname = \"r\"\nproviders = [\"s\", \"t\"]\n[[providers]]\nname = \"t\"\nkind = \"simulated\"\n[[providers]]\nname = \"s\"\nkind = \"simulated\"\n";
    let config = parse(&format!("{base}health_check = {{}}\n"), "t.toml").unwrap();
    let checks = health_checks(&config);
    assert_eq!(checks.len(), 1, "only where asked for");
    assert_eq!(checks[0].0, "s");
    assert_eq!(checks[0].1, switchyard::health::HealthCheck::default());
    assert_eq!(
        checks[0].1.probe,
        switchyard::health::Probe::Listing,
        "completion only when asked for"
    );
    let config = parse(
        &format!("{base}health_check = {{ every = \"30s\", timeout = \"2s\", probe = \"completion\" }}\n"),
        "t.toml",
    )
    .unwrap();
    let c = health_checks(&config)[0].1;
    assert_eq!(
        (c.every.as_secs(), c.timeout.as_secs(), c.probe),
        (30, 2, switchyard::health::Probe::Completion)
    );
    let p = problems(&format!(
        "{base}health_check = {{ every = \"500ms\", probe = \"ping\" }}\n"
    ));
    assert_eq!(p.len(), 3, "{p:?}");
    assert_eq!(p[0], "providers[1].health_check.every: must be at least 1s");
    assert!(
        p[1].starts_with("providers[1].health_check.timeout: must be shorter than every"),
        "{p:?}"
    );
    assert!(
        p[2].starts_with("providers[1].health_check.probe: \"ping\" is not \"listing\""),
        "{p:?}"
    );
    let p = problems(&format!("{base}health_check = {{ often = \"1s\" }}\n"));
    assert!(p[0].contains("unknown field `often`"), "{p:?}");
}

#[test]
fn server_limits_are_checked_with_their_paths() {
    let text = r#"
        [server]
        header_read_timeout = "soon"
        body_read_timeout = "0s"
        idle_timeout = "1 minute-ish"
        max_connections = 0
        max_in_flight = 0

        [[providers]]
        name = "sim"
        kind = "simulated"

        [[routes]]
        name = "r"
        providers = ["sim"]
    "#;
    let p = problems(text);
    for expect in [
        "server.header_read_timeout: \"soon\" is not a duration",
        "server.body_read_timeout: must be greater than zero",
        "server.idle_timeout: \"1 minute-ish\" is not a duration",
        "server.max_connections: must be greater than zero",
        "server.max_in_flight: must be greater than zero",
    ] {
        assert!(p.iter().any(|x| x.starts_with(expect)), "{expect}\n{p:#?}");
    }
    assert_eq!(p.len(), 5, "{p:#?}");
}

#[test]
fn responses_section_sets_the_stored_responses_limits() {
    let text = include_str!("../../../../switchyard.example.toml");
    let config = parse(text, "switchyard.example.toml").unwrap();
    let limits = crate::config::stored_responses(&config);
    assert_eq!(limits.ttl, std::time::Duration::from_secs(7 * 24 * 3600));
    assert_eq!(limits.max_bytes, 8_388_608);
    let problems = problems("[responses]\nstore_ttl = \"soon\"\nmax_stored_bytes = 0\n");
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("responses.store_ttl:")),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p == "responses.max_stored_bytes: must be greater than zero"),
        "{problems:?}"
    );
    let unset: Config = toml::from_str("").unwrap();
    assert_eq!(
        crate::config::stored_responses(&unset),
        crate::config::StoredResponses::default()
    );
}

#[test]
fn a_preset_fills_base_url_key_and_quirks_and_the_entry_wins() {
    let text = r#"
[[providers]]
name = "g"
preset = "groq"
model = "llama-3.3-70b-versatile"

[[providers]]
name = "m"
preset = "mistral"
model = "mistral-large-latest"
use_max_tokens = false
base_url = "http://127.0.0.1:9/v1"

[[providers]]
name = "o"
preset = "ollama"
model = "llama3.2"

[[routes]]
name = "r"
providers = ["g", "m", "o"]
"#;
    let config = parse(text, "t").unwrap();
    let [g, m, o] = &config.providers[..] else {
        panic!()
    };
    assert_eq!(g.kind, "openai");
    assert_eq!(
        g.base_url.as_deref(),
        Some("https://api.groq.com/openai/v1")
    );
    assert_eq!(g.api_key_env.as_deref(), Some("GROQ_API_KEY"));
    assert_eq!(
        (g.use_max_tokens, g.stream_usage),
        (Some(false), Some(true))
    );
    assert_eq!(g.tool_call_ids, None);
    // the entry's own values win
    assert_eq!(m.base_url.as_deref(), Some("http://127.0.0.1:9/v1"));
    assert_eq!(m.use_max_tokens, Some(false));
    assert_eq!(m.stream_usage, Some(false));
    assert_eq!(m.tool_call_ids.as_deref(), Some("alnum9"));
    assert_eq!(m.api_key_env.as_deref(), Some("MISTRAL_API_KEY"));
    // a local server: no key variable, so no ambient key is ever sent to it
    assert_eq!(o.api_key_env, None);
    assert_eq!(build::resolve_key(o), None);
    assert_eq!(o.base_url.as_deref(), Some("http://localhost:11434/v1"));
    for p in presets::PRESETS {
        assert!(p.base_url.starts_with("http"), "{}", p.name);
    }
}

#[test]
fn presets_and_quirk_fields_are_validated_with_their_paths() {
    let base = "[[routes]]\nname = \"r\"\nproviders = [\"p\"]\n[[providers]]\nname = \"p\"\nmodel = \"m\"\n";
    let p = problems(&format!("{base}preset = \"grok\"\n"));
    assert_eq!(p.len(), 2, "{p:?}");
    assert!(
        p[0].starts_with("providers[0].preset: \"grok\" is not one of groq, together"),
        "{p:?}"
    );
    assert!(p[1].starts_with("providers[0].kind: is required"), "{p:?}");
    let p = problems(&format!("{base}kind = \"anthropic\"\npreset = \"groq\"\n"));
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(
        p[0].contains("providers[0].preset: presets are OpenAI-compatible"),
        "{p:?}"
    );
    let p = problems(&format!(
        "{base}kind = \"openai\"\ntool_call_ids = \"short\"\n"
    ));
    assert_eq!(
        p,
        ["providers[0].tool_call_ids: \"short\" is not one of as_is, alnum9"]
    );
    let p = problems(&format!("{base}kind = \"gemini\"\nstream_usage = false\n"));
    assert_eq!(
        p,
        ["providers[0].stream_usage: applies to kind \"openai\" providers only"]
    );
    let p = problems(&format!(
        "{base}kind = \"openai\"\nstructured_outputs = true\n"
    ));
    assert_eq!(
        p,
        ["providers[0].structured_outputs: applies to kind \"anthropic\" and \"vertex\" (Claude) providers only"]
    );
    let p = problems(&format!("{base}\n"));
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(p[0].starts_with("providers[0].kind: is required"), "{p:?}");
}

/// Each preset's quirks reach the wire: the body its vendor gets, from the config alone.
#[tokio::test]
async fn each_presets_quirks_reach_the_upstream_body() {
    use switchyard::chat::{Message, ToolCall};
    use switchyard::provider::http::Transport;
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    let mut assistant = Message::assistant("");
    assistant.content.clear();
    assistant.tool_calls = vec![ToolCall {
        id: "toolu_01A09q90qw90lq917835lq9".into(),
        name: "f".into(),
        arguments: "{}".into(),
    }];
    let req = switchyard::ChatRequest {
        messages: vec![
            Message::user("hi"),
            assistant,
            Message::tool_result("toolu_01A09q90qw90lq917835lq9", "f", "{}"),
        ],
        max_tokens: Some(100),
        ..switchyard::ChatRequest::default()
    };
    let sse = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n";
    for p in presets::PRESETS {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(
                ResponseTemplate::new(200)
                    .insert_header("content-type", "text/event-stream")
                    .set_body_string(sse),
            )
            .mount(&server)
            .await;
        let text = format!(
            "[[providers]]\nname = \"p\"\npreset = {:?}\nmodel = \"m\"\nbase_url = \"{}/v1\"\n[[routes]]\nname = \"r\"\nproviders = [\"p\"]\n",
            p.name,
            server.uri()
        );
        let config = parse(&text, "t").unwrap();
        let provider = providers::remote(
            &config.providers[0],
            None,
            &Transport::default(),
            switchyard::clock::Clock::system(),
        )
        .unwrap();
        let mut stream = provider.stream(&req).await.unwrap();
        while futures_util::StreamExt::next(&mut stream).await.is_some() {}
        let sent = &server.received_requests().await.unwrap()[0];
        let body: serde_json::Value = serde_json::from_slice(&sent.body).unwrap();
        let tokens = if p.use_max_tokens {
            "max_tokens"
        } else {
            "max_completion_tokens"
        };
        assert_eq!(body[tokens], 100, "{}: {body}", p.name);
        assert_eq!(
            body.get("stream_options").is_some(),
            p.stream_usage,
            "{}: {body}",
            p.name
        );
        let id = body["messages"][1]["tool_calls"][0]["id"].as_str().unwrap();
        assert_eq!(
            body["messages"][2]["tool_call_id"].as_str(),
            Some(id),
            "{}",
            p.name
        );
        if p.alnum9_tool_call_ids {
            assert!(
                id.len() == 9 && id.bytes().all(|b| b.is_ascii_alphanumeric()),
                "{id}"
            );
        } else {
            assert_eq!(id, "toolu_01A09q90qw90lq917835lq9", "{}", p.name);
        }
    }
}

#[test]
fn a_price_override_may_set_one_hour_writes_and_a_long_context_tier() {
    let text = |tier: &str| {
        format!(
            r#"
            [[providers]]
            name = "claude"
            kind = "anthropic"
            model = "claude-sonnet-4-5"
            price = {{ input_per_mtok = 3.0, output_per_mtok = 15.0, cached_input_per_mtok = 0.3, cache_write_per_mtok = 3.75, cache_write_1h_per_mtok = 6.0, long_context = {{ above_input_tokens = 200000, {tier} }} }}

            [[routes]]
            name = "r"
            providers = ["claude"]
        "#
        )
    };
    let config = parse(
        &text("input_per_mtok = 6.0, output_per_mtok = 22.5, cache_write_1h_per_mtok = 12.0"),
        "test.toml",
    )
    .unwrap();
    let built = build_gateway(&config, &|_| None, false, Wiring::default()).unwrap();
    let price = built.gateway.price_of("claude").unwrap();
    assert_eq!(price.cache_write_1h_micros_per_mtok, Some(6_000_000));
    let tier = price.long_context.unwrap();
    assert_eq!(
        (
            tier.above_input_tokens,
            tier.input_micros_per_mtok,
            tier.output_micros_per_mtok,
            tier.cache_write_1h_micros_per_mtok
        ),
        (200_000, 6_000_000, 22_500_000, Some(12_000_000))
    );
    let p = problems(&text("input_per_mtok = 0.0000001, output_per_mtok = 1.0"));
    assert!(
        p.iter().any(|l| l.starts_with("providers[0].price:")),
        "{p:#?}"
    );
    let p = problems(&text(
        "input_per_mtok = 6.0, output_per_mtok = 1.0, above = 1",
    ));
    assert!(p.iter().any(|l| l.contains("above")), "{p:#?}");
}

#[test]
fn an_openai_provider_can_speak_the_responses_api_upstream() {
    let conf = |kind: &str, line: &str| {
        format!(
            "[[providers]]\nname = \"p\"\nkind = \"{kind}\"\nmodel = \"gpt-5.1-codex\"\n{line}\n\
             [[routes]]\nname = \"r\"\nproviders = [\"p\"]\n"
        )
    };
    let text = conf("openai", "api = \"responses\"");
    assert!(problems(&text).is_empty(), "{:?}", problems(&text));
    let config = parse(&text, "test.toml").unwrap();
    let built = build_gateway(&config, &|_| None, false, Wiring::default()).unwrap();
    let p = &built.gateway.providers()[0].provider;
    assert_eq!(
        (p.kind(), p.native_kind()),
        ("openai", Some("openai-responses"))
    );
    let azure = |api: &str| {
        format!("[[providers]]\nname = \"az\"\nkind = \"azure\"\nendpoint = \"https://r.openai.azure.com\"\ndeployment = \"gpt-5\"\napi_version = \"v1\"\napi_key_env = \"K\"\n{api}\n[[routes]]\nname = \"r\"\nproviders = [\"az\"]\n")
    };
    let text = azure("api = \"responses\"");
    assert!(problems(&text).is_empty(), "{:?}", problems(&text));
    let config = parse(&text, "test.toml").unwrap();
    let built = build_gateway(&config, &|_| None, false, Wiring::default()).unwrap();
    let p = &built.gateway.providers()[0].provider;
    assert_eq!(
        (p.kind(), p.model(), p.native_kind()),
        ("azure", "gpt-5", Some("openai-responses"))
    );
    let p = problems(&azure("api = \"assistants\""));
    assert_eq!(
        p,
        [r#"providers[0].api: "assistants" is not one of chat_completions, responses"#]
    );
    let text = conf("openai", "api = \"chat_completions\"");
    let config = parse(&text, "test.toml").unwrap();
    let built = build_gateway(&config, &|_| None, false, Wiring::default()).unwrap();
    assert_eq!(built.gateway.providers()[0].provider.native_kind(), None);
    let cases = [
        (
            conf("openai", "api = \"completions\""),
            r#"providers[0].api: "completions" is not one of chat_completions, responses"#,
        ),
        (
            conf("anthropic", "api = \"responses\""),
            r#"providers[0].api: applies to openai and azure providers only (which OpenAI API they speak), not "anthropic""#,
        ),
        (
            conf("openai", "api = \"responses\"\nuse_max_tokens = true"),
            "providers[0].use_max_tokens: does not apply with api = \"responses\"",
        ),
        (
            "[[providers]]\nname = \"s\"\nkind = \"simulated\"\napi = \"responses\"\n\
             [[routes]]\nname = \"r\"\nproviders = [\"s\"]\n"
                .to_owned(),
            "providers[0].api: does not apply to simulated providers",
        ),
    ];
    for (text, expect) in cases {
        let p = problems(&text);
        assert_eq!(p.len(), 1, "{text}: {p:?}");
        assert!(p[0].starts_with(expect), "{text}: {p:?}");
    }
}

#[test]
fn reasoning_defaults_from_the_price_table_and_the_provider_overrides_it() {
    let text = r#"
        [[providers]]
        name = "4o"
        kind = "openai"
        model = "gpt-4o"
        base_url = "http://127.0.0.1:8000/v1"

        [[providers]]
        name = "4o-reasons"
        kind = "openai"
        model = "gpt-4o"
        base_url = "http://127.0.0.1:8000/v1"
        reasoning = true

        [[providers]]
        name = "gpt5"
        kind = "openai"
        model = "gpt-5"
        base_url = "http://127.0.0.1:8000/v1"

        [[providers]]
        name = "llama"
        kind = "openai"
        model = "llama-3.3-70b"
        base_url = "http://127.0.0.1:8000/v1"
        reasoning = false

        [[providers]]
        name = "local"
        kind = "openai"
        model = "my-model"
        base_url = "http://127.0.0.1:8000/v1"

        [[routes]]
        name = "r"
        providers = ["4o", "4o-reasons", "gpt5", "llama", "local"]
        allow_unpriced = true
        unsupported_fields = "drop"
    "#;
    let config = parse(text, "test.toml").unwrap();
    let built = build_gateway(&config, &|_| None, false, Wiring::default()).unwrap();
    let of = |name: &str| built.gateway.reasoning_of(name).unwrap();
    assert!(!of("4o"), "the table marks gpt-4o as not reasoning");
    assert!(
        of("4o-reasons"),
        "the provider's setting wins over the table"
    );
    assert!(of("gpt5"));
    assert!(!of("llama"));
    assert!(
        of("local"),
        "a model the table does not know keeps taking the field"
    );

    let bad = parse(
        &text.replace("reasoning = true", "reasoning = \"yes\""),
        "t.toml",
    );
    assert!(bad.is_err());
}

#[test]
fn routes_degrade_by_default_and_read_skip_as_strict() {
    use switchyard::route::UnsupportedFields;
    let text = |setting: &str| {
        format!(
            "[[providers]]\nname = \"p\"\nkind = \"openai\"\nmodel = \"gpt-4o\"\n\
             base_url = \"http://127.0.0.1:8000/v1\"\n\n[[routes]]\nname = \"r\"\n\
             providers = [\"p\"]\n{setting}\n"
        )
    };
    let mode = |setting: &str| {
        let config = parse(&text(setting), "t.toml").unwrap();
        let built = build_gateway(&config, &|_| None, false, Wiring::default()).unwrap();
        built.gateway.route("r").unwrap().unsupported_fields
    };
    assert_eq!(mode(""), UnsupportedFields::Degrade);
    assert_eq!(
        mode("unsupported_fields = \"skip\""),
        UnsupportedFields::Strict
    );
    assert_eq!(
        mode("unsupported_fields = \"strict\""),
        UnsupportedFields::Strict
    );
    assert_eq!(
        mode("unsupported_fields = \"drop\""),
        UnsupportedFields::Drop
    );
    let err = parse(&text("unsupported_fields = \"ignore\""), "t.toml").unwrap_err();
    assert!(err.to_string().contains("degrade"), "{err}");
}

#[test]
fn the_log_format_is_set_under_server_and_its_older_name_still_works() {
    use crate::config::telemetry::log_format;
    use crate::telemetry::trace::LogFormat;
    let with = |tables: &str| {
        format!(
            "{tables}\n[[providers]]\nname = \"sim\"\nkind = \"simulated\"\n\n\
             [[routes]]\nname = \"r\"\nproviders = [\"sim\"]\n"
        )
    };
    let format = |tables: &str| {
        let config = parse(&with(tables), "test.toml").unwrap();
        log_format(
            config.server.log_format.as_deref(),
            config.telemetry.as_ref(),
        )
    };
    assert_eq!(format(""), LogFormat::Text);
    assert_eq!(format("[server]\nlog_format = \"json\""), LogFormat::Json);
    assert_eq!(
        format("[telemetry]\nlog_format = \"json\""),
        LogFormat::Json
    );
    assert_eq!(
        format("[server]\nlog_format = \"json\"\n[telemetry]\nlog_format = \"json\""),
        LogFormat::Json
    );

    let bad = problems(&with("[server]\nlog_format = \"yaml\""));
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(
        bad[0].contains("server.log_format") && bad[0].contains("\"yaml\""),
        "{bad:?}"
    );
    let bad = problems(&with("[telemetry]\nlog_format = \"xml\""));
    assert!(
        bad.iter().any(|p| p.contains("telemetry.log_format")),
        "{bad:?}"
    );

    let both = problems(&with(
        "[server]\nlog_format = \"json\"\n[telemetry]\nlog_format = \"text\"",
    ));
    assert_eq!(both.len(), 1, "{both:?}");
    assert!(
        both[0].contains("server.log_format") && both[0].contains("telemetry.log_format"),
        "{both:?}"
    );
}

#[test]
fn a_routes_cache_is_read_and_every_problem_named() {
    let base = r#"
        [[providers]]
        name = "sim"
        kind = "simulated"
    "#;
    let good = format!(
        "{base}
        [[routes]]
        name = \"r\"
        providers = [\"sim\"]
        cache = {{ ttl = \"10m\", stale_if_error = \"24h\", scope = \"route\", any_temperature = true }}
        [[routes]]
        name = \"plain\"
        providers = [\"sim\"]
        [cache]
        max_bytes = 1048576
    "
    );
    assert_eq!(problems(&good), Vec::<String>::new());
    let config: Config = toml::from_str(&good).unwrap();
    let cache = crate::config::response_cache(&config);
    let policy = cache.policy("r").expect("route r caches");
    assert_eq!(policy.ttl, std::time::Duration::from_secs(600));
    assert_eq!(
        policy.stale_if_error,
        std::time::Duration::from_secs(86_400)
    );
    assert_eq!(policy.scope, crate::cache::Scope::Route);
    assert!(policy.any_temperature && !policy.tool_calls);
    assert!(cache.policy("plain").is_none(), "off unless configured");

    let bad = format!(
        "{base}
        [[routes]]
        name = \"r\"
        providers = [\"sim\"]
        cache = {{ stale_if_error = \"later\", scope = \"everyone\" }}
        [cache]
        backend = \"redis\"
        max_entry_bytes = 0
    "
    );
    let p = problems(&bad);
    for expect in [
        "routes[0] (r).cache.ttl: is required",
        "routes[0] (r).cache.stale_if_error: \"later\" is not a duration",
        "routes[0] (r).cache.scope: \"everyone\" is not one of key, route",
        "cache.backend: \"redis\" keeps entries in the [state] Redis",
        "cache.max_entry_bytes: must be greater than zero",
    ] {
        assert!(p.iter().any(|x| x.starts_with(expect)), "{expect}\n{p:#?}");
    }
    assert_eq!(p.len(), 5, "{p:#?}");
    let unknown = problems(&format!(
        "{base}
        [[routes]]
        name = \"r\"
        providers = [\"sim\"]
        cache = {{ ttl = \"1m\", tll = \"2m\" }}
    "
    ));
    assert!(
        unknown.iter().any(|x| x.contains("tll")),
        "an unknown cache field is named: {unknown:?}"
    );
}
