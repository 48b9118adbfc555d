//! Operator settings, in one place: [`AppConfig`] (what the API and the background tasks need),
//! the settings of each part it holds (defined beside the part when only that part reads them,
//! re-exported here), and the parsers that turn flags and `PIXGW_*` variables into typed values.
//! `main.rs` builds them once, at start, from its flags; tests build them from the defaults.

use std::time::Duration;

pub use crate::accounts::SessionConfig;
pub use crate::charges::ChargesConfig;
pub use crate::reconciler::ReconcilerConfig;
pub use crate::runtime::{AdmissionConfig, EndpointOverride, Limits, RuntimeConfig};
pub use crate::webhooks::destination::DestinationPolicy;
pub use crate::webhooks::outbound::DeliveryConfig;

use crate::runtime::Environment;

/// Settings the API and the background tasks need beyond the runtime's ([`RuntimeConfig`]).
#[derive(Debug, Clone)]
pub struct AppConfig {
    /// Public base URL of this gateway, without a trailing slash: webhook URLs start with it.
    pub base_url: String,
    pub delivery: DeliveryConfig,
    /// Requests per API key and second (0: no limit).
    pub rate_limit: u32,
    /// Charges created from public payment links per client address and minute (0: no limit).
    pub checkout_rate_limit: u32,
    /// Failed API-key authentications per client address and minute before its requests get
    /// 429 (0: no limit).
    pub auth_failure_limit: u32,
    pub breaker: BreakerConfig,
    pub reconciler: ReconcilerConfig,
    /// Charge creation (idempotency locks).
    pub charges: ChargesConfig,
    /// Dashboard sessions.
    pub sessions: SessionConfig,
    /// Live charge streams (dashboard screens, the API's event streams) a merchant may hold
    /// open on one gateway at once; more get 429.
    pub live_streams_per_merchant: usize,
    /// Where sale evidence photos are kept (opened at start: it is the one setting that is a
    /// connection, not a value).
    pub evidence: crate::evidence::PhotoStore,
}

/// The router's circuit breaker ([`crate::routing::Breaker`]).
#[derive(Debug, Clone)]
pub struct BreakerConfig {
    /// Consecutive `unavailable` answers that open a credential's circuit.
    pub threshold: u32,
    /// How long an open circuit skips the credential.
    pub cooldown: Duration,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        BreakerConfig {
            threshold: 5,
            cooldown: Duration::from_secs(30),
        }
    }
}

/// Parses `provider.endpoint[.test|.live]=url`, comma-separated, e.g.
/// `efi.api=https://localhost:8443,bb.oauth.test=https://localhost:8444`.
pub fn parse_endpoint_overrides(text: &str) -> Result<Vec<EndpointOverride>, String> {
    text.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(|item| {
            let (key, url) = item.split_once('=').ok_or_else(|| {
                format!(
                    "endpoint override {item:?} needs the form provider.endpoint[.test|.live]=url"
                )
            })?;
            let parts: Vec<&str> = key.split('.').collect();
            let (provider, endpoint, environment) = match parts[..] {
                [p, e] => (p, e, None),
                [p, e, "test"] => (p, e, Some(Environment::Test)),
                [p, e, "live"] => (p, e, Some(Environment::Live)),
                _ => {
                    return Err(format!(
                        "endpoint override key {key:?} must be provider.endpoint[.test|.live]"
                    ));
                }
            };
            let parsed = url::Url::parse(url)
                .map_err(|e| format!("endpoint override {key}: {url:?} is not a URL: {e}"))?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return Err(format!(
                    "endpoint override {key}: {url:?} must be http or https"
                ));
            }
            Ok(EndpointOverride {
                provider: provider.into(),
                endpoint: endpoint.into(),
                environment,
                url: url.into(),
            })
        })
        .collect()
}

/// Parses one duration: `500ms`, `10s`, `5m`, `2h`, `3d`.
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration like 500ms, 10s, 5m, 2h or 3d"))?;
    let ms = match unit {
        "ms" => n,
        "s" => n * 1000,
        "m" => n * 60_000,
        "h" => n * 3_600_000,
        "d" => n * 86_400_000,
        _ => {
            return Err(format!(
                "{text:?} is not a duration like 500ms, 10s, 5m, 2h or 3d"
            ));
        }
    };
    Ok(std::time::Duration::from_millis(ms))
}

/// Parses a lease: a duration of at least 300 ms (it is renewed every third of it).
pub fn parse_lease(text: &str) -> Result<std::time::Duration, String> {
    let lease = parse_duration(text)?;
    if lease < std::time::Duration::from_millis(300) {
        return Err(format!(
            "a lease of {text:?} is too short: give at least 300ms"
        ));
    }
    Ok(lease)
}

/// Parses a comma-separated list of durations.
pub fn parse_durations(text: &str) -> Result<Vec<std::time::Duration>, String> {
    let list: Vec<_> = text
        .split(',')
        .filter(|t| !t.trim().is_empty())
        .map(parse_duration)
        .collect::<Result<_, _>>()?;
    if list.is_empty() {
        return Err("give at least one duration".into());
    }
    Ok(list)
}

#[cfg(test)]
mod tests {
    #[test]
    fn durations_parse_with_their_units() {
        use std::time::Duration;
        assert_eq!(
            parse_durations("500ms, 10s,5m,2h,1d").unwrap(),
            vec![
                Duration::from_millis(500),
                Duration::from_secs(10),
                Duration::from_secs(300),
                Duration::from_secs(7200),
                Duration::from_secs(86400)
            ]
        );
        assert_eq!(
            parse_duration("5 minutes").unwrap_err(),
            "\"5 minutes\" is not a duration like 500ms, 10s, 5m, 2h or 3d"
        );
        assert!(parse_durations("").is_err());
        assert_eq!(parse_lease("2s").unwrap(), Duration::from_secs(2));
        assert_eq!(
            parse_lease("100ms").unwrap_err(),
            "a lease of \"100ms\" is too short: give at least 300ms"
        );
    }

    use super::*;

    #[test]
    fn overrides_parse_and_bad_ones_say_what_to_fix() {
        let parsed =
            parse_endpoint_overrides("efi.api=https://localhost:8443, bb.oauth.live=https://h:1/x")
                .unwrap();
        assert_eq!(
            parsed,
            vec![
                EndpointOverride {
                    provider: "efi".into(),
                    endpoint: "api".into(),
                    environment: None,
                    url: "https://localhost:8443".into()
                },
                EndpointOverride {
                    provider: "bb".into(),
                    endpoint: "oauth".into(),
                    environment: Some(Environment::Live),
                    url: "https://h:1/x".into()
                },
            ]
        );
        assert_eq!(parse_endpoint_overrides("").unwrap(), vec![]);
        assert_eq!(
            parse_endpoint_overrides("efi=https://x").unwrap_err(),
            "endpoint override key \"efi\" must be provider.endpoint[.test|.live]"
        );
        assert!(
            parse_endpoint_overrides("efi.api")
                .unwrap_err()
                .contains("needs the form")
        );
        assert!(
            parse_endpoint_overrides("efi.api=ftp://x")
                .unwrap_err()
                .contains("must be http or https")
        );
    }
}
