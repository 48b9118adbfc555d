//! Base62 (`0-9A-Za-z`): random strings for secrets and references, and the fixed-width encoding
//! of 128-bit values behind the public ids.
//!
//! The alphabet is in ASCII order, so two fixed-width encodings compare as strings exactly as
//! their numbers compare: that is what makes time-ordered ids sort by creation time.

use rand::TryRngCore;
use rand::rngs::OsRng;

/// The 62 symbols, in ASCII order.
const ALPHABET: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Characters needed to write any `u128` in base62: 62^21 < 2^128 <= 62^22.
pub(super) const U128_WIDTH: usize = 22;

/// `len` characters drawn uniformly from the base62 alphabet by the operating system's CSPRNG.
///
/// Straight from the OS rather than a user-space generator because these strings are secrets
/// (API keys) or must never collide (references). Each byte's low 6 bits pick a symbol and the
/// two values past 61 are dropped (rejection sampling), so every character carries a full
/// log2(62) ≈ 5.95 bits. The bytes come 64 at a time: each read from the OS is a system call,
/// and drawing a character at a time made a charge's reference 32 of them.
pub(super) fn random(len: usize) -> String {
    use rand::RngCore;
    // The OS generator fails only if the kernel cannot supply entropy at all, which nothing in
    // the gateway could recover from; panicking there is what `rand::rng()` does too.
    let mut rng = OsRng.unwrap_err();
    let mut out = String::with_capacity(len);
    let mut bytes = [0u8; 64];
    while out.len() < len {
        rng.fill_bytes(&mut bytes);
        let symbols = bytes
            .iter()
            .map(|b| usize::from(b & 0x3F))
            .filter(|&i| i < 62);
        for i in symbols.take(len - out.len()) {
            out.push(char::from(ALPHABET[i]));
        }
    }
    out
}

/// `value` written in exactly [`U128_WIDTH`] base62 characters, most significant first, padded
/// with `0`, so string order equals numeric order.
pub(super) fn encode_u128(mut value: u128) -> String {
    let mut digits = [b'0'; U128_WIDTH];
    for slot in digits.iter_mut().rev() {
        *slot = ALPHABET[(value % 62) as usize];
        value /= 62;
    }
    digits.iter().map(|&b| char::from(b)).collect()
}

/// The number a base62 string stands for, or `None` if it holds a non-base62 character or
/// exceeds `u128::MAX`.
pub(super) fn decode_u128(s: &str) -> Option<u128> {
    s.bytes().try_fold(0u128, |acc, b| {
        let digit = match b {
            b'0'..=b'9' => b - b'0',
            b'A'..=b'Z' => b - b'A' + 10,
            b'a'..=b'z' => b - b'a' + 36,
            _ => return None,
        };
        acc.checked_mul(62)?.checked_add(u128::from(digit))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alphabet_is_in_ascii_order() {
        assert!(ALPHABET.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn width_is_the_smallest_that_holds_every_u128() {
        assert_eq!(encode_u128(u128::MAX).len(), U128_WIDTH);
        assert_ne!(
            &encode_u128(u128::MAX)[..1],
            "0",
            "a narrower width would lose bits"
        );
        assert_eq!(encode_u128(u128::MAX), "7n42DGM5Tflk9n8mt7Fhc7");
        assert_eq!(encode_u128(0), "0".repeat(22));
        assert_eq!(encode_u128(61), format!("{}z", "0".repeat(21)));
        assert_eq!(encode_u128(62), format!("{}10", "0".repeat(20)));
    }

    #[test]
    fn decode_inverts_encode_and_rejects_overflow_and_foreign_characters() {
        for v in [
            0,
            1,
            61,
            62,
            3843,
            u128::from(u64::MAX),
            u128::MAX - 1,
            u128::MAX,
        ] {
            assert_eq!(decode_u128(&encode_u128(v)), Some(v));
        }
        assert_eq!(decode_u128("7n42DGM5Tflk9n8mt7Fhc8"), None, "u128::MAX + 1");
        assert_eq!(decode_u128("zzzzzzzzzzzzzzzzzzzzzz"), None);
        assert_eq!(decode_u128("00-0"), None);
    }

    #[test]
    fn string_order_equals_numeric_order() {
        let values = [
            0u128,
            9,
            10,
            35,
            36,
            61,
            62,
            1 << 64,
            (1 << 100) + 7,
            u128::MAX,
        ];
        for a in values {
            for b in values {
                assert_eq!(encode_u128(a).cmp(&encode_u128(b)), a.cmp(&b), "{a} vs {b}");
            }
        }
    }

    #[test]
    fn random_strings_have_the_length_asked_and_only_base62() {
        let s = random(40);
        assert_eq!(s.len(), 40);
        assert!(s.bytes().all(|b| ALPHABET.contains(&b)));
        assert_ne!(random(32), random(32));
        assert_eq!(random(0), "");
    }

    #[test]
    fn random_symbols_are_uniform_over_the_alphabet_across_many_reads() {
        // Longer than one read of 64 bytes, so the refill is exercised too.
        for len in [63, 64, 65, 200] {
            assert_eq!(random(len).len(), len);
        }
        // 62 symbols over 20,000 draws (about 323 each): every one is seen, and none is twice
        // as common as another, as a wrong mask or a dropped symbol would make it.
        let mut seen = [0u32; 62];
        for b in random(20_000).bytes() {
            seen[ALPHABET.iter().position(|&a| a == b).unwrap()] += 1;
        }
        let (min, max) = (seen.iter().min().unwrap(), seen.iter().max().unwrap());
        assert!(*min > 0 && *max < 2 * min, "{seen:?}");
    }
}
