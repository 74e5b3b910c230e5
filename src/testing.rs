//! Helpers for the crate's unit tests.

/// A reproducible stream of pseudo-random numbers (xorshift64).
pub fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}
