use std::collections::HashMap;

use super::super::{build_gateway, parse, Wiring};

fn problems(providers: &str) -> Vec<String> {
    let text = format!("{providers}\n[[routes]]\nname = \"r\"\nproviders = [\"c\"]\n");
    match parse(&text, "test.toml") {
        Ok(_) => Vec::new(),
        Err(e) => e.problems,
    }
}

#[test]
fn bedrock_fields_are_checked_with_paths() {
    let p = problems(
        "[[providers]]\nname = \"c\"\nkind = \"bedrock\"\nmodel = \"amazon.nova-pro-v1:0\"\n",
    );
    assert_eq!(
        p,
        ["providers[0].region: is required for kind \"bedrock\" (e.g. region = \"us-east-1\")"]
    );
    let p = problems("[[providers]]\nname = \"c\"\nkind = \"bedrock\"\nregion = \"US East\"\nprofile = \"work\"\napi_key_env = \"K=v\"\ncontrol_url = \"bedrock.local\"\nproject = \"p\"\n");
    assert_eq!(
        p,
        [
            "providers[0].api_key_env: must be the NAME of an environment variable (never the secret itself)",
            "providers[0].project: applies to kind \"vertex\" only",
            "providers[0].region: \"US East\" is not an AWS region (like \"us-east-1\")",
            "providers[0].control_url: \"bedrock.local\" must start with https:// (or http://)",
            "providers[0]: give one way to authenticate: api_key_env (a Bedrock API key), profile, or the *_env key names",
            "providers[0].model: is required for kind \"bedrock\"",
        ]
    );
    let p = problems(
        "[[providers]]\nname = \"c\"\nkind = \"openai\"\nmodel = \"m\"\nregion = \"us-east-1\"\n",
    );
    assert_eq!(p, ["providers[0].region: applies to kind \"bedrock\" only"]);
}

const BEDROCK: &str = "[[providers]]\nname = \"c\"\nkind = \"bedrock\"\nregion = \"eu-central-1\"\nmodel = \"eu.anthropic.claude-sonnet-4-5-20250929-v1:0\"\n[[routes]]\nname = \"r\"\nproviders = [\"c\"]\n";

fn build(text: &str, env: &HashMap<&str, String>) -> Result<Vec<String>, String> {
    let config = parse(text, "test.toml").unwrap();
    let built = build_gateway(&config, &|k| env.get(k).cloned(), false, Wiring::default())?;
    let kinds: Vec<_> = built
        .gateway
        .providers()
        .iter()
        .map(|p| (p.provider.kind(), p.provider.model().to_owned()))
        .collect();
    assert_eq!(
        kinds,
        [(
            "bedrock",
            "eu.anthropic.claude-sonnet-4-5-20250929-v1:0".to_owned()
        )]
    );
    Ok(built.warnings)
}

