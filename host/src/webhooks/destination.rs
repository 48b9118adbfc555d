//! Which merchant URLs the gateway may call. A merchant's webhook URL must not reach the
//! gateway's own network: loopback, private, link-local and other non-public addresses are
//! refused unless the operator allows them (the demo and the tests do). The check runs when an
//! endpoint is saved and again at every connection, on the addresses DNS returned then, so a name
//! that later resolves to an internal address is still refused.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use crate::domain::Environment;

/// The operator's policy for merchant URLs.
#[derive(Debug, Clone, Copy, Default)]
pub struct DestinationPolicy {
    /// Allow loopback and private addresses (development, tests).
    pub allow_private: bool,
}

/// Whether `ip` is an address on the public internet.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_documentation()
                || v4.is_multicast()
                || a == 0
                // carrier-grade NAT 100.64.0.0/10 and benchmarking 198.18.0.0/15
                || (a == 100 && (64..128).contains(&b))
                || (a == 198 && (b == 18 || b == 19)))
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00 // unique local
                || (first & 0xffc0) == 0xfe80) // link local
        }
    }
}

impl DestinationPolicy {
    /// Checks a merchant URL when it is saved: a URL, http(s), https for live, and a host whose
    /// addresses may be called. The error says what to fix.
    pub async fn check_url(&self, url: &str, environment: Environment) -> Result<url::Url, String> {
        let parsed = url::Url::parse(url).map_err(|e| format!("{url:?} is not a URL: {e}"))?;
        match (parsed.scheme(), environment) {
            ("https", _) | ("http", Environment::Test) => {}
            ("http", Environment::Live) => {
                return Err("live webhook endpoints must use https".into());
            }
            (other, _) => return Err(format!("the URL must be http or https, not {other}")),
        }
        let host = parsed.host_str().ok_or("the URL has no host")?;
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err("the URL must not carry a user name or password".into());
        }
        let port = parsed.port_or_known_default().unwrap_or(443);
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.trim_matches(['[', ']']), port))
            .await
            .map_err(|e| format!("{host} does not resolve: {e}"))?
            .collect();
        if addrs.is_empty() {
            return Err(format!("{host} does not resolve to any address"));
        }
        self.check_addrs(host, &addrs)?;
        Ok(parsed)
    }

    fn check_addrs(&self, host: &str, addrs: &[SocketAddr]) -> Result<(), String> {
        if self.allow_private {
            return Ok(());
        }
        match addrs.iter().find(|a| !is_public(a.ip())) {
            Some(a) => Err(format!(
                "{host} resolves to {}, a loopback or private address; webhook endpoints must be \
                 reachable on the internet",
                a.ip()
            )),
            None => Ok(()),
        }
    }

    /// A DNS resolver for the delivery client that refuses non-public addresses.
    pub fn resolver(self) -> Arc<dyn reqwest::dns::Resolve> {
        Arc::new(self)
    }
}

impl reqwest::dns::Resolve for DestinationPolicy {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = *self;
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            policy
                .check_addrs(&host, &addrs)
                .map_err(|e| -> Box<dyn std::error::Error + Send + Sync> { e.into() })?;
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_addresses_are_not_public() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "::1",
            "fc00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["8.8.8.8", "200.160.2.3", "2001:4860:4860::8888"] {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
    }

    #[tokio::test]
    async fn urls_are_checked_with_reasons() {
        let strict = DestinationPolicy::default();
        let err = strict
            .check_url("http://127.0.0.1:9/hook", Environment::Test)
            .await
            .unwrap_err();
        assert!(err.contains("loopback or private"), "{err}");
        let err = strict
            .check_url("http://example.com/hook", Environment::Live)
            .await
            .unwrap_err();
        assert_eq!(err, "live webhook endpoints must use https");
        let err = strict
            .check_url("ftp://example.com", Environment::Test)
            .await
            .unwrap_err();
        assert_eq!(err, "the URL must be http or https, not ftp");
        let open = DestinationPolicy {
            allow_private: true,
        };
        assert!(
            open.check_url("http://127.0.0.1:9/hook", Environment::Test)
                .await
                .is_ok()
        );
    }
}
