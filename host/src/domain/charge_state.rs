//! [`ChargeState`]: where a charge is in its life, and which moves are allowed. Stored as its
//! lowercase name; the API shows every state but `creating`.

/// Where a charge is in its life. `Creating` is internal: the API never shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChargeState {
    Creating,
    Pending,
    Processing,
    Paid,
    Expired,
    Canceled,
    Failed,
}

impl ChargeState {
    pub const ALL: [ChargeState; 7] = [
        ChargeState::Creating,
        ChargeState::Pending,
        ChargeState::Processing,
        ChargeState::Paid,
        ChargeState::Expired,
        ChargeState::Canceled,
        ChargeState::Failed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ChargeState::Creating => "creating",
            ChargeState::Pending => "pending",
            ChargeState::Processing => "processing",
            ChargeState::Paid => "paid",
            ChargeState::Expired => "expired",
            ChargeState::Canceled => "canceled",
            ChargeState::Failed => "failed",
        }
    }

    pub fn parse(text: &str) -> Option<ChargeState> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// Transitions are monotonic: only a charge that can still be paid moves, and it never
    /// moves back.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            ChargeState::Paid | ChargeState::Expired | ChargeState::Canceled | ChargeState::Failed
        )
    }
}

impl std::str::FromStr for ChargeState {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        ChargeState::parse(text).ok_or_else(|| format!("{text:?} is not a charge state"))
    }
}

#[cfg(test)]
mod tests {
    use super::ChargeState;

    #[test]
    fn states_round_trip_through_their_stored_names() {
        for state in ChargeState::ALL {
            assert_eq!(state.as_str().parse(), Ok(state));
            assert_eq!(
                serde_json::to_value(state).unwrap(),
                serde_json::json!(state.as_str())
            );
        }
        assert_eq!(
            "refunded".parse::<ChargeState>(),
            Err("\"refunded\" is not a charge state".to_owned())
        );
        let finals: Vec<_> = ChargeState::ALL
            .into_iter()
            .filter(|s| s.is_final())
            .collect();
        assert_eq!(
            finals,
            [
                ChargeState::Paid,
                ChargeState::Expired,
                ChargeState::Canceled,
                ChargeState::Failed
            ]
        );
    }
}
