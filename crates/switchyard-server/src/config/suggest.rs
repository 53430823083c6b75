//! A misspelt or misplaced config field, and the field meant; secrets kept out of what is
//! said about a config.
//!
//! serde's `deny_unknown_fields` stops at the first unknown field and lists the expected
//! ones. Before the typed parse, [`unknown_fields`] walks the file's tables against the
//! schema's field names — read from the schema types' own `Deserialize` impls, so a field
//! added to the schema is known here at once — and reports every unknown key with its path
//! and the field meant: the `_env` field a secret's name goes in (`api_key` →
//! `api_key_env`), the nearest name by edit distance (`timout` → `timeout`), or the
//! section the name belongs to (`deadline` on a provider is a route setting). A value is
//! never shown; text quoted from the file (a TOML error's snippet) has anything that
//! looks like a secret masked ([`mask_secrets`]). `check` and `serve` both parse through
//! here, so they say the same words.

use serde::de::{self, DeserializeOwned, Visitor};
use toml::{Table, Value};

use super::schema::{
    BreakerToml, Config, HealthCheckToml, KeyToml, LongContextToml, PolicyToml, PriceToml,
    ProviderToml, ResponsesToml, RetryToml, RouteToml, ServerToml, StateToml,
};
use super::telemetry::TelemetryToml;

/// Every unknown key in `table` (a whole config file), as `path: problem` lines.
pub(super) fn unknown_fields(table: &Table) -> Vec<String> {
    let mut out = Vec::new();
    walk(&TOP, table, "", &mut out);
    out
}

/// One table of the schema: how messages name it, its fields, and the tables inside it.
struct Section {
    name: &'static str,
    fields: fn() -> &'static [&'static str],
    inner: &'static [(&'static str, Nest)],
}

