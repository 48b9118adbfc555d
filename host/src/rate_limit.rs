//! Requests per API key: a token bucket per key, in this process. A key over its rate gets
//! 429 with `Retry-After`; the bucket refills continuously, so bursts up to twice the rate pass.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Keys tracked before idle ones are forgotten.
const MAX_KEYS: usize = 100_000;

pub struct RateLimiter {
    per_second: f64,
    burst: f64,
    buckets: Mutex<HashMap<String, (f64, Instant)>>,
}

impl RateLimiter {
    /// `per_second` requests per key and second; 0 turns limiting off.
    pub fn new(per_second: u32) -> RateLimiter {
        RateLimiter {
            per_second: f64::from(per_second),
            burst: f64::from(per_second) * 2.0,
            buckets: Mutex::default(),
        }
    }

    /// Takes one token for `key`, or says how long until one is there.
    pub fn check(&self, key: &str) -> Result<(), Duration> {
        if self.per_second == 0.0 {
            return Ok(());
        }
        let now = Instant::now();
        let mut buckets = self.buckets.lock();
        if buckets.len() >= MAX_KEYS && !buckets.contains_key(key) {
            let burst = self.burst;
            let per_second = self.per_second;
            buckets.retain(|_, (tokens, at)| {
                *tokens + at.elapsed().as_secs_f64() * per_second < burst
            });
        }
        let (tokens, at) = buckets.entry(key.to_owned()).or_insert((self.burst, now));
        *tokens =
            (*tokens + now.duration_since(*at).as_secs_f64() * self.per_second).min(self.burst);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - *tokens) / self.per_second))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_of_twice_the_rate_passes_then_the_key_waits() {
        let limiter = RateLimiter::new(5);
        for _ in 0..10 {
            assert!(limiter.check("a").is_ok());
        }
        let wait = limiter.check("a").unwrap_err();
        assert!(
            wait <= Duration::from_millis(200) && wait > Duration::ZERO,
            "{wait:?}"
        );
        assert!(limiter.check("b").is_ok(), "keys are limited separately");
        assert!(RateLimiter::new(0).check("a").is_ok());
    }
}
