//! Domain types: values parsed once at the edge into types that cannot be wrong.
//!
//! Everything a merchant or a PSP hands the gateway is parsed here before it travels inward, so
//! code past the edge never re-checks a value: if it holds an [`Amount`], the amount is in range.
//!
//! - [`Amount`] (`amount.rs`): money in centavos, R$ 0.01 to R$ 10,000,000.00.
//! - [`Document`] (`document.rs`): a payer's CPF or CNPJ (alphanumeric CNPJ included), check
//!   digits verified.
//! - [`Email`] (`email.rs`): a payer's e-mail address.
//! - [`Reference`] (`reference.rs`): the id the gateway chooses for a charge and sends to the PSP.
//! - [`ChargeId`], [`EventId`], [`CredentialId`], [`PaymentLinkId`] (`ids.rs`): public,
//!   time-ordered object ids.
//! - [`Environment`] (`environment.rs`): `test` or `live`.
//! - [`ChargeState`] (`charge_state.rs`): where a charge is in its life; transitions only move
//!   forward.
//! - [`ApiKey`] (`api_key.rs`): merchant API keys, their lookup prefix and their stored hash.
//! - [`BrCode`] (`brcode.rs`): a Pix copy-and-paste code, structure and CRC verified.
//! - [`qr_png_base64`] (`qr.rs`): a QR code image of a BR Code, as base64 PNG.
//! - [`Line`] (`text.rs`): one line of text people type (descriptions, names, metadata), without
//!   control characters.
//!
//! Every failure is a [`DomainError`] whose message tells a merchant's developer what is wrong
//! and how to fix it; the API layer can return it verbatim.

mod amount;
mod api_key;
mod base62;
mod brcode;
mod charge_state;
mod document;
mod email;
mod environment;
mod ids;
mod qr;
mod reference;
mod text;

pub use amount::Amount;
pub use api_key::ApiKey;
pub use brcode::{BrCode, crc16};
pub use charge_state::ChargeState;
pub use document::{Document, DocumentKind};
pub use email::Email;
pub use environment::Environment;
pub use ids::{ChargeId, CredentialId, EventId, PaymentLinkId};
pub use qr::qr_png_base64;
pub use reference::Reference;
pub use text::{Line, Metadata, control_character, refuse_control};

/// The rule every document error starts with, so each message restates what is accepted.
const DOCUMENT_RULE: &str =
    "payer.document must be a CPF (11 digits) or CNPJ (14 characters) with valid check digits";

/// The rule every e-mail error starts with.
const EMAIL_RULE: &str = "payer.email must be an e-mail address like name@example.com";

/// The rule every API key error starts with. Key errors never quote the key: it is a secret.
const API_KEY_RULE: &str = "the API key must be pgw_test_ or pgw_live_ followed by at least 32 \
                            letters and digits, exactly as it was shown when it was created";

