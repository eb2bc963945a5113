//! The two chart shapes the figures use, drawn with plotters' SVG backend. Log axes are
//! drawn as linear axes over log2 (bytes) or log10 values with labels mapped back, which
//! keeps one coordinate type for every combination. Points and bars carry the 95 %
//! interval of their figure, drawn as error bars with one legend entry saying so.

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

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
    /// Linear over counts (threads, jobs): ticks and labels at whole numbers only.
    Count,
}

impl Axis {
    fn to(self, v: f64) -> f64 {
        match self {
            Axis::Linear | Axis::Count => v,
            Axis::Bytes => v.max(1e-9).log2(),
            Axis::Log10 => v.max(1e-9).log10(),
        }
    }
    fn label(self, v: f64) -> String {
        match self {
            Axis::Linear => trim(v),
            Axis::Count => {
                if (v - v.round()).abs() > 0.01 {
                    String::new()
                } else {
                    format!("{:.0}", v.round())
                }
            }
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

    /// How many tick labels to ask plotters for over `lo..hi` (mapped values): a count
    /// axis asks for at most one per whole number, so its ticks land on whole numbers.
    fn labels(self, lo: f64, hi: f64) -> usize {
        match self {
            Axis::Count => ((hi.floor() - lo.ceil()).max(0.0) as usize + 1).min(12),
            _ => 12,
        }
    }
}

/// The legend entry of the error bars.
pub const INTERVAL_LEGEND: &str = "bars: 95 % interval of the median";

/// The colour of error bars' legend glyph.
const INTERVAL_GREY: RGBColor = RGBColor(80, 80, 80);

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
    /// The 95 % interval of each point's figure as (x, low, high), drawn as error bars;
    /// empty when the points have none.
    pub intervals: Vec<(f64, f64, f64)>,
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

/// A line chart's size in SVG pixels: the width of a report panel (full page width), so
/// its text is drawn at the size it was laid out for.
const SIZE: (u32, u32) = (1200, 420);

/// The font size of labels inside a chart (marks, points) and of the legend.
const LABEL_PX: f64 = 10.0;
const LEGEND_PX: f64 = 11.0;

/// The chart of a drawing: f64 on both axes (log axes as their logarithms).
type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// The drawing area of a whole chart.
type Area<'b> = DrawingArea<SVGBackend<'b>, plotters::coord::Shift>;

/// The width a text takes at a font size, generously estimated (no font metrics here: the
/// browser draws the text with its own sans-serif).
fn text_width(text: &str, px: f64) -> i32 {
    (text.chars().count() as f64 * px * 0.62).ceil() as i32 + 2
}

/// One legend entry's glyph.
enum Glyph {
    /// A curve: a short line.
    Line(RGBColor),
    /// A bar group: a filled box.
    Box(RGBColor),
    /// The error bars.
    Interval,
}

/// The column beside the plot that holds the legend: as wide as its longest entry.
fn legend_width(names: impl Iterator<Item = usize>) -> u32 {
    let longest = names.max().unwrap_or(0) as f64;
    (34.0 + longest * LEGEND_PX * 0.62).clamp(140.0, 460.0) as u32
}

/// Draws the legend into its column, one entry per line from the top of the plot.
fn draw_legend(area: &Area, entries: &[(String, Glyph)], top: i32) {
    let font = ("sans-serif", LEGEND_PX).into_font().color(&BLACK);
    for (i, (name, glyph)) in entries.iter().enumerate() {
        let y = top + 8 + 18 * i as i32;
        let _ = match glyph {
            Glyph::Line(c) => {
                area.draw(&PathElement::new(vec![(8, y), (26, y)], c.stroke_width(2)))
            }
            Glyph::Box(c) => area.draw(&Rectangle::new([(10, y - 5), (22, y + 5)], c.filled())),
            Glyph::Interval => {
                let st = INTERVAL_GREY.stroke_width(1);
                let _ = area.draw(&PathElement::new(vec![(17, y - 6), (17, y + 6)], st));
                let _ = area.draw(&PathElement::new(vec![(13, y - 6), (21, y - 6)], st));
                area.draw(&PathElement::new(vec![(13, y + 6), (21, y + 6)], st))
            }
        };
        let _ = area.draw(&Text::new(
            name.clone(),
            (32, y - (LEGEND_PX * 0.6) as i32),
            font.clone(),
        ));
    }
}

/// Places free labels (marks, points) inside the plot so that none overlaps another or
/// leaves the plot: each label tries a few spots around its anchor and is left out when
/// none is free (its mark or point is still drawn).
struct Placer {
    /// The plot's pixel rectangle (left, top, right, bottom).
    bounds: (i32, i32, i32, i32),
    /// Rectangles already taken.
    taken: Vec<(i32, i32, i32, i32)>,
}

impl Placer {
    fn new(chart: &Chart) -> Placer {
        let (x, y) = chart.plotting_area().get_pixel_range();
        Placer {
            bounds: (x.start, y.start, x.end, y.end),
            taken: Vec::new(),
        }
    }

    /// The offset from `anchor` (pixels) at which `text` fits, trying right of the anchor
    /// below and above, then left of it; `None` when every spot is taken.
    fn place(&mut self, anchor: (i32, i32), text: &str) -> Option<(i32, i32)> {
        let (w, h) = (text_width(text, LABEL_PX), (LABEL_PX * 1.3) as i32);
        let spots = [
            (3, 2),
            (3, -h - 2),
            (3, h + 4),
            (3, -2 * h - 4),
            (-w - 3, 2),
            (-w - 3, -h - 2),
            (3, 2 * h + 6),
            (3, -3 * h - 6),
        ];
        let (l, t, r, b) = self.bounds;
        let free = |&(dx, dy): &(i32, i32)| {
            let rect = (
                anchor.0 + dx,
                anchor.1 + dy,
                anchor.0 + dx + w,
                anchor.1 + dy + h,
            );
            let inside = rect.0 >= l && rect.1 >= t && rect.2 <= r && rect.3 <= b;
            inside
                && !self
                    .taken
                    .iter()
                    .any(|o| rect.0 < o.2 && o.0 < rect.2 && rect.1 < o.3 && o.1 < rect.3)
        };
        let at = spots.iter().copied().find(free)?;
        self.taken.push((
            anchor.0 + at.0,
            anchor.1 + at.1,
            anchor.0 + at.0 + w,
            anchor.1 + at.1 + h,
        ));
        Some(at)
    }

    /// Draws `text` near the data point `at`, where it fits.
    fn label(&mut self, chart: &mut Chart, at: (f64, f64), text: &str, colour: RGBColor) {
        let anchor = chart.backend_coord(&at);
        if let Some(off) = self.place(anchor, text) {
            let font = ("sans-serif", LABEL_PX).into_font().color(&colour);
            let _ = chart.draw_series(std::iter::once(
                EmptyElement::at(at) + Text::new(text.to_string(), off, font),
            ));
        }
    }
}

/// The ranges of a line chart's axes, in mapped units: every point, interval end and mark.
fn line_bounds(c: &LineChart) -> ((f64, f64), (f64, f64)) {
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
        .flat_map(|s| {
            s.points
                .iter()
                .map(|p| p.1)
                .chain(s.intervals.iter().flat_map(|i| [i.1, i.2]))
        })
        .chain(c.hmarks.iter().map(|m| m.0))
        .chain(c.points.iter().map(|p| p.1))
        .map(|v| c.y.to(v));
    (
        bounds(xs, false),
        bounds(ys, matches!(c.y, Axis::Linear | Axis::Count)),
    )
}

/// The figure's flag above everything (red), and the area left for the chart.
fn flagged<'b>(root: Area<'b>, flag: &Option<String>) -> Area<'b> {
    match flag {
        Some(f) => root
            .titled(f, ("sans-serif", 13).into_font().color(&RED))
            .unwrap_or(root),
        None => root,
    }
}

