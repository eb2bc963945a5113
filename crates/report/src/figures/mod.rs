//! The figure registry: one file per figure family. A figure draws one run's records of its
//! experiments and returns nothing when they are absent, so each appears only with its data.

mod bandwidth;
mod files;
mod inst;
mod kmer;
mod kv;
mod latency;
mod loaded;
mod poly;
mod probe;
mod rap;
mod sync;

use crate::Options;
use crate::data;
use crate::noise::Estimate;
use crate::plot;
use plotters::style::RGBColor;
use pmscope_core::record::Record;

/// What a figure drew for one run.
#[derive(Debug, Clone, Default)]
pub struct Panel {
    /// SVG documents (a family may draw one chart per op).
    pub svgs: Vec<String>,
    /// An HTML table (the Table 5 layout).
    pub table: Option<String>,
    /// The targets the panel shows, by spec.
    pub targets: Vec<String>,
}

/// The drawing context shared by the figures of one report.
pub struct Ctx<'a> {
    /// The report's options (caches, reference).
    pub options: &'a Options,
    /// Every target of the report in first-seen order: a target's colour is its index here.
    pub targets: &'a [String],
}

impl Ctx<'_> {
    /// The colour of a target (by spec), the same in every figure.
    pub fn colour(&self, spec: &str) -> RGBColor {
        plot::colour(
            self.targets
                .iter()
                .position(|t| t == spec)
                .unwrap_or(self.targets.len()),
        )
    }

    /// The reference value of a quantity, with its label, when a reference is overlaid.
    pub fn reference(&self, quantity: &str) -> Option<(f64, String)> {
        let r = self.options.reference.as_ref()?;
        r.value(quantity).map(|e| (e.value, e.label.clone()))
    }
}

/// One figure family of the report.
pub trait Figure: Sync {
    /// A stable identifier (also the SVG file name stem).
    fn id(&self) -> &'static str;
    /// The heading.
    fn title(&self) -> &'static str;
    /// The experiments whose records it reads (their warnings are shown beside it).
    fn experiments(&self) -> &'static [&'static str];
    /// Draws a run's records, or `None` when they hold none of its data.
    fn render(&self, records: &[Record], ctx: &Ctx) -> Option<Panel>;
}

/// Every figure, in report order.
pub static FIGURES: &[&dyn Figure] = &[
    &latency::LatencyVsWorkingSet,
    &latency::LatencyHistogram,
    &latency::BlockAccessLatency,
    &inst::InstructionLatency,
    &inst::Table5,
    &inst::InstHistogram,
    &bandwidth::BandwidthVsThreads,
    &bandwidth::BandwidthVsAccessSize,
    &bandwidth::BestThreadsVsAccessSize,
    &bandwidth::MixedReadWrite,
    &loaded::LoadedLatency,
    &sync::SyncCost,
    &rap::ReadAfterPersist,
    &kmer::KmerThroughput,
    &kmer::KmerBench,
    &files::FileOpLatency,
    &files::FioBandwidth,
    &kv::KvThroughput,
    &poly::PolyKernels,
    &probe::BufferProbes,
];

/// The flag drawn on a figure comparing targets whose verified page sizes differ (seed
/// 000: the difference then includes the TLB effect), or `None`.
pub fn page_size_flag<'a>(records: impl IntoIterator<Item = &'a Record>) -> Option<String> {
    let mut seen: Vec<(String, Option<u64>)> = Vec::new();
    for r in records {
        let t = data::target(r);
        if t != "-" && !seen.iter().any(|s| s.0 == t) {
            seen.push((t.to_string(), data::page_size(r)));
        }
    }
    let first = seen.first()?.1;
    if seen.iter().all(|s| s.1 == first) {
        return None;
    }
    let list: Vec<String> = seen
        .iter()
        .map(|(t, p)| format!("{t} {}", data::page_name(*p)))
        .collect();
    Some(format!(
        "⚠ page sizes differ ({}): differences include the TLB effect",
        list.join(", ")
    ))
}

/// A log-log chart of latency histograms (bucket lower bound against count), one series
/// each: the per-load and the per-access distributions share it.
pub(crate) fn histogram_chart<'a>(
    series: Vec<plot::Series>,
    unit: &str,
    records: impl IntoIterator<Item = &'a Record>,
) -> String {
    plot::line_chart(&plot::LineChart {
        x_label: format!("ns per {unit} (bucket lower bound)"),
        y_label: format!("{unit}s (log)"),
        x: plot::Axis::Log10,
        y: plot::Axis::Log10,
        series,
        vmarks: vec![],
        hmarks: vec![],
        points: vec![],
        flag: page_size_flag(records),
    })
}

/// A curve of (x, estimate) points as a series: the medians joined, their 95 % intervals
/// as error bars.
pub(crate) fn series(name: String, colour: RGBColor, points: &[(f64, Estimate)]) -> plot::Series {
    plot::Series {
        name,
        colour,
        points: points.iter().map(|(x, e)| (*x, e.value)).collect(),
        intervals: points
            .iter()
            .filter(|(_, e)| e.known && e.high > e.low)
            .map(|(x, e)| (*x, e.low, e.high))
            .collect(),
    }
}

/// A bar of a point's figure times `scale` (µs from ns, thousands from units), with its
/// 95 % interval.
pub(crate) fn bar(category: usize, group: usize, e: Estimate, scale: f64) -> plot::Bar {
    plot::Bar {
        category,
        group,
        value: e.value * scale,
        interval: (e.known && e.high > e.low).then_some((e.low * scale, e.high * scale)),
    }
}

/// The non-empty buckets of a histogram as (lower bound, count) points.
pub(crate) fn histogram_points(h: &pmscope_core::summary::LogHistogram) -> Vec<(f64, f64)> {
    h.lower
        .iter()
        .zip(&h.count)
        .filter(|(_, c)| **c > 0)
        .map(|(l, c)| (*l, *c as f64))
        .collect()
}
