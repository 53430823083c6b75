//! The one answer faultline gives: [`CANONICAL_ANSWER`], its word tokens, and the fixed
//! usage numbers.
//!
//! Owns what a healthy model "says" and how a prefill continues it. Does not know about
//! HTTP or faults: `wire` frames these tokens, `respond` decides how many to send.

use std::sync::LazyLock;

/// What every healthy completion says: 60 words, streamed as 60 tokens.
pub static CANONICAL_ANSWER: &str = "A gateway earns trust when things go wrong. It retries what is worth retrying, waits exactly as long as the vendor asks, and moves on when the deadline draws near. After repeated failures it opens a circuit, sends one probe when the cooldown passes, and closes again on success. Every answer says who served it, what it cost, and why.";

/// `usage.prompt_tokens` of every answer, whatever the prompt.
pub const PROMPT_TOKENS: u64 = 24;

/// The answer's tokens: each word with the space before it (the first has none), so the
/// tokens concatenate to exactly [`CANONICAL_ANSWER`].
#[must_use]
pub fn tokens() -> &'static [&'static str] {
    static TOKENS: LazyLock<Vec<&'static str>> = LazyLock::new(|| split(CANONICAL_ANSWER));
    &TOKENS
}

/// How many tokens the canonical answer has (60).
#[must_use]
pub fn token_count() -> usize {
    tokens().len()
}

/// The text of the first `n` tokens (all of them when `n` is larger).
#[must_use]
pub fn prefix(n: usize) -> &'static str {
    let len: usize = tokens().iter().take(n).map(|t| t.len()).sum();
    &CANONICAL_ANSWER[..len]
}

/// Split text into word tokens, each carrying its leading whitespace.
fn split(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut in_word = false;
    for (i, c) in text.char_indices() {
        if c.is_whitespace() {
            if in_word {
                out.push(&text[start..i]);
                start = i;
                in_word = false;
            }
        } else {
            in_word = true;
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// The pieces of text a response sends after an optional assistant `prefill`.
///
/// Without a prefill (or with one that is not a prefix of the canonical answer, which a
/// real model would also answer from scratch) that is every token. With a prefix, the rest
/// of the answer: a token split by the prefill's end is sent as its remaining part first.
#[must_use]
pub fn continuation(prefill: Option<&str>) -> Vec<&'static str> {
    let Some(prefill) = prefill.filter(|p| CANONICAL_ANSWER.starts_with(*p)) else {
        return tokens().to_vec();
    };
    let mut out = Vec::new();
    let mut at = 0;
    for token in tokens() {
        let end = at + token.len();
        if end > prefill.len() {
            let skip = prefill.len().saturating_sub(at);
            out.push(&token[skip..]);
        }
        at = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sixty_tokens_that_rebuild_the_answer() {
        assert_eq!(token_count(), 60);
        assert_eq!(tokens().concat(), CANONICAL_ANSWER);
        assert_eq!(tokens()[0], "A");
        assert_eq!(tokens()[1], " gateway");
        assert_eq!(prefix(2), "A gateway");
        assert_eq!(prefix(0), "");
        assert_eq!(prefix(1000), CANONICAL_ANSWER);
    }

    #[test]
    fn a_prefill_is_continued_to_exactly_the_answer() {
        for n in [0, 1, 20, 40, 59, 60] {
            let rest = continuation(Some(prefix(n))).concat();
            assert_eq!(format!("{}{rest}", prefix(n)), CANONICAL_ANSWER, "n={n}");
        }
        // mid-token: the split token's remainder comes first
        let rest = continuation(Some("A gate"));
        assert_eq!(rest[0], "way");
        assert_eq!(format!("A gate{}", rest.concat()), CANONICAL_ANSWER);
        // not a prefix: answered from scratch
        assert_eq!(
            continuation(Some("Something else")).concat(),
            CANONICAL_ANSWER
        );
        assert_eq!(continuation(None).len(), 60);
    }
}