/// How a field holds a section.
#[derive(Clone, Copy)]
enum Nest {
    /// A table: `[server]`, `retry = { ... }`.
    Table(&'static Section),
    /// An array of tables: `[[providers]]`.
    Array(&'static Section),
    /// A table of tables under free names: `policy.<kind> = { ... }`.
    Map(&'static Section),
}

static TOP: Section = Section {
    name: "the top level",
    fields: fields_of::<Config>,
    inner: &[
        ("server", Nest::Table(&SERVER)),
        ("providers", Nest::Array(&PROVIDER)),
        ("routes", Nest::Array(&ROUTE)),
        ("keys", Nest::Array(&KEY)),
        ("state", Nest::Table(&STATE)),
        ("responses", Nest::Table(&RESPONSES)),
        ("telemetry", Nest::Table(&TELEMETRY)),
    ],
};
static SERVER: Section = leaf("[server]", fields_of::<ServerToml>);
static PROVIDER: Section = Section {
    name: "a provider ([[providers]])",
    fields: fields_of::<ProviderToml>,
    inner: &[
        ("health_check", Nest::Table(&HEALTH_CHECK)),
        ("price", Nest::Table(&PRICE)),
    ],
};
static HEALTH_CHECK: Section = leaf("a provider's health_check", fields_of::<HealthCheckToml>);
static PRICE: Section = Section {
    name: "a provider's price",
    fields: fields_of::<PriceToml>,
    inner: &[("long_context", Nest::Table(&LONG_CONTEXT))],
};
static LONG_CONTEXT: Section = leaf("a price's long_context", fields_of::<LongContextToml>);
static ROUTE: Section = Section {
    name: "a route ([[routes]])",
    fields: fields_of::<RouteToml>,
    inner: &[
        ("retry", Nest::Table(&RETRY)),
        ("breaker", Nest::Table(&BREAKER)),
        ("policy", Nest::Map(&POLICY)),
    ],
};
static RETRY: Section = leaf("a route's retry", fields_of::<RetryToml>);
static BREAKER: Section = leaf("a route's breaker", fields_of::<BreakerToml>);
static POLICY: Section = leaf("a route's policy.<kind>", fields_of::<PolicyToml>);
static KEY: Section = leaf("a key ([[keys]])", fields_of::<KeyToml>);
static STATE: Section = leaf("[state]", fields_of::<StateToml>);
static RESPONSES: Section = leaf("[responses]", fields_of::<ResponsesToml>);
static TELEMETRY: Section = leaf("[telemetry]", fields_of::<TelemetryToml>);

/// Every section, in the order a misplaced name's home is looked for.
static ALL: [&Section; 14] = [
    &TOP,
    &SERVER,
    &PROVIDER,
    &ROUTE,
    &KEY,
    &STATE,
    &RESPONSES,
    &TELEMETRY,
    &HEALTH_CHECK,
    &PRICE,
    &LONG_CONTEXT,
    &RETRY,
    &BREAKER,
    &POLICY,
];

const fn leaf(name: &'static str, fields: fn() -> &'static [&'static str]) -> Section {
    Section {
        name,
        fields,
        inner: &[],
    }
}

fn walk(section: &Section, table: &Table, path: &str, out: &mut Vec<String>) {
    let known = (section.fields)();
    for (key, value) in table {
        let at = if path.is_empty() {
            shown(key)
        } else {
            format!("{path}.{}", shown(key))
        };
        if !known.contains(&key.as_str()) {
            out.push(format!("{at}: {}", advice(section, key)));
            continue;
        }
        let nest = section.inner.iter().find(|(name, _)| name == key);
        match (nest.map(|(_, n)| *n), value) {
            (Some(Nest::Table(s)), Value::Table(t)) => walk(s, t, &at, out),
            (Some(Nest::Array(s)), Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    if let Value::Table(t) = item {
                        walk(s, t, &format!("{at}[{i}]"), out);
                    }
                }
            }
            (Some(Nest::Map(s)), Value::Table(t)) => {
                for (name, v) in t {
                    if let Value::Table(inner) = v {
                        walk(s, inner, &format!("{at}.{}", shown(name)), out);
                    }
                }
            }
            _ => {} // not a table where one belongs: the typed parse says so
        }
    }
}

/// What to say of `key`, unknown in `section`: the field meant, when one can be told.
fn advice(section: &Section, key: &str) -> String {
    let unknown = format!("unknown field `{}`", shown(key));
    if let Some((env, home)) = env_field(section, key) {
        let place = home.map_or_else(String::new, |s| format!(" (a setting of {})", s.name));
        return format!(
            "{unknown}: did you mean `{env}`{place}? It takes the NAME of the environment variable holding the secret, never the secret itself (the value is not shown here)"
        );
    }
    let near = nearest(key, (section.fields)());
    let homes: Vec<&str> = (ALL.iter())
        .filter(|s| !std::ptr::eq(**s, section) && (s.fields)().contains(&key))
        .map(|s| s.name)
        .collect();
    let homes = homes.join(" or ");
    match (near, homes.is_empty()) {
        (Some(f), true) => format!("{unknown}: did you mean `{f}`?"),
        (Some(f), false) => {
            format!("{unknown}: did you mean `{f}`? (`{key}` is a setting of {homes})")
        }
        (None, false) => format!(
            "{unknown}: `{key}` is a setting of {homes}, not of {}",
            section.name
        ),
        (None, true) => match nearest_elsewhere(section, key) {
            Some((f, home)) => {
                format!(
                    "{unknown}: did you mean `{f}` (a setting of {})?",
                    home.name
                )
            }
            None => {
                let expected: Vec<String> = (section.fields)()
                    .iter()
                    .map(|f| format!("`{f}`"))
                    .collect();
                format!("{unknown}; expected one of {}", expected.join(", "))
            }
        },
    }
}

/// The `_env` field whose secret `key` names (`api_key`, `apiKey`, `API-KEY` →
/// `api_key_env`): in `section`, else in another one (returned with it).
fn env_field(section: &Section, key: &str) -> Option<(&'static str, Option<&'static Section>)> {
    let want = squash(key);
    let env_of = |s: &Section| {
        (s.fields)().iter().copied().find(|f| {
            f.strip_suffix("_env")
                .is_some_and(|base| squash(base) == want)
        })
    };
    if let Some(f) = env_of(section) {
        return Some((f, None));
    }
    ALL.iter().find_map(|s| env_of(s).map(|f| (f, Some(*s))))
}

/// `key` lower-cased without `_` and `-`.
fn squash(key: &str) -> String {
    key.chars()
        .filter(|c| !matches!(c, '_' | '-'))
        .flat_map(char::to_lowercase)
        .collect()
}

/// The field of `fields` nearest to `key` by edit distance, when near enough to be meant:
/// at most one edit per three characters (at least one).
fn nearest(key: &str, fields: &[&'static str]) -> Option<&'static str> {
    let key = key.to_lowercase().replace('-', "_");
    let limit = (key.chars().count() / 3).max(1);
    fields
        .iter()
        .map(|f| (edit_distance(&key, f), *f))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, f)| f)
}

/// The nearest field to `key` in any section but `section`.
fn nearest_elsewhere(section: &Section, key: &str) -> Option<(&'static str, &'static Section)> {
    ALL.iter()
        .filter(|s| !std::ptr::eq(**s, section))
        .find_map(|s| nearest(key, (s.fields)()).map(|f| (f, *s)))
}

/// Optimal string alignment distance: insertions, deletions, substitutions and swaps of
/// adjacent characters (`timoeut` is one edit from `timeout`).
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    rows[0] = (0..=b.len()).collect();
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = d;
        }
    }
    rows[a.len()][b.len()]
}