fn temp(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("sy-bedrock-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

const FILE: &str = "[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = default-secret-value\n\n[work]\naws_access_key_id = AKIDWORK\naws_secret_access_key = work-secret-value\n";

#[test]
fn only_claude_models_on_bedrock_take_reasoning_by_default() {
    let text = |kind: &str, model: &str, extra: &str| {
        format!("[[providers]]\nname = \"c\"\nkind = \"{kind}\"\nregion = \"us-east-1\"\nmodel = \"{model}\"\n{extra}\n[[routes]]\nname = \"r\"\nproviders = [\"c\"]\n")
    };
    let reasoning = |t: String| {
        let config = parse(&t, "test.toml").unwrap();
        let built = build_gateway(&config, &|_| None, false, Wiring::default()).unwrap();
        built.gateway.reasoning_of("c").unwrap()
    };
    assert!(!reasoning(text("bedrock", "my-imported-llama", "")));
    assert!(reasoning(text(
        "bedrock",
        "my-imported-llama",
        "reasoning = true"
    )));
    assert!(reasoning(text(
        "bedrock",
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        ""
    )));
}

#[test]
fn credentials_come_from_the_environment_or_a_profile() {
    // nothing at all: a warning naming the variables
    let warnings = build(BEDROCK, &HashMap::new()).unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set"),
        "{warnings:?}"
    );
    // the environment's keys
    let env = HashMap::from([
        ("AWS_ACCESS_KEY_ID", "AKID".to_owned()),
        ("AWS_SECRET_ACCESS_KEY", "s".to_owned()),
    ]);
    assert!(build(BEDROCK, &env).unwrap().is_empty());
    // half of them is an error
    let half = HashMap::from([("AWS_ACCESS_KEY_ID", "AKID".to_owned())]);
    let e = build(BEDROCK, &half).unwrap_err();
    assert!(
        e.contains("only one of AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"),
        "{e}"
    );
    // no keys: the default profile of the credentials file, as the AWS CLI
    let file = temp("credentials", FILE);
    let env = HashMap::from([("AWS_SHARED_CREDENTIALS_FILE", file.clone())]);
    assert!(build(BEDROCK, &env).unwrap().is_empty());
    // a named profile
    let named = BEDROCK.replace("model =", "profile = \"work\"\nmodel =");
    assert!(build(&named, &env).unwrap().is_empty());
    // a profile not in the file, or a file that is not there: errors, no secrets
    let other = BEDROCK.replace("model =", "profile = \"prod\"\nmodel =");
    let e = build(&other, &env).unwrap_err();
    assert_eq!(
        e,
        format!("provider \"c\": credentials file {file}: profile \"prod\" is not in the credentials file")
    );
    let gone = HashMap::from([("HOME", "/nonexistent-home".to_owned())]);
    let e = build(&named, &gone).unwrap_err();
    assert!(
        e.starts_with("provider \"c\": profile \"work\": credentials file /nonexistent-home/.aws/credentials: "),
        "{e}"
    );
    assert!(!e.contains("secret-value"));
    // a Bedrock API key
    let keyed = BEDROCK.replace("model =", "api_key_env = \"BEDROCK_KEY\"\nmodel =");
    let warnings = build(&keyed, &HashMap::new()).unwrap();
    assert!(
        warnings[0].contains("BEDROCK_KEY is not set"),
        "{warnings:?}"
    );
    let env = HashMap::from([("BEDROCK_KEY", "k".to_owned())]);
    assert!(build(&keyed, &env).unwrap().is_empty());
}

/// What `check` says provider "c" of `text` signs with.
fn source(text: &str, env: &HashMap<&str, String>) -> Result<String, String> {
    let config = parse(text, "test.toml").unwrap();
    super::credentials_source(&config.providers[0], &|k| env.get(k).cloned())
}

#[test]
fn a_credentials_source_is_checked_with_paths() {
    let p = problems("[[providers]]\nname = \"c\"\nkind = \"bedrock\"\nregion = \"us-east-1\"\nmodel = \"m\"\ncredentials = \"sso\"\n");
    assert_eq!(
        p,
        ["providers[0].credentials: \"sso\" is not one of env, profile, web_identity, container, imds"]
    );
    let p = problems("[[providers]]\nname = \"c\"\nkind = \"bedrock\"\nregion = \"us-east-1\"\nmodel = \"m\"\ncredentials = \"imds\"\nprofile = \"work\"\naccess_key_id_env = \"K\"\napi_key_env = \"B\"\n");
    assert_eq!(
        p,
        [
            "providers[0].credentials: give one way to authenticate: api_key_env (a Bedrock API key, unsigned) or credentials",
            "providers[0].profile: applies to credentials = \"profile\" only",
            "providers[0].access_key_id_env: applies to credentials = \"env\" only",
        ]
    );
    let p = problems(
        "[[providers]]\nname = \"c\"\nkind = \"openai\"\nmodel = \"m\"\ncredentials = \"env\"\n",
    );
    assert_eq!(
        p,
        ["providers[0].credentials: applies to kind \"bedrock\" only"]
    );
    // `profile` with credentials = "profile" is the profile's name
    let p = problems("[[providers]]\nname = \"c\"\nkind = \"bedrock\"\nregion = \"us-east-1\"\nmodel = \"m\"\ncredentials = \"profile\"\nprofile = \"work\"\n");
    assert!(p.is_empty(), "{p:?}");
}

const ROLE: &str = "arn:aws:iam::123456789012:role/bedrock-gateway";

#[test]
fn a_web_identity_is_checked_offline_and_named() {
    let token = temp(
        "irsa-token",
        "eyJhbGciOiJSUzI1NiJ9.irsa-secret-claims.sig\n",
    );
    let env = HashMap::from([
        ("AWS_WEB_IDENTITY_TOKEN_FILE", token.clone()),
        ("AWS_ROLE_ARN", ROLE.to_owned()),
    ]);
    assert!(build(BEDROCK, &env).unwrap().is_empty());
    assert_eq!(
        source(BEDROCK, &env).unwrap(),
        format!("web identity: role {ROLE} with the token in {token}, at https://sts.eu-central-1.amazonaws.com/ (refreshed before expiry)")
    );
    let explicit = BEDROCK.replace("model =", "credentials = \"web_identity\"\nmodel =");
    assert!(build(&explicit, &env).unwrap().is_empty());
    // not set up: an error when asked for by name
    let e = build(&explicit, &HashMap::new()).unwrap_err();
    assert!(e.starts_with("provider \"c\" (credentials = \"web_identity\"): AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN must both be set"), "{e}");
    // a role ARN of the wrong shape, a token file that is not there
    let mut bad = env.clone();
    bad.insert("AWS_ROLE_ARN", "bedrock-gateway".to_owned());
    let e = build(&explicit, &bad).unwrap_err();
    assert!(
        e.contains("AWS_ROLE_ARN") && e.contains("is not an IAM role ARN"),
        "{e}"
    );
    let mut gone = env.clone();
    gone.insert(
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "/nonexistent/token".to_owned(),
    );
    let e = build(BEDROCK, &gone).unwrap_err();
    assert!(
        e.starts_with("provider \"c\": AWS_WEB_IDENTITY_TOKEN_FILE /nonexistent/token: "),
        "{e}"
    );
    // the STS endpoint can be replaced (a VPC endpoint, a test)
    let mut vpc = env.clone();
    vpc.insert(
        "AWS_ENDPOINT_URL_STS",
        "https://sts.vpce.example".to_owned(),
    );
    assert!(source(BEDROCK, &vpc)
        .unwrap()
        .contains("at https://sts.vpce.example/"));
    assert!(!source(BEDROCK, &env).unwrap().contains("irsa-secret"));
}

#[test]
fn a_container_endpoint_is_checked_offline_and_named() {
    let env = HashMap::from([(
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "/v2/credentials/3f1e".to_owned(),
    )]);
    assert!(build(BEDROCK, &env).unwrap().is_empty());
    assert_eq!(
        source(BEDROCK, &env).unwrap(),
        "container credentials endpoint http://169.254.170.2/v2/credentials/3f1e (refreshed before expiry)"
    );
    let token = temp("pod-identity-token", "eks-pod-identity-secret-token");
    let eks = HashMap::from([
        (
            "AWS_CONTAINER_CREDENTIALS_FULL_URI",
            "http://169.254.170.23/v1/credentials".to_owned(),
        ),
        ("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", token.clone()),
    ]);
    assert_eq!(
        source(BEDROCK, &eks).unwrap(),
        format!("container credentials endpoint http://169.254.170.23/v1/credentials, with the authorization token in {token} (refreshed before expiry)")
    );
    let mut elsewhere = eks.clone();
    elsewhere.insert(
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "http://10.0.3.7/creds".to_owned(),
    );
    let e = build(BEDROCK, &elsewhere).unwrap_err();
    assert!(
        e.starts_with("provider \"c\": AWS_CONTAINER_CREDENTIALS_FULL_URI \"http://10.0.3.7/creds\": over http only"),
        "{e}"
    );
    let mut no_token = eks.clone();
    no_token.insert(
        "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
        "/nonexistent/t".to_owned(),
    );
    let e = build(BEDROCK, &no_token).unwrap_err();
    assert!(
        e.contains("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE /nonexistent/t"),
        "{e}"
    );
    let explicit = BEDROCK.replace("model =", "credentials = \"container\"\nmodel =");
    let e = build(&explicit, &HashMap::new()).unwrap_err();
    assert!(e.contains("(credentials = \"container\"): neither"), "{e}");
}

#[test]
fn the_default_chain_follows_the_sdks_order() {
    let token = temp("chain-token", "chain-token");
    let file = temp("chain-credentials", FILE);
    let keys = [
        ("AWS_ACCESS_KEY_ID", "AKIDCHAIN".to_owned()),
        ("AWS_SECRET_ACCESS_KEY", "chain-secret".to_owned()),
    ];
    let web = [
        ("AWS_WEB_IDENTITY_TOKEN_FILE", token),
        ("AWS_ROLE_ARN", ROLE.to_owned()),
    ];
    let profile = [("AWS_SHARED_CREDENTIALS_FILE", file)];
    let container = [(
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "/v2/credentials/x".to_owned(),
    )];
    let all: Vec<_> = [&keys[..], &web, &profile, &container].concat();
    let expect = [
        "environment keys AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (AKIDCHAIN)",
        "web identity: role",
        "profile \"default\" of",
        "container credentials endpoint",
        "EC2 instance metadata (IMDSv2) at http://169.254.169.254",
    ];
    for (skip, want) in expect.iter().enumerate() {
        let skipped = [
            0,
            keys.len(),
            keys.len() + web.len(),
            keys.len() + web.len() + 1,
            all.len(),
        ][skip];
        let env: HashMap<&str, String> = all[skipped..].iter().cloned().collect();
        let said = source(BEDROCK, &env).unwrap();
        assert!(said.starts_with(want), "{said} / {want}");
    }
    // the chain's end: instance metadata, with a warning; off: the old warning
    let warnings = build(BEDROCK, &HashMap::new()).unwrap();
    assert!(
        warnings[0].contains("signing with EC2 instance metadata"),
        "{warnings:?}"
    );
    let off = HashMap::from([("AWS_EC2_METADATA_DISABLED", "true".to_owned())]);
    assert_eq!(
        source(BEDROCK, &off).unwrap(),
        "none (requests go unsigned)"
    );
    let warnings = build(BEDROCK, &off).unwrap();
    assert!(
        warnings[0].contains("instance metadata is off"),
        "{warnings:?}"
    );
    let explicit = BEDROCK.replace("model =", "credentials = \"imds\"\nmodel =");
    assert!(build(&explicit, &HashMap::new()).unwrap().is_empty());
    let e = build(&explicit, &off).unwrap_err();
    assert!(e.contains("AWS_EC2_METADATA_DISABLED is true"), "{e}");
    // named key variables: no fallback past them
    let named = BEDROCK.replace(
        "model =",
        "access_key_id_env = \"MY_ID\"\nsecret_access_key_env = \"MY_SECRET\"\nmodel =",
    );
    let env: HashMap<&str, String> = web.iter().cloned().collect();
    assert_eq!(source(&named, &env).unwrap(), "none (requests go unsigned)");
}
