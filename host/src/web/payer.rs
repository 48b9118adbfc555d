//! The payer's details a PSP needs to create a Pix (its adapter's `required_payer_fields`:
//! name, e-mail, CPF or CNPJ), as the public checkout asks the payer for them and the cashier
//! asks its operator. Only the fields needed are read, by the API's rules.

use super::i18n::Lang;
use crate::charges::PayerInput;
use crate::domain::{Document, Email, Line};
use crate::runtime::PayerField;

/// The longest payer name accepted, as the API's.
pub const MAX_PAYER_NAME_CHARS: usize = 200;

/// Who types the details: a refusal speaks to them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Typist {
    /// At the checkout: "type your name".
    Payer,
    /// At the cashier: "type the payer's name".
    Operator,
}

/// The details as typed (fields not shown arrive empty).
#[derive(Clone, Copy, Debug, Default)]
pub struct Typed<'a> {
    pub name: &'a str,
    pub email: &'a str,
    pub document: &'a str,
}

/// The `needed` fields of `typed`, parsed; the first refusal otherwise, as the form field's
/// name and the message in `lang`.
pub fn parse(
    lang: Lang,
    typed: Typed<'_>,
    needed: &[PayerField],
    typist: Typist,
) -> Result<PayerInput, (&'static str, String)> {
    let refuse = |field: &'static str| {
        let key = match (typist, field) {
            (Typist::Payer, "name") => "checkout.error.name",
            (Typist::Payer, "email") => "checkout.error.email",
            (Typist::Payer, _) => "checkout.error.document",
            (Typist::Operator, "name") => "cashier.error.payer_name",
            (Typist::Operator, "email") => "cashier.error.payer_email",
            (Typist::Operator, _) => "cashier.error.payer_document",
        };
        (field, lang.t(key).to_owned())
    };
    let mut payer = PayerInput::default();
    if needed.contains(&PayerField::Name) {
        // The API's rule (`Line`): one line, no control character of any kind.
        payer.name = Some(
            Line::parse("name", typed.name, MAX_PAYER_NAME_CHARS).map_err(|_| refuse("name"))?,
        );
    }
    if needed.contains(&PayerField::Email) {
        payer.email = Some(Email::parse(typed.email.trim()).map_err(|_| refuse("email"))?);
    }
    if needed.contains(&PayerField::Document) {
        payer.document =
            Some(Document::parse(typed.document.trim()).map_err(|_| refuse("document"))?);
    }
    Ok(payer)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(name: &str) -> Typed<'_> {
        Typed {
            name,
            ..Typed::default()
        }
    }

    /// No shipped adapter asks for the payer's name yet, so no page can show the field; the
    /// form's rule is pinned here, the same as the API's (`Line`).
    #[test]
    fn a_payer_name_is_one_line_without_control_characters() {
        let asked = [PayerField::Name];
        let too_long = "a".repeat(MAX_PAYER_NAME_CHARS + 1);
        for bad in [
            "",
            "   ",
            "Ana\u{202e}Souza",
            "Ana\u{2028}Souza",
            "Ana\nSouza",
            "Ana\tSouza",
            "Ana\u{7}",
            too_long.as_str(),
        ] {
            let refused = parse(Lang::PtBr, named(bad), &asked, Typist::Payer).unwrap_err();
            assert_eq!(
                refused,
                (
                    "name",
                    "Digite o seu nome completo, em uma linha, sem caracteres de controle \
                     invisíveis."
                        .to_owned()
                ),
                "{bad:?}"
            );
            assert_eq!(
                parse(Lang::En, named(bad), &asked, Typist::Payer).unwrap_err(),
                (
                    "name",
                    "Type your full name on one line, without invisible control characters."
                        .to_owned()
                ),
                "{bad:?}"
            );
            assert_eq!(
                parse(Lang::En, named(bad), &asked, Typist::Operator).unwrap_err(),
                (
                    "name",
                    "Type the payer's full name on one line, without invisible control \
                     characters."
                        .to_owned()
                ),
                "{bad:?}"
            );
        }
        let payer = parse(Lang::En, named("  Ana Souza "), &asked, Typist::Payer).unwrap();
        assert_eq!(
            payer.name.map(Line::into_string).as_deref(),
            Some("Ana Souza")
        );
        let longest = "a".repeat(MAX_PAYER_NAME_CHARS);
        let payer = parse(Lang::En, named(&longest), &asked, Typist::Payer).unwrap();
        assert_eq!(payer.name.map(Line::into_string), Some(longest));
        // A name the PSP does not need is not read at all.
        let payer = parse(Lang::En, named("Ana\u{202e}"), &[], Typist::Payer).unwrap();
        assert!(payer.name.is_none());
    }

    #[test]
    fn documents_and_e_mails_are_checked_and_kept_in_the_apis_form() {
        let typed = Typed {
            name: "",
            email: " ana@example.com ",
            document: "529.982.247-25",
        };
        let both = [PayerField::Email, PayerField::Document];
        let payer = parse(Lang::En, typed, &both, Typist::Operator).unwrap();
        assert_eq!(payer.email.unwrap().to_string(), "ana@example.com");
        assert_eq!(payer.document.unwrap().as_str(), "52998224725");
        let wrong_digit = Typed {
            document: "529.982.247-26",
            ..typed
        };
        assert_eq!(
            parse(Lang::PtBr, wrong_digit, &both, Typist::Operator).unwrap_err(),
            (
                "document",
                "CPF ou CNPJ do pagador inválido. Confira os números.".to_owned()
            )
        );
        let no_email = Typed { email: "", ..typed };
        assert_eq!(
            parse(Lang::En, no_email, &both, Typist::Operator)
                .unwrap_err()
                .0,
            "email"
        );
        // Neither is read for a PSP that needs neither.
        let payer = parse(Lang::En, no_email, &[], Typist::Operator).unwrap();
        assert!(payer.email.is_none() && payer.document.is_none());
    }
}
