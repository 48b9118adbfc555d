//! The statement (extrato): a merchant's paid charges by **payment** time, in the merchant's
//! time zone, with the totals of a filter and a daily series per PSP; [`export`] writes it as
//! CSV for Brazilian spreadsheets, streamed, and [`chart`] draws the daily series as SVG.
//! HTTP-free: the API (`/v1/statement`) and the dashboard (`/dashboard/statement`) parse their
//! parameters with the functions here and ask the same [`Statement`].
//!
//! Days are the merchant's: America/Sao_Paulo (every merchant's until merchants can choose),
//! read from the IANA database bundled in the binary (jiff's `tzdb-bundle-always`), so a
//! payment from São Paulo's daylight-saving years (until 2019) falls on the day it had there.

pub mod chart;
pub mod export;

use std::sync::LazyLock;

use jiff::Timestamp;
use jiff::civil::Date;
use jiff::tz::TimeZone;

use crate::domain::{Environment, PaymentLinkId};
use crate::store::statement::{DaySum, OffsetSpan};
pub use crate::store::statement::{
    OperatorFilter, Order, Position, StatementFilter, StatementLine, Totals,
};
use crate::store::{Store, StoreError};

/// The zone of every merchant's days until merchants can choose one.
pub const DEFAULT_TIME_ZONE: &str = "America/Sao_Paulo";

/// The longest range the daily series (and so the chart) covers: a year, leap day included.
pub const MAX_SERIES_DAYS: i64 = 366;

static DEFAULT_ZONE: LazyLock<TimeZone> = LazyLock::new(|| {
    TimeZone::get(DEFAULT_TIME_ZONE).expect("the bundled time zone database has America/Sao_Paulo")
});

/// The zone a merchant's days are counted in.
pub fn time_zone() -> &'static TimeZone {
    &DEFAULT_ZONE
}

/// Why a statement parameter was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    #[error("is not a day written AAAA-MM-DD (year 1970 or later)")]
    Day,
    #[error("is neither a day written AAAA-MM-DD nor an RFC 3339 time")]
    Time,
    #[error("ends before the range starts")]
    Order,
    #[error("is not a PSP id (lower-case letters, digits, `-` and `_`)")]
    Provider,
    #[error("must be a team member's id (usr_…), `api` or `payment_link`")]
    Operator,
    #[error("is not a payment link id (plink_…)")]
    PaymentLink,
}

/// A calendar day written `AAAA-MM-DD`, as `<input type=date>` sends it.
pub fn parse_day(text: &str) -> Result<Date, FilterError> {
    let text = text.trim();
    let b = text.as_bytes();
    let shape = b.len() == 10
        && b.iter().enumerate().all(|(i, c)| {
            if i == 4 || i == 7 {
                *c == b'-'
            } else {
                c.is_ascii_digit()
            }
        });
    if !shape {
        return Err(FilterError::Day);
    }
    let n =
        |range: std::ops::Range<usize>| text[range].parse::<i16>().map_err(|_| FilterError::Day);
    let year = n(0..4)?;
    if year < 1970 {
        return Err(FilterError::Day);
    }
    Date::new(year, n(5..7)? as i8, n(8..10)? as i8).map_err(|_| FilterError::Day)
}

/// The first millisecond of `day` in `tz`. A day that begins with a daylight-saving jump
/// (São Paulo's did, at midnight) begins where the jump lands.
pub fn day_start(day: Date, tz: &TimeZone) -> Result<i64, FilterError> {
    let start = day
        .to_zoned(tz.clone())
        .and_then(|z| z.start_of_day())
        .map_err(|_| FilterError::Day)?;
    Ok(start.timestamp().as_millisecond())
}

/// The first millisecond after `day` in `tz`.
pub fn day_end(day: Date, tz: &TimeZone) -> Result<i64, FilterError> {
    day_start(day.tomorrow().map_err(|_| FilterError::Day)?, tz)
}

/// The local date and time of a stored time.
pub fn local(ms: i64, tz: &TimeZone) -> jiff::Zoned {
    Timestamp::from_millisecond(ms)
        .unwrap_or(Timestamp::UNIX_EPOCH)
        .to_zoned(tz.clone())
}