/// A key as a message may show it: itself, unless it looks like a secret.
fn shown(key: &str) -> String {
    if looks_like_secret(key) {
        "<a key that looks like a secret, not shown>".to_owned()
    } else {
        key.to_owned()
    }
}

/// Vendors' key prefixes (OpenAI, Anthropic, Stripe-style, xAI, Groq, Google, AWS access
/// key ids, GitHub, GitLab, Hugging Face, Replicate, Slack, Perplexity, NVIDIA).
const SECRET_PREFIXES: [&str; 19] = [
    "sk-",
    "sk_",
    "pk_",
    "rk_",
    "xai-",
    "gsk_",
    "AIza",
    "AKIA",
    "ASIA",
    "ghp_",
    "gho_",
    "github_pat_",
    "glpat-",
    "hf_",
    "r8_",
    "xoxb-",
    "xoxp-",
    "pplx-",
    "nvapi-",
];

/// Whether `s` looks like a credential rather than a name: a vendor's key prefix and more,
/// or a long run of letters and digits mixing upper and lower case (an environment
/// variable's name is upper case, a model id lower case).
#[must_use]
pub fn looks_like_secret(s: &str) -> bool {
    let s = s.trim();
    let s = s.strip_prefix("Bearer ").unwrap_or(s);
    if SECRET_PREFIXES
        .iter()
        .any(|p| s.starts_with(p) && s.len() >= p.len() + 8)
    {
        return true;
    }
    s.len() >= 20
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.+/=".contains(c))
        && s.chars().any(|c| c.is_ascii_lowercase())
        && s.chars().any(|c| c.is_ascii_uppercase())
        && s.chars().any(|c| c.is_ascii_digit())
}

/// `text` with every word that looks like a secret replaced by `***` (a word: a run of
/// letters, digits and `-_.+/=`).
#[must_use]
pub fn mask_secrets(text: &str) -> String {
    let word = |c: char| c.is_ascii_alphanumeric() || "-_.+/=".contains(c);
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(word) {
        out.push_str(&rest[..start]);
        let tail = &rest[start..];
        let end = tail.find(|c: char| !word(c)).unwrap_or(tail.len());
        let w = &tail[..end];
        out.push_str(if looks_like_secret(w) { "***" } else { w });
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// The field names a schema type's derived `Deserialize` asks for (its `FIELDS`), read by
/// letting it ask a deserializer that only listens.
fn fields_of<T: DeserializeOwned>() -> &'static [&'static str] {
    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(Listener(&mut fields));
    fields
}

/// A deserializer that notes the fields a struct asks for and refuses everything.
struct Listener<'a>(&'a mut &'static [&'static str]);

