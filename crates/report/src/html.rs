//! The self-contained HTML document and the per-figure SVG files.

use crate::figures::{Ctx, FIGURES, Figure, Panel};
use crate::markup::esc;
use crate::observations::{Observation, Verdict, observations};
use crate::reference::Reference;
use crate::{Options, Run, data, trust, warnings};
use pmscope_core::record::Record;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn all_targets(runs: &[Run]) -> Vec<String> {
    data::targets(runs.iter().flat_map(|r| r.records.iter()))
}

/// The panels of one figure: (run, panel) for each run that has its data.
fn panels<'a>(fig: &dyn Figure, runs: &'a [Run], ctx: &Ctx) -> Vec<(&'a Run, Panel)> {
    runs.iter()
        .filter_map(|run| Some((run, fig.render(&run.records, ctx)?)))
        .collect()
}

/// The verified configuration of a target in a run: page sizes and their fractions, NUMA
/// node, persistence, MAP_SYNC, file system.
fn verified(records: &[Record], spec: &str) -> String {
    let Some(t) = records
        .iter()
        .filter_map(|r| r.target.as_ref())
        .find(|t| t.spec == spec)
    else {
        return "configuration not recorded".into();
    };
    let a = &t.achieved;
    let mut s = a.describe();
    if a.pages.smaps_sees_mapping && a.bytes > 0 {
        let fr: Vec<String> = [
            (a.pages.bytes_4k, "4k"),
            (a.pages.bytes_2m, "2m"),
            (a.pages.bytes_1g, "1g"),
        ]
        .iter()
        .filter(|(b, _)| *b > 0)
        .map(|(b, n)| format!("{n} {:.0}%", 100.0 * *b as f64 / a.bytes as f64))
        .collect();
        if fr.len() > 1 {
            let _ = write!(s, " [pages: {}]", fr.join(", "));
        }
    }
    if let Some(sync) = a.map_sync {
        let _ = write!(s, ", MAP_SYNC {}", if sync { "yes" } else { "no" });
    }
    if let Some(fs) = &a.filesystem {
        let _ = write!(s, ", {fs}");
    }
    s
}

/// The records a figure read (its experiments).
fn figure_records<'a>(fig: &dyn Figure, records: &'a [Record]) -> Vec<&'a Record> {
    records
        .iter()
        .filter(|r| fig.experiments().contains(&r.experiment.as_str()))
        .collect()
}

const STYLE: &str = "body{font-family:sans-serif;margin:16px;color:#222}\
h2{border-bottom:1px solid #ccc;padding-bottom:4px;margin-top:32px}\
.runs{display:flex;flex-direction:column;gap:16px}\
.panel{border:1px solid #ddd;padding:8px;box-sizing:border-box;width:100%}\
.panel svg{width:100%;height:auto;display:block;margin-bottom:6px}\
.trust{border:2px solid #8a4b00;background:#fffaf2;padding:4px 12px;margin:8px 0;font-size:13px}\
.trust h3{margin:6px 0}.trust li{margin:2px 0}\
li.suspect,p.suspect{color:#b00000}li.tie,p.tie{color:#666}li.missed{color:#8a4b00}\
.caption{font-size:13px}.swatch{display:inline-block;width:10px;height:10px;margin-right:4px}\
.warn{font-size:12px;color:#8a4b00;margin:2px 0}.flag{color:#c00;font-weight:bold}\
table.t5{border-collapse:collapse;font-size:13px}table.t5 td,table.t5 th{border:1px solid #bbb;padding:2px 6px;text-align:right}\
table.t5 td:first-child{text-align:left}.obs li{margin:3px 0}.meta{font-size:13px;color:#555}";

/// The report as one self-contained HTML document: inline SVG figures, inline style, no
/// script, nothing fetched from anywhere.
pub fn html(runs: &[Run], options: &Options) -> String {
    let targets = all_targets(runs);
    let ctx = Ctx {
        options,
        targets: &targets,
    };
    let title = options
        .title
        .clone()
        .unwrap_or_else(|| "pmscope report".into());
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body><h1>{}</h1>",
        esc(&title),
        esc(&title)
    );
    run_list(&mut h, runs);
    let obs = observations(runs);
    for run in runs {
        let suspects = obs
            .iter()
            .filter(|o| o.run == run.label && o.verdict == Verdict::Suspect)
            .count();
        trust::html(&mut h, &run.label, &run.records, suspects);
    }
    if let Some(r) = &options.reference {
        reference_list(&mut h, r);
    }
    observation_list(&mut h, &obs);
    for fig in FIGURES {
        figure_section(&mut h, *fig, runs, &ctx, &obs);
    }
    h.push_str("</body></html>\n");
    h
}

/// The runs: label, record count, host and pmscope version.
fn run_list(h: &mut String, runs: &[Run]) {
    h.push_str("<h2>Runs</h2><ul>");
    for run in runs {
        let sys = run.records.first().map(|r| &r.system);
        let _ = write!(
            h,
            "<li><b>{}</b> <span class=\"meta\">— {} records",
            esc(&run.label),
            run.records.len()
        );
        if let Some(s) = sys {
            let _ = write!(
                h,
                "; host {}, {}, kernel {}, {} CPUs, {} NUMA node(s){}",
                esc(&s.hostname),
                esc(&s.cpu_model),
                esc(&s.kernel),
                s.cpus_online,
                s.numa_nodes,
                if s.hypervisor {
                    ", virtual machine"
                } else {
                    ""
                }
            );
        }
        if let Some(r) = run.records.first() {
            let _ = write!(h, "; pmscope {}", esc(&r.pmscope_version));
        }
        h.push_str("</span></li>");
    }
    h.push_str("</ul>");
}

