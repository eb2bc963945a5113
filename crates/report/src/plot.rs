//! The two chart shapes the figures use, drawn with plotters' SVG backend. Log axes are
//! drawn as linear axes over log2 (bytes) or log10 values with labels mapped back, which
//! keeps one coordinate type for every combination.

use plotters::prelude::*;

/// Series colours; a target keeps its colour across every figure of a report.
const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

/// The colour of the reference profile's series and marks.
pub const REFERENCE: RGBColor = RGBColor(90, 90, 90);

/// The colour of the n-th target of the report.
pub fn colour(n: usize) -> RGBColor {
    PALETTE[n % PALETTE.len()]
}

/// A lighter shade of a colour (for the second bar of a pair).
pub fn light(c: RGBColor) -> RGBColor {
    let mix = |v: u8| (v as u16 + (255 - v as u16) / 2) as u8;
    RGBColor(mix(c.0), mix(c.1), mix(c.2))
}

/// How an axis maps values.
#[derive(Clone, Copy, PartialEq)]
pub enum Axis {
    /// Linear, plain numbers.
    Linear,
    /// Log2, labelled as bytes.
    Bytes,
    /// Log10, plain numbers.
    Log10,
}

impl Axis {
    fn to(self, v: f64) -> f64 {
        match self {
            Axis::Linear => v,
            Axis::Bytes => v.max(1e-9).log2(),
            Axis::Log10 => v.max(1e-9).log10(),
        }
    }
    fn label(self, v: f64) -> String {
        match self {
            Axis::Linear => trim(v),
            Axis::Bytes => {
                if (v - v.round()).abs() > 0.01 {
                    String::new()
                } else {
                    crate::data::bytes(2f64.powf(v.round()))
                }
            }
            Axis::Log10 => {
                if (v - v.round()).abs() > 0.01 {
                    String::new()
                } else {
                    trim(10f64.powf(v.round()))
                }
            }
        }
    }
}

fn trim(v: f64) -> String {
    if v == 0.0 || v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.1}").trim_end_matches(".0").to_string()
    } else {
        format!("{v:.2}")
    }
}

/// One curve.
pub struct Series {
    /// The legend entry.
    pub name: String,
    /// Its colour.
    pub colour: RGBColor,
    /// (x, y) in data units, in x order.
    pub points: Vec<(f64, f64)>,
}

/// A line chart: curves, vertical and horizontal marks, labelled points and a flag line.
pub struct LineChart {
    /// The x axis's title.
    pub x_label: String,
    /// The y axis's title.
    pub y_label: String,
    /// How x maps.
    pub x: Axis,
    /// How y maps.
    pub y: Axis,
    /// The curves.
    pub series: Vec<Series>,
    /// Vertical marks (x, label).
    pub vmarks: Vec<(f64, String)>,
    /// Horizontal marks (y, label, colour).
    pub hmarks: Vec<(f64, String, RGBColor)>,
    /// Marked points (x, y, label, colour).
    pub points: Vec<(f64, f64, String, RGBColor)>,
    /// A warning drawn on the figure itself (e.g. mixed page sizes).
    pub flag: Option<String>,
}

fn bounds(vals: impl Iterator<Item = f64>, pad_zero: bool) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in vals.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if pad_zero && lo > 0.0 {
        lo = 0.0;
    }
    if hi - lo < 1e-9 {
        hi = lo + 1.0;
    }
    let pad = (hi - lo) * 0.05;
    (lo - if pad_zero { 0.0 } else { pad }, hi + pad)
}

const SIZE: (u32, u32) = (620, 380);

/// Draws a line chart as an SVG document.
pub fn line_chart(c: &LineChart) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        let _ = root.fill(&WHITE);
        let xs = c
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .chain(c.vmarks.iter().map(|m| m.0))
            .chain(c.points.iter().map(|p| p.0))
            .map(|v| c.x.to(v));
        let ys = c
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .chain(c.hmarks.iter().map(|m| m.0))
            .chain(c.points.iter().map(|p| p.1))
            .map(|v| c.y.to(v));
        let (x0, x1) = bounds(xs, false);
        let (y0, y1) = bounds(ys, c.y == Axis::Linear);
        let mut builder = ChartBuilder::on(&root);
        builder
            .margin(12)
            .x_label_area_size(42)
            .y_label_area_size(56);
        if let Some(flag) = &c.flag {
            builder.caption(flag, ("sans-serif", 13).into_font().color(&RED));
        }
        let Ok(mut chart) = builder.build_cartesian_2d(x0..x1, y0..y1) else {
            return svg_error();
        };
        let (xa, ya) = (c.x, c.y);
        let _ = chart
            .configure_mesh()
            .x_desc(c.x_label.as_str())
            .y_desc(c.y_label.as_str())
            .x_label_formatter(&|v| xa.label(*v))
            .y_label_formatter(&|v| ya.label(*v))
            .x_labels(12)
            .label_style(("sans-serif", 11))
            .light_line_style(RGBColor(235, 235, 235))
            .draw();
        for (x, label) in &c.vmarks {
            let x = c.x.to(*x);
            let style = RGBColor(150, 150, 150).stroke_width(1);
            let _ = chart.draw_series(LineSeries::new([(x, y0), (x, y1)], style));
            let _ = chart.draw_series(std::iter::once(Text::new(
                label.clone(),
                (x, y1),
                ("sans-serif", 10)
                    .into_font()
                    .color(&RGBColor(100, 100, 100)),
            )));
        }
        for (y, label, colour) in &c.hmarks {
            let y = c.y.to(*y);
            let _ = chart.draw_series(DashedLineSeries::new(
                [(x0, y), (x1, y)],
                6,
                4,
                colour.stroke_width(1),
            ));
            let _ = chart.draw_series(std::iter::once(Text::new(
                label.clone(),
                (x0, y),
                ("sans-serif", 10).into_font().color(colour),
            )));
        }
        for s in &c.series {
            let pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .map(|p| (c.x.to(p.0), c.y.to(p.1)))
                .collect();
            let colour = s.colour;
            if let Ok(anno) =
                chart.draw_series(LineSeries::new(pts.clone(), colour.stroke_width(2)))
            {
                anno.label(s.name.clone()).legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], colour.stroke_width(2))
                });
            }
            let _ = chart.draw_series(pts.iter().map(|p| Circle::new(*p, 3, colour.filled())));
        }
        for (x, y, label, colour) in &c.points {
            let p = (c.x.to(*x), c.y.to(*y));
            let _ = chart.draw_series(std::iter::once(TriangleMarker::new(p, 6, colour.filled())));
            let _ = chart.draw_series(std::iter::once(Text::new(
                label.clone(),
                p,
                ("sans-serif", 10).into_font().color(colour),
            )));
        }
        let _ = chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(180, 180, 180))
            .label_font(("sans-serif", 11))
            .draw();
        let _ = root.present();
    }
    svg
}

