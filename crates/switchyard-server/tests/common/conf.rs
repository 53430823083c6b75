//! The config the faultline suites (conformance, fleet) run: providers `primary` and
//! `fallback` (models of the same names on one faultline) behind the route `chat`.

use faultline::Handle;

/// The route every faultline test uses.
pub const ROUTE: &str = "chat";

/// `[[providers]] primary` and `fallback`, `[[routes]] chat = [primary, fallback]` with a
/// 20 s deadline, each with extra lines; optional `[server]` lines and whole sections.
///
/// A line whose key is already there replaces it (TOML forbids a key twice), so a test
/// can override a default such as the deadline.
#[derive(Debug, Clone)]
pub struct Conf {
    base_url: String,
    /// The primary's own upstream, when not the shared faultline.
    primary_base_url: Option<String>,
    server: Vec<String>,
    primary: Vec<String>,
    fallback: Vec<String>,
    route: Vec<String>,
    sections: Vec<String>,
}

/// The key of a `key = value` line.
fn key(line: &str) -> Option<&str> {
    line.split_once('=').map(|(k, _)| k.trim())
}

/// Add `line` to `lines`, replacing a line with the same key.
fn set(lines: &mut Vec<String>, line: &str) {
    if let Some(k) = key(line) {
        lines.retain(|l| key(l) != Some(k));
    }
    lines.push(line.to_owned());
}

impl Conf {
    /// The two providers on `upstream` and the route, with a 20 s deadline.
    pub fn new(upstream: &Handle) -> Self {
        Self {
            base_url: upstream.base_url(),
            primary_base_url: None,
            server: Vec::new(),
            primary: Vec::new(),
            fallback: Vec::new(),
            route: vec!["deadline = \"20s\"".to_owned()],
            sections: Vec::new(),
        }
    }

    /// A line for the primary's `[[providers]]` entry.
    pub fn primary(mut self, line: &str) -> Self {
        set(&mut self.primary, line);
        self
    }

    /// Point the primary at another upstream (`http://host:port/v1`), e.g. a mock.
    pub fn primary_at(mut self, base_url: &str) -> Self {
        self.primary_base_url = Some(base_url.to_owned());
        self
    }

    /// A line for the fallback's `[[providers]]` entry.
    pub fn fallback(mut self, line: &str) -> Self {
        set(&mut self.fallback, line);
        self
    }

    /// The same line for both providers.
    pub fn both(self, line: &str) -> Self {
        self.primary(line).fallback(line)
    }

    /// A line for the route.
    pub fn route(mut self, line: &str) -> Self {
        set(&mut self.route, line);
        self
    }

    /// A line for `[server]`.
    pub fn server(mut self, line: &str) -> Self {
        set(&mut self.server, line);
        self
    }

    /// `[server] request_log = "requests.jsonl"` (relative to the server's directory).
    pub fn request_log(self) -> Self {
        self.server("request_log = \"requests.jsonl\"")
    }

    /// A top-level section (a `[[keys]]` entry, `[state]`), verbatim.
    pub fn section(mut self, text: &str) -> Self {
        self.sections.push(text.to_owned());
        self
    }

    /// The TOML.
    pub fn toml(&self) -> String {
        let provider = |name: &str, lines: &[String]| {
            let base_url = match (name, &self.primary_base_url) {
                ("primary", Some(url)) => url,
                _ => &self.base_url,
            };
            format!(
                "[[providers]]\nname = \"{name}\"\nkind = \"openai\"\nmodel = \"{name}\"\nbase_url = \"{base_url}\"\n{}\n\n",
                lines.join("\n")
            )
        };
        let server = if self.server.is_empty() {
            String::new()
        } else {
            format!("[server]\n{}\n\n", self.server.join("\n"))
        };
        format!(
            "{server}{}{}[[routes]]\nname = \"{ROUTE}\"\nproviders = [\"primary\", \"fallback\"]\n{}\n\n{}",
            provider("primary", &self.primary),
            provider("fallback", &self.fallback),
            self.route.join("\n"),
            self.sections.join("\n"),
        )
    }
}

/// A fresh faultline on a free port.
pub async fn upstream() -> Handle {
    faultline::Server::new().start().await.unwrap()
}