/// The overlaid reference profile and its sources.
fn reference_list(h: &mut String, r: &Reference) {
    let _ = write!(
        h,
        "<p class=\"meta\">Reference <b>{}</b> overlaid (grey dashed):</p><ul class=\"meta\">",
        esc(&r.name)
    );
    for e in &r.entries {
        let _ = write!(
            h,
            "<li>{}: {} {} — {}</li>",
            esc(&e.label),
            e.value,
            esc(&e.unit),
            esc(&e.source)
        );
    }
    h.push_str("</ul>");
}

/// The class of an observation's line: findings plain, ties grey, suspects red.
fn verdict_class(v: Verdict) -> &'static str {
    match v {
        Verdict::Finding => "finding",
        Verdict::Indistinguishable => "tie",
        Verdict::Suspect => "suspect",
    }
}

/// Every observation of every run, when there are any: what the data show beyond the
/// noise, then what they cannot tell apart, then what the hardware cannot produce.
fn observation_list(h: &mut String, obs: &[Observation]) {
    if obs.is_empty() {
        return;
    }
    h.push_str(
        "<h2>Observations</h2><p class=\"meta\">Stated when the 95 % intervals of the figures \
         separate; figures within the noise are called indistinguishable; a relation the \
         hardware cannot produce is <i>suspect: measurement disturbed</i>, with the load its \
         points saw.</p><ul class=\"obs\">",
    );
    for verdict in [
        Verdict::Finding,
        Verdict::Indistinguishable,
        Verdict::Suspect,
    ] {
        for o in obs.iter().filter(|o| o.verdict == verdict) {
            let _ = write!(
                h,
                "<li class=\"{}\">{}<span class=\"meta\"> ({})</span></li>",
                verdict_class(o.verdict),
                esc(&o.text),
                esc(&o.run)
            );
        }
    }
    h.push_str("</ul>");
}

/// One figure's section, a panel per run that has its data; nothing when none has.
fn figure_section(h: &mut String, fig: &dyn Figure, runs: &[Run], ctx: &Ctx, obs: &[Observation]) {
    let ps = panels(fig, runs, ctx);
    if ps.is_empty() {
        return;
    }
    let _ = write!(
        h,
        "<section id=\"{}\"><h2>{}</h2><div class=\"runs\">",
        fig.id(),
        esc(fig.title())
    );
    for (run, p) in ps {
        panel(h, fig, run, &p, ctx, obs);
    }
    h.push_str("</div></section>");
}

/// One run's panel of a figure: its charts and table, the verified configuration of each
/// target, the observations beside the figure and the warnings of the records it read.
fn panel(h: &mut String, fig: &dyn Figure, run: &Run, p: &Panel, ctx: &Ctx, obs: &[Observation]) {
    let _ = write!(h, "<div class=\"panel\"><h3>{}</h3>", esc(&run.label));
    for svg in &p.svgs {
        h.push_str(svg.trim_start_matches(|c| c != '<'));
    }
    if let Some(t) = &p.table {
        h.push_str(t);
    }
    h.push_str("<p class=\"caption\">");
    for t in &p.targets {
        let c = ctx.colour(t);
        let _ = write!(
            h,
            "<span class=\"swatch\" style=\"background:rgb({},{},{})\"></span><b>{}</b>: {}<br>",
            c.0,
            c.1,
            c.2,
            esc(t),
            esc(&verified(&run.records, t))
        );
    }
    h.push_str("</p>");
    for o in obs
        .iter()
        .filter(|o| o.figure == fig.id() && o.run == run.label)
    {
        let _ = write!(
            h,
            "<p class=\"caption {}\">▸ {}</p>",
            verdict_class(o.verdict),
            esc(&o.text)
        );
    }
    // The run's environment findings are in its trust box; here each other code once.
    let wide = warnings::run_wide(&run.records);
    let skip: Vec<&str> = wide.iter().map(String::as_str).collect();
    for g in warnings::grouped(&figure_records(fig, &run.records), &skip) {
        let _ = write!(
            h,
            "<p class=\"warn\">⚠ {} — {}</p>",
            esc(&g.summary()),
            esc(&g.first.remedy)
        );
    }
    h.push_str("</div>");
}

/// Writes one SVG per figure chart into `dir` (created if missing), named
/// `<run index>-<figure id>[-<n>].svg`; returns the paths written. Files are created
/// exclusively: an existing one is an `AlreadyExists` error unless `overwrite`.
pub fn svg_files(
    runs: &[Run],
    options: &Options,
    dir: &Path,
    overwrite: bool,
) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let targets = all_targets(runs);
    let ctx = Ctx {
        options,
        targets: &targets,
    };
    let mut written = Vec::new();
    for fig in FIGURES {
        for (i, run) in runs.iter().enumerate() {
            let Some(p) = fig.render(&run.records, &ctx) else {
                continue;
            };
            for (n, svg) in p.svgs.iter().enumerate() {
                let name = if p.svgs.len() == 1 {
                    format!("{}-{}.svg", i + 1, fig.id())
                } else {
                    format!("{}-{}-{}.svg", i + 1, fig.id(), n + 1)
                };
                let path = dir.join(name);
                let mut o = std::fs::OpenOptions::new();
                o.write(true);
                if overwrite {
                    o.create(true).truncate(true);
                } else {
                    o.create_new(true);
                }
                std::io::Write::write_all(&mut o.open(&path)?, svg.as_bytes())?;
                written.push(path);
            }
        }
    }
    Ok(written)
}
