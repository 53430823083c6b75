//! The dashboard's files: one HTML page, its stylesheet and its scripts, compiled into the
//! binary with `include_str!` (no build step, no CDN, no web fonts: it works offline).
//!
//! Owns the files and their content types. Serving them, and the admin JSON the script
//! polls, is `crate::http::dashboard`'s job.

/// One embedded file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Asset {
    /// The file's text.
    pub body: &'static str,
    /// Its `Content-Type`.
    pub content_type: &'static str,
}

/// The page served at `GET /`.
pub const INDEX: Asset = Asset {
    body: include_str!("index.html"),
    content_type: "text/html; charset=utf-8",
};

/// The files served under `/dashboard/`, by name.
const FILES: [(&str, Asset); 4] = [
    (
        "dashboard.css",
        Asset {
            body: include_str!("dashboard.css"),
            content_type: "text/css; charset=utf-8",
        },
    ),
    (
        "dashboard.js",
        Asset {
            body: include_str!("dashboard.js"),
            content_type: "text/javascript; charset=utf-8",
        },
    ),
    (
        "database.js",
        Asset {
            body: include_str!("database.js"),
            content_type: "text/javascript; charset=utf-8",
        },
    ),
    (
        "icon.svg",
        Asset {
            body: include_str!("icon.svg"),
            content_type: "image/svg+xml",
        },
    ),
];

/// The file called `name` under `/dashboard/`, if there is one.
#[must_use]
pub fn asset(name: &str) -> Option<Asset> {
    FILES.iter().find(|(n, _)| *n == name).map(|(_, a)| *a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_is_found_and_nothing_else() {
        assert!(
            asset("dashboard.js").is_some_and(|a| a.content_type.starts_with("text/javascript"))
        );
        assert!(asset("database.js").is_some_and(|a| a.content_type.starts_with("text/javascript")));
        assert!(asset("dashboard.css").is_some_and(|a| a.content_type.starts_with("text/css")));
        assert!(asset("icon.svg").is_some());
        assert!(asset("../main.rs").is_none() && asset("").is_none());
    }

    #[test]
    fn nothing_is_fetched_from_elsewhere() {
        for (name, a) in FILES.iter().chain([("index.html", INDEX)].iter()) {
            for needle in ["http://", "https://", "//cdn", "@import", "fonts.g"] {
                let hits: Vec<&str> = a
                    .body
                    .lines()
                    .filter(|l| l.contains(needle) && !l.contains("www.w3.org/2000/svg"))
                    .collect();
                assert!(hits.is_empty(), "{name} mentions {needle}: {hits:?}");
            }
        }
    }
}
