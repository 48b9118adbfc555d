//! The daily series drawn as an SVG chart on the server (plotters, SVG backend only): one bar
//! per day, stacked by PSP, with a legend. The page embeds it with a table of the same numbers
//! beside it for people who cannot see it.

use jiff::civil::Date;
use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;

use super::DailySeries;

/// How wide a screen the chart is drawn for; the page scales it to its width, so a phone gets
/// a drawing of its own in which the words stay legible.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    Wide,
    Narrow,
}

impl Size {
    /// Width and height in SVG units, and how many days the axis names at most.
    fn dimensions(self) -> (u32, u32, usize) {
        match self {
            Size::Wide => (960, 320, 10),
            Size::Narrow => (480, 300, 4),
        }
    }
}

/// Okabe and Ito's palette, told apart by people with colour-blindness too; PSPs past the
/// eighth reuse it.
const PALETTE: [RGBColor; 8] = [
    RGBColor(0x00, 0x72, 0xB2),
    RGBColor(0xE6, 0x9F, 0x00),
    RGBColor(0x00, 0x9E, 0x73),
    RGBColor(0xCC, 0x79, 0xA7),
    RGBColor(0x56, 0xB4, 0xE9),
    RGBColor(0xD5, 0x5E, 0x00),
    RGBColor(0xF0, 0xE4, 0x42),
    RGBColor(0x00, 0x00, 0x00),
];

/// How the chart writes its words: amounts, days and PSP names, in the reader's language.
pub struct ChartText<'a> {
    pub money: &'a dyn Fn(i64) -> String,
    pub day: &'a dyn Fn(Date) -> String,
    pub provider: &'a dyn Fn(&str) -> String,
}

#[derive(Debug, thiserror::Error)]
#[error("drawing the statement chart: {0}")]
pub struct ChartError(String);

fn fail(e: impl std::fmt::Display) -> ChartError {
    ChartError(e.to_string())
}

/// The SVG document of `series` (which must have at least one day).
pub fn svg(series: &DailySeries, text: &ChartText, size: Size) -> Result<String, ChartError> {
    let (width, height, day_labels) = size.dimensions();
    let n = series.days.len();
    if n == 0 {
        return Err(ChartError("a series without days".into()));
    }
    let busiest = (0..n).map(|d| series.day_amount(d)).max().unwrap_or(0);
    // Room above the tallest bar for the legend; at least R$ 1 so an empty chart has an axis.
    let top = (busiest + busiest / 4).max(100);
    let plot_width = width as usize - 110;
    // Bars keep a gap between them while they are wide enough to spare one.
    let gap = ((plot_width / n) / 5).min(8) as u32;
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(fail)?;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(28)
            .y_label_area_size(96)
            .build_cartesian_2d((0..n as u32 - 1).into_segmented(), 0i64..top)
            .map_err(fail)?;
        let day_label = |v: &SegmentValue<u32>| match v {
            SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => series
                .days
                .get(*i as usize)
                .map_or_else(String::new, |d| (text.day)(*d)),
            SegmentValue::Last => String::new(),
        };
        let money_label = |v: &i64| (text.money)(*v);
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n.min(day_labels))
            .x_label_formatter(&day_label)
            .y_labels(5)
            .y_label_formatter(&money_label)
            // Only the labelled lines: minor ones crowd a chart this small.
            .light_line_style(TRANSPARENT)
            .bold_line_style(RGBColor(0xE4, 0xE7, 0xEC))
            .axis_style(RGBColor(0x88, 0x88, 0x88))
            .label_style(
                ("sans-serif", 16)
                    .into_font()
                    .color(&RGBColor(0x44, 0x44, 0x44)),
            )
            .draw()
            .map_err(fail)?;
        let edge = |d: usize| {
            if d == n {
                SegmentValue::Last
            } else {
                SegmentValue::Exact(d as u32)
            }
        };
        let mut stacked = vec![0i64; n];
        for (p, provider) in series.providers.iter().enumerate() {
            let color = PALETTE[p % PALETTE.len()];
            let mut bars = Vec::new();
            for d in (0..n).filter(|d| series.amounts[p][*d] > 0) {
                let (bottom, height) = (stacked[d], series.amounts[p][d]);
                stacked[d] += height;
                let mut bar = Rectangle::new(
                    [(edge(d), bottom), (edge(d + 1), bottom + height)],
                    color.filled(),
                );
                bar.set_margin(0, 0, gap, gap);
                bars.push(bar);
            }
            chart
                .draw_series(bars)
                .map_err(fail)?
                .label((text.provider)(provider))
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 6), (x + 12, y + 6)], color.filled())
                });
        }
        if !series.is_empty() {
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .background_style(WHITE.mix(0.9))
                .border_style(RGBColor(0xCC, 0xCC, 0xCC))
                .label_font(("sans-serif", 16))
                .draw()
                .map_err(fail)?;
        }
        root.present().map_err(fail)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use jiff::civil::date;

    use super::*;

    fn text() -> (
        impl Fn(i64) -> String,
        impl Fn(Date) -> String,
        impl Fn(&str) -> String,
    ) {
        (
            |c: i64| format!("R$ {}", c / 100),
            |d: Date| d.strftime("%d/%m").to_string(),
            |p: &str| format!("PSP <{p}>"),
        )
    }

    fn series() -> DailySeries {
        DailySeries {
            days: vec![date(2026, 3, 10), date(2026, 3, 11), date(2026, 3, 12)],
            providers: vec!["stripe".into(), "efi".into()],
            amounts: vec![vec![0, 0, 5000], vec![1000, 0, 500]],
            counts: vec![vec![0, 0, 2], vec![1, 0, 1]],
        }
    }

    /// One bar per PSP and day with payments, named in the legend, the days on the axis, and
    /// names escaped as SVG text.
    #[test]
    fn bars_stack_per_day_with_a_legend() {
        let (money, day, provider) = text();
        let svg = svg(
            &series(),
            &ChartText {
                money: &money,
                day: &day,
                provider: &provider,
            },
            Size::Wide,
        )
        .unwrap();
        assert!(svg.starts_with("<svg width=\"960\" height=\"320\" viewBox=\"0 0 960 320\""));
        let blue = svg.matches("fill=\"#0072B2\"").count();
        let orange = svg.matches("fill=\"#E69F00\"").count();
        // Each series: its bars and its legend swatch.
        assert_eq!((blue, orange), (1 + 1, 2 + 1), "{svg}");
        for label in [
            "10/03",
            "11/03",
            "12/03",
            "PSP &lt;stripe&gt;",
            "PSP &lt;efi&gt;",
        ] {
            assert!(svg.contains(label), "{label} in {svg}");
        }
        assert!(!svg.contains("<stripe>"));
        let narrow = super::svg(
            &series(),
            &ChartText {
                money: &money,
                day: &day,
                provider: &provider,
            },
            Size::Narrow,
        )
        .unwrap();
        assert!(narrow.starts_with("<svg width=\"480\" height=\"300\""));
        assert_eq!(narrow.matches("fill=\"#E69F00\"").count(), 3);
    }

    #[test]
    fn a_span_without_payments_draws_an_empty_axis() {
        let (money, day, provider) = text();
        let empty = DailySeries {
            days: vec![date(2026, 3, 10)],
            providers: vec![],
            amounts: vec![],
            counts: vec![],
        };
        let svg = svg(
            &empty,
            &ChartText {
                money: &money,
                day: &day,
                provider: &provider,
            },
            Size::Wide,
        )
        .unwrap();
        assert!(svg.contains("10/03"));
        assert!(!svg.contains("#0072B2"));
    }
}
