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
    assert_eq!(config.routes.len(), 2);
    assert_eq!(config.providers.len(), 5);
    assert_eq!(config.keys[0].routes, ["smart", "cheap"]);
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
        "providers[1].kind: \"opneai\" is not one of openai, anthropic, gemini, simulated",
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
        ["anthropic", "openai", "gemini", "openai", "simulated"]
    );
    let missing: Vec<_> = built
        .warnings
        .iter()
        .filter(|w| w.contains("is not set"))
        .collect();
    assert_eq!(missing.len(), 2, "{:?}", built.warnings);
    assert!(missing.iter().any(|w| w.contains("ANTHROPIC_API_KEY")));
    assert!(missing.iter().any(|w| w.contains("GEMINI_API_KEY")));
    assert!(built.warnings.iter().all(|w| !w.contains("sk-test")));
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
