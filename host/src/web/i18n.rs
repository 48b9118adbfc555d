//! The dashboard's languages: Brazilian Portuguese (the default) and English. Every string a
//! page shows comes from a catalog in `dashboard/i18n/<lang>/<area>.txt` (one `key = value` a
//! line; `build.rs` joins an area's files), compiled into the binary; templates ask for it with
//! `c.t("key")`.
//!
//! A person's language is, in order: the switch (a cookie), their account's choice, the
//! browser's `Accept-Language`, Portuguese.

use std::collections::HashMap;
use std::sync::LazyLock;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Lang {
    #[default]
    PtBr,
    En,
}

impl Lang {
    pub const ALL: [Lang; 2] = [Lang::PtBr, Lang::En];

    /// The BCP 47 tag, for `<html lang>` and the cookie.
    pub fn tag(self) -> &'static str {
        match self {
            Lang::PtBr => "pt-BR",
            Lang::En => "en",
        }
    }

    pub fn from_tag(tag: &str) -> Option<Lang> {
        let primary = tag.trim().split(['-', '_']).next()?.to_ascii_lowercase();
        match primary.as_str() {
            "pt" => Some(Lang::PtBr),
            "en" => Some(Lang::En),
            _ => None,
        }
    }

    /// The best of ours for an `Accept-Language` header, by its q-values.
    pub fn from_accept_language(header: &str) -> Option<Lang> {
        let mut best: Option<(f32, Lang)> = None;
        for part in header.split(',') {
            let mut pieces = part.split(';');
            let Some(lang) = pieces.next().and_then(Lang::from_tag) else {
                continue;
            };
            let q = pieces
                .find_map(|p| p.trim().strip_prefix("q="))
                .and_then(|q| q.parse::<f32>().ok())
                .unwrap_or(1.0);
            if q > 0.0 && best.is_none_or(|(bq, _)| q > bq) {
                best = Some((q, lang));
            }
        }
        best.map(|(_, lang)| lang)
    }

    /// The catalog's text for `key`; the key itself when missing (a test keeps that from
    /// happening).
    pub fn t<'a>(self, key: &'a str) -> &'a str {
        let catalog = match self {
            Lang::PtBr => &*PT_BR,
            Lang::En => &*EN,
        };
        match catalog.get(key) {
            Some(text) => text,
            None => {
                tracing::warn!(key, lang = self.tag(), "missing dashboard string");
                key
            }
        }
    }

    /// `t(key)` with `{name}` placeholders filled.
    pub fn tf(self, key: &str, args: &[(&str, &str)]) -> String {
        let mut text = self.t(key).to_owned();
        for (name, value) in args {
            text = text.replace(&format!("{{{name}}}"), value);
        }
        text
    }

    /// Formats centavos as the language writes money: `R$ 1.234,56` / `R$1,234.56`.
    pub fn money(self, centavos: i64) -> String {
        let sign = if centavos < 0 { "-" } else { "" };
        let c = centavos.unsigned_abs();
        let (reais, cents) = (c / 100, c % 100);
        let digits = reais.to_string();
        let (group, decimal, space) = match self {
            Lang::PtBr => ('.', ',', " "),
            Lang::En => (',', '.', ""),
        };
        let mut grouped = String::new();
        for (i, ch) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                grouped.push(group);
            }
            grouped.push(ch);
        }
        format!("{sign}R${space}{grouped}{decimal}{cents:02}")
    }
}

type Catalog = HashMap<&'static str, &'static str>;

static PT_BR: LazyLock<Catalog> =
    LazyLock::new(|| parse(include_str!(concat!(env!("OUT_DIR"), "/pt-BR.txt"))));
static EN: LazyLock<Catalog> =
    LazyLock::new(|| parse(include_str!(concat!(env!("OUT_DIR"), "/en.txt"))));

/// `key = value` lines; blank lines and `#` comments are skipped.
fn parse(text: &'static str) -> Catalog {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once(" = "))
        .map(|(k, v)| (k.trim(), v.trim()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(text: &'static str) -> std::collections::BTreeSet<&'static str> {
        parse(text).into_keys().collect()
    }

    #[test]
    fn both_catalogs_have_the_same_keys_and_no_empty_text() {
        let pt = keys(include_str!(concat!(env!("OUT_DIR"), "/pt-BR.txt")));
        let en = keys(include_str!(concat!(env!("OUT_DIR"), "/en.txt")));
        let only_pt: Vec<_> = pt.difference(&en).collect();
        let only_en: Vec<_> = en.difference(&pt).collect();
        assert!(
            only_pt.is_empty() && only_en.is_empty(),
            "only in pt-BR: {only_pt:?}; only in en: {only_en:?}"
        );
        for catalog in [&*PT_BR, &*EN] {
            for (k, v) in catalog {
                assert!(!v.is_empty(), "{k} is empty");
            }
        }
        // Every line is `key = value`: a typo would silently drop a string.
        for text in [
            include_str!(concat!(env!("OUT_DIR"), "/pt-BR.txt")),
            include_str!(concat!(env!("OUT_DIR"), "/en.txt")),
        ] {
            for line in text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
            {
                assert!(line.contains(" = "), "not a `key = value` line: {line:?}");
            }
        }
    }

    /// Every `t("…")`/`tf("…")` in the templates and the dashboard's code names a key of the
    /// catalogs.
    #[test]
    fn every_key_used_exists() {
        let pt = keys(include_str!(concat!(env!("OUT_DIR"), "/pt-BR.txt")));
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap();
        let mut files = Vec::new();
        for dir in ["dashboard/templates", "host/src/web"] {
            let mut stack = vec![root.join(dir)];
            while let Some(dir) = stack.pop() {
                for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                    let path = entry.path();
                    if path.is_dir() {
                        stack.push(path);
                    } else {
                        files.push(path);
                    }
                }
            }
        }
        let mut missing = Vec::new();
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            for pattern in ["t(\"", "tf(\""] {
                for (i, _) in text.match_indices(pattern) {
                    let rest = &text[i + pattern.len()..];
                    let key = &rest[..rest.find('"').unwrap()];
                    // Keys are dotted words; this skips the test's own patterns.
                    if key.contains('.') && !key.contains(' ') && !pt.contains(key) {
                        missing.push(format!("{}: {key}", file.display()));
                    }
                }
            }
        }
        assert!(
            missing.is_empty(),
            "keys missing from the catalogs: {missing:#?}"
        );
    }

    #[test]
    fn accept_language_picks_the_best_we_speak() {
        assert_eq!(Lang::from_accept_language("en-US,en;q=0.9"), Some(Lang::En));
        assert_eq!(
            Lang::from_accept_language("fr-FR, en;q=0.5, pt-BR;q=0.8"),
            Some(Lang::PtBr)
        );
        assert_eq!(Lang::from_accept_language("de, fr"), None);
        assert_eq!(Lang::from_accept_language("en;q=0, pt"), Some(Lang::PtBr));
    }

    #[test]
    fn money_is_written_as_each_language_writes_it() {
        assert_eq!(Lang::PtBr.money(123_456), "R$ 1.234,56");
        assert_eq!(Lang::En.money(123_456), "R$1,234.56");
        assert_eq!(Lang::PtBr.money(5), "R$ 0,05");
        assert_eq!(Lang::PtBr.money(100_000_000_000), "R$ 1.000.000.000,00");
    }
}