/// The day it is now in `tz`.
pub fn today(tz: &TimeZone) -> Date {
    Timestamp::now().to_zoned(tz.clone()).date()
}

/// Paid on the days `from` to `to`, both included, either end open: `(paid_gte, paid_lt)`.
pub fn paid_on_days(
    from: Option<Date>,
    to: Option<Date>,
    tz: &TimeZone,
) -> Result<(Option<i64>, Option<i64>), FilterError> {
    if let (Some(from), Some(to)) = (from, to)
        && from > to
    {
        return Err(FilterError::Order);
    }
    Ok((
        from.map(|d| day_start(d, tz)).transpose()?,
        to.map(|d| day_end(d, tz)).transpose()?,
    ))
}

/// A bound of the API's `paid_gte` / `paid_lt`: a day (its first millisecond in `tz`) or an
/// RFC 3339 time.
pub fn parse_bound(text: &str, tz: &TimeZone) -> Result<i64, FilterError> {
    let text = text.trim();
    if text.len() == 10 {
        let day = parse_day(text)?;
        // The last day of year 9999 begins after the last instant jiff holds in zones west of
        // UTC: no payment lies that late, so that instant bounds it.
        return Ok(day_start(day, tz).unwrap_or(Timestamp::MAX.as_millisecond()));
    }
    crate::store::parse_rfc3339(text).ok_or(FilterError::Time)
}

/// An adapter id, e.g. `efi`.
pub fn parse_provider(text: &str) -> Result<String, FilterError> {
    let text = text.trim();
    let ok = (1..=64).contains(&text.len())
        && text
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    ok.then(|| text.to_owned()).ok_or(FilterError::Provider)
}

/// `usr_…` (a team member: the operator of a cashier sale), `api` or `payment_link`.
pub fn parse_operator(text: &str) -> Result<OperatorFilter, FilterError> {
    match text.trim() {
        "api" => Ok(OperatorFilter::Api),
        "payment_link" => Ok(OperatorFilter::PaymentLink),
        id => id
            .strip_prefix("usr_")
            .filter(|hex| hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
            .map(|_| OperatorFilter::User(id.to_owned()))
            .ok_or(FilterError::Operator),
    }
}

/// A payment link id, `plink_…`.
pub fn parse_payment_link(text: &str) -> Result<String, FilterError> {
    PaymentLinkId::parse(text.trim())
        .map(|id| id.as_str().to_owned())
        .map_err(|_| FilterError::PaymentLink)
}

/// Consecutive days, at most [`MAX_SERIES_DAYS`] of them: the span of a daily series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DaySpan {
    first: Date,
    last: Date,
}

impl DaySpan {
    /// `None` when `last` is before `first` or the span is longer than a year.
    pub fn new(first: Date, last: Date) -> Option<DaySpan> {
        let days = first.until(last).ok()?.get_days();
        (0..MAX_SERIES_DAYS)
            .contains(&i64::from(days))
            .then_some(DaySpan { first, last })
    }

    pub fn first(&self) -> Date {
        self.first
    }

    pub fn last(&self) -> Date {
        self.last
    }

    /// Every day of the span, in order.
    pub fn days(&self) -> Vec<Date> {
        self.first
            .series(jiff::Span::new().days(1))
            .take_while(|d| *d <= self.last)
            .collect()
    }
}

/// Days since 1970-01-01 of a date.
fn epoch_day(day: Date) -> i64 {
    Date::constant(1970, 1, 1)
        .until(day)
        .map_or(0, |span| i64::from(span.get_days()))
}

/// `[start, end)` cut where `tz` changes its UTC offset.
fn offset_spans(start: i64, end: i64, tz: &TimeZone) -> Vec<OffsetSpan> {
    let offset_at = |ms: i64| {
        let ts = Timestamp::from_millisecond(ms).unwrap_or(Timestamp::UNIX_EPOCH);
        i64::from(tz.to_offset(ts).seconds()) * 1000
    };
    let mut spans = Vec::new();
    let mut at = start;
    let from = Timestamp::from_millisecond(start).unwrap_or(Timestamp::UNIX_EPOCH);
    for transition in tz.following(from) {
        let change = transition.timestamp().as_millisecond();
        if change >= end {
            break;
        }
        if change > at {
            spans.push(OffsetSpan {
                start: at,
                end: change,
                offset_ms: offset_at(at),
            });
            at = change;
        }
    }
    spans.push(OffsetSpan {
        start: at,
        end,
        offset_ms: offset_at(at),
    });
    spans
}