/// Why a value could not be parsed. Messages are written for a merchant's developer: they say
/// what was expected, what was received and, where it helps, how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DomainError {
    // --- amount -------------------------------------------------------------------------------
    /// The amount is not an integer number of centavos within [`Amount::MIN`]..=[`Amount::MAX`].
    #[error(
        "amount must be an integer number of centavos between 1 and 1000000000 \
         (R$ 10,000,000.00); got {got}"
    )]
    InvalidAmount { got: String },

    // --- document (CPF / CNPJ) ----------------------------------------------------------------
    #[error("{rule}; \"{got}\" has {len} characters once punctuation is removed", rule = DOCUMENT_RULE)]
    DocumentLength { got: String, len: usize },

    #[error(
        "{rule}; \"{got}\" contains {ch:?}, which is not a digit, a letter or the punctuation \
         . - / and space",
        rule = DOCUMENT_RULE
    )]
    DocumentCharacter { got: String, ch: char },

    #[error(
        "{rule}; \"{got}\" has 11 characters, so it is read as a CPF, and a CPF has only digits",
        rule = DOCUMENT_RULE
    )]
    CpfNotNumeric { got: String },

    #[error(
        "{rule}; \"{got}\" has 14 characters, so it is read as a CNPJ, and a CNPJ's last two \
         characters (its check digits) are always digits",
        rule = DOCUMENT_RULE
    )]
    CnpjCheckDigitsNotNumeric { got: String },

    #[error(
        "{rule}; \"{got}\" repeats a single digit, which is never a real document number",
        rule = DOCUMENT_RULE
    )]
    DocumentRepeatedDigits { got: String },

    #[error(
        "{rule}; the check digits of \"{got}\" do not match; look for a mistyped character",
        rule = DOCUMENT_RULE
    )]
    DocumentCheckDigits { got: String },

    // --- e-mail -------------------------------------------------------------------------------
    #[error("{rule}; it is empty", rule = EMAIL_RULE)]
    EmailEmpty,

    #[error("{rule}; it has {len} characters and the limit is 254", rule = EMAIL_RULE)]
    EmailTooLong { len: usize },

    #[error("{rule}; \"{got}\" contains a space or control character", rule = EMAIL_RULE)]
    EmailWhitespace { got: String },

    #[error("{rule}; \"{got}\" has {count} '@' signs and must have exactly one", rule = EMAIL_RULE)]
    EmailAtSign { got: String, count: usize },

    #[error("{rule}; \"{got}\" has nothing before the '@'", rule = EMAIL_RULE)]
    EmailLocalPartEmpty { got: String },

    #[error(
        "{rule}; the domain after the '@' in \"{got}\" must be dot-separated names such as \
         example.com",
        rule = EMAIL_RULE
    )]
    EmailDomain { got: String },

    // --- reference ----------------------------------------------------------------------------
    #[error("reference must be 26 to 35 letters or digits; \"{got}\" has {len} characters")]
    ReferenceLength { got: String, len: usize },

    #[error(
        "reference must be 26 to 35 letters or digits (A-Z, a-z, 0-9); \"{got}\" contains {ch:?}"
    )]
    ReferenceCharacter { got: String, ch: char },

    // --- public ids ---------------------------------------------------------------------------
    /// `kind` names the id (`"charge id"`), `prefix` its required prefix (`"chg_"`).
    #[error(
        "{kind} must be \"{prefix}\" followed by {body_len} letters or digits (0-9, A-Z, a-z), \
         as returned by the API; got \"{got}\"",
        body_len = ids::BODY_LEN
    )]
    InvalidId {
        kind: &'static str,
        prefix: &'static str,
        got: String,
    },

    // --- environment --------------------------------------------------------------------------
    #[error("environment must be \"test\" or \"live\" (lowercase); got \"{got}\"")]
    InvalidEnvironment { got: String },

    // --- API key ------------------------------------------------------------------------------
    #[error("{rule}; this one does not start with pgw_test_ or pgw_live_", rule = API_KEY_RULE)]
    ApiKeyPrefix,

    #[error("{rule}; the part after the prefix has {len} characters", rule = API_KEY_RULE)]
    ApiKeySecretLength { len: usize },

    #[error(
        "{rule}; the part after the prefix contains a character that is not a letter or digit",
        rule = API_KEY_RULE
    )]
    ApiKeySecretCharacter,

    // --- BR Code ------------------------------------------------------------------------------
    #[error("the BR Code is empty; pass the Pix copy-and-paste code, starting with 000201")]
    BrCodeEmpty,

    #[error(
        "the BR Code must contain only printable ASCII characters; it has {ch:?} at offset \
         {offset}; copy the code again without changing it"
    )]
    BrCodeCharacter { offset: usize, ch: char },

    #[error("a BR Code has at most 512 characters; this one has {len}")]
    BrCodeTooLong { len: usize },

    #[error(
        "a BR Code ends with its CRC field, 6304 followed by 4 hexadecimal digits; this one ends \
         with \"{tail}\"; it may have been cut off when it was copied"
    )]
    BrCodeNoCrc { tail: String },

    #[error(
        "the BR Code's CRC is {stated} but its content gives {computed}; the code was changed or \
         copied incompletely, so copy it again from its source"
    )]
    BrCodeCrcMismatch { stated: String, computed: String },

    #[error(
        "a BR Code starts with 000201 (payload format indicator 01); this one starts with \"{got}\""
    )]
    BrCodeHeader { got: String },

    #[error(
        "the BR Code is cut short at offset {offset}: {remaining} character(s) remain where a \
         field needs at least a two-digit id and a two-digit length"
    )]
    BrCodeTruncated { offset: usize, remaining: usize },

    #[error(
        "the BR Code has \"{got}\" at offset {offset} where a two-digit field id and a two-digit \
         length were expected"
    )]
    BrCodeFieldHeader { offset: usize, got: String },

    #[error(
        "in the BR Code, {field} at offset {offset} declares {len} characters but only \
         {remaining} remain"
    )]
    BrCodeOverrun {
        field: String,
        offset: usize,
        len: usize,
        remaining: usize,
    },

    #[error("the BR Code has {field} twice (again at offset {offset}); each field appears once")]
    BrCodeDuplicateField { field: String, offset: usize },

    #[error(
        "the BR Code has no {field}; a Pix BR Code needs fields 00, 26 (with the Pix key or \
         location), 52, 53, 58, 59, 60 and 63 (CRC, last)"
    )]
    BrCodeMissingField { field: String },

    #[error("in the BR Code, {field} must be {expected}; got \"{got}\"")]
    BrCodeFieldValue {
        field: String,
        expected: &'static str,
        got: String,
    },

    // --- text ---------------------------------------------------------------------------------
    #[error("{field} must have 1 to {max} characters; it has {len}")]
    TextLength {
        field: String,
        max: usize,
        len: usize,
    },

    #[error(
        "{field} must be one line without control characters; character {position} is {code} \
         (line breaks, tabs and other invisible control characters are refused)"
    )]
    ControlCharacter {
        field: String,
        position: usize,
        code: String,
    },

    // --- QR image -----------------------------------------------------------------------------
    #[error("the text is {len} bytes long, too long to fit in a QR code")]
    QrTooLong { len: usize },

    #[error("could not draw the QR code: {reason}")]
    QrImage { reason: String },
}