/// Draws a line chart as an SVG document: the plot, and its legend in a column to the right.
pub fn line_chart(c: &LineChart) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        let _ = root.fill(&WHITE);
        let mut entries: Vec<(String, Glyph)> = c
            .series
            .iter()
            .map(|s| (s.name.clone(), Glyph::Line(s.colour)))
            .collect();
        if c.series.iter().any(|s| !s.intervals.is_empty()) {
            entries.push((INTERVAL_LEGEND.into(), Glyph::Interval));
        }
        let body = flagged(root, &c.flag);
        let width = body.dim_in_pixel().0;
        let (left, right) =
            body.split_horizontally(width - legend_width(entries.iter().map(|e| e.0.len())));
        let ((x0, x1), (y0, y1)) = line_bounds(c);
        let mut builder = ChartBuilder::on(&left);
        builder
            .margin(12)
            .x_label_area_size(42)
            .y_label_area_size(64);
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
            .x_labels(xa.labels(x0, x1))
            .y_labels(ya.labels(y0, y1).min(10))
            .label_style(("sans-serif", 11))
            .light_line_style(RGBColor(235, 235, 235))
            .draw();
        let mut placer = Placer::new(&chart);
        marks(&mut chart, &mut placer, c, (x0, x1), (y0, y1));
        for s in &c.series {
            let pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .map(|p| (c.x.to(p.0), c.y.to(p.1)))
                .collect();
            let colour = s.colour;
            let _ = chart.draw_series(LineSeries::new(pts.clone(), colour.stroke_width(2)));
            let _ = chart.draw_series(pts.iter().map(|p| Circle::new(*p, 3, colour.filled())));
            for &(x, lo, hi) in &s.intervals {
                error_bar(&mut chart, c.x.to(x), (c.y.to(lo), c.y.to(hi)), colour);
            }
        }
        for (x, y, label, colour) in &c.points {
            let p = (c.x.to(*x), c.y.to(*y));
            let _ = chart.draw_series(std::iter::once(TriangleMarker::new(p, 6, colour.filled())));
            placer.label(&mut chart, p, label, *colour);
        }
        let top = chart.plotting_area().get_pixel_range().1.start - right.get_base_pixel().1;
        draw_legend(&right, &entries, top);
        let _ = body.present();
    }
    described(
        svg,
        &format!(
            "line chart of {} curves: {}",
            c.series.len(),
            c.series
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        ),
    )
}