/// Payments per day and PSP over a [`DaySpan`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DailySeries {
    pub days: Vec<Date>,
    /// The PSPs paid through in the span, the largest total first.
    pub providers: Vec<String>,
    /// `amounts[p][d]`: centavos paid through `providers[p]` on `days[d]`.
    pub amounts: Vec<Vec<i64>>,
    /// `counts[p][d]`: payments through `providers[p]` on `days[d]`.
    pub counts: Vec<Vec<i64>>,
}

impl DailySeries {
    fn of(days: Vec<Date>, sums: Vec<DaySum>) -> DailySeries {
        let index: std::collections::HashMap<i64, usize> = days
            .iter()
            .enumerate()
            .map(|(i, d)| (epoch_day(*d), i))
            .collect();
        let mut totals: Vec<(String, i64)> = Vec::new();
        for sum in &sums {
            match totals.iter_mut().find(|(p, _)| *p == sum.provider) {
                Some((_, total)) => *total += sum.amount,
                None => totals.push((sum.provider.clone(), sum.amount)),
            }
        }
        totals.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let providers: Vec<String> = totals.into_iter().map(|(p, _)| p).collect();
        let mut amounts = vec![vec![0; days.len()]; providers.len()];
        let mut counts = vec![vec![0; days.len()]; providers.len()];
        for sum in sums {
            // The query is bounded by the span's days: every sum has its day.
            let (Some(d), Some(p)) = (
                index.get(&sum.epoch_day),
                providers.iter().position(|p| *p == sum.provider),
            ) else {
                continue;
            };
            amounts[p][*d] += sum.amount;
            counts[p][*d] += sum.count;
        }
        DailySeries {
            days,
            providers,
            amounts,
            counts,
        }
    }

    /// Centavos paid on `days[d]`, every PSP together.
    pub fn day_amount(&self, d: usize) -> i64 {
        self.amounts.iter().map(|row| row[d]).sum()
    }

    /// Payments on `days[d]`, every PSP together.
    pub fn day_count(&self, d: usize) -> i64 {
        self.counts.iter().map(|row| row[d]).sum()
    }

    /// The indexes of the days that had payments.
    pub fn paid_days(&self) -> Vec<usize> {
        (0..self.days.len())
            .filter(|d| self.day_count(*d) > 0)
            .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.providers.is_empty()
    }
}

