//! The statement as CSV, written for the spreadsheets people use in Brazil (Excel and LibreOffice
//! set to Portuguese) and streamed: lines are read a batch at a time by keyset, oldest payment
//! first, so a year of 100,000 lines never sits in memory.
//!
//! The format: UTF-8 with a byte-order mark (without it Excel reads UTF-8 as Windows-1252);
//! `;` between fields (`,` is the decimal mark there, so a Brazilian spreadsheet splits on `;`);
//! amounts as `1234,56` (no thousands separator); times as `DD/MM/AAAA HH:MM:SS` in the merchant's
//! zone; CRLF line ends; fields quoted as RFC 4180 says (when they hold `;`, `"` or a line break,
//! with `"` doubled). A text field that starts with `=`, `+`, `-`, `@`, a tab or a carriage
//! return gets a leading `'`, so that a spreadsheet shows it instead of running it as a formula.

use std::collections::HashMap;

use futures::Stream;
use jiff::tz::TimeZone;

use super::{Order, Position, Statement, StatementLine};
use crate::store::{Store, StoreError};

/// Lines read per query: a stream holds one batch at a time.
pub const BATCH: u32 = 1000;

/// The columns, in order.
pub const COLUMNS: usize = 8;

/// What the export writes in words, in the reader's language.
#[derive(Debug, Clone)]
pub struct CsvLabels {
    /// The header row: payment time, amount, PSP, operator, payment link, description, charge
    /// id, end-to-end id.
    pub headers: [String; COLUMNS],
    /// The operator column of a charge made through the API.
    pub api: String,
    /// The operator column of a charge paid through a payment link.
    pub payment_link: String,
    /// PSP names by adapter id; an id without one is written as the id.
    pub provider_names: HashMap<String, String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("writing CSV: {0}")]
    Csv(#[from] csv::Error),
}

/// The statement's CSV, a chunk per batch of lines; the first chunk is the byte-order mark and
/// the header row. An error ends the stream (the download is cut short, never silently
/// truncated into a file that looks complete: the connection is reset).
pub fn csv(
    statement: Statement,
    store: Store,
    tz: TimeZone,
    labels: CsvLabels,
) -> impl Stream<Item = Result<Vec<u8>, ExportError>> + Send + 'static {
    struct State {
        statement: Statement,
        store: Store,
        tz: TimeZone,
        labels: CsvLabels,
        /// The last line written.
        after: Option<Position>,
        started: bool,
        done: bool,
    }
    let start = State {
        statement,
        store,
        tz,
        labels,
        after: None,
        started: false,
        done: false,
    };
    futures::stream::try_unfold(start, |mut s| async move {
        if s.done {
            return Ok(None);
        }
        let mut out = Vec::new();
        if !s.started {
            s.started = true;
            out.extend_from_slice("\u{feff}".as_bytes());
            let mut w = writer(&mut out);
            w.write_record(&s.labels.headers)?;
            w.flush().map_err(csv::Error::from)?;
        }
        let lines = s
            .statement
            .lines(&s.store, Order::OldestFirst, s.after.as_ref(), BATCH)
            .await?;
        s.done = lines.len() < BATCH as usize;
        if lines.is_empty() && out.is_empty() {
            // The previous batch was full and nothing followed it.
            return Ok(None);
        }
        s.after = lines.last().map(StatementLine::position).or(s.after);
        {
            let mut w = writer(&mut out);
            for line in &lines {
                w.write_record(record(line, &s.tz, &s.labels))?;
            }
            w.flush().map_err(csv::Error::from)?;
        }
        Ok(Some((out, s)))
    })
}

fn writer(out: &mut Vec<u8>) -> csv::Writer<&mut Vec<u8>> {
    csv::WriterBuilder::new()
        .delimiter(b';')
        .terminator(csv::Terminator::CRLF)
        .quote_style(csv::QuoteStyle::Necessary)
        .has_headers(false)
        .from_writer(out)
}

/// One line's fields, in [`CsvLabels::headers`] order.
fn record(line: &StatementLine, tz: &TimeZone, labels: &CsvLabels) -> [String; COLUMNS] {
    let operator = match (&line.operator_id, &line.payment_link_id) {
        (Some(id), _) => line.operator_name.clone().unwrap_or_else(|| id.clone()),
        (None, Some(_)) => labels.payment_link.clone(),
        (None, None) => labels.api.clone(),
    };
    [
        super::local(line.paid_at, tz)
            .strftime("%d/%m/%Y %H:%M:%S")
            .to_string(),
        decimal_comma(line.amount),
        labels
            .provider_names
            .get(&line.provider)
            .cloned()
            .unwrap_or_else(|| line.provider.clone()),
        text(&operator),
        text(line.payment_link_name.as_deref().unwrap_or_default()),
        text(line.description.as_deref().unwrap_or_default()),
        line.charge_id.clone(),
        line.end_to_end_id.clone().unwrap_or_default(),
    ]
}

/// Centavos as `1234,56`.
pub fn decimal_comma(centavos: i64) -> String {
    let sign = if centavos < 0 { "-" } else { "" };
    let c = centavos.unsigned_abs();
    format!("{sign}{},{:02}", c / 100, c % 100)
}