/// The most curves one axis draws: beyond it a figure draws small multiples (one panel
/// per op or per target), as a reader cannot tell more lines apart on one axis.
pub const MAX_CURVES: usize = 6;

/// `svg` with an accessible description (`<desc>`, which screen readers read and browsers
/// do not draw) right after its root element: what the chart shows, curve by curve.
fn described(svg: String, text: &str) -> String {
    let Some(open) = svg
        .find("<svg")
        .and_then(|at| svg[at..].find('>').map(|e| at + e + 1))
    else {
        return svg;
    };
    format!(
        "{}<desc>{}</desc>{}",
        &svg[..open],
        crate::markup::esc(text),
        &svg[open..]
    )
}

/// A line chart's vertical marks (labelled near the top) and horizontal marks (dashed,
/// labelled near the right end).
fn marks(
    chart: &mut Chart,
    placer: &mut Placer,
    c: &LineChart,
    (x0, x1): (f64, f64),
    (y0, y1): (f64, f64),
) {
    for (x, label) in &c.vmarks {
        let x = c.x.to(*x);
        let style = RGBColor(150, 150, 150).stroke_width(1);
        let _ = chart.draw_series(LineSeries::new([(x, y0), (x, y1)], style));
        placer.label(chart, (x, y1), label, RGBColor(100, 100, 100));
    }
    for (y, label, colour) in &c.hmarks {
        let y = c.y.to(*y);
        let _ = chart.draw_series(DashedLineSeries::new(
            [(x0, y), (x1, y)],
            6,
            4,
            colour.stroke_width(1),
        ));
        let at = x1 - (x1 - x0) * 0.01;
        let back = text_width(label, LABEL_PX);
        let anchor = chart.backend_coord(&(at, y));
        if let Some(off) = placer.place((anchor.0 - back - 3, anchor.1), label) {
            let font = ("sans-serif", LABEL_PX).into_font().color(colour);
            let _ = chart.draw_series(std::iter::once(
                EmptyElement::at((at, y))
                    + Text::new(label.clone(), (off.0 - back - 3, off.1), font),
            ));
        }
    }
}

/// An error bar from `lo` to `hi` at `x` (mapped units), capped at both ends.
fn error_bar(chart: &mut Chart, x: f64, (lo, hi): (f64, f64), colour: RGBColor) {
    if !(lo.is_finite() && hi.is_finite()) || hi <= lo {
        return;
    }
    let style = colour.stroke_width(1);
    let _ = chart.draw_series(std::iter::once(PathElement::new(
        vec![(x, lo), (x, hi)],
        style,
    )));
    let _ = chart.draw_series(
        [lo, hi]
            .into_iter()
            .map(|y| EmptyElement::at((x, y)) + PathElement::new(vec![(-4, 0), (4, 0)], style)),
    );
}

