//! Text people type that others read back: charge descriptions, payer and link names, metadata,
//! endpoint descriptions. It is one line without control characters: a line break or an escape
//! sequence in a description would forge lines in logs and CSV exports, and a bidirectional
//! override would show a receipt's words in another order than they are stored.
//!
//! A charge's texts are these types ([`Line`] for its description and the payer's name,
//! [`Metadata`]), so every path that makes a charge (API, cashier, checkout, payment links)
//! goes through the same check and none can skip it.

use super::DomainError;

/// The first character `text` must not hold, with its position (1-based, in characters):
/// C0 and C1 controls and DEL (line breaks and tabs included), line and paragraph separators,
/// and the bidirectional embedding, override and isolate controls.
pub fn control_character(text: &str) -> Option<(usize, char)> {
    text.chars()
        .enumerate()
        .find(|(_, c)| {
            c.is_control()
                || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        })
        .map(|(i, c)| (i + 1, c))
}

/// One line of text: trimmed, 1 to `max_chars` characters, no control character.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line(String);

impl Line {
    /// `field` names the input in the error (`description`, `metadata.order`).
    pub fn parse(field: &str, input: &str, max_chars: usize) -> Result<Line, DomainError> {
        let text = input.trim();
        let chars = text.chars().count();
        if chars == 0 || chars > max_chars {
            return Err(DomainError::TextLength {
                field: field.to_owned(),
                max: max_chars,
                len: chars,
            });
        }
        refuse_control(field, text)?;
        Ok(Line(text.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

/// Refuses `text` when it holds a control character, naming `field` and the character.
pub fn refuse_control(field: &str, text: &str) -> Result<(), DomainError> {
    match control_character(text) {
        Some((position, ch)) => Err(DomainError::ControlCharacter {
            field: field.to_owned(),
            position,
            code: format!("U+{:04X}", u32::from(ch)),
        }),
        None => Ok(()),
    }
}

/// A charge's metadata: string keys and values, none holding a control character. Counts and
/// lengths are the API's to check (the only path that writes metadata), with its own messages.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Metadata(serde_json::Map<String, serde_json::Value>);

impl Metadata {
    /// Adds `key: value`; `field` names the pair in the error (`metadata.order`).
    pub fn insert(&mut self, field: &str, key: String, value: String) -> Result<(), DomainError> {
        refuse_control(field, &key)?;
        refuse_control(field, &value)?;
        self.0.insert(key, serde_json::Value::String(value));
        Ok(())
    }

    pub fn as_map(&self) -> &serde_json::Map<String, serde_json::Value> {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_found_with_their_position() {
        assert_eq!(control_character("Pedido 42 — café"), None);
        assert_eq!(control_character("Pedido\n42"), Some((7, '\n')));
        assert_eq!(control_character("\tPedido"), Some((1, '\t')));
        assert_eq!(control_character("a\u{1b}[31m"), Some((2, '\u{1b}')));
        assert_eq!(control_character("a\u{7f}"), Some((2, '\u{7f}')));
        assert_eq!(control_character("a\u{85}"), Some((2, '\u{85}')));
        assert_eq!(control_character("a\u{2028}"), Some((2, '\u{2028}')));
        assert_eq!(control_character("abc\u{202e}fed"), Some((4, '\u{202e}')));
        assert_eq!(control_character("x\u{2067}y"), Some((2, '\u{2067}')));
        // Emoji joiners and accents are text, not controls.
        assert_eq!(control_character("👩\u{200d}💻 é"), None);
    }

    #[test]
    fn lines_are_trimmed_bounded_and_free_of_controls() {
        assert_eq!(
            Line::parse("description", "  Pedido 42 ", 140)
                .unwrap()
                .as_str(),
            "Pedido 42"
        );
        assert_eq!(
            Line::parse("description", "Pedido\r\n42", 140)
                .unwrap_err()
                .to_string(),
            "description must be one line without control characters; character 7 is U+000D \
             (line breaks, tabs and other invisible control characters are refused)"
        );
        assert_eq!(
            Line::parse("payer.name", "   ", 200)
                .unwrap_err()
                .to_string(),
            "payer.name must have 1 to 200 characters; it has 0"
        );
        assert!(Line::parse("x", &"é".repeat(5), 5).is_ok());
        assert!(Line::parse("x", &"é".repeat(6), 5).is_err());
    }

    #[test]
    fn metadata_refuses_controls_in_keys_and_values() {
        let mut metadata = Metadata::default();
        metadata
            .insert("metadata.order", "order".into(), "42 — café".into())
            .unwrap();
        assert_eq!(
            metadata
                .insert("metadata.a", "a".into(), "x\u{202e}y".into())
                .unwrap_err()
                .to_string(),
            "metadata.a must be one line without control characters; character 2 is U+202E \
             (line breaks, tabs and other invisible control characters are refused)"
        );
        assert!(
            metadata
                .insert("metadata.b\n", "b\n".into(), "x".into())
                .is_err()
        );
        assert_eq!(metadata.as_map().len(), 1);
    }
}
