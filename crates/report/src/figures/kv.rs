//! Key-value stores (`app-kv`; seed 004 Figures 20, 22 and 27): each server's throughput
//! per workload and value size, one bar per target its heap was placed on, and the table
//! of those throughputs against the first target.

use super::{Ctx, Figure, Panel, bar, page_size_flag};
use crate::data;
use crate::markup::esc;
use crate::noise::estimate;
use crate::plot::BarChart;
use crate::select::index_of;
use pmscope_core::record::Record;
use pmscope_core::vocab::p;

/// The target a record's heap was on: the verified target, or the `target` param of a
/// record without one.
fn spec(r: &Record) -> &str {
    match data::target(r) {
        "-" => r.text(p::TARGET).unwrap_or("-"),
        t => t,
    }
}

/// A point of a server: `get-heavy 1 KiB`, and `get-heavy 1 KiB, store 256 MiB` in a
/// store-size sweep (seed 004 Fig. 21), whose points differ only in the store.
fn point(r: &Record) -> String {
    let workload = r.text(p::WORKLOAD).unwrap_or("?");
    let point = match r.count(p::VALUE_BYTES) {
        Some(v) => format!("{workload} {}", data::bytes(v as f64)),
        None => workload.to_string(),
    };
    match r.count(p::STORE_BYTES) {
        Some(s) => format!("{point}, store {}", data::bytes(s as f64)),
        None => point,
    }
}

/// Thousand operations per second per workload and value size, one bar per target; one
/// chart per server.
pub struct KvThroughput;

impl Figure for KvThroughput {
    fn id(&self) -> &'static str {
        "app-kv"
    }
    fn title(&self) -> &'static str {
        "Key-value store throughput per heap target (seed 004 Figures 20, 22, 27)"
    }
    fn experiments(&self) -> &'static [&'static str] {
        &["app-kv", "app-placement", "comparison"]
    }
    fn render(&self, records: &[Record], ctx: &Ctx) -> Option<Panel> {
        let recs: Vec<&Record> = data::of(records, "app-kv")
            .filter(|r| data::median(r).is_some() && spec(r) != "-")
            .collect();
        let mut targets: Vec<String> = Vec::new();
        let mut servers: Vec<String> = Vec::new();
        for r in &recs {
            index_of(&mut targets, spec(r));
            index_of(&mut servers, r.text(p::SERVER).unwrap_or("server"));
        }
        let kops = |server: &str, target: &str, point_name: &str| {
            recs.iter()
                .find(|r| {
                    r.text(p::SERVER).unwrap_or("server") == server
                        && spec(r) == target
                        && point(r) == point_name
                })
                .and_then(|r| data::median(r))
                .map(|ops| ops / 1e3)
        };
        let mut svgs = Vec::new();
        let mut html = String::from("<table class=\"t5\"><thead><tr><th>server</th><th>point</th>");
        for (i, t) in targets.iter().enumerate() {
            html.push_str(&format!("<th>{} kops/s</th>", esc(t)));
            if i > 0 {
                html.push_str(&format!("<th>× {}</th>", esc(&targets[0])));
            }
        }
        html.push_str("</tr></thead><tbody>");
        for server in &servers {
            let of: Vec<&Record> = recs
                .iter()
                .copied()
                .filter(|r| r.text(p::SERVER).unwrap_or("server") == server)
                .collect();
            let mut categories = Vec::new();
            let mut bars = Vec::new();
            for r in &of {
                let (Some(ops), Some(group)) =
                    (estimate(r), targets.iter().position(|t| t == spec(r)))
                else {
                    continue;
                };
                bars.push(bar(index_of(&mut categories, &point(r)), group, ops, 1e-3));
            }
            // Where redis kept its append-only file, when it kept one.
            let aof = of
                .iter()
                .find(|r| r.text(p::AOF_DIRECTORY).is_some())
                .map(|r| {
                    let fs = r.text(p::FS_TYPE).unwrap_or("an unknown file system");
                    match r.text(p::DAX) {
                        Some(dax) => format!(", append-only file on {fs} dax={dax}"),
                        None => format!(", append-only file on {fs}"),
                    }
                })
                .unwrap_or_default();
            for c in &categories {
                html.push_str(&format!("<tr><td>{}</td><td>{}</td>", esc(server), esc(c)));
                let first = kops(server, &targets[0], c);
                for (i, t) in targets.iter().enumerate() {
                    let v = kops(server, t, c);
                    html.push_str(&v.map_or("<td>-</td>".into(), |v| format!("<td>{v:.1}</td>")));
                    if i > 0 {
                        html.push_str(&match (v, first) {
                            (Some(v), Some(f)) if f > 0.0 => format!("<td>{:.2}</td>", v / f),
                            _ => "<td>-</td>".into(),
                        });
                    }
                }
                html.push_str("</tr>");
            }
            svgs.push(crate::plot::bar_chart(&BarChart {
                y_label: format!("{server}: thousand operations/s (its own client{aof})"),
                categories,
                groups: targets.iter().map(|t| (t.clone(), ctx.colour(t))).collect(),
                bars,
                hmarks: vec![],
                flag: page_size_flag(of.iter().copied()),
            }));
        }
        html.push_str("</tbody></table>");
        (!recs.is_empty()).then_some(Panel {
            svgs,
            table: Some(html),
            targets,
        })
    }
}