/// One bar of a bar chart.
pub struct Bar {
    /// Its category (a position on the x axis).
    pub category: usize,
    /// Its group (legend entry and colour).
    pub group: usize,
    /// Its height.
    pub value: f64,
    /// The 95 % interval of its height (low, high), drawn as an error bar.
    pub interval: Option<(f64, f64)>,
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

/// Draws a grouped bar chart as an SVG document: the bars, their category names rotated
/// below them, and the legend in a column to the right.
pub fn bar_chart(c: &BarChart) -> String {
    let mut svg = String::new();
    {
        let mut entries: Vec<(String, Glyph)> = c
            .groups
            .iter()
            .map(|(n, col)| (n.clone(), Glyph::Box(*col)))
            .collect();
        if c.bars.iter().any(|b| b.interval.is_some()) {
            entries.push((INTERVAL_LEGEND.into(), Glyph::Interval));
        }
        let legend = legend_width(entries.iter().map(|e| e.0.len()));
        let bars = c.categories.len() as u32 * c.groups.len().max(1) as u32;
        let width = (SIZE.0).max(legend + 100 + 14 * bars).min(1800);
        let longest = c.categories.iter().map(|n| n.chars().count()).max();
        let names = 16 + text_width(&"x".repeat(longest.unwrap_or(1)), LABEL_PX) as u32;
        let root =
            SVGBackend::with_string(&mut svg, (width, SIZE.1 - 42 + names)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let body = flagged(root, &c.flag);
        let (left, right) = body.split_horizontally(body.dim_in_pixel().0 - legend);
        let n = c.categories.len().max(1) as f64;
        let (_, y1) = bounds(
            c.bars
                .iter()
                .flat_map(|b| std::iter::once(b.value).chain(b.interval.map(|i| i.1)))
                .chain(c.hmarks.iter().map(|m| m.0)),
            true,
        );
        let mut builder = ChartBuilder::on(&left);
        builder
            .margin(12)
            .x_label_area_size(names)
            .y_label_area_size(64);
        let Ok(mut chart) = builder.build_cartesian_2d(-0.5..n - 0.5, 0.0..y1) else {
            return svg_error();
        };
        let _ = chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(c.categories.len() * 2 + 1)
            .x_label_formatter(&|_| String::new())
            .label_style(("sans-serif", 11))
            .y_desc(c.y_label.as_str())
            .y_label_formatter(&|v| trim(*v))
            .light_line_style(RGBColor(235, 235, 235))
            .draw();
        let groups = c.groups.len().max(1) as f64;
        let w = 0.8 / groups;
        for (g, (_, colour)) in c.groups.iter().enumerate() {
            let rects = c.bars.iter().filter(|b| b.group == g).map(|b| {
                let left = b.category as f64 - 0.4 + w * g as f64;
                Rectangle::new([(left, 0.0), (left + w * 0.92, b.value)], colour.filled())
            });
            let _ = chart.draw_series(rects);
        }
        for b in &c.bars {
            if let Some(i) = b.interval {
                let centre = b.category as f64 - 0.4 + w * (b.group as f64 + 0.46);
                error_bar(&mut chart, centre, i, INTERVAL_GREY);
            }
        }
        // The category names below the axis, reading downwards from their bars' centre
        // (plotters' own rotated tick labels are centred on the axis, over the bars).
        let font = ("sans-serif", LABEL_PX)
            .into_font()
            .transform(FontTransform::Rotate90)
            .color(&BLACK)
            .pos(Pos::new(HPos::Left, VPos::Center));
        let _ = chart.draw_series(c.categories.iter().enumerate().map(|(i, name)| {
            EmptyElement::at((i as f64, 0.0)) + Text::new(name.clone(), (0, 6), font.clone())
        }));
        let mut placer = Placer::new(&chart);
        for (y, label, colour) in &c.hmarks {
            let _ = chart.draw_series(DashedLineSeries::new(
                [(-0.5, *y), (n - 0.5, *y)],
                6,
                4,
                colour.stroke_width(1),
            ));
            placer.label(&mut chart, (-0.45, *y), label, *colour);
        }
        let top = chart.plotting_area().get_pixel_range().1.start - right.get_base_pixel().1;
        draw_legend(&right, &entries, top);
        let _ = body.present();
    }
    described(
        svg,
        &format!(
            "bar chart of {} groups over {} categories: {}",
            c.groups.len(),
            c.categories.len(),
            c.groups
                .iter()
                .map(|g| g.0.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        ),
    )
}

fn svg_error() -> String {
    String::from(
        "<svg xmlns=\"http://www.w3.org/2000/svg\"><text x=\"10\" y=\"20\">chart could not be laid out</text></svg>",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_axis_ticks_and_labels_whole_numbers_only() {
        assert_eq!(Axis::Count.label(2.0), "2");
        assert_eq!(Axis::Count.label(1.5), "");
        assert_eq!(Axis::Count.label(1.2), "");
        // 0.85..4.15 (threads 1-4 padded): at most four ticks, so one per whole number.
        assert_eq!(Axis::Count.labels(0.85, 4.15), 4);
        assert_eq!(Axis::Count.labels(0.0, 100.0), 12);
        assert_eq!(Axis::Linear.label(1.5), "1.5");
    }

    #[test]
    fn labels_are_placed_apart_or_left_out() {
        let mut p = Placer {
            bounds: (0, 0, 300, 100),
            taken: Vec::new(),
        };
        let a = p.place((10, 10), "32 KiB 1 ns").unwrap();
        let b = p.place((10, 10), "32 KiB 1 ns").unwrap();
        assert_ne!(a, b, "the same anchor twice: the second label moves");
        // Every spot around a corner anchor is outside the plot or taken.
        for _ in 0..8 {
            p.place((10, 10), "32 KiB 1 ns");
        }
        assert_eq!(p.place((10, 10), "32 KiB 1 ns"), None);
        let (l, t, r, b) = p.bounds;
        assert!(
            p.taken
                .iter()
                .all(|o| o.0 >= l && o.1 >= t && o.2 <= r && o.3 <= b)
        );
    }
}