/// One bar of a bar chart.
pub struct Bar {
    /// Its category (a position on the x axis).
    pub category: usize,
    /// Its group (legend entry and colour).
    pub group: usize,
    /// Its height.
    pub value: f64,
}

/// A grouped bar chart: categories along x, one bar per group in each.
pub struct BarChart {
    /// The y axis's title.
    pub y_label: String,
    /// The category names.
    pub categories: Vec<String>,
    /// The groups (legend name, colour).
    pub groups: Vec<(String, RGBColor)>,
    /// The bars.
    pub bars: Vec<Bar>,
    /// Horizontal marks (y, label, colour).
    pub hmarks: Vec<(f64, String, RGBColor)>,
    /// A warning drawn on the figure itself.
    pub flag: Option<String>,
}

/// Draws a grouped bar chart as an SVG document.
pub fn bar_chart(c: &BarChart) -> String {
    let mut svg = String::new();
    {
        let width = SIZE
            .0
            .max(60 + 28 * c.categories.len() as u32 * c.groups.len().max(1) as u32 / 2);
        let root =
            SVGBackend::with_string(&mut svg, (width.min(1300), SIZE.1 + 40)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let n = c.categories.len().max(1) as f64;
        let (_, y1) = bounds(
            c.bars
                .iter()
                .map(|b| b.value)
                .chain(c.hmarks.iter().map(|m| m.0)),
            true,
        );
        let mut builder = ChartBuilder::on(&root);
        builder
            .margin(12)
            .x_label_area_size(80)
            .y_label_area_size(56);
        if let Some(flag) = &c.flag {
            builder.caption(flag, ("sans-serif", 13).into_font().color(&RED));
        }
        let Ok(mut chart) = builder.build_cartesian_2d(-0.5..n - 0.5, 0.0..y1) else {
            return svg_error();
        };
        let cats = c.categories.clone();
        let _ = chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(c.categories.len() * 2 + 1)
            .x_label_formatter(&|v| {
                let i = v.round();
                if (v - i).abs() > 0.01 || i < 0.0 {
                    return String::new();
                }
                cats.get(i as usize).cloned().unwrap_or_default()
            })
            .x_label_style(
                ("sans-serif", 10)
                    .into_font()
                    .transform(FontTransform::Rotate90),
            )
            .y_desc(c.y_label.as_str())
            .y_label_formatter(&|v| trim(*v))
            .label_style(("sans-serif", 11))
            .light_line_style(RGBColor(235, 235, 235))
            .draw();
        let groups = c.groups.len().max(1) as f64;
        let w = 0.8 / groups;
        for (g, (name, colour)) in c.groups.iter().enumerate() {
            let colour = *colour;
            let rects = c.bars.iter().filter(|b| b.group == g).map(|b| {
                let left = b.category as f64 - 0.4 + w * g as f64;
                Rectangle::new([(left, 0.0), (left + w * 0.92, b.value)], colour.filled())
            });
            if let Ok(anno) = chart.draw_series(rects) {
                anno.label(name.clone()).legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 12, y + 5)], colour.filled())
                });
            }
        }
        for (y, label, colour) in &c.hmarks {
            let _ = chart.draw_series(DashedLineSeries::new(
                [(-0.5, *y), (n - 0.5, *y)],
                6,
                4,
                colour.stroke_width(1),
            ));
            let _ = chart.draw_series(std::iter::once(Text::new(
                label.clone(),
                (-0.45, *y),
                ("sans-serif", 10).into_font().color(colour),
            )));
        }
        let _ = chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(180, 180, 180))
            .label_font(("sans-serif", 11))
            .draw();
        let _ = root.present();
    }
    svg
}

fn svg_error() -> String {
    String::from(
        "<svg xmlns=\"http://www.w3.org/2000/svg\"><text x=\"10\" y=\"20\">chart could not be laid out</text></svg>",
    )
}
