//! Injected faults, per provider, set through `POST /_sim/faults`.
//!
//! The HTTP-level faults (latency, forced failures) are applied by a middleware in front of
//! every PSP router; protocol modules consult the rest (`drop_reply_after_create`, webhook
//! duplication and skipping); `refuse_connections` is acted on by the listeners.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct FailNext {
    /// How many of the next matching requests fail.
    pub count: u32,
    /// HTTP status answered.
    #[serde(default = "default_fail_status")]
    pub status: u16,
    /// Raw body answered; when absent the PSP's own generic error body is used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// Only requests whose path contains this string match (all requests when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_contains: Option<String>,
    /// Only requests with this method match, e.g. `GET` to fail queries but not creates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
}

fn default_fail_status() -> u16 {
    503
}

/// Requests held unanswered until the hold is released (`{"release_held": true}`, `DELETE`
/// or reset): a PSP answering as slowly as a test needs, with no timing in the test.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Hold {
    /// Only requests whose path contains this string are held (all requests when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_contains: Option<String>,
    /// Only requests with this method are held, e.g. `GET` to hold queries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
}

/// The fault set of one provider.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Faults {
    pub latency_ms: u64,
    pub fail_next: Option<FailNext>,
    pub drop_reply_after_create: u32,
    pub refuse_connections: bool,
    pub duplicate_webhooks: bool,
    pub skip_webhooks: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold: Option<Hold>,
}

/// Body of `POST /_sim/faults`: every field is optional and merges into the current set.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultsPatch {
    pub provider: String,
    pub latency_ms: Option<u64>,
    pub fail_next: Option<FailNext>,
    pub drop_reply_after_create: Option<u32>,
    pub refuse_connections: Option<bool>,
    pub duplicate_webhooks: Option<bool>,
    pub skip_webhooks: Option<bool>,
    pub hold: Option<Hold>,
    /// `true` lets every held request go on and ends the hold.
    pub release_held: Option<bool>,
}

impl Faults {
    pub fn merge(&mut self, patch: FaultsPatch) {
        if let Some(v) = patch.latency_ms {
            self.latency_ms = v;
        }
        if let Some(v) = patch.fail_next {
            self.fail_next = (v.count > 0).then_some(v);
        }
        if let Some(v) = patch.drop_reply_after_create {
            self.drop_reply_after_create = v;
        }
        if let Some(v) = patch.refuse_connections {
            self.refuse_connections = v;
        }
        if let Some(v) = patch.duplicate_webhooks {
            self.duplicate_webhooks = v;
        }
        if let Some(v) = patch.skip_webhooks {
            self.skip_webhooks = v;
        }
        if let Some(v) = patch.hold {
            self.hold = Some(v);
        }
        if patch.release_held == Some(true) {
            self.hold = None;
        }
    }

    /// Whether a `method` request on `path` is held now.
    pub fn holds(&self, method: &str, path: &str) -> bool {
        self.hold.as_ref().is_some_and(|h| {
            h.path_contains.as_deref().is_none_or(|p| path.contains(p))
                && h.method
                    .as_deref()
                    .is_none_or(|m| m.eq_ignore_ascii_case(method))
        })
    }

    /// Consumes one forced failure if the next `method` request on `path` should fail.
    pub fn take_failure(&mut self, method: &str, path: &str) -> Option<FailNext> {
        let fail = self.fail_next.as_mut()?;
        if let Some(filter) = &fail.path_contains
            && !path.contains(filter.as_str())
        {
            return None;
        }
        if let Some(only) = &fail.method
            && !only.eq_ignore_ascii_case(method)
        {
            return None;
        }
        fail.count -= 1;
        let taken = fail.clone();
        if fail.count == 0 {
            self.fail_next = None;
        }
        Some(taken)
    }

    /// Consumes one "create, then drop the reply" if armed.
    pub fn take_drop_after_create(&mut self) -> bool {
        if self.drop_reply_after_create > 0 {
            self.drop_reply_after_create -= 1;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fail_next_counts_down_and_filters_by_path() {
        let mut faults = Faults::default();
        faults.merge(FaultsPatch {
            provider: "efi".into(),
            fail_next: Some(FailNext {
                count: 2,
                status: 500,
                body: None,
                path_contains: Some("/v2/cob".into()),
                method: Some("GET".into()),
            }),
            ..Default::default()
        });
        assert!(faults.take_failure("GET", "/oauth/token").is_none());
        assert!(faults.take_failure("PUT", "/v2/cob/x").is_none());
        assert_eq!(faults.take_failure("GET", "/v2/cob/x").unwrap().status, 500);
        assert!(faults.take_failure("get", "/v2/cob/x").is_some());
        assert!(faults.take_failure("GET", "/v2/cob/x").is_none());
        assert_eq!(faults.fail_next, None);
    }

    #[test]
    fn a_hold_filters_by_method_and_path_until_released() {
        let mut faults = Faults::default();
        let patch = |hold, release_held| FaultsPatch {
            provider: "efi".into(),
            hold,
            release_held,
            ..Default::default()
        };
        faults.merge(patch(
            Some(Hold {
                path_contains: Some("/cob/".into()),
                method: Some("GET".into()),
            }),
            None,
        ));
        assert!(faults.holds("get", "/v2/cob/x"));
        assert!(!faults.holds("PUT", "/v2/cob/x"));
        assert!(!faults.holds("GET", "/oauth/token"));
        faults.merge(patch(None, Some(true)));
        assert!(!faults.holds("GET", "/v2/cob/x"));
    }
}
