//! `switchyard keys`: client keys from the command line.
//!
//! Without `--url`, `keys new NAME [--admin]` prints a fresh token and the `[[keys]]` lines to
//! paste (`crate::access::keys::new_key_text`). With `--url` of a running gateway that has a
//! database, `new`, `list`, `revoke` and `rotate` call its admin API (docs/operations.md,
//! "The admin API") with the admin key read from `SWITCHYARD_ADMIN_KEY` (an environment
//! variable, so it is not in the shell history or `ps`).

use serde_json::{json, Map, Value};

use crate::access::keys;

/// The environment variable holding the admin key the API calls send.
pub const ADMIN_KEY_ENV: &str = "SWITCHYARD_ADMIN_KEY";

/// `switchyard keys ...`.
#[derive(Debug, clap::Subcommand)]
pub enum KeysCommand {
    /// A fresh key. Without --url: print its token (once) and the `[[keys]]` lines to paste
    /// into config. With --url: create it in the gateway's database and print its token.
    New(NewArgs),
    /// List the database's keys (needs --url).
    List {
        /// The gateway, e.g. http://127.0.0.1:4000.
        #[arg(long)]
        url: String,
        /// Only this team's keys.
        #[arg(long)]
        team: Option<String>,
        /// Include revoked keys.
        #[arg(long)]
        revoked: bool,
    },
    /// Revoke a database key by id (needs --url).
    Revoke {
        /// The key's id.
        id: i64,
        /// The gateway.
        #[arg(long)]
        url: String,
    },
    /// Give a database key a new token, printed once (needs --url).
    Rotate {
        /// The key's id.
        id: i64,
        /// The gateway.
        #[arg(long)]
        url: String,
        /// How long the old token keeps working (e.g. "1h"; default: it stops at once).
        #[arg(long)]
        grace: Option<String>,
    },
}

/// `keys new`'s options.
#[derive(Debug, clap::Args)]
pub struct NewArgs {
    /// Who the key is for (appears in logs).
    pub name: String,
    /// An admin key (`admin = true`, no routes): config only, not with --url.
    #[arg(long)]
    pub admin: bool,
    /// A running gateway with a database, e.g. http://127.0.0.1:4000.
    #[arg(long)]
    pub url: Option<String>,
    /// With --url: the key's team (name or id).
    #[arg(long)]
    pub team: Option<String>,
    /// With --url: a route it may use (repeat; default every route).
    #[arg(long = "route")]
    pub routes: Vec<String>,
    /// With --url: its budget in dollars per --budget-period.
    #[arg(long)]
    pub budget_usd: Option<f64>,
    /// With --url: total, day or month.
    #[arg(long)]
    pub budget_period: Option<String>,
    /// With --url: requests per minute.
    #[arg(long)]
    pub rpm: Option<u64>,
    /// With --url: tokens per minute.
    #[arg(long)]
    pub tpm: Option<u64>,
}

