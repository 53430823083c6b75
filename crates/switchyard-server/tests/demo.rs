//! `switchyard demo`, end to end through the built binary.
//!
//! 1. The default demo prints every line and number the tutorial (docs/tutorial.md) printed.
//! 2. Generated scenarios run through `switchyard demo --scenario F --json` and through our
//!    Python reference (`tests/python/tutorial_reference.py`, the tutorial's algorithm with
//!    `random.Random` and pandas) give equal JSON values, floats compared exactly. The
//!    interpreter is `$SWITCHYARD_PYTHON` (default `python3`) and must have pandas 3.0.x,
//!    the tutorial's (`pip install "pandas==3.0.3"`); without it the test fails, never skips.
//! 3. Bad scenario files are refused with a message naming the field.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test: failing loudly is the point

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_switchyard");
const REFERENCE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/python/tutorial_reference.py"
);

fn demo(args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("demo")
        .args(args)
        .output()
        .expect("run switchyard")
}

fn stdout_of(out: &Output) -> String {
    assert!(
        out.status.success(),
        "switchyard failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).expect("utf-8 stdout")
}

/// A fresh file under the target's scratch directory.
fn scratch_file(name: &str, text: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("demo-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

// ---------------------------------------------------------------- 1. the tutorial

/// The tutorial's printed output, block by block (each block must appear contiguously).
const TUTORIAL_BLOCKS: &[&str] = &[
    "LLMResponse(text='[aurora] Summarize the Q3 shipping repo...', provider='aurora', latency_ms=153.8, cost_usd=0.0004)
error: aurora timed out
error: aurora timed out
",
    "completed=40 errors=0
LLMResponse(text='[aurora] request-0...', provider='aurora', latency_ms=153.8, cost_usd=0.0004)
LLMResponse(text='[borealis] request-1...', provider='borealis', latency_ms=445.3, cost_usd=0.0024)
LLMResponse(text='[aurora] request-2...', provider='aurora', latency_ms=251.5, cost_usd=0.0004)
LLMResponse(text='[aurora] request-3...', provider='aurora', latency_ms=163.0, cost_usd=0.0004)
LLMResponse(text='[aurora] request-4...', provider='aurora', latency_ms=154.5, cost_usd=0.0004)
",
    "{'request': 19, 'provider': 'aurora', 'outcome': 'failed_attempt_1'}
{'request': 19, 'provider': 'aurora', 'outcome': 'failed_attempt_2'}
{'request': 19, 'provider': 'borealis', 'outcome': 'success'}
{'request': 20, 'provider': 'aurora', 'outcome': 'failed_attempt_1'}
{'request': 20, 'provider': 'aurora', 'outcome': 'failed_attempt_2'}
{'request': 20, 'provider': 'borealis', 'outcome': 'failed_attempt_1'}
{'request': 20, 'provider': 'borealis', 'outcome': 'success'}
{'request': 21, 'provider': 'aurora', 'outcome': 'failed_attempt_1'}
{'request': 21, 'provider': 'aurora', 'outcome': 'failed_attempt_2'}
{'request': 21, 'provider': 'borealis', 'outcome': 'success'}
{'request': 22, 'provider': 'aurora', 'outcome': 'skipped_open_circuit'}
{'request': 22, 'provider': 'borealis', 'outcome': 'success'}
{'request': 23, 'provider': 'aurora', 'outcome': 'skipped_open_circuit'}
{'request': 23, 'provider': 'borealis', 'outcome': 'success'}
{'request': 24, 'provider': 'aurora', 'outcome': 'skipped_open_circuit'}
{'request': 24, 'provider': 'borealis', 'outcome': 'success'}
{'request': 25, 'provider': 'aurora', 'outcome': 'skipped_open_circuit'}
{'request': 25, 'provider': 'borealis', 'outcome': 'success'}
{'request': 26, 'provider': 'aurora', 'outcome': 'skipped_open_circuit'}
{'request': 26, 'provider': 'borealis', 'outcome': 'failed_attempt_1'}
{'request': 26, 'provider': 'borealis', 'outcome': 'success'}
{'request': 27, 'provider': 'aurora', 'outcome': 'success'}
",
    "aurora opened_until_request= 27
borealis opened_until_request= 0
",
    "          requests_served  avg_latency_ms  total_cost_usd
provider                                                 
aurora                 27         221.011           0.011
borealis               13         518.123           0.031
",
];

#[test]
fn default_demo_prints_the_tutorials_numbers() {
    let out = stdout_of(&demo(&[]));
    let mut rest = out.as_str();
    for block in TUTORIAL_BLOCKS {
        let at = rest
            .find(block)
            .unwrap_or_else(|| panic!("missing, in order:\n{block}\n--- output ---\n{out}"));
        rest = &rest[at + block.len()..];
    }
    // The tutorial's code filters 18 <= request <= 27; its printed output starts at 19.
    // Running the code prints request 18's row too, just before the 19s.
    let row_18 = "{'request': 18, 'provider': 'aurora', 'outcome': 'success'}\n";
    assert!(out.contains(&format!("{row_18}{}", &TUTORIAL_BLOCKS[2][..70])));
}

#[test]
fn default_demo_as_json_has_every_row() {
    let json: Value = serde_json::from_str(&stdout_of(&demo(&["--json"]))).unwrap();
    assert_eq!(json["completed"], 40);
    assert_eq!(json["errors"], 0);
    assert_eq!(json["responses"].as_array().unwrap().len(), 40);
    assert_eq!(json["breakers"]["aurora"]["opened_until_request"], 27);
    assert_eq!(json["summary"][1]["avg_latency_ms"], 518.123);
    let log = json["log"].as_array().unwrap();
    assert_eq!(log.first().unwrap()["request"], 0);
    assert_eq!(log.last().unwrap()["request"], 39);
}

// ------------------------------------------------ 2. our binary == the Python reference

/// A small seeded generator (splitmix64): the scenarios are the same on every run.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.range(0, items.len() as u64 - 1) as usize]
    }
}

const NAMES: &[&str] = &["zephyr", "aurora", "borealis", "cirrus", "nimbus", "o'hare"];

const PROMPTS: &[&str] = &[
    "request-{i}",
    "Summarize ticket #{i} for the on-call engineer in two sentences.",
    "{i}",
    "naïve café #{i}: ünïcödé that runs past thirty characters",
    "it's request {i}",
];

/// One generated provider block.
fn provider_toml(g: &mut Gen, name: &str) -> String {
    let failure_rate = match g.range(0, 7) {
        0 => 0.0,
        1 => 1.0,
        2 => 0.9,
        3 => 0.6,
        4 => 0.35,
        5 => 0.05,
        _ => g.unit(),
    };
    let lo = match g.range(0, 3) {
        0 => g.range(0, 1000) as f64,
        1 => g.range(0, 100_000) as f64 / 100.0,
        _ => g.unit() * 500.0,
    };
    let hi = if g.range(0, 5) == 0 {
        lo
    } else {
        lo + g.unit() * 900.0
    };
    // integer micro-dollars per million tokens, so the price is exact
    let micros_per_mtok = match g.range(0, 4) {
        0 => 0,
        1 => 12_300_000, // $0.0123 per 1k
        2 => 2_000_000,
        _ => g.range(1, 60_000_000),
    };
    let cost = micros_per_mtok as f64 / 1e9;
    let seed = match g.range(0, 2) {
        0 => g.range(0, 100),
        1 => g.range(0, u64::from(u32::MAX)),
        _ => g.range(1 << 32, i64::MAX as u64),
    };
    format!(
        "[[providers]]\nname = \"{name}\"\nfailure_rate = {failure_rate:?}\n\
         latency_range_ms = [{lo:?}, {hi:?}]\ncost_per_1k_tokens = {cost:?}\nseed = {seed}\n\n"
    )
}

/// One generated scenario file's text.
fn scenario_toml(g: &mut Gen) -> String {
    let any = g.range(2, 8000);
    let max_tokens = g.pick(&[0, 1, 64, 200, 256, 1000, 4096, any]);
    let mut text = format!(
        "requests = {}\nmax_tokens = {max_tokens}\nprompt = {:?}\nretries_per_provider = {}\n\
         breaker_threshold = {}\nbreaker_cooldown_requests = {}\n\n",
        g.range(10, 80),
        g.pick(PROMPTS),
        g.range(1, 3),
        g.range(1, 4),
        g.range(0, 6),
    );
    let mut names: Vec<&str> = NAMES.to_vec();
    for _ in 0..g.range(1, 3) {
        let name = names.remove(g.range(0, names.len() as u64 - 1) as usize);
        text.push_str(&provider_toml(g, name));
    }
    text
}

/// The tutorial itself, as a scenario file (every key spelled out).
const TUTORIAL_TOML: &str = r#"requests = 40
max_tokens = 200
prompt = "request-{i}"
retries_per_provider = 2
breaker_threshold = 3
breaker_cooldown_requests = 5

[[providers]]
name = "aurora"
failure_rate = 0.35
latency_range_ms = [150, 300]
cost_per_1k_tokens = 0.002
seed = 42

[[providers]]
name = "borealis"
failure_rate = 0.05
latency_range_ms = [400, 700]
cost_per_1k_tokens = 0.012
seed = 7
"#;

fn python() -> String {
    std::env::var("SWITCHYARD_PYTHON").unwrap_or_else(|_| "python3".to_owned())
}

/// The pandas the tutorial printed its table with (3.0.3); see `tutorial_reference.py`
/// for why 3.1 differs.
const PANDAS: &str = "3.0.";

/// Fail (never skip) when the reference cannot run.
fn require_pandas(python: &str) {
    let how = format!(
        "the demo's property test needs Python 3.11+ with pandas 3.0.x (the tutorial's). \
         Install it with `pip install \"pandas==3.0.3\"` (here: `{python} -m pip install \
         \"pandas==3.0.3\"`), or point SWITCHYARD_PYTHON at an interpreter that has it, e.g. \
         `python3 -m venv .venv && .venv/bin/pip install \"pandas==3.0.3\"` then \
         `SWITCHYARD_PYTHON=$PWD/.venv/bin/python cargo test -p switchyard-server`"
    );
    let out = Command::new(python)
        .args(["-c", "import pandas, tomllib; print(pandas.__version__)"])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {python:?} ({e}); {how}"));
    assert!(
        out.status.success(),
        "{python} cannot import pandas: {}\n{how}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    let version = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(
        version.starts_with(PANDAS),
        "{python} has pandas {version}, not {PANDAS}x\n{how}"
    );
}

/// `$name` as a number, else `default` (to widen the property test locally).
fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).map_or(default, |v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number"))
    })
}

