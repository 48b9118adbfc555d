//! Which URLs an adapter may call: only the origins of its own endpoints, as resolved for the
//! call (operator overrides included). Everything else is denied before any connection is made.

use url::Url;

/// A scheme, host and port. Paths are not part of the policy: an endpoint's origin is the unit
/// of trust, as in a browser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    scheme: String,
    host: String,
    port: u16,
}

impl Origin {
    pub fn of(url: &Url) -> Option<Origin> {
        let scheme = url.scheme();
        if scheme != "https" && scheme != "http" {
            return None;
        }
        Some(Origin {
            scheme: scheme.to_owned(),
            host: url.host_str()?.to_ascii_lowercase(),
            port: url.port_or_known_default()?,
        })
    }
}

/// The set of origins one call may reach.
#[derive(Debug, Clone, Default)]
pub struct EgressPolicy {
    allowed: Vec<Origin>,
}

impl EgressPolicy {
    /// Builds the policy from the call's resolved endpoint URLs; unparsable ones allow nothing.
    pub fn from_endpoints<'a>(urls: impl IntoIterator<Item = &'a str>) -> Self {
        let allowed = urls
            .into_iter()
            .filter_map(|u| Url::parse(u).ok())
            .filter_map(|u| Origin::of(&u))
            .collect();
        EgressPolicy { allowed }
    }

    /// Parses `url` and checks it against the policy. The error says why, for the adapter's log.
    pub fn check(&self, url: &str) -> Result<Url, String> {
        let parsed = Url::parse(url).map_err(|e| format!("invalid URL {url:?}: {e}"))?;
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(format!(
                "URL {url:?} carries credentials; send them in headers"
            ));
        }
        let origin =
            Origin::of(&parsed).ok_or_else(|| format!("URL {url:?} is not http(s) with a host"))?;
        if self.allowed.contains(&origin) {
            Ok(parsed)
        } else {
            Err(format!(
                "egress denied: {}://{}:{} is not one of this adapter's endpoints",
                origin.scheme, origin.host, origin.port
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_table() {
        let policy = EgressPolicy::from_endpoints([
            "https://pix.api.efipay.com.br",
            "https://localhost:8443/bb",
        ]);
        let cases = [
            ("https://pix.api.efipay.com.br/v2/cob/abc", true),
            ("https://PIX.API.EFIPAY.COM.BR:443/oauth/token", true),
            ("https://localhost:8443/anything/else", true),
            ("http://pix.api.efipay.com.br/v2/cob", false),
            ("https://pix.api.efipay.com.br:8443/v2/cob", false),
            ("https://evil.example/v2/cob", false),
            ("https://pix.api.efipay.com.br.evil.example/", false),
            ("https://user:pw@pix.api.efipay.com.br/", false),
            ("https://localhost:8444/", false),
            ("file:///etc/passwd", false),
            ("not a url", false),
        ];
        for (url, allowed) in cases {
            assert_eq!(policy.check(url).is_ok(), allowed, "{url}");
        }
    }

    #[test]
    fn empty_policy_denies_everything() {
        let policy = EgressPolicy::from_endpoints(["::garbage::"]);
        let err = policy.check("https://example.com/").unwrap_err();
        assert_eq!(
            err,
            "egress denied: https://example.com:443 is not one of this adapter's endpoints"
        );
    }
}
