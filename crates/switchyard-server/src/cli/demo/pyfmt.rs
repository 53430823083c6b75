//! Python's printing, so the demo's lines read exactly as the tutorial's.
//!
//! Owns `repr` for floats ([`py_repr`]) and strings ([`py_repr_str`]), the tutorial's
//! `LLMResponse(...)` and log-row dict reprs, and a pandas-style rendering of the summary
//! table ([`summary_table`]). Formatting only: no numbers are computed here.

use std::fmt::Write as _;

use super::replay::{LogRow, Response};
use super::summary::SummaryRow;

/// Python's `repr(float)`: the shortest digits that round-trip, in positional notation
/// when the decimal exponent is in `[-4, 16)`, else scientific (`1e-05`, `1.5e+16`);
/// integral values keep a `.0`.
#[must_use]
pub fn py_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".to_owned();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    // Rust's `{:e}` gives the same shortest round-trip digits: "-1.538e2".
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if (-4..16).contains(&exp) {
        format!("{sign}{}", positional(&digits, exp))
    } else {
        let frac = &digits[1..];
        let dot = if frac.is_empty() { "" } else { "." };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{}{dot}{frac}e{esign}{:02}", &digits[..1], exp.abs())
    }
}

/// `d.ddd × 10^exp` written out with a decimal point (at least one digit after it).
fn positional(digits: &str, exp: i32) -> String {
    let point = usize::try_from(exp + 1).unwrap_or(0);
    if exp < 0 {
        let zeros = "0".repeat(usize::try_from(-exp - 1).unwrap_or(0));
        format!("0.{zeros}{digits}")
    } else if digits.len() <= point {
        format!("{digits}{}.0", "0".repeat(point - digits.len()))
    } else {
        format!("{}.{}", &digits[..point], &digits[point..])
    }
}