/// Run `keys ...`.
///
/// # Errors
/// A refused name, no randomness, or the API's error.
pub fn run(cmd: &KeysCommand) -> Result<(), String> {
    match cmd {
        KeysCommand::New(a) if a.url.is_none() => {
            keys::new_key_text_with(&a.name, a.admin).map(|t| print!("{t}"))
        }
        KeysCommand::New(a) => {
            if a.admin {
                return Err("--admin keys live in the config ([[keys]]): drop --url".to_owned());
            }
            let mut body = Map::new();
            body.insert("name".into(), json!(a.name));
            let team = a
                .team
                .as_ref()
                .map(|t| t.parse::<i64>().map_or(json!(t), |id| json!(id)));
            let fields = [
                ("team", team),
                ("routes", (!a.routes.is_empty()).then(|| json!(a.routes))),
                ("budget_usd", a.budget_usd.map(|b| json!(b))),
                ("budget_period", a.budget_period.as_ref().map(|p| json!(p))),
                ("rpm", a.rpm.map(|n| json!(n))),
                ("tpm", a.tpm.map(|n| json!(n))),
            ];
            for (k, v) in fields {
                if let Some(v) = v {
                    body.insert(k.into(), v);
                }
            }
            let url = a.url.as_deref().unwrap_or_default();
            let v = call(url, "POST", "/admin/keys", Some(Value::Object(body)))?;
            print_token(&v);
            Ok(())
        }
        KeysCommand::List { url, team, revoked } => list(url, team.as_deref(), *revoked),
        KeysCommand::Revoke { id, url } => {
            let v = call(url, "DELETE", &format!("/admin/keys/{id}"), None)?;
            println!("revoked key {id} ({}) at {}", v["name"], v["revoked_at"]);
            Ok(())
        }
        KeysCommand::Rotate { id, url, grace } => {
            let body = grace.as_ref().map_or(json!({}), |g| json!({ "grace": g }));
            let v = call(url, "POST", &format!("/admin/keys/{id}/rotate"), Some(body))?;
            print_token(&v);
            if let Some(until) = v["previous_valid_until"].as_str() {
                println!("the old token works until {until}");
            }
            Ok(())
        }
    }
}

fn print_token(v: &Value) {
    println!(
        "key {} ({}); token (give it to the client; it is not shown again):\n  {}",
        v["id"],
        v["name"].as_str().unwrap_or_default(),
        v["key"].as_str().unwrap_or_default()
    );
}

fn list(url: &str, team: Option<&str>, revoked: bool) -> Result<(), String> {
    let mut after = 0;
    println!(
        "{:>6}  {:<24} {:<16} {:<10} routes",
        "id", "name", "team", "state"
    );
    loop {
        let mut path = format!("/admin/keys?limit=500&after={after}&revoked={revoked}");
        if let Some(t) = team {
            path.push_str("&team=");
            path.extend(form_urlencoded::byte_serialize(t.as_bytes()));
        }
        let page = call(url, "GET", &path, None)?;
        for k in page["data"].as_array().into_iter().flatten() {
            let state = if k["revoked_at"].is_string() {
                "revoked"
            } else {
                "live"
            };
            println!(
                "{:>6}  {:<24} {:<16} {:<10} {}",
                k["id"],
                k["name"].as_str().unwrap_or_default(),
                k["team"].as_str().unwrap_or("-"),
                state,
                k["routes"]
            );
        }
        match page["next_after"].as_i64() {
            Some(next) if page["has_more"] == true => after = next,
            _ => return Ok(()),
        }
    }
}

/// One admin API call; its JSON answer, or the API's error message.
fn call(url: &str, method: &str, path: &str, body: Option<Value>) -> Result<Value, String> {
    let token = std::env::var(ADMIN_KEY_ENV)
        .map_err(|_| format!("set {ADMIN_KEY_ENV} to an admin key's token"))?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(async {
        let client = reqwest::Client::new();
        let method = reqwest::Method::from_bytes(method.as_bytes()).map_err(|e| e.to_string())?;
        let target = format!("{}{path}", url.trim_end_matches('/'));
        let mut req = client.request(method, &target).bearer_auth(token.trim());
        if let Some(b) = body {
            req = req
                .header("content-type", "application/json")
                .body(b.to_string());
        }
        let resp = req.send().await.map_err(|e| format!("{target}: {e}"))?;
        let status = resp.status();
        let text = resp.text().await.map_err(|e| e.to_string())?;
        let v: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        if status.is_success() {
            Ok(v)
        } else {
            let msg = v["error"]["message"]
                .as_str()
                .map_or_else(|| v.to_string(), str::to_owned);
            let param = v["error"]["param"]
                .as_str()
                .map(|p| format!(" ({p})"))
                .unwrap_or_default();
            Err(format!("{status}{param}: {msg}"))
        }
    })
}