fn reference_json(python: &str, path: &Path) -> Value {
    let out = Command::new(python)
        .arg(REFERENCE)
        .arg(path)
        .output()
        .expect("run the Python reference");
    assert!(
        out.status.success(),
        "reference failed on {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("reference JSON")
}

fn our_json(path: &Path) -> Value {
    let out = demo(&["--scenario", path.to_str().unwrap(), "--json"]);
    serde_json::from_str(&stdout_of(&out)).expect("switchyard JSON")
}

/// Where two JSON values first differ, as a path.
fn first_difference(a: &Value, b: &Value, at: String) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) if x.len() == y.len() => x
            .iter()
            .find_map(|(k, v)| first_difference(v, y.get(k)?, format!("{at}.{k}")))
            .or_else(|| {
                x.keys()
                    .find(|k| !y.contains_key(*k))
                    .map(|k| format!("{at}.{k}"))
            }),
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (v, w))| first_difference(v, w, format!("{at}[{i}]"))),
        _ if a == b => None,
        _ => Some(format!("{at}: switchyard {a} vs reference {b}")),
    }
}

#[test]
fn generated_scenarios_match_the_python_reference() {
    let python = python();
    require_pandas(&python);
    // SWITCHYARD_DEMO_CASES / SWITCHYARD_DEMO_SEED widen or vary the run locally.
    let seed = env_or("SWITCHYARD_DEMO_SEED", 0x5eed_0000_0000_0001);
    let mut g = Gen(seed);
    let mut scenarios = vec![TUTORIAL_TOML.to_owned()];
    scenarios.extend((0..env_or("SWITCHYARD_DEMO_CASES", 30)).map(|_| scenario_toml(&mut g)));
    let mut opened = 0;
    for (i, text) in scenarios.iter().enumerate() {
        let path = scratch_file(&format!("scenario-{i:02}.toml"), text);
        let ours = our_json(&path);
        let theirs = reference_json(&python, &path);
        if let Some(diff) = first_difference(&ours, &theirs, "$".to_owned()) {
            panic!(
                "scenario {i} (seed {seed}, {}) differs at {diff}\n{text}",
                path.display()
            );
        }
        assert_eq!(ours, theirs, "scenario {i}");
        let breakers = ours["breakers"].as_object().unwrap();
        opened += breakers
            .values()
            .filter(|b| b["opened_until_request"].as_u64() != Some(0))
            .count();
    }
    assert!(
        opened >= 5,
        "too few breakers opened ({opened}) to test them"
    );
}

