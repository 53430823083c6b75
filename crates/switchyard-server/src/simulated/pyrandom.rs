//! CPython's `random.Random`, bit for bit.
//!
//! Owns a Mersenne Twister (MT19937) seeded exactly as CPython seeds it from an integer
//! (`init_by_array` over the seed's 32-bit words, least significant first), `random()`
//! (53 bits from two draws) and `uniform()`, plus Python's `round(x, n)`. The tutorial's
//! printed numbers depend on all of it.

const N: usize = 624;
const M: usize = 397;
const MATRIX_A: u32 = 0x9908_b0df;
const UPPER_MASK: u32 = 0x8000_0000;
const LOWER_MASK: u32 = 0x7fff_ffff;

/// A generator equal to CPython's `random.Random(seed)` for a non-negative integer seed.
#[derive(Clone)]
pub struct PyRandom {
    mt: Box<[u32; N]>,
    mti: usize,
}

impl std::fmt::Debug for PyRandom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PyRandom").field("mti", &self.mti).finish()
    }
}

impl PyRandom {
    /// `random.Random(seed)`.
    #[must_use]
    pub fn new(seed: u64) -> Self {
        // CPython splits abs(seed) into 32-bit words, least significant first; 0 is [0].
        let low = u32::try_from(seed & 0xffff_ffff).unwrap_or(0);
        let high = u32::try_from(seed >> 32).unwrap_or(0);
        let key: Vec<u32> = if high == 0 {
            vec![low]
        } else {
            vec![low, high]
        };
        let mut r = Self {
            mt: Box::new([0; N]),
            mti: N + 1,
        };
        r.init_by_array(&key);
        r
    }

    fn init_genrand(&mut self, s: u32) {
        self.mt[0] = s;
        for i in 1..N {
            let prev = self.mt[i - 1];
            self.mt[i] = 1_812_433_253u32
                .wrapping_mul(prev ^ (prev >> 30))
                .wrapping_add(u32::try_from(i).unwrap_or(0));
        }
        self.mti = N;
    }

    fn init_by_array(&mut self, key: &[u32]) {
        self.init_genrand(19_650_218);
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..N.max(key.len()) {
            let prev = self.mt[i - 1];
            self.mt[i] = (self.mt[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_664_525))
                .wrapping_add(key[j])
                .wrapping_add(u32::try_from(j).unwrap_or(0));
            i += 1;
            j += 1;
            if i >= N {
                self.mt[0] = self.mt[N - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..N - 1 {
            let prev = self.mt[i - 1];
            self.mt[i] = (self.mt[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_566_083_941))
                .wrapping_sub(u32::try_from(i).unwrap_or(0));
            i += 1;
            if i >= N {
                self.mt[0] = self.mt[N - 1];
                i = 1;
            }
        }
        self.mt[0] = 0x8000_0000;
    }

    fn twist(&mut self) {
        for kk in 0..N {
            let y = (self.mt[kk] & UPPER_MASK) | (self.mt[(kk + 1) % N] & LOWER_MASK);
            let mag = if y & 1 == 0 { 0 } else { MATRIX_A };
            self.mt[kk] = self.mt[(kk + M) % N] ^ (y >> 1) ^ mag;
        }
        self.mti = 0;
    }

    /// The next 32-bit output (`genrand_uint32`).
    pub fn next_u32(&mut self) -> u32 {
        if self.mti >= N {
            self.twist();
        }
        let mut y = self.mt[self.mti];
        self.mti += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// `random()`: a float in [0, 1) with 53 random bits.
    pub fn random(&mut self) -> f64 {
        let a = f64::from(self.next_u32() >> 5);
        let b = f64::from(self.next_u32() >> 6);
        (a * 67_108_864.0 + b) * (1.0 / 9_007_199_254_740_992.0)
    }

    /// `uniform(a, b)` = `a + (b - a) * random()`.
    pub fn uniform(&mut self, a: f64, b: f64) -> f64 {
        a + (b - a) * self.random()
    }
}

/// Python's `round(x, ndigits)`: correctly rounded from the exact binary value, ties to
/// even. Rust's decimal formatting rounds the same way, so this formats and parses back.
#[must_use]
pub fn py_round(x: f64, ndigits: usize) -> f64 {
    if !x.is_finite() {
        return x;
    }
    format!("{x:.ndigits$}").parse().unwrap_or(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values printed by CPython 3.11: `random.Random(42).random()` ×3 and friends.
    #[test]
    fn matches_cpython() {
        let mut r = PyRandom::new(42);
        assert_eq!(r.random(), 0.639_426_798_457_883_7);
        assert_eq!(r.random(), 0.025_010_755_222_666_936);
        assert_eq!(r.random(), 0.275_029_318_369_119_26);
        let mut r = PyRandom::new(7);
        assert_eq!(r.random(), 0.323_832_764_833_162_37);
        let mut r = PyRandom::new(0);
        assert_eq!(r.random(), 0.844_421_851_525_048_1);
        let mut r = PyRandom::new(2u64.pow(40) + 3);
        assert_eq!(r.random(), 0.219_787_106_371_167_16);
    }

    #[test]
    fn round_is_pythons() {
        assert_eq!(py_round(0.125, 2), 0.12);
        assert_eq!(py_round(2.675, 2), 2.67);
        assert_eq!(py_round(153.849_999_999, 1), 153.8);
        assert_eq!(py_round(0.000_45, 5), 0.000_45);
    }
}
