//! Bounds on client-controlled text the server keeps or echoes.
//!
//! Owns the limits (how long a route name or `user` may be, how much of a client's value an
//! error message quotes, how long any error message may grow) and the two ways text is cut
//! to them, both UTF-8 safe and both visibly marked with the number of bytes left out:
//! [`clip`] keeps the head (values stored in the request log and the dashboard's ring),
//! [`elide`] keeps the head and the tail (messages whose end says what was expected).
//! Does not decide what is refused: the handlers do (each dialect's decoder, e.g. `crate::http::dialects::chat::wire`).

use std::borrow::Cow;

/// Longest `model` (route name) or `user` a request may carry, in characters.
pub const MAX_NAME_CHARS: usize = 256;
/// How much of a client's value an error message quotes, in bytes.
pub const ECHO_BYTES: usize = 64;
/// Longest error message a response carries, in bytes (a net under every other bound).
pub const MESSAGE_BYTES: usize = 4096;
/// Longest `param` (the JSON path of the field at fault) a response carries, in bytes.
pub const PARAM_BYTES: usize = 256;

/// Is `text` longer than `max` characters? (Counts no further than it must.)
#[must_use]
pub fn longer_than(text: &str, max: usize) -> bool {
    text.len() > max && text.chars().nth(max).is_some()
}

/// `text` cut to at most `max` bytes of its head, followed by `…[+N bytes]` naming what was
/// left out; `text` itself when it fits.
#[must_use]
pub fn clip(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    let head = &text[..boundary_at_or_before(text, max)];
    Cow::Owned(format!("{head}…[+{} bytes]", text.len() - head.len()))
}

/// `text` cut to about `max` bytes: two thirds from its head, a third from its tail, with
/// `…[+N bytes]…` in between; `text` itself when it fits.
#[must_use]
pub fn elide(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    let head_end = boundary_at_or_before(text, max / 3 * 2);
    let tail_start = boundary_at_or_after(text, text.len() - max / 3);
    let (head, tail) = (&text[..head_end], &text[tail_start..]);
    let cut = text.len() - head.len() - tail.len();
    Cow::Owned(format!("{head}…[+{cut} bytes]…{tail}"))
}

/// The largest char boundary `<= at` (`at` within `text`).
fn boundary_at_or_before(text: &str, at: usize) -> usize {
    let mut i = at.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The smallest char boundary `>= at` (`at` within `text`).
fn boundary_at_or_after(text: &str, at: usize) -> usize {
    let mut i = at.min(text.len());
    while !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_kept_as_is() {
        assert!(matches!(clip("smart", 8), Cow::Borrowed("smart")));
        assert!(matches!(elide("smart", 8), Cow::Borrowed("smart")));
    }

    #[test]
    fn long_text_is_cut_with_the_count_of_what_was_left_out() {
        let text = "x".repeat(4 << 20);
        let c = clip(&text, 256);
        assert_eq!(
            c,
            format!("{}…[+{} bytes]", "x".repeat(256), (4 << 20) - 256)
        );
        let message = format!("{text}, expected u32");
        let e = elide(&message, 300);
        let cut = (4 << 20) + ", expected u32".len() - 200 - 100;
        let tail = format!("{}, expected u32", "x".repeat(100 - ", expected u32".len()));
        assert_eq!(e, format!("{}…[+{cut} bytes]…{tail}", "x".repeat(200)));
    }

    #[test]
    fn cuts_never_split_a_character() {
        // 'é' is two bytes and '😀' four: every cut position lands inside one of them somewhere
        let text = "é😀a".repeat(100);
        for max in 0..40 {
            let c = clip(&text, max);
            let e = elide(&text, max);
            assert!(c.len() <= max + "…[+1000 bytes]".len(), "{max}: {c}");
            assert!(text.starts_with(c.split('…').next().unwrap()), "{max}");
            assert!(text.ends_with(e.rsplit('…').next().unwrap()), "{max}");
        }
    }

    #[test]
    fn counts_characters_not_bytes() {
        assert!(
            !longer_than(&"é".repeat(256), 256),
            "512 bytes, 256 characters"
        );
        assert!(longer_than(&"é".repeat(257), 256));
        assert!(!longer_than("", 0));
        assert!(longer_than("a", 0));
    }
}
