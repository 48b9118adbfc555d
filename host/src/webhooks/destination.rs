//! Which merchant URLs the gateway may call. A merchant's webhook URL must not reach the
//! gateway's own network: loopback, private, link-local, NAT64, IPv4-in-IPv6 and every other
//! special-purpose address (the IANA registries) is refused unless the operator allows private
//! addresses (the demo and the tests do). The check runs when an endpoint is saved and again at
//! every connection, on the addresses DNS returned then, so a name that later resolves to an
//! internal address is still refused. The delivery client ignores proxy variables, so the
//! address checked is the address connected to.
//!
//! A refusal names the host, never the address it resolved to: a merchant must not learn the
//! gateway's internal DNS by probing names.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use crate::domain::Environment;

/// The operator's policy for merchant URLs.
#[derive(Debug, Clone, Copy, Default)]
pub struct DestinationPolicy {
    /// Allow loopback and private addresses (development, tests).
    pub allow_private: bool,
}

/// IPv4 blocks of the IANA special-purpose registry that are not reachable on the internet
/// (or are not meant to be called: AS112, AMT, the deprecated 6to4 relay), as (network, prefix).
const V4_SPECIAL: [([u8; 4], u8); 19] = [
    ([0, 0, 0, 0], 8),       // "this network"
    ([10, 0, 0, 0], 8),      // private
    ([100, 64, 0, 0], 10),   // carrier-grade NAT
    ([127, 0, 0, 0], 8),     // loopback
    ([169, 254, 0, 0], 16),  // link local (cloud metadata lives here)
    ([172, 16, 0, 0], 12),   // private
    ([192, 0, 0, 0], 24),    // IETF protocol assignments
    ([192, 0, 2, 0], 24),    // documentation
    ([192, 31, 196, 0], 24), // AS112
    ([192, 52, 193, 0], 24), // AMT
    ([192, 88, 99, 0], 24),  // 6to4 relay anycast (deprecated)
    ([192, 168, 0, 0], 16),  // private
    ([192, 175, 48, 0], 24), // AS112 direct delegation
    ([198, 18, 0, 0], 15),   // benchmarking
    ([198, 51, 100, 0], 24), // documentation
    ([203, 0, 113, 0], 24),  // documentation
    ([224, 0, 0, 0], 4),     // multicast
    ([240, 0, 0, 0], 4),     // reserved (and the broadcast address)
    ([255, 255, 255, 255], 32),
];

/// IPv6 blocks inside global unicast `2000::/3` that are not public destinations.
const V6_SPECIAL: [([u16; 3], u8); 5] = [
    ([0x2001, 0x0000, 0], 23), // IETF protocol assignments (Teredo, ORCHID, benchmarking…)
    ([0x2001, 0x0db8, 0], 32), // documentation
    ([0x2002, 0x0000, 0], 16), // 6to4: an IPv4 address in disguise
    ([0x3fff, 0x0000, 0], 20), // documentation (RFC 9637)
    ([0x2620, 0x004f, 0x8000], 48), // AS112-v6 direct delegation
];

fn v4_in(ip: Ipv4Addr, (net, prefix): ([u8; 4], u8)) -> bool {
    let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
    u32::from(ip) & mask == u32::from(Ipv4Addr::from(net)) & mask
}

fn v6_in(ip: Ipv6Addr, (net, prefix): ([u16; 3], u8)) -> bool {
    let net = Ipv6Addr::new(net[0], net[1], net[2], 0, 0, 0, 0, 0);
    let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
    u128::from(ip) & mask == u128::from(net) & mask
}

/// Whether `ip` is an address on the public internet. IPv6 must be global unicast (`2000::/3`)
/// outside the special blocks: that excludes loopback, ULA, link local, multicast, NAT64
/// (`64:ff9b::/96`, `64:ff9b:1::/48`), discard-only, and IPv4-mapped and IPv4-compatible
/// addresses, which would smuggle an IPv4 address past the IPv4 rules.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => !V4_SPECIAL.iter().any(|block| v4_in(v4, *block)),
        IpAddr::V6(v6) => {
            let global_unicast = v6.segments()[0] & 0xe000 == 0x2000;
            global_unicast && !V6_SPECIAL.iter().any(|block| v6_in(v6, *block))
        }
    }
}

