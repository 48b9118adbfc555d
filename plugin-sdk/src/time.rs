//! RFC 3339 timestamps without a date library: parse to Unix seconds, format in UTC.
//!
//! PSPs write `2024-05-01T12:00:00.358Z` or `2024-05-01T09:00:00-03:00`; the gateway wants UTC.
//! Fractions of a second are accepted and dropped. Invoicing PSPs bill by due date, a calendar
//! day in São Paulo: [`sao_paulo_date`] and [`sao_paulo_end_of_day`] convert.

/// Seconds since the Unix epoch of an RFC 3339 timestamp with an offset (`Z` or `±hh:mm`).
pub fn parse_rfc3339(text: &str) -> Result<i64, String> {
    let bad = || format!("not an RFC 3339 timestamp: {text:?}");
    let b = text.as_bytes();
    let num = |range: std::ops::Range<usize>| -> Result<i64, String> {
        let part = text.get(range).ok_or_else(bad)?;
        if part.bytes().all(|c| c.is_ascii_digit()) {
            part.parse().map_err(|_| bad())
        } else {
            Err(bad())
        }
    };
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't' | b' ')
        || b[13] != b':'
        || b[16] != b':'
    {
        return Err(bad());
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return Err(bad());
    }
    let mut rest = &text[19..];
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(bad());
        }
        rest = &fraction[digits..];
    }
    let offset = match rest.as_bytes() {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2]
            if [h1, h2, m1, m2].iter().all(|c| c.is_ascii_digit()) =>
        {
            let digit = |c: &u8| i64::from(c - b'0');
            let (h, m) = (digit(h1) * 10 + digit(h2), digit(m1) * 10 + digit(m2));
            if h > 23 || m > 59 {
                return Err(bad());
            }
            let seconds = h * 3600 + m * 60;
            if *sign == b'-' { -seconds } else { seconds }
        }
        _ => return Err(bad()),
    };
    let days = days_from_civil(year, month, day);
    // A leap second is read as the last second of its minute.
    Ok(days * 86_400 + hour * 3600 + minute * 60 + second.min(59) - offset)
}

/// `2024-05-01T12:00:00Z` for Unix seconds.
pub fn format_rfc3339(unix_seconds: i64) -> String {
    let (days, secs) = (
        unix_seconds.div_euclid(86_400),
        unix_seconds.rem_euclid(86_400),
    );
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

/// The UTC timestamp `seconds` after `start`.
pub fn add_seconds(start: &str, seconds: i64) -> Result<String, String> {
    Ok(format_rfc3339(parse_rfc3339(start)? + seconds))
}

/// Seconds since the Unix epoch, now, by the host's wall clock.
pub fn now_unix() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Brasília time, the offset of `America/Sao_Paulo`: UTC−3 all year since Brazil ended
/// daylight saving in 2019.
pub const SAO_PAULO_OFFSET_SECONDS: i64 = -3 * 3600;

/// The calendar date (`YYYY-MM-DD`) in São Paulo at `unix_seconds`: what PSPs that bill by
/// due date (invoices, boletos) take as the last day a charge can be paid.
pub fn sao_paulo_date(unix_seconds: i64) -> String {
    format_rfc3339(unix_seconds + SAO_PAULO_OFFSET_SECONDS)[..10].to_owned()
}

/// The last second of a São Paulo calendar date, in UTC: `2024-05-01` → `2024-05-02T02:59:59Z`.
pub fn sao_paulo_end_of_day(date: &str) -> Result<String, String> {
    let bad = || format!("not a date: {date:?}");
    if date.len() != 10 {
        return Err(bad());
    }
    let midnight = parse_rfc3339(&format!("{date}T00:00:00Z")).map_err(|_| bad())?;
    Ok(format_rfc3339(
        midnight - SAO_PAULO_OFFSET_SECONDS + 86_400 - 1,
    ))
}

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

// Howard Hinnant's days_from_civil / civil_from_days (proleptic Gregorian calendar).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_formats() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Ok(0));
        assert_eq!(parse_rfc3339("2020-09-09T20:15:00.358Z"), Ok(1_599_682_500));
        assert_eq!(
            parse_rfc3339("2020-09-09T17:15:00-03:00"),
            Ok(1_599_682_500)
        );
        assert_eq!(
            parse_rfc3339("2020-09-09t23:45:00+03:30"),
            Ok(1_599_682_500)
        );
        assert_eq!(format_rfc3339(1_599_682_500), "2020-09-09T20:15:00Z");
        assert_eq!(format_rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(
            add_seconds("2024-12-31T23:00:00.5Z", 3600),
            Ok("2025-01-01T00:00:00Z".into())
        );
        for unix in [-86_400, 0, 68_169_600, 1_709_164_800, 4_102_444_799] {
            assert_eq!(parse_rfc3339(&format_rfc3339(unix)), Ok(unix));
        }
    }

    #[test]
    fn sao_paulo_dates() {
        // 02:30 UTC on the 2nd is still the 1st in São Paulo.
        let t = parse_rfc3339("2024-05-02T02:30:00Z").unwrap();
        assert_eq!(sao_paulo_date(t), "2024-05-01");
        assert_eq!(sao_paulo_date(t + 1800), "2024-05-02");
        assert_eq!(
            sao_paulo_end_of_day("2024-12-31"),
            Ok("2025-01-01T02:59:59Z".into())
        );
        assert!(sao_paulo_end_of_day("2024-02-30").is_err());
        assert!(sao_paulo_end_of_day("2024-5-1").is_err());
        assert!(now_unix() > 1_700_000_000);
    }

    #[test]
    fn rejects_malformed() {
        for bad in [
            "",
            "2020-09-09",
            "2020-09-09T20:15:00",
            "2020-13-01T00:00:00Z",
            "2021-02-29T00:00:00Z",
            "2020-09-09T24:00:00Z",
            "2020-09-09T20:15:00.Z",
            "2020-09-09T20:15:00+0300",
            "2020-09-09T20:15:00Zjunk",
            "2020-0a-09T20:15:00Z",
        ] {
            assert!(parse_rfc3339(bad).is_err(), "{bad:?}");
        }
    }
}