// ------------------------------------------------------------ 3. bad scenario files

const GOOD_PROVIDER: &str = "[[providers]]\nname = \"a\"\nfailure_rate = 0.1\n\
                             latency_range_ms = [1, 2]\ncost_per_1k_tokens = 0.002\nseed = 1\n";

fn refused(name: &str, text: &str) -> String {
    let path = scratch_file(name, text);
    let out = demo(&["--scenario", path.to_str().unwrap()]);
    assert!(!out.status.success(), "{name} was accepted");
    assert!(out.stdout.is_empty(), "{name} printed output");
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn unknown_keys_are_refused_by_name() {
    let err = refused("unknown.toml", &format!("retries = 2\n{GOOD_PROVIDER}"));
    assert!(err.contains("unknown field `retries`"), "{err}");
    let err = refused(
        "unknown-provider-key.toml",
        &GOOD_PROVIDER.replace("seed = 1", "seed = 1\nmodel = \"x\""),
    );
    assert!(err.contains("unknown field `model`"), "{err}");
}

#[test]
fn bad_values_are_refused_naming_the_field() {
    let cases = [
        ("retries_per_provider = 0\n", "retries_per_provider"),
        ("breaker_threshold = 0\n", "breaker_threshold"),
    ];
    for (line, field) in cases {
        let err = refused("bad.toml", &format!("{line}{GOOD_PROVIDER}"));
        assert!(err.contains(field), "{field}: {err}");
    }
    let bad_provider = [
        ("[1, 2]", "[5, 2]", "providers[0].latency_range_ms"),
        ("0.002", "0.0000000001", "providers[0].cost_per_1k_tokens"),
        ("0.1", "1.5", "providers[0].failure_rate"),
    ];
    for (from, to, field) in bad_provider {
        let err = refused("bad.toml", &GOOD_PROVIDER.replace(from, to));
        assert!(err.contains(field), "{field}: {err}");
    }
    let err = refused("dup.toml", &format!("{GOOD_PROVIDER}{GOOD_PROVIDER}"));
    assert!(err.contains("providers[1].name"), "{err}");
    let err = refused("none.toml", "requests = 3\n");
    assert!(err.contains("providers"), "{err}");
    let err = demo(&["--scenario", "/nonexistent/scenario.toml"]);
    assert!(!err.status.success());
    assert!(String::from_utf8_lossy(&err.stderr).contains("cannot read scenario"));
}