/// Why a merchant URL may not be called, in words that say what to fix. Never holds an
/// address the host resolved to.
fn refused(host: &str) -> String {
    format!(
        "{host} resolves to a loopback, private or reserved address; the gateway only calls \
         addresses reachable on the internet"
    )
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
            .map_err(|_| format!("{host} does not resolve to an address"))?
            .collect();
        if addrs.is_empty() {
            return Err(format!("{host} does not resolve to an address"));
        }
        self.check_addrs(host, &addrs)?;
        Ok(parsed)
    }

    /// Checks the URL of a delivery right before it is sent. A name is checked again by the
    /// client's resolver ([`DestinationPolicy::resolver`]); an address written in the URL never
    /// reaches a resolver, so it is checked here.
    pub fn check_literal(&self, url: &str) -> Result<(), String> {
        let parsed = url::Url::parse(url).map_err(|e| format!("{url:?} is not a URL: {e}"))?;
        let ip = match parsed.host() {
            Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip),
            Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip),
            _ => return Ok(()),
        };
        self.check_addrs(
            parsed.host_str().unwrap_or_default(),
            &[SocketAddr::new(ip, 0)],
        )
    }

    fn check_addrs(&self, host: &str, addrs: &[SocketAddr]) -> Result<(), String> {
        if self.allow_private || addrs.iter().all(|a| is_public(a.ip())) {
            Ok(())
        } else {
            Err(refused(host))
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
            // The resolver's own error can quote what it found; say only that it failed.
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await
                .map_err(|_| -> Box<dyn std::error::Error + Send + Sync> {
                    format!("{host} does not resolve to an address").into()
                })?
                .collect();
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

    fn refused_ip(ip: &str) -> bool {
        !is_public(ip.parse().unwrap())
    }

    #[test]
    fn every_ipv4_special_purpose_block_is_refused_at_both_ends() {
        for (first, last, what) in [
            ("0.0.0.0", "0.255.255.255", "this network"),
            ("10.0.0.0", "10.255.255.255", "private"),
            ("100.64.0.0", "100.127.255.255", "carrier-grade NAT"),
            ("127.0.0.0", "127.255.255.255", "loopback"),
            ("169.254.0.0", "169.254.255.255", "link local"),
            ("172.16.0.0", "172.31.255.255", "private"),
            ("192.0.0.0", "192.0.0.255", "IETF protocol assignments"),
            ("192.0.2.0", "192.0.2.255", "documentation"),
            ("192.31.196.0", "192.31.196.255", "AS112"),
            ("192.52.193.0", "192.52.193.255", "AMT"),
            ("192.88.99.0", "192.88.99.255", "6to4 relay"),
            ("192.168.0.0", "192.168.255.255", "private"),
            ("192.175.48.0", "192.175.48.255", "AS112 direct delegation"),
            ("198.18.0.0", "198.19.255.255", "benchmarking"),
            ("198.51.100.0", "198.51.100.255", "documentation"),
            ("203.0.113.0", "203.0.113.255", "documentation"),
            ("224.0.0.0", "239.255.255.255", "multicast"),
            ("240.0.0.0", "255.255.255.255", "reserved and broadcast"),
        ] {
            assert!(refused_ip(first), "{first} ({what})");
            assert!(refused_ip(last), "{last} ({what})");
        }
    }

    #[test]
    fn public_ipv4_next_to_the_blocks_is_allowed() {
        for ip in [
            "1.1.1.1",
            "8.8.8.8",
            "9.255.255.255",
            "11.0.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "192.0.1.0",
            "192.0.3.0",
            "192.167.255.255",
            "192.169.0.0",
            "198.17.255.255",
            "198.20.0.0",
            "200.160.2.3",
            "223.255.255.255",
        ] {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn ipv6_outside_public_unicast_is_refused() {
        for (ip, what) in [
            ("::", "unspecified"),
            ("::1", "loopback"),
            ("::ffff:127.0.0.1", "IPv4-mapped loopback"),
            ("::ffff:8.8.8.8", "IPv4-mapped, even of a public address"),
            ("::127.0.0.1", "IPv4-compatible"),
            ("::8.8.8.8", "IPv4-compatible, even of a public address"),
            ("64:ff9b::7f00:1", "NAT64 well-known prefix"),
            ("64:ff9b::808:808", "NAT64 of a public address"),
            ("64:ff9b:1::1", "local-use NAT64"),
            ("100::1", "discard only"),
            ("2001::1", "Teredo"),
            ("2001:2::1", "benchmarking"),
            ("2001:10::1", "ORCHID"),
            ("2001:db8::1", "documentation"),
            ("2002:7f00:1::1", "6to4"),
            ("3fff::1", "documentation"),
            ("2620:4f:8000::1", "AS112-v6"),
            ("fc00::1", "unique local"),
            ("fd12:3456::1", "unique local"),
            ("fe80::1", "link local"),
            ("fec0::1", "site local"),
            ("ff02::1", "multicast"),
        ] {
            assert!(refused_ip(ip), "{ip} ({what})");
        }
        for ip in [
            "2001:4860:4860::8888",
            "2606:4700:4700::1111",
            "2800:3f0:4001::1",
        ] {
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
        assert_eq!(
            err,
            "127.0.0.1 resolves to a loopback, private or reserved address; the gateway only \
             calls addresses reachable on the internet"
        );
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

    #[tokio::test]
    async fn a_name_of_an_internal_address_is_refused_without_the_address() {
        // `localhost` resolves through /etc/hosts, no network needed.
        let err = DestinationPolicy::default()
            .check_url("http://localhost:9/hook", Environment::Test)
            .await
            .unwrap_err();
        assert!(err.starts_with("localhost resolves to a loopback"), "{err}");
        assert!(!err.contains("127.") && !err.contains("::1"), "{err}");
    }

    #[test]
    fn literal_addresses_are_checked_before_sending() {
        let strict = DestinationPolicy::default();
        assert!(strict.check_literal("http://[64:ff9b::a00:1]/x").is_err());
        assert!(strict.check_literal("http://240.0.0.1/x").is_err());
        assert!(strict.check_literal("https://8.8.8.8/x").is_ok());
        assert!(strict.check_literal("https://example.com/x").is_ok());
        let open = DestinationPolicy {
            allow_private: true,
        };
        assert!(open.check_literal("http://127.0.0.1/x").is_ok());
    }
}
