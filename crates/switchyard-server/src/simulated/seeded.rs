//! The simulated answers' own generator: a request's fingerprint seeds a SplitMix64
//! stream, so the same request always gets the same tool call or JSON. It is separate from
//! the tutorial's generator (`pyrandom`), whose draws decide failures and latencies and
//! must stay exactly the tutorial's.

use std::io;

use switchyard::chat::ChatRequest;

/// FNV-1a, 64 bits, over whatever is written into it.
struct Fnv(u64);

impl io::Write for Fnv {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        for b in buf {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A hash of what decides a simulated answer: the conversation, the tools, the tool
/// choice and the output format (not sampling knobs or token caps). Streams the request's
/// JSON through the hash without building it.
#[must_use]
pub fn fingerprint(req: &ChatRequest) -> u64 {
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    // serializing these types cannot fail: plain data, string keys
    let _ = serde_json::to_writer(&mut h, &req.messages);
    let _ = serde_json::to_writer(&mut h, &req.tools);
    let _ = serde_json::to_writer(&mut h, &req.tool_choice);
    let _ = serde_json::to_writer(&mut h, &req.response_format);
    h.0
}

/// The seed of choice `choice` of an answer whose request has fingerprint `fingerprint`:
/// the fingerprint itself for choice 0 (a request of one answer), else the fingerprint
/// mixed with the choice, so each choice draws its own stream.
#[must_use]
pub fn for_choice(fingerprint: u64, choice: u32) -> u64 {
    if choice == 0 {
        return fingerprint;
    }
    Seeded::new(fingerprint ^ u64::from(choice).rotate_left(32)).next_u64()
}

/// SplitMix64: a small, fast, well-mixed stream of 64-bit numbers from one seed.
#[derive(Debug, Clone)]
pub struct Seeded(u64);

impl Seeded {
    /// A stream starting from `seed`.
    #[must_use]
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        let n64 = u64::try_from(n).unwrap_or(u64::MAX);
        if n64 == 0 {
            return 0;
        }
        usize::try_from(self.next_u64() % n64).unwrap_or(0)
    }

    /// A number in `[0, 1)`.
    #[allow(clippy::cast_precision_loss)] // 53 bits, exact in an f64
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// One of `items` (`None` when empty).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        items.get(self.below(items.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_requests_equal_fingerprints_and_others_differ() {
        let a = ChatRequest::from_prompt("hello");
        let b = ChatRequest::from_prompt("hello");
        let c = ChatRequest::from_prompt("hello!");
        assert_eq!(fingerprint(&a), fingerprint(&b));
        assert_ne!(fingerprint(&a), fingerprint(&c));
        let mut capped = a.clone();
        capped.max_tokens = Some(5);
        assert_eq!(
            fingerprint(&a),
            fingerprint(&capped),
            "a token cap is no input"
        );
    }

    #[test]
    fn the_stream_is_reproducible_and_in_range() {
        let (mut x, mut y) = (Seeded::new(9), Seeded::new(9));
        for _ in 0..100 {
            assert_eq!(x.next_u64(), y.next_u64());
            let u = x.unit();
            y.unit();
            assert!((0.0..1.0).contains(&u));
            assert!(x.below(7) < 7);
            y.below(7);
        }
        assert_eq!(x.below(0), 0);
        assert!(x.pick::<u8>(&[]).is_none());
    }
}