/// A page of lines, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    pub lines: Vec<StatementLine>,
    /// More lines follow the last one.
    pub has_more: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum StatementError {
    /// A page cursor that is not a paid charge of the merchant and environment.
    #[error("{0:?} is not a paid charge of this merchant and environment")]
    UnknownCursor(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// One merchant's statement in one environment, narrowed by a filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    pub merchant_id: String,
    pub environment: Environment,
    pub filter: StatementFilter,
}

impl Statement {
    /// Up to `limit` lines, newest payment first, after the line of charge `after` when given.
    pub async fn page(
        &self,
        store: &Store,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page, StatementError> {
        let position = match after {
            None => None,
            Some(id) => Some(
                store
                    .statement_position(&self.merchant_id, self.environment, id)
                    .await?
                    .ok_or_else(|| StatementError::UnknownCursor(id.to_owned()))?,
            ),
        };
        let mut lines = self
            .lines(store, Order::NewestFirst, position.as_ref(), limit + 1)
            .await?;
        let has_more = lines.len() > limit as usize;
        lines.truncate(limit as usize);
        Ok(Page { lines, has_more })
    }

    /// Up to `limit` lines in `order` after `after`: the keyset step pages and exports share.
    pub async fn lines(
        &self,
        store: &Store,
        order: Order,
        after: Option<&Position>,
        limit: u32,
    ) -> Result<Vec<StatementLine>, StoreError> {
        store
            .statement_lines(
                &self.merchant_id,
                self.environment,
                &self.filter,
                order,
                after,
                limit,
            )
            .await
    }

    /// Count and sum of every line of the statement (not only a page's).
    pub async fn totals(&self, store: &Store) -> Result<Totals, StoreError> {
        store
            .statement_totals(&self.merchant_id, self.environment, &self.filter)
            .await
    }

    /// Payments per day of `span` in `tz` and per PSP; the filter's own range applies too.
    pub async fn daily(
        &self,
        store: &Store,
        span: DaySpan,
        tz: &TimeZone,
    ) -> Result<DailySeries, StoreError> {
        let days = span.days();
        let (Ok(start), Ok(end)) = (day_start(span.first, tz), day_end(span.last, tz)) else {
            return Ok(DailySeries::of(days, Vec::new()));
        };
        let sums = store
            .statement_days(
                &self.merchant_id,
                self.environment,
                &self.filter,
                &offset_spans(start, end, tz),
            )
            .await?;
        Ok(DailySeries::of(days, sums))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::civil::date;

    fn ms(rfc3339: &str) -> i64 {
        crate::store::parse_rfc3339(rfc3339).unwrap()
    }

    #[test]
    fn days_parse_only_as_aaaa_mm_dd() {
        assert_eq!(parse_day(" 2026-01-31 "), Ok(date(2026, 1, 31)));
        for bad in [
            "2026-02-30",
            "2026-1-31",
            "31/01/2026",
            "+2026-01-31",
            "2026-01-31T00:00",
            "",
            "20260-01-31",
            "1969-12-31",
            "2026/01/31",
        ] {
            assert_eq!(parse_day(bad), Err(FilterError::Day), "{bad:?}");
        }
    }

    #[test]
    fn a_day_is_midnight_to_midnight_in_sao_paulo() {
        let tz = time_zone();
        let (gte, lt) =
            paid_on_days(Some(date(2026, 11, 22)), Some(date(2026, 11, 22)), tz).unwrap();
        assert_eq!(gte, Some(ms("2026-11-22T03:00:00Z")));
        assert_eq!(lt, Some(ms("2026-11-23T03:00:00Z")));
        assert_eq!(
            paid_on_days(Some(date(2026, 11, 23)), Some(date(2026, 11, 22)), tz),
            Err(FilterError::Order)
        );
        assert_eq!(paid_on_days(None, None, tz), Ok((None, None)));
    }

    /// São Paulo kept daylight-saving time until 2019, starting at midnight: 2018-11-04 began
    /// at 01:00 (UTC−2) and lasted 23 hours. A fixed UTC−3 would misplace these days.
    #[test]
    fn historical_days_follow_the_time_zone_database() {
        let tz = time_zone();
        assert_eq!(
            day_start(date(2018, 11, 4), tz),
            Ok(ms("2018-11-04T03:00:00Z"))
        );
        assert_eq!(
            day_start(date(2018, 11, 5), tz),
            Ok(ms("2018-11-05T02:00:00Z"))
        );
        assert_eq!(
            local(ms("2018-12-01T02:30:00Z"), tz).date(),
            date(2018, 12, 1),
            "00:30 in summer time"
        );
        assert_eq!(
            local(ms("2026-12-01T02:30:00Z"), tz).date(),
            date(2026, 11, 30),
            "23:30 without it"
        );
    }

    #[test]
    fn offset_spans_cut_at_each_change() {
        let tz = time_zone();
        // 2018-11-04 03:00Z: summer time starts (−3 → −2); 2019-02-17 02:00Z: it ends.
        let spans = offset_spans(ms("2018-11-01T00:00:00Z"), ms("2019-03-01T00:00:00Z"), tz);
        assert_eq!(
            spans,
            vec![
                OffsetSpan {
                    start: ms("2018-11-01T00:00:00Z"),
                    end: ms("2018-11-04T03:00:00Z"),
                    offset_ms: -3 * 3_600_000,
                },
                OffsetSpan {
                    start: ms("2018-11-04T03:00:00Z"),
                    end: ms("2019-02-17T02:00:00Z"),
                    offset_ms: -2 * 3_600_000,
                },
                OffsetSpan {
                    start: ms("2019-02-17T02:00:00Z"),
                    end: ms("2019-03-01T00:00:00Z"),
                    offset_ms: -3 * 3_600_000,
                },
            ]
        );
        // Since 2019 there is one offset.
        let now = offset_spans(ms("2026-01-01T03:00:00Z"), ms("2027-01-01T03:00:00Z"), tz);
        assert_eq!(now.len(), 1);
        assert_eq!(now[0].offset_ms, -3 * 3_600_000);
    }

    #[test]
    fn api_bounds_are_days_or_times() {
        let tz = time_zone();
        assert_eq!(
            parse_bound("2026-11-22", tz),
            Ok(ms("2026-11-22T03:00:00Z"))
        );
        assert_eq!(
            parse_bound("2026-11-22T10:00:00-03:00", tz),
            Ok(ms("2026-11-22T13:00:00Z"))
        );
        assert_eq!(parse_bound("22/11/2026", tz), Err(FilterError::Day));
        assert_eq!(parse_bound("yesterday", tz), Err(FilterError::Time));
    }

    #[test]
    fn operators_providers_and_links_parse_at_the_edge() {
        let user = "usr_0192f3a4b5c6d7e8f9a0b1c2d3e4f5a6";
        assert_eq!(parse_operator(user), Ok(OperatorFilter::User(user.into())));
        assert_eq!(parse_operator("api"), Ok(OperatorFilter::Api));
        assert_eq!(
            parse_operator("payment_link"),
            Ok(OperatorFilter::PaymentLink)
        );
        for bad in ["usr_1", "API", "usr_0192f3a4b5c6d7e8f9a0b1c2d3e4f5aZ", ""] {
            assert_eq!(parse_operator(bad), Err(FilterError::Operator), "{bad:?}");
        }
        assert_eq!(parse_provider("mercadopago"), Ok("mercadopago".into()));
        assert_eq!(parse_provider("Efi"), Err(FilterError::Provider));
        assert_eq!(parse_provider("efi'--"), Err(FilterError::Provider));
        let link = PaymentLinkId::generate();
        assert_eq!(
            parse_payment_link(link.as_str()),
            Ok(link.as_str().to_owned())
        );
        assert_eq!(parse_payment_link("plink_x"), Err(FilterError::PaymentLink));
    }

    #[test]
    fn spans_hold_at_most_a_year() {
        let span = DaySpan::new(date(2024, 1, 1), date(2024, 12, 31)).unwrap();
        assert_eq!(span.days().len(), 366);
        assert_eq!(span.days()[59], date(2024, 2, 29));
        assert_eq!(DaySpan::new(date(2024, 1, 1), date(2025, 1, 1)), None);
        assert_eq!(DaySpan::new(date(2024, 1, 2), date(2024, 1, 1)), None);
        assert_eq!(
            DaySpan::new(date(2024, 1, 1), date(2024, 1, 1))
                .unwrap()
                .days(),
            vec![date(2024, 1, 1)]
        );
    }

    #[test]
    fn a_series_places_each_sum_on_its_day_and_orders_psps_by_total() {
        let days = DaySpan::new(date(2026, 3, 10), date(2026, 3, 12))
            .unwrap()
            .days();
        let sum = |day: Date, provider: &str, count, amount| DaySum {
            epoch_day: epoch_day(day),
            provider: provider.into(),
            count,
            amount,
        };
        let series = DailySeries::of(
            days.clone(),
            vec![
                sum(date(2026, 3, 10), "efi", 1, 1000),
                sum(date(2026, 3, 12), "stripe", 2, 5000),
                sum(date(2026, 3, 12), "efi", 1, 500),
            ],
        );
        assert_eq!(series.providers, vec!["stripe", "efi"]);
        assert_eq!(series.amounts, vec![vec![0, 0, 5000], vec![1000, 0, 500]]);
        assert_eq!(series.counts, vec![vec![0, 0, 2], vec![1, 0, 1]]);
        assert_eq!(series.day_amount(2), 5500);
        assert_eq!(series.day_count(2), 3);
        assert_eq!(series.paid_days(), vec![0, 2]);
        assert_eq!(epoch_day(date(1970, 1, 2)), 1);
    }
}
