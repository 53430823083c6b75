//! What the CLI refuses before anything runs: `check` fails on exactly what `serve` would
//! refuse before listening (same words), warns of client keys anyone could guess, and
//! `keys new` refuses a name that would print broken TOML.

use std::process::Output;

use crate::support::{describe, route, simulated_provider, switchyard, Scratch};

/// `switchyard check` and `switchyard serve` on the same config file.
fn check_and_serve(scratch: &Scratch, config: &str) -> (Output, Output) {
    let path = scratch.write("switchyard.toml", config);
    let path = path.to_str().unwrap();
    let check = switchyard(&["check", "--config", path], &[], &scratch.path);
    // a serve that wrongly starts is killed when the bounded wait runs out: the test fails
    let serve = switchyard(&["serve", "--config", path], &[], &scratch.path);
    (check, serve)
}

/// What `check` said: its error line's words.
fn said_by_check(check: &std::process::Output) -> String {
    let text = String::from_utf8_lossy(&check.stderr);
    text.strip_prefix("switchyard: error: ")
        .unwrap_or(&text)
        .to_owned()
}

/// What `serve` said: the words of its one line, logged by the subscriber (`LEVEL target:
/// words` after the time).
fn said_by_serve(text: &str) -> String {
    assert_eq!(text.lines().count(), 1, "{text}");
    let (_, words) = text
        .split_once("ERROR switchyard::serve: ")
        .unwrap_or_else(|| panic!("an error line: {text}"));
    words.to_owned()
}

fn routes() -> String {
    format!(
        "{}{}",
        simulated_provider("sim", 0.0),
        route("smart", &["sim"], "")
    )
}

#[test]
fn check_refuses_a_public_address_without_keys_as_serve_does() {
    let scratch = Scratch::new("e2e", "check-public");
    let config = format!("[server]\nlisten = \"0.0.0.0:0\"\n\n{}", routes());
    let (check, serve) = check_and_serve(&scratch, &config);
    assert!(!check.status.success(), "{}", describe(&check));
    assert!(!serve.status.success(), "{}", describe(&serve));
    let said = String::from_utf8_lossy(&serve.stderr);
    assert!(
        said.contains("refusing to listen on 0.0.0.0:0 without client keys"),
        "{said}"
    );
    assert_eq!(
        said_by_check(&check),
        said_by_serve(&said),
        "the same words"
    );
    assert!(check.stdout.is_empty(), "{}", describe(&check));
}

#[test]
fn check_refuses_a_request_log_in_a_missing_directory_as_serve_does() {
    let scratch = Scratch::new("e2e", "check-log");
    let log = scratch.file("no-such-dir/requests.jsonl");
    let config = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nrequest_log = {:?}\n\n{}",
        log.to_str().unwrap(),
        routes()
    );
    let (check, serve) = check_and_serve(&scratch, &config);
    assert!(!check.status.success(), "{}", describe(&check));
    assert!(!serve.status.success(), "{}", describe(&serve));
    let said = String::from_utf8_lossy(&serve.stderr);
    assert!(
        said.contains(&format!("request log {}: ", log.display())),
        "{said}"
    );
    assert_eq!(
        said_by_check(&check),
        said_by_serve(&said),
        "the same words"
    );

    // with the directory there, check passes and leaves no file behind
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    let path = scratch.file("switchyard.toml");
    let ok = switchyard(
        &["check", "--config", path.to_str().unwrap()],
        &[],
        &scratch.path,
    );
    assert!(ok.status.success(), "{}", describe(&ok));
    assert!(!log.exists(), "check creates no request log");
}

/// A misspelt or misplaced field: `check` and `serve` both refuse it naming the field
/// meant, in the same words, and neither shows the secret written where its variable's
/// name goes.
#[test]
fn check_and_serve_name_the_field_meant_in_the_same_words() {
    let scratch = Scratch::new("e2e", "check-suggest");
    let config = format!(
        "{}[[routes]]\nname = \"quick\"\nproviders = [\"sim\"]\ntimout = \"5s\"\n\n\
         [[providers]]\nname = \"gpt\"\nkind = \"openai\"\nmodel = \"gpt-4.1-mini\"\n\
         api_key = \"sk-proj-Wq3rT9zLx0Vn5KpA\"\ndeadline = \"5s\"\n",
        routes()
    );
    let (check, serve) = check_and_serve(&scratch, &config);
    assert!(!check.status.success(), "{}", describe(&check));
    assert!(!serve.status.success(), "{}", describe(&serve));
    let said = String::from_utf8_lossy(&serve.stderr);
    for line in [
        "providers[1].api_key: unknown field `api_key`: did you mean `api_key_env`?",
        "providers[1].deadline: unknown field `deadline`: `deadline` is a setting of a route ([[routes]]), not of a provider ([[providers]])",
        "routes[1].timout: unknown field `timout`: did you mean `timeout` (a setting of a provider ([[providers]]))?",
    ] {
        assert!(said.contains(line), "{line}\n{said}");
    }
    assert!(!said.contains("Wq3r"), "{said}");
    // `check` prints a plain line, `serve` a log line (its subscriber's timestamp, level
    // and target first: docs/telemetry.md): after those, the same words
    let words = |text: &str, prefix: &str| text.split_once(prefix).map(|(_, w)| w.to_owned());
    let checked = String::from_utf8_lossy(&check.stderr);
    assert_eq!(
        words(&checked, "switchyard: error: "),
        words(&said, " ERROR switchyard::serve: "),
        "the same words
{checked}
{said}"
    );
    assert!(
        words(&checked, "switchyard: error: ").is_some(),
        "{checked}"
    );
}

#[test]
fn check_warns_of_a_key_anyone_could_guess_but_not_of_the_example_placeholders() {
    let scratch = Scratch::new("e2e", "check-weak");
    let test_hash = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
    let config = format!(
        "{}[[keys]]\nname = \"backend-team\"\nsha256 = \"{test_hash}\"\nroutes = [\"*\"]\nadmin = true\n",
        routes()
    );
    let path = scratch.write("weak.toml", &config);
    let out = switchyard(
        &["check", "--config", path.to_str().unwrap()],
        &[],
        &scratch.path,
    );
    assert!(
        out.status.success(),
        "a warning, not a refusal: {}",
        describe(&out)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let warnings = text.split("warnings:").nth(1).unwrap_or_default();
    assert!(
        warnings.contains("keys[0] (\"backend-team\"): its sha256 is the hash of a well-known")
            && warnings.contains("switchyard keys new backend-team"),
        "{text}"
    );

    let example = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../switchyard.example.toml"
    ))
    .unwrap();
    let copy = scratch.write("example.toml", &example);
    let out = switchyard(
        &["check", "--config", copy.to_str().unwrap()],
        &[],
        &scratch.path,
    );
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("guessable"),
        "{}",
        describe(&out)
    );
}

#[test]
fn keys_new_refuses_a_name_that_would_break_the_toml() {
    let scratch = Scratch::new("e2e", "keys-name");
    for name in ["two\nlines", "quote\"d", ""] {
        let out = switchyard(&["keys", "new", name], &[], &scratch.path);
        assert!(!out.status.success(), "{name:?}: {}", describe(&out));
        assert!(
            out.stdout.is_empty(),
            "no token, no TOML: {}",
            describe(&out)
        );
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(
            said.contains(
                "is not allowed: use 1 to 64 characters of A-Z, a-z, 0-9, '.', '_' and '-'"
            ),
            "{said}"
        );
    }
}
