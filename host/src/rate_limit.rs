//! Token buckets per key, in this process: requests per API key and second ([`RateLimiter::new`]:
//! a key over its rate gets 429 with `Retry-After`; bursts up to twice the rate pass), and
//! actions per key and minute ([`RateLimiter::per_minute`]: charges created from public payment
//! links, failed API-key authentications, per client address). Buckets refill continuously.
//! [`RateLimiter::check`] takes a token; [`RateLimiter::exhausted`] only looks, for limits that
//! count failures: a request is refused while its address has no token left, and a token is
//! taken only when the request fails.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Keys tracked before idle ones are forgotten.
const MAX_KEYS: usize = 100_000;

pub struct RateLimiter {
    /// Tokens added per second.
    per_second: f64,
    /// Tokens a bucket holds at most.
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

    /// `per_minute` per key and minute, all of them usable at once; 0 turns limiting off.
    pub fn per_minute(per_minute: u32) -> RateLimiter {
        RateLimiter {
            per_second: f64::from(per_minute) / 60.0,
            burst: f64::from(per_minute),
            buckets: Mutex::default(),
        }
    }

    /// Whether `key` has no token left, and if so how long until one is there; takes nothing.
    pub fn exhausted(&self, key: &str) -> Option<Duration> {
        if self.per_second == 0.0 {
            return None;
        }
        let buckets = self.buckets.lock();
        let (tokens, at) = buckets.get(key)?;
        let tokens = (tokens + at.elapsed().as_secs_f64() * self.per_second).min(self.burst);
        (tokens < 1.0).then(|| Duration::from_secs_f64((1.0 - tokens) / self.per_second))
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

    #[test]
    fn a_minute_limit_passes_its_count_then_waits_for_the_next_token() {
        let limiter = RateLimiter::per_minute(3);
        for _ in 0..3 {
            assert!(limiter.check("10.0.0.1").is_ok());
        }
        let wait = limiter.check("10.0.0.1").unwrap_err();
        // One token every 20 s; a few microseconds have refilled since.
        assert!(
            wait <= Duration::from_secs(20) && wait > Duration::from_secs(19),
            "{wait:?}"
        );
        assert!(limiter.check("10.0.0.2").is_ok());
        assert!(RateLimiter::per_minute(0).check("10.0.0.1").is_ok());
    }

    #[test]
    fn looking_takes_no_token() {
        let limiter = RateLimiter::per_minute(2);
        assert_eq!(limiter.exhausted("10.0.0.1"), None, "never seen");
        for _ in 0..5 {
            assert_eq!(limiter.exhausted("10.0.0.1"), None);
        }
        limiter.check("10.0.0.1").unwrap();
        assert_eq!(limiter.exhausted("10.0.0.1"), None, "one token left");
        limiter.check("10.0.0.1").unwrap();
        let wait = limiter.exhausted("10.0.0.1").expect("no token left");
        assert!(
            wait <= Duration::from_secs(30) && wait > Duration::from_secs(29),
            "{wait:?}"
        );
        assert_eq!(limiter.exhausted("10.0.0.2"), None);
        assert_eq!(RateLimiter::per_minute(0).exhausted("10.0.0.1"), None);
    }
}