/// A text field a spreadsheet shows as text: a leading `'` before what it would take for a
/// formula.
fn text(value: &str) -> String {
    match value.chars().next() {
        Some('=' | '+' | '-' | '@' | '\t' | '\r') => format!("'{value}"),
        _ => value.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels() -> CsvLabels {
        CsvLabels {
            headers: ["a", "b", "c", "d", "e", "f", "g", "h"].map(String::from),
            api: "API".into(),
            payment_link: "Link".into(),
            provider_names: HashMap::from([("efi".into(), "Efí Bank".into())]),
        }
    }

    fn line() -> StatementLine {
        StatementLine {
            charge_id: "chg_1".into(),
            // 2026-03-11T03:10:05Z: 00:10:05 in São Paulo.
            paid_at: 1_773_198_605_000,
            amount: 123_456,
            provider: "efi".into(),
            operator_id: None,
            operator_name: None,
            payment_link_id: None,
            payment_link_name: None,
            description: Some("Pão; \"francês\"\nquente".into()),
            end_to_end_id: Some("E123".into()),
        }
    }

    #[test]
    fn a_line_is_written_for_a_brazilian_spreadsheet() {
        let tz = super::super::time_zone();
        let mut out = Vec::new();
        let mut w = writer(&mut out);
        w.write_record(record(&line(), tz, &labels())).unwrap();
        drop(w);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "11/03/2026 00:10:05;1234,56;Efí Bank;API;;\"Pão; \"\"francês\"\"\nquente\";chg_1;E123\r\n"
        );
    }

    #[test]
    fn the_operator_column_names_who_or_what_sold() {
        let tz = super::super::time_zone();
        let mut sold = line();
        sold.operator_id = Some("usr_1".into());
        sold.operator_name = Some("Bruno Lima".into());
        assert_eq!(record(&sold, tz, &labels())[3], "Bruno Lima");
        let mut linked = line();
        linked.payment_link_id = Some("plink_1".into());
        linked.payment_link_name = Some("Camiseta".into());
        let fields = record(&linked, tz, &labels());
        assert_eq!(
            (fields[3].as_str(), fields[4].as_str()),
            ("Link", "Camiseta")
        );
        let mut unknown_psp = line();
        unknown_psp.provider = "gone".into();
        assert_eq!(record(&unknown_psp, tz, &labels())[2], "gone");
    }

    #[test]
    fn amounts_use_a_decimal_comma_and_no_grouping() {
        assert_eq!(decimal_comma(123_456_789), "1234567,89");
        assert_eq!(decimal_comma(5), "0,05");
        assert_eq!(decimal_comma(-150), "-1,50");
    }

    /// A statement larger than a batch leaves in batches, oldest first, each read by keyset
    /// after the last: never the whole set at once.
    #[tokio::test]
    async fn the_export_streams_a_batch_at_a_time() {
        use futures::TryStreamExt;

        let dir = tempfile::tempdir().unwrap();
        let store = Store::connect(&format!("sqlite://{}/t.db", dir.path().display()))
            .await
            .unwrap();
        store.migrate().await.unwrap();
        for sql in [
            "INSERT INTO merchants (id, name, created_at) VALUES ('mer_1', 'Loja', 0)",
            "INSERT INTO credentials (id, merchant_id, environment, provider, label, \
               public_fields, sealed_fields, webhook_id, webhook_token_sealed, created_at, \
               updated_at) VALUES ('cred_1', 'mer_1', 'test', 'efi', 'Efí', '{}', '{}', 'w', 't', 0, 0)",
            // 2,001 paid charges a minute apart, written newest id first so that neither ids
            // nor insertion order agree with payment order; and one pending.
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2001) \
             INSERT INTO charges (id, merchant_id, environment, credential_id, provider, \
               reference, status, amount, paid_at, created_at, updated_at) \
             SELECT 'chg_' || (10000 - i), 'mer_1', 'test', 'cred_1', 'efi', 'ref' || i, 'paid', \
               i, 1773198600000 + i * 60000, 0, 0 FROM n",
            "INSERT INTO charges (id, merchant_id, environment, credential_id, provider, \
               reference, status, amount, created_at, updated_at) \
             VALUES ('chg_pending', 'mer_1', 'test', 'cred_1', 'efi', 'refp', 'pending', 1, 0, 0)",
        ] {
            sqlx::query(sql).execute(store.pool()).await.unwrap();
        }
        let statement = Statement {
            merchant_id: "mer_1".into(),
            environment: crate::domain::Environment::Test,
            filter: Default::default(),
        };
        let chunks: Vec<Vec<u8>> = csv(
            statement,
            store,
            super::super::time_zone().clone(),
            labels(),
        )
        .try_collect()
        .await
        .unwrap();
        let lines_per_chunk: Vec<usize> = chunks
            .iter()
            .map(|c| c.split(|b| *b == b'\n').count() - 1)
            .collect();
        // The header and a full batch, another full batch, the last line.
        assert_eq!(lines_per_chunk, vec![1001, 1000, 1]);
        let text = String::from_utf8(chunks.concat()).unwrap();
        let amounts: Vec<&str> = text
            .split("\r\n")
            .skip(1)
            .filter(|l| !l.is_empty())
            .map(|l| l.split(';').nth(1).unwrap())
            .collect();
        assert_eq!(amounts.len(), 2001);
        assert_eq!(amounts[..3], ["0,01", "0,02", "0,03"]);
        assert_eq!(amounts[2000], "20,01");
    }

    #[test]
    fn formulas_are_shown_not_run() {
        assert_eq!(text("=HYPERLINK(\"x\")"), "'=HYPERLINK(\"x\")");
        assert_eq!(text("+55 11"), "'+55 11");
        assert_eq!(text("-1"), "'-1");
        assert_eq!(text("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(text("Pedido 12"), "Pedido 12");
        assert_eq!(text(""), "");
    }
}
