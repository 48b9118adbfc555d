-- Sessions started by single sign-on. Turning on "require SSO" ends the other sessions of the
-- merchant's non-owner members (those started with a password); these stay.
CREATE TABLE sso_sessions (
    session_id TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE
);
