//! PolyBench kernels (`poly`, seed 000 Table 1): the ref/opt ratio per kernel and target,
//! and Table 1's layout of the times.

use super::{Ctx, Figure, Panel, page_size_flag};
use crate::data;
use crate::markup::esc;
use crate::noise::{Estimate, estimate};
use crate::plot::{Bar, BarChart};
use crate::select::index_of;
use plotters::style::RGBColor;
use pmscope_core::record::Record;
use pmscope_core::vocab::p;

/// Bars of ref time / opt time per kernel, one per target (Table 1's "Ratio"), under a
/// table of the median times per target and variant.
pub struct PolyKernels;

/// The median time of a kernel's variant on a target, with its interval.
fn timed(recs: &[&Record], target: &str, kernel: &str, variant: &str) -> Option<Estimate> {
    recs.iter()
        .find(|r| {
            data::target(r) == target
                && r.text(p::KERNEL) == Some(kernel)
                && r.text(p::VARIANT) == Some(variant)
        })
        .and_then(|r| estimate(r))
}

/// The median time of a kernel's variant on a target.
fn time(recs: &[&Record], target: &str, kernel: &str, variant: &str) -> Option<f64> {
    timed(recs, target, kernel, variant).map(|e| e.value)
}

/// The range of ref/opt the two times' intervals allow.
fn ratio_interval(refs: Option<Estimate>, opt: Option<Estimate>) -> Option<(f64, f64)> {
    let (a, b) = (refs?, opt?);
    (a.known && b.known && b.low > 0.0 && b.high > 0.0).then(|| (a.low / b.high, a.high / b.low))
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

impl Figure for PolyKernels {
    fn id(&self) -> &'static str {
        "poly"
    }
    fn title(&self) -> &'static str {
        "PolyBench kernels: ref/opt ratio and times per target (seed 000 Table 1)"
    }
    fn experiments(&self) -> &'static [&'static str] {
        &["poly", "comparison"]
    }
    fn render(&self, records: &[Record], ctx: &Ctx) -> Option<Panel> {
        let recs: Vec<&Record> = data::of(records, "poly").collect();
        let targets = data::targets(recs.iter().copied());
        let mut kernels: Vec<String> = Vec::new();
        let mut variants: Vec<String> = Vec::new();
        for r in &recs {
            if let (Some(k), Some(v)) = (r.text(p::KERNEL), r.text(p::VARIANT)) {
                index_of(&mut kernels, k);
                index_of(&mut variants, v);
            }
        }
        if kernels.is_empty() || targets.is_empty() {
            return None;
        }
        let both = variants.iter().any(|v| v == "ref") && variants.iter().any(|v| v == "opt");
        let mut svgs = Vec::new();
        if both {
            let mut bars = Vec::new();
            for (category, k) in kernels.iter().enumerate() {
                for (group, t) in targets.iter().enumerate() {
                    if let Some(v) = ratio(time(&recs, t, k, "ref"), time(&recs, t, k, "opt")) {
                        bars.push(Bar {
                            category,
                            group,
                            value: v,
                            interval: ratio_interval(
                                timed(&recs, t, k, "ref"),
                                timed(&recs, t, k, "opt"),
                            ),
                        });
                    }
                }
            }
            svgs.push(crate::plot::bar_chart(&BarChart {
                y_label: "ref time / opt time (> 1: locality optimisation helps)".into(),
                categories: kernels.clone(),
                groups: targets.iter().map(|t| (t.clone(), ctx.colour(t))).collect(),
                bars,
                hmarks: vec![(1.0, "1 (no gain)".into(), RGBColor(90, 90, 90))],
                flag: page_size_flag(recs.iter().copied()),
            }));
        }
        let mut html = String::from("<table class=\"t5\"><thead><tr><th>kernel</th><th>MiB</th>");
        for t in &targets {
            for v in &variants {
                html.push_str(&format!("<th>{} {} (s)</th>", esc(t), esc(v)));
            }
            if both {
                html.push_str("<th>ratio</th>");
            }
        }
        html.push_str("</tr></thead><tbody>");
        for k in &kernels {
            let mib = recs
                .iter()
                .find(|r| r.text(p::KERNEL) == Some(k))
                .and_then(|r| r.count(p::DATA_BYTES))
                .map_or(0.0, |b| b as f64 / f64::from(1 << 20));
            html.push_str(&format!("<tr><td>{}</td><td>{mib:.1}</td>", esc(k)));
            let cell = |x: Option<f64>, digits: usize| {
                x.map_or("<td>-</td>".into(), |x| format!("<td>{x:.digits$}</td>"))
            };
            for t in &targets {
                for v in &variants {
                    html.push_str(&cell(time(&recs, t, k, v), 3));
                }
                if both {
                    html.push_str(&cell(
                        ratio(time(&recs, t, k, "ref"), time(&recs, t, k, "opt")),
                        2,
                    ));
                }
            }
            html.push_str("</tr>");
        }
        html.push_str("</tbody></table>");
        if svgs.is_empty()
            && let Some(flag) = page_size_flag(recs.iter().copied())
        {
            html = format!("<p class=\"flag\">{}</p>{html}", esc(&flag));
        }
        Some(Panel {
            svgs,
            table: Some(html),
            targets,
        })
    }
}