/// Python's `repr(str)`: single quotes unless the text holds `'` and no `"`; backslash,
/// the quote, `\t` `\n` `\r` and other control characters escaped. (Python also escapes
/// non-printable non-ASCII characters such as format characters; those pass through here.)
#[must_use]
pub fn py_repr_str(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// The tutorial's `print(response)`: the dataclass repr of `LLMResponse`.
#[must_use]
pub fn response_repr(r: &Response) -> String {
    format!(
        "LLMResponse(text={}, provider={}, latency_ms={}, cost_usd={})",
        py_repr_str(&r.text),
        py_repr_str(&r.provider),
        py_repr(r.latency_ms),
        py_repr(r.cost_usd)
    )
}

/// The tutorial's `print(row)` of one `gateway.log` dict.
#[must_use]
pub fn log_row_repr(row: &LogRow) -> String {
    format!(
        "{{'request': {}, 'provider': {}, 'outcome': {}}}",
        row.request,
        py_repr_str(&row.provider),
        py_repr_str(&row.outcome)
    )
}

/// The summary as pandas prints the tutorial's DataFrame: index `provider` on its own
/// header line, columns right-aligned two spaces apart, each float column with a common
/// number of decimals (pandas' 6-digit format, trailing zeros trimmed together).
#[must_use]
pub fn summary_table(rows: &[SummaryRow]) -> String {
    const HEADERS: [&str; 3] = ["requests_served", "avg_latency_ms", "total_cost_usd"];
    if rows.is_empty() {
        return format!(
            "Empty DataFrame\nColumns: [{}]\nIndex: []\n",
            HEADERS.join(", ")
        );
    }
    let index: Vec<&str> = rows.iter().map(|r| r.provider.as_str()).collect();
    let columns = [
        rows.iter().map(|r| r.requests_served.to_string()).collect(),
        float_column(&rows.iter().map(|r| r.avg_latency_ms).collect::<Vec<_>>()),
        float_column(&rows.iter().map(|r| r.total_cost_usd).collect::<Vec<_>>()),
    ];
    let index_width = index.iter().map(|s| s.len()).chain([8]).max().unwrap_or(8);
    let widths: Vec<usize> = HEADERS
        .iter()
        .zip(&columns)
        .map(|(h, col): (&&str, &Vec<String>)| {
            col.iter()
                .map(String::len)
                .chain([h.len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let total = index_width + widths.iter().map(|w| w + 2).sum::<usize>();
    let mut out = format!("{:index_width$}", "");
    for (h, w) in HEADERS.iter().zip(&widths) {
        let _ = write!(out, "  {h:>w$}");
    }
    let _ = write!(out, "\n{:total$}\n", "provider");
    for (i, name) in index.iter().enumerate() {
        let _ = write!(out, "{name:index_width$}");
        for (col, w) in columns.iter().zip(&widths) {
            let _ = write!(out, "  {:>w$}", col[i]);
        }
        out.push('\n');
    }
    out
}

/// pandas' float column: `{: .6f}`, trailing zeros trimmed while every value ends in one
/// (a bare `.` then gets its `0` back), or `{: .6e}` when a value is tiny, or large and too long.
fn float_column(values: &[f64]) -> Vec<String> {
    let mut fixed: Vec<String> = values.iter().map(|v| format!("{v:.6}")).collect();
    while fixed.iter().all(|s| s.ends_with('0')) {
        for s in &mut fixed {
            s.pop();
        }
    }
    for s in &mut fixed {
        if s.ends_with('.') {
            s.push('0');
        }
    }
    // pandas measures with its leading sign space
    let too_long = fixed
        .iter()
        .map(|s| s.trim_start_matches('-').len() + 1)
        .max()
        > Some(12);
    let large = values.iter().any(|v| v.abs() > 1e6);
    let small = values.iter().any(|v| v.abs() > 0.0 && v.abs() < 1e-6);
    if small || (too_long && large) {
        return values.iter().map(|v| py_exp(*v)).collect();
    }
    fixed
}

/// Python's `format(v, ".6e")`: `1.000000e-07`.
fn py_exp(v: f64) -> String {
    let s = format!("{v:.6e}");
    let (mantissa, exp) = s.split_once('e').unwrap_or((s.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let esign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{esign}{:02}", exp.abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_as_python_repr() {
        let cases = [
            (153.8, "153.8"),
            (163.0, "163.0"),
            (0.0004, "0.0004"),
            (0.0001, "0.0001"),
            (1e-5, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (1e16, "1e+16"),
            (1e100, "1e+100"),
            (1.234_567_890_123_456_8e17, "1.2345678901234568e+17"),
            (9_999_999_999_999_998.0, "9999999999999998.0"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (-2.5, "-2.5"),
            (f64::INFINITY, "inf"),
        ];
        for (x, want) in cases {
            assert_eq!(py_repr(x), want, "{x:e}");
        }
    }

    #[test]
    fn strings_print_as_python_repr() {
        assert_eq!(py_repr_str("[aurora] x..."), "'[aurora] x...'");
        assert_eq!(py_repr_str("it's"), "\"it's\"");
        assert_eq!(py_repr_str("a\"b"), "'a\"b'");
        assert_eq!(py_repr_str("both ' \""), "'both \\' \"'");
        assert_eq!(py_repr_str("tab\t\u{1}\u{7f}é"), "'tab\\t\\x01\\x7fé'");
    }

    #[test]
    fn table_matches_pandas() {
        let row = |p: &str, n, l, c| SummaryRow {
            provider: p.to_owned(),
            requests_served: n,
            avg_latency_ms: l,
            total_cost_usd: c,
        };
        let got = summary_table(&[
            row("aurora", 3, 12.5, 0.03),
            row("x", 4, 1_234_567.125, 0.011),
        ]);
        let want = "          requests_served  avg_latency_ms  total_cost_usd\n\
                    provider                                                 \n\
                    aurora                  3          12.500           0.030\n\
                    x                       4     1234567.125           0.011\n";
        assert_eq!(got, want);
        let got = summary_table(&[row("p", 3, 12_345_678.5, 1e-7)]);
        assert!(
            got.ends_with("p                       3      12345678.5    1.000000e-07\n"),
            "{got}"
        );
        // trailing zeros go together; a bare `.` gets its 0 back (pandas: 12.0 and 3.5)
        let got = summary_table(&[row("a", 1, 12.0, 0.0), row("b", 2, 3.5, 0.0)]);
        assert!(
            got.contains("a                       1            12.0             0.0\n"),
            "{got}"
        );
        assert!(
            got.contains("b                       2             3.5             0.0\n"),
            "{got}"
        );
        assert!(summary_table(&[]).starts_with("Empty DataFrame\n"));
    }
}