impl<'de> de::Deserializer<'de> for Listener<'_> {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("only listening"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Self::Error> {
        *self.0 = fields;
        Err(de::Error::custom("only listening"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(text: &str) -> Vec<String> {
        unknown_fields(&toml::from_str(text).unwrap())
    }

    #[test]
    fn every_section_knows_its_fields() {
        for s in ALL {
            assert!(!(s.fields)().is_empty(), "{}", s.name);
        }
        assert!((PROVIDER.fields)().contains(&"api_key_env"));
        assert!((ROUTE.fields)().contains(&"deadline"));
    }

    #[test]
    fn edit_distance_counts_a_swap_as_one() {
        assert_eq!(edit_distance("timout", "timeout"), 1);
        assert_eq!(edit_distance("timoeut", "timeout"), 1);
        assert_eq!(edit_distance("often", "every"), 5);
        assert_eq!(edit_distance("", "abc"), 3);
    }

    #[test]
    fn a_typo_names_the_nearest_field_of_its_section() {
        let p = problems(
            "[[providers]]\nname = \"a\"\ntimout = \"5s\"\n\
             [[routes]]\nname = \"r\"\nproviders = [\"a\"]\nretry = { max_attempt = 3 }\n\
             policy.timeout = { retyr = true }\n",
        );
        assert_eq!(
            p,
            [
                "providers[0].timout: unknown field `timout`: did you mean `timeout`?",
                "routes[0].policy.timeout.retyr: unknown field `retyr`: did you mean `retry`?",
                "routes[0].retry.max_attempt: unknown field `max_attempt`: did you mean `max_attempts`?",
            ]
        );
    }

    #[test]
    fn a_secret_is_pointed_to_its_env_field_and_never_shown() {
        let secret = "sk-proj-Zx81Qa0vLm3Kp7Rt";
        let p = problems(&format!(
            "[[providers]]\nname = \"a\"\napi_key = \"{secret}\"\n\
             [[routes]]\nname = \"r\"\nproviders = [\"a\"]\napiKey = \"{secret}\"\n"
        ));
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(
            p[0].starts_with("providers[0].api_key: unknown field `api_key`: did you mean `api_key_env`? It takes the NAME of the environment variable"),
            "{p:?}"
        );
        assert!(
            p[1].starts_with("routes[0].apiKey: unknown field `apiKey`: did you mean `api_key_env` (a setting of a provider ([[providers]]))?"),
            "{p:?}"
        );
        assert!(!p.concat().contains("Zx81"), "{p:?}");
    }

    #[test]
    fn a_setting_in_the_wrong_section_is_named_with_its_home() {
        let p = problems(
            "listen = \"127.0.0.1:4000\"\n[retry]\nmax_attempts = 2\n\
             [[providers]]\nname = \"a\"\ndeadline = \"5s\"\n\
             [[routes]]\nname = \"r\"\nproviders = [\"a\"]\nstall_timeout = \"5s\"\n\
             [[provider]]\nname = \"b\"\n",
        );
        assert_eq!(
            p,
            [
                "listen: unknown field `listen`: `listen` is a setting of [server], not of the top level",
                "provider: unknown field `provider`: did you mean `providers`?",
                "providers[0].deadline: unknown field `deadline`: `deadline` is a setting of a route ([[routes]]), not of a provider ([[providers]])",
                "retry: unknown field `retry`: `retry` is a setting of a route ([[routes]]) or a route's policy.<kind>, not of the top level",
                "routes[0].stall_timeout: unknown field `stall_timeout`: `stall_timeout` is a setting of a provider ([[providers]]), not of a route ([[routes]])",
            ]
        );
    }

    #[test]
    fn a_name_known_nowhere_lists_what_its_section_takes() {
        let p = problems("[state]\nbackend = \"memory\"\nflavour = \"x\"\n");
        assert_eq!(
            p,
            ["state.flavour: unknown field `flavour`; expected one of `backend`, `url`, `timeout`, `prefix`, `memory_store_bytes`, `store_url`"]
        );
    }

    #[test]
    fn secrets_are_masked_and_names_are_not() {
        let text = "line 3: api_key_env = sk-ant-api03-AbCdEf0123456789 and Bearer xYz0123456789AbCdEfGhIj";
        assert_eq!(
            mask_secrets(text),
            "line 3: api_key_env = *** and Bearer ***"
        );
        for name in [
            "OPENAI_API_KEY",
            "claude-sonnet-4-5-20250929",
            "gpt-4.1-mini",
            "https://api.openai.com/v1",
            "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        ] {
            assert!(!looks_like_secret(name), "{name}");
            assert_eq!(mask_secrets(name), name);
        }
        assert!(looks_like_secret("AKIAIOSFODNN7EXAMPLE"));
        assert!(looks_like_secret("Bearer sk-live-0123456789"));
    }
}