/// How a value a caller sent is quoted back in an error: whole when short, cut with an ellipsis
/// when long, so a megabyte of junk never ends up in a response or a log line.
fn excerpt(input: &str) -> String {
    const MAX_CHARS: usize = 64;
    match input.char_indices().nth(MAX_CHARS) {
        Some((cut, _)) => format!("{}…", &input[..cut]),
        None => input.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpt_keeps_short_input_whole() {
        assert_eq!(excerpt("529.982.247-25"), "529.982.247-25");
        assert_eq!(excerpt(""), "");
    }

    #[test]
    fn excerpt_cuts_long_input_on_a_char_boundary() {
        let long = "é".repeat(100);
        assert_eq!(excerpt(&long), format!("{}…", "é".repeat(64)));
    }

    #[test]
    fn messages_state_the_rule_and_the_fix() {
        let err = DomainError::DocumentCheckDigits {
            got: "529.982.247-26".into(),
        };
        assert_eq!(
            err.to_string(),
            "payer.document must be a CPF (11 digits) or CNPJ (14 characters) with valid check \
             digits; the check digits of \"529.982.247-26\" do not match; look for a mistyped \
             character"
        );
        let err = DomainError::InvalidId {
            kind: "charge id",
            prefix: "chg_",
            got: "x".into(),
        };
        assert_eq!(
            err.to_string(),
            "charge id must be \"chg_\" followed by 22 letters or digits (0-9, A-Z, a-z), as \
             returned by the API; got \"x\""
        );
    }
}
