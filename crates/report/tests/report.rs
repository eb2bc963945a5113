//! Renders a report from synthetic records built the way the commands build them (the keys
//! of `core::vocab`), checks every figure, caption, flag, observation, error bar, warning
//! and the trust box, then renders the HTML in headless Chromium: it keeps the screenshot
//! under target/test-output/ and fails on chart text that overlaps or leaves its chart.

use pmscope_core::achieved::{Achieved, FaultEvidence, PageMix, Persistence};
use pmscope_core::record::{Record, SystemSummary, TargetRecord};
use pmscope_core::summary::{LogHistogram, Summary};
use pmscope_core::vocab::check_record;
use pmscope_core::vocab::{p, v};
use pmscope_core::warning::Warning;
use pmscope_report::{
    CacheLevel, FIGURES, MAX_CURVES, Options, Reference, Run, Verdict, html, observations,
    svg_files,
};
use std::collections::BTreeMap;
use std::path::PathBuf;

fn achieved(page: u64) -> Achieved {
    let bytes = 64 << 20;
    Achieved {
        pages: PageMix {
            bytes_4k: if page == 4096 { bytes } else { 0 },
            bytes_2m: if page == 4096 { 0 } else { bytes },
            smaps_sees_mapping: true,
            ..PageMix::default()
        },
        faults: FaultEvidence::from_faults(bytes, bytes / page),
        page_size: Some(page),
        page_size_source: "smaps+faults".into(),
        nodes: BTreeMap::from([(0, bytes / page)]),
        alignment: Some(2 << 20),
        prefault_ns: 1,
        ..Achieved::unverified(bytes, Persistence::Volatile)
    }
}

struct Gen {
    host: &'static str,
}

impl Gen {
    fn rec(&self, experiment: &str, target: &str, median: f64) -> Record {
        let mut r = Record::new(
            experiment,
            vec!["pmscope".into()],
            SystemSummary {
                hostname: self.host.into(),
                cpu_model: "Synthetic CPU".into(),
                cpus_online: 2,
                numa_nodes: 1,
                ..Default::default()
            },
        );
        if target != "-" {
            let page = if target.ends_with("4k") {
                4096
            } else {
                2 << 20
            };
            r.target = Some(TargetRecord {
                spec: target.into(),
                achieved: achieved(page),
            });
        }
        r.metric = pmscope_core::vocab::experiment(experiment)
            .and_then(|e| e.metric)
            .map(|m| m.split(" | ").next().unwrap().to_string());
        r.summary = Summary::of(&[median * 0.98, median, median * 1.02]);
        r.warnings.push(Warning::new(
            "busy-machine",
            format!("{} was busy", self.host),
            "stop other jobs",
        ));
        r
    }

    fn records(&self) -> Vec<Record> {
        let mut out = Vec::new();
        let targets = ["dram:4k", "dram:thp"];
        for (ti, t) in targets.iter().enumerate() {
            let tlb = if ti == 0 { 1.4 } else { 1.0 };
            for pattern in ["rand", "seq"] {
                for shift in 12..=26u32 {
                    let ws = 1u64 << shift;
                    let base = match ws {
                        ..=32768 => 1.2,
                        32769..=524288 => 4.0,
                        524289..=8388608 => 12.0,
                        _ => 80.0 * tlb,
                    };
                    let ns = if pattern == "seq" { base / 3.0 } else { base };
                    out.push(
                        self.rec("latency", t, ns)
                            .param(p::PATTERN, pattern)
                            .param(p::ELEMENT_BYTES, 64)
                            .param(p::WORKING_SET_BYTES, ws)
                            .param(p::TLB_WINDOW_PAGES, serde_json::Value::Null)
                            .param(p::MIXER, true)
                            .param(p::SEED, 1)
                            .value(v::CV, 0.02),
                    );
                }
            }
            let mut d = self
                .rec("latency-distribution", t, 90.0)
                .param(p::PATTERN, "rand")
                .param(p::ELEMENT_BYTES, 64)
                .param(p::WORKING_SET_BYTES, 1u64 << 26)
                .param(p::SAMPLES, 1000);
            d.histogram = Some(LogHistogram {
                lower: vec![64.0, 90.5, 128.0, 181.0, 256.0],
                count: vec![10, 800, 150, 30, 10],
            });
            out.push(d);
            // Seed 001's buffer probes: read-buffer (rand), write-buffer (seq and rand).
            for (probe, patterns) in [
                ("read-buffer", &["rand"][..]),
                ("write-buffer", &["seq", "rand"][..]),
            ] {
                for pattern in patterns {
                    for lines in 1..=4u64 {
                        for shift in 10..=16u32 {
                            let ws = 1u64 << shift;
                            let ns =
                                if ws <= 16 << 10 { 100.0 } else { 300.0 } + 10.0 * lines as f64;
                            out.push(
                                self.rec("probe", t, ns)
                                    .param(p::PROBE, probe)
                                    .param(p::WORKING_SET_BYTES, ws)
                                    .param(p::SAMPLES, 1000)
                                    .param(p::LINES, lines)
                                    .param(p::PATTERN, *pattern),
                            );
                        }
                        let mut knee = self
                            .rec("probe-knee", t, 0.0)
                            .param(p::PROBE, probe)
                            .param(p::KNEE_FOUND, true)
                            .param(p::LINES, lines)
                            .param(p::PATTERN, *pattern)
                            .value(v::KNEE_BYTES, 16384.0)
                            .value(v::BEFORE_NS, 100.0 + 10.0 * lines as f64)
                            .value(v::AFTER_NS, 300.0 + 10.0 * lines as f64);
                        knee.summary = None;
                        knee.metric = None;
                        out.push(knee);
                    }
                }
            }
            for chains in [1u64, 2, 4, 8, 16] {
                out.push(
                    self.rec("latency-mlp", t, 90.0 / (chains as f64).min(10.0))
                        .param(p::PATTERN, "rand")
                        .param(p::ELEMENT_BYTES, 64)
                        .param(p::WORKING_SET_BYTES, 1u64 << 26)
                        .param(p::CHAINS, chains)
                        .value(v::CV, 0.02),
                );
            }
            for (op, ns) in [
                ("load", 95.0),
                ("store", 30.0),
                ("store+clwb", 60.0),
                ("ntstore", 70.0),
                ("store+clflushopt", 65.0),
            ] {
                for fence in ["none", "sfence"] {
                    for pattern in ["rand", "seq"] {
                        for size in [64u64, 256, 1024, 4096] {
                            let v = ns
                                * (size as f64 / 64.0).sqrt()
                                * if pattern == "seq" { 0.7 } else { 1.0 }
                                * (1.0 + ti as f64 * 0.3);
                            let mut r = self
                                .rec("inst", t, v)
                                .param(p::OP, op)
                                .param(p::FENCE, fence)
                                .param(p::ACCESS_BYTES, size)
                                .param(p::PATTERN, pattern)
                                .param(p::WIDTH_BYTES, 32)
                                .param(p::FLUSHED_BEFORE, op == "load")
                                .param(p::REGION_BYTES, 1u64 << 30)
                                .value(v::TIMER_OVERHEAD_NS, 10.0);
                            let samples: Vec<f64> = (0..200)
                                .map(|i| {
                                    v * (0.8 + (i % 17) as f64 * 0.05 + (i / 190) as f64 * 4.0)
                                })
                                .collect();
                            r.histogram =
                                Some(pmscope_core::summary::LogHistogram::of(&samples, 4));
                            out.push(r);
                        }
                    }
                }
            }
            for (op, peak) in [("read", 20.0), ("write", 8.0), ("ntstore", 9.0)] {
                for pattern in ["seq", "rand"] {
                    for threads in 1..=4u64 {
                        for size in [64u64, 128, 256, 512, 1024, 4096] {
                            // A knee at 256 B; write bandwidth peaks at 2 threads and falls.
                            let by_size = match size {
                                64 => 0.25,
                                128 => 0.5,
                                256 => 0.93,
                                512 => 0.97,
                                _ => 1.0,
                            };
                            let by_threads = if op == "read" {
                                threads as f64 / 4.0
                            } else {
                                [0.6, 1.0, 0.8, 0.7][threads as usize - 1]
                            };
                            let v = peak * by_size * by_threads * (1.0 - 0.1 * ti as f64);
                            out.push(
                                self.rec("bandwidth", t, v)
                                    .param(p::OP, op)
                                    .param(p::PATTERN, pattern)
                                    .param(p::ACCESS_BYTES, size)
                                    .param(p::THREADS, threads)
                                    .param(p::SHARED, false)
                                    .param(p::VECTOR_BYTES, 32)
                                    .param(p::REGION_PER_THREAD_BYTES, 1u64 << 29)
                                    .param(p::DURATION_S, 0.15)
                                    .param(p::MIX, "")
                                    .value(
                                        if op == "read" {
                                            v::READ_GB_S
                                        } else {
                                            v::WRITE_GB_S
                                        },
                                        v,
                                    ),
                            );
                        }
                    }
                }
            }
            for (mix, r, w) in [
                ("2R+0W", 18.0, 0.0),
                ("1R+1W", 9.0, 4.0),
                ("0R+2W", 0.0, 7.0),
            ] {
                out.push(
                    self.rec("bandwidth", t, r + w)
                        .param(p::OP, "write")
                        .param(p::PATTERN, "seq")
                        .param(p::ACCESS_BYTES, 4096u64)
                        .param(p::THREADS, 2)
                        .param(p::SHARED, false)
                        .param(p::VECTOR_BYTES, 32)
                        .param(p::REGION_PER_THREAD_BYTES, 1u64 << 29)
                        .param(p::DURATION_S, 0.15)
                        .param(p::MIX, mix)
                        .value(v::READ_GB_S, r)
                        .value(v::WRITE_GB_S, w),
                );
            }
            for (i, delay) in [None, Some(3200u64), Some(800), Some(200), Some(50), Some(0)]
                .into_iter()
                .enumerate()
            {
                let (bw, ns) = [
                    (0.0, 90.0),
                    (3.0, 95.0),
                    (8.0, 110.0),
                    (14.0, 160.0),
                    (17.0, 240.0),
                    (18.0, 400.0),
                ][i];
                out.push(
                    self.rec("loaded", t, ns)
                        .param(p::PROBE, "chase")
                        .param(
                            p::DELAY_NS,
                            delay.map(serde_json::Value::from).unwrap_or_default(),
                        )
                        .param(p::TRAFFIC_THREADS, if delay.is_some() { 1 } else { 0 })
                        .param(p::TRAFFIC_RW, "1:0")
                        .param(p::TRAFFIC_ACCESS_BYTES, 1024)
                        .param(p::PROBE_REGION_BYTES, 1u64 << 30)
                        .param(p::SAMPLES, 1000)
                        .value(v::TRAFFIC_GB_S, bw)
                        .value(v::MEAN_LATENCY_NS, ns),
                );
            }
            for (option, op, gb) in [
                ("store bare", "store", 6.0),
                ("store clwb", "store+clwb", 4.0),
                ("store clwb+F", "store+clwb", 2.0),
                ("store nt+F", "ntstore", 3.0),
            ] {
                out.push(
                    self.rec("sync", t, gb)
                        .param(p::OPTION, option)
                        .param(p::OP, op)
                        .param(p::FENCE, "mfence")
                        .param(p::UNIT_BYTES, 32)
                        .param(p::BLOCK_BYTES, 64)
                        .param(p::PATTERN, "seq")
                        .param(p::THREADS, 1)
                        .param(p::REGION_BYTES, 1u64 << 30)
                        .value(v::MILLION_INSTRUCTIONS_PER_S, gb * 30.0),
                );
            }
            out.push(
                self.rec("rap-idle", t, 100.0)
                    .param(p::PERSIST, "clwb")
                    .param(p::REGION_BYTES, 1u64 << 30)
                    .param(p::SAMPLES, 1000),
            );
            for d in [0u64, 1, 4, 16, 64, 256] {
                out.push(
                    self.rec("rap", t, 300.0 / (1.0 + d as f64 / 8.0) + 100.0)
                        .param(p::PERSIST, "clwb")
                        .param(p::REGION_BYTES, 1u64 << 30)
                        .param(p::SAMPLES, 1000)
                        .param(p::DISTANCE_LINES, d),
                );
            }
            for op in [
                "create",
                "append-4k",
                "overwrite-4k",
                "overwrite-512",
                "read-4k",
            ] {
                for fsync in [false, true] {
                    let ns = if fsync { 9000.0 } else { 3000.0 } * (1.0 + ti as f64);
                    out.push(
                        self.rec("fs-op", t, ns)
                            .param(p::FILE_OP, op)
                            .param(p::FSYNC, fsync)
                            .param(p::IO_BYTES, 4096)
                            .param(p::SAMPLES, 1000)
                            .param(p::FS_TYPE, "tmpfs"),
                    );
                }
            }
            for rw in ["randread", "write"] {
                for jobs in 1..=4u64 {
                    out.push(
                        self.rec("fio", t, 500.0 * jobs as f64 / (1.0 + ti as f64))
                            .param(p::RW, rw)
                            .param(p::JOBS, jobs)
                            .param(p::IO_BYTES, 4096)
                            .param(p::FS_TYPE, "tmpfs")
                            .value(v::IOPS, 1e5),
                    );
                }
            }
            let faster = 1.0 + 0.25 * ti as f64;
            for (server, workload, value, kops) in [
                ("memcached", "get-heavy", 1024u64, 40.0),
                ("memcached", "set-heavy", 1024, 30.0),
                ("redis", "set", 512, 20.0),
                ("redis", "get", 512, 24.0),
                ("redis", "mset", 4, 8.0),
            ] {
                let mut r = self
                    .rec("app-kv", t, kops * faster * 1e3)
                    .param(p::SERVER, server)
                    .param(p::TARGET, *t)
                    .param(p::WORKLOAD, workload)
                    .param(p::VALUE_BYTES, value)
                    .param(p::CLIENTS, 12)
                    .value(v::P50_US, 100.0)
                    .value(v::P99_US, 900.0);
                if workload == "mset" {
                    r = r
                        .param(p::AOF_DIRECTORY, "/mnt/pmem/pmscope-app-1-0")
                        .param(p::DIRECTORY, "/mnt/pmem")
                        .param(p::FS_TYPE, "ext4")
                        .param(p::DAX, "always")
                        .param(p::INODE_DAX, true);
                }
                out.push(r);
            }
            // A store-size sweep (seed 004 Fig. 21): the same point at two store sizes.
            for (store, kops) in [(64u64 << 20, 36.0), (256 << 20, 31.0)] {
                out.push(
                    self.rec("app-kv", t, kops * faster * 1e3)
                        .param(p::SERVER, "memcached")
                        .param(p::TARGET, *t)
                        .param(p::WORKLOAD, "get-heavy")
                        .param(p::VALUE_BYTES, 1024)
                        .param(p::STORE_BYTES, store)
                        .param(p::CLIENTS, 12)
                        .value(v::P50_US, 100.0)
                        .value(v::P99_US, 900.0),
                );
            }
            for table in ["volatile", "persistent"] {
                out.push(
                    self.rec("kmer", t, if table == "volatile" { 40.0 } else { 12.0 })
                        .param(p::OPERATION, "count")
                        .param(p::K, 21)
                        .param(p::THREADS, 2)
                        .param(p::TABLE, table)
                        .value(
                            v::INSERT_MIPS,
                            if table == "volatile" { 40.0 } else { 12.0 },
                        ),
                );
            }
        }
        for t in ["dram:4k", "dram:thp"] {
            // kmer bench: each table's insert time on each target (dram:4k the slower).
            let slower = if t.ends_with("4k") { 2.0 } else { 1.0 };
            for (table, fence, secs) in [
                ("volatile", None, 0.5),
                ("static-pm", Some("per-slot"), 2.0),
                ("tx-pm", None, 8.0),
            ] {
                let ms = secs * slower * 1e3;
                let mips = 10.0 / (secs * slower);
                let mut r = self
                    .rec("kmer-bench", t, mips)
                    .param(p::K, 21)
                    .param(p::THREADS, 2)
                    .param(p::TABLE, table)
                    .value(v::INSERTS, 1e7)
                    .value(v::INSERT_MS, ms + 100.0)
                    .value(v::GROW_MS, 100.0)
                    .value(v::INSERT_MIPS, mips);
                if let Some(f) = fence {
                    r = r.param(p::TABLE_FENCE, f);
                }
                out.push(r);
            }
            for (k, secs) in [
                ("gemm", 1.0),
                ("jacobi-2d", 2.0),
                ("fdtd-2d", 3.0),
                ("lu", 0.5),
            ] {
                let slower = if t.ends_with("4k") { 1.5 } else { 1.0 };
                for (variant, f) in [("ref", 3.0), ("opt", 1.0)] {
                    out.push(
                        self.rec("poly", t, secs * f * slower)
                            .param(p::KERNEL, k)
                            .param(p::VARIANT, variant)
                            .param(p::PRESET, "medium")
                            .param(p::PROBLEM_SIZE, 600)
                            .param(p::DATA_BYTES, 8_640_000)
                            .param(p::PERF_COUNTERS, "unavailable: no PMU")
                            .value(v::CHECKSUM, 4.6e8),
                    );
                }
            }
        }
        let mut cmp = self.rec("comparison", "-", 0.0);
        cmp.summary = None;
        cmp.metric = None;
        cmp = cmp.param(p::TARGETS, serde_json::json!([{"spec": "dram:4k", "page_size": 4096}, {"spec": "dram:thp", "page_size": 2097152}]));
        cmp.warnings.push(Warning::new(
            "mixed-page-sizes",
            "dram:4k is backed by 4 KiB pages but dram:thp by 2 MiB pages",
            "compare like with like",
        ));
        out.push(cmp);
        for r in &out {
            check_record(r).unwrap_or_else(|e| panic!("fixture record off the vocabulary: {e}"));
        }
        out
    }
}

fn runs() -> Vec<Run> {
    ["alpha", "beta"]
        .into_iter()
        .map(|host| Run {
            label: format!("{host} 2026-11-23"),
            records: Gen { host }.records(),
        })
        .collect()
}

fn options() -> Options {
    Options {
        title: Some("synthetic report".into()),
        caches: vec![
            CacheLevel {
                name: "L1d".into(),
                bytes: 32 << 10,
            },
            CacheLevel {
                name: "L2".into(),
                bytes: 512 << 10,
            },
            CacheLevel {
                name: "L3".into(),
                bytes: 8 << 20,
            },
        ],
        reference: Reference::named("optane-g1"),
    }
}

fn output_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/test-output");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The inner HTML of a figure's section.
fn section<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("<section id=\"{id}\">"))
        .unwrap_or_else(|| panic!("figure {id} missing"));
    let end = html[start..].find("</section>").unwrap() + start;
    &html[start..end]
}

#[test]
fn every_figure_is_drawn_with_data_captions_flags_and_warnings() {
    let runs = runs();
    let html = html(&runs, &options());
    for needle in ["<script", "http://", "https://", "@import", "url("] {
        let ok = needle == "http://"
            && html.matches(needle).all(|_| true)
            && html.matches("http://").count()
                == html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count();
        assert!(
            !html.contains(needle) || ok,
            "the report references {needle}"
        );
    }
    for fig in FIGURES {
        let s = section(&html, fig.id());
        // Both runs side by side.
        assert_eq!(
            s.matches("class=\"panel\"").count(),
            2,
            "{}: one panel per run",
            fig.id()
        );
        if fig.id() == "table5" {
            assert!(
                s.contains("<table class=\"t5\">") && s.contains("slowdown vs dram:4k"),
                "table5 layout"
            );
            assert!(s.contains("<td>rand write+flush</td><td>64</td>"));
        } else {
            let plotted = s.matches("<polyline").count()
                + s.matches("<rect").count()
                + s.matches("<circle").count();
            assert!(
                s.contains("<svg") && plotted > 10,
                "{}: SVG with plotted elements ({plotted})",
                fig.id()
            );
        }
        // Captions name every target with its verified configuration.
        assert!(
            s.contains("<b>dram:4k</b>: 4k 100% (smaps+faults), node 0, volatile"),
            "{}: caption",
            fig.id()
        );
        assert!(
            s.contains("<b>dram:thp</b>: 2m 100% (smaps+faults), node 0, volatile"),
            "{}: caption",
            fig.id()
        );
        // Warnings beside the figure, per run.
        assert!(
            s.contains("alpha was busy") && s.contains("beta was busy"),
            "{}: warnings",
            fig.id()
        );
        // Targets with different page sizes are flagged on the figure itself.
        assert!(
            s.contains("page sizes differ (dram:4k 4k, dram:thp 2m)"),
            "{}: page-size flag",
            fig.id()
        );
    }
    // Seed 002's headline beside the sync bars: 4 GB/s -> 2 GB/s on one thread is 16 ns
    // -> 32 ns per 64-byte block.
    assert!(
        section(&html, "sync")
            .contains("<td>store clwb+F</td><td>seq</td><td>-50%, +16.0 ns/block</td>"),
        "fence cost table"
    );
    let poly = section(&html, "poly");
    assert!(
        poly.contains("<th>dram:4k ref (s)</th><th>dram:4k opt (s)</th><th>ratio</th>"),
        "poly: Table 1 layout"
    );
    // jacobi-2d on dram:4k: ref 9 s, opt 3 s, ratio 3.
    assert!(
        poly.contains("<td>jacobi-2d</td><td>8.2</td><td>9.000</td><td>3.000</td><td>3.00</td>")
    );
    assert!(section(&html, "latency-working-set").contains("mixed-page-sizes"));
    assert!(
        section(&html, "latency-working-set").contains("L2 512 KiB"),
        "cache marks"
    );
    assert!(
        section(&html, "latency-working-set").contains("Optane G1 random load"),
        "reference overlay"
    );
    assert!(
        section(&html, "bandwidth-access-size").contains("Optane G1 256 B"),
        "256 B mark"
    );
    std::fs::write(output_dir().join("report.html"), &html).unwrap();
}

#[test]
fn same_target_same_colour_and_no_flag_for_like_targets() {
    let mut runs = runs();
    runs.truncate(1);
    runs[0]
        .records
        .retain(|r| r.target.as_ref().is_some_and(|t| t.spec == "dram:thp"));
    let html = html(&runs, &Options::default());
    assert!(!html.contains("page sizes differ"));
    assert!(!html.contains("Optane G1"), "no reference unless asked");
    // dram:thp is the first target now: it takes the first colour.
    assert!(html.contains("background:rgb(31,119,180)\"></span><b>dram:thp</b>"));
}

#[test]
fn figures_without_data_are_absent() {
    let mut runs = runs();
    for r in &mut runs {
        r.records.retain(|r| r.experiment == "latency");
    }
    let html = html(&runs, &Options::default());
    assert!(html.contains("id=\"latency-working-set\""));
    for id in [
        "latency-histogram",
        "instruction-latency",
        "inst-histogram",
        "table5",
        "bandwidth-threads",
        "sync",
        "kmer",
        "kmer-bench",
        "loaded-latency",
        "read-after-persist",
        "poly",
        "fs-op",
        "fio",
        "app-kv",
    ] {
        assert!(
            !html.contains(&format!("id=\"{id}\"")),
            "{id} drawn without data"
        );
    }
}

/// One chart per key-value server, the table of throughputs against the first target, and
/// where redis kept its append-only file.
#[test]
fn kv_throughput_per_server_with_ratios_to_the_first_target() {
    let html = html(&runs()[..1], &Options::default());
    let s = section(&html, "app-kv");
    assert_eq!(s.matches("<svg").count(), 2, "memcached and redis");
    assert!(
        s.contains("<th>dram:4k kops/s</th><th>dram:thp kops/s</th><th>× dram:4k</th>"),
        "{s}"
    );
    // dram:thp runs 1.25x dram:4k's throughput in the fixture.
    assert!(
        s.contains("<tr><td>memcached</td><td>get-heavy 1 KiB</td><td>40.0</td><td>50.0</td><td>1.25</td></tr>"),
        "{s}"
    );
    assert!(s.contains("<td>redis</td><td>mset 4 B</td><td>8.0</td><td>10.0</td><td>1.25</td>"));
    // The points of a store-size sweep stay apart: one row per store size.
    assert!(
        s.contains("<tr><td>memcached</td><td>get-heavy 1 KiB, store 64 MiB</td><td>36.0</td><td>45.0</td><td>1.25</td></tr>"),
        "{s}"
    );
    assert!(
        s.contains("<td>get-heavy 1 KiB, store 256 MiB</td><td>31.0</td>"),
        "{s}"
    );
    assert!(s.contains("append-only file on ext4 dax=always"), "{s}");
}

/// `kmer bench` records: one group of bars per table (static-pm named with its fence), one
/// bar per target in the target's colour, the insert time without growth as its height.
#[test]
fn kmer_bench_draws_each_table_on_each_target() {
    let page = html(&runs()[..1], &Options::default());
    let s = section(&page, "kmer-bench");
    assert_eq!(s.matches("<svg").count(), 1, "{s}");
    let texts = svg_texts(s);
    for label in [
        "volatile",
        "static-pm (per-slot fence)",
        "tx-pm",
        "dram:4k",
        "dram:thp",
    ] {
        assert!(
            texts.iter().any(|t| t == label),
            "{label} missing: {texts:?}"
        );
    }
    assert!(
        texts.iter().any(|t| t.starts_with("insert time, s")),
        "{texts:?}"
    );
    // Bar heights: tx-pm on dram:4k (16 s, growth left out) tops the y axis, whose ticks
    // reach 16 but not 20; nothing else is as tall.
    let ticks: Vec<f64> = texts.iter().filter_map(|t| t.parse().ok()).collect();
    let top = ticks.iter().cloned().fold(0.0, f64::max);
    assert!((15.0..20.0).contains(&top), "y ticks {ticks:?}");
    // Without kmer-bench records the figure is absent, the kmer figure unaffected.
    let mut runs = runs();
    runs[0].records.retain(|r| r.experiment != "kmer-bench");
    let page = html(&runs[..1], &Options::default());
    assert!(!page.contains("id=\"kmer-bench\""));
    assert!(page.contains("id=\"kmer\""));
}

#[test]
fn observations_carry_their_numbers() {
    let obs = observations(&runs()[..1]);
    let find = |kind: &str| {
        obs.iter()
            .filter(|o| o.kind == kind)
            .map(|o| o.text.as_str())
            .collect::<Vec<_>>()
    };
    assert!(
        find("rand-seq-latency").iter().any(|t| t.starts_with(
            "dram:thp: random loads take 3.00× as long as sequential ones at a 64 MiB working set"
        )),
        "{obs:#?}"
    );
    assert!(
        find("tlb-effect")
            .iter()
            .any(|t| t.contains("dram:4k (4k pages) takes 1.40× the time of dram:thp (2m pages)")),
        "{obs:#?}"
    );
    assert!(
        find("access-size-knee")
            .iter()
            .any(|t| t.contains("the access-size knee is 256 B")),
        "{obs:#?}"
    );
    assert!(
        find("write-peak-threads").iter().any(|t| t.starts_with(
            "dram:4k: write bandwidth (seq, 4 KiB) peaks at 2 threads with 8.00 GB/s [7.84–8.16]"
        )),
        "{obs:#?}"
    );
    assert!(find("read-write-asymmetry").iter().any(|t| t.starts_with("dram:4k: peak read bandwidth 20.00 GB/s [19.60–20.40] is 2.22× the peak write bandwidth 9.00 GB/s [8.82–9.18] (ntstore)")), "{obs:#?}");
    assert!(
        find("persist-cost").iter().any(|t| t.starts_with(
            "dram:4k (rand, 64 B): store+clwb+sfence takes 60.0 ns [58.8–61.2], 2.00× a plain store (30.0 ns [29.4–30.6])"
        )),
        "{obs:#?}"
    );
    assert!(
        find("loaded-latency-doubles")
            .iter()
            .any(|t| t.contains("doubles from 90.0 ns to 180.0 ns at about 14.75 GB/s")),
        "{obs:#?}"
    );
    // Every figure of the fixture is 2 % apart at most and their relations are wide: all
    // are findings.
    assert!(
        obs.iter().all(|o| o.verdict == Verdict::Finding),
        "{obs:#?}"
    );
}

#[test]
fn no_knee_and_no_peak_without_the_data_for_them() {
    let mut runs = runs();
    runs.truncate(1);
    for r in &mut runs[0].records {
        if r.experiment == "bandwidth" {
            // Bandwidth doubling with every size and rising with every thread: no knee, no peak.
            let size = r.params["access_bytes"].as_u64().unwrap() as f64;
            let threads = r.params["threads"].as_u64().unwrap() as f64;
            r.summary = Summary::of(&[size / 64.0 * threads]);
        }
    }
    let obs = observations(&runs);
    assert!(
        !obs.iter().any(|o| o.kind == "access-size-knee"),
        "{obs:#?}"
    );
    assert!(
        !obs.iter().any(|o| o.kind == "write-peak-threads"),
        "{obs:#?}"
    );
}

/// Seed 004 Figure 11 draws each curve at its best thread count: the figure labels every
/// access size with the count that gave the highest median (the fixture's writes peak at 2
/// threads, its reads at 4), and a best within the runner-up's noise as `best~runner-up`.
#[test]
fn the_best_thread_count_is_labelled_per_access_size() {
    let page = html(&runs()[..1], &Options::default());
    let s = section(&page, "bandwidth-best-threads");
    let charts: Vec<&str> = s.split("<svg").skip(1).collect();
    assert_eq!(charts.len(), 3, "read, write, ntstore");
    let labels = |chart: &str| -> Vec<String> {
        svg_texts(chart)
            .into_iter()
            .filter(|t| t.chars().all(|c| c.is_ascii_digit() || c == '~') && !t.is_empty())
            .collect()
    };
    // Six access sizes, two patterns, two targets: 24 labelled points per op, all with
    // the same count (the axis ticks are numbers too, each once).
    for (chart, best) in [(charts[0], "4"), (charts[1], "2")] {
        let l = labels(chart);
        let n = l.iter().filter(|x| *x == best).count();
        assert!((24..=25).contains(&n), "{best}: {l:?}");
        assert!(
            l.iter()
                .filter(|x| *x != best)
                .all(|x| l.iter().filter(|y| *y == x).count() == 1),
            "only {best} labels points: {l:?}"
        );
    }
    let (read, write) = (labels(charts[0]), labels(charts[1]));
    assert!(!read.iter().chain(&write).any(|l| l.contains('~')));

    // Two thread counts whose intervals overlap at one size, separate at another.
    let g = Gen { host: "gamma" };
    let point = |threads: u64, size: u64, gb: f64| {
        g.rec("bandwidth", "dram:4k", gb)
            .param(p::OP, "read")
            .param(p::PATTERN, "seq")
            .param(p::ACCESS_BYTES, size)
            .param(p::THREADS, threads)
            .param(p::MIX, "")
    };
    let records = vec![
        point(1, 64, 5.0),
        point(2, 64, 5.05),
        point(1, 4096, 5.0),
        point(2, 4096, 9.0),
    ];
    let run = Run {
        label: "gamma".into(),
        records,
    };
    let page = html(&[run], &Options::default());
    let texts = svg_texts(section(&page, "bandwidth-best-threads"));
    assert!(texts.iter().any(|t| t == "2~1"), "{texts:?}");
    assert!(texts.iter().any(|t| t == "2"), "{texts:?}");

    // One thread count per access size: nothing to choose, no figure.
    let run = Run {
        label: "delta".into(),
        records: vec![point(1, 64, 5.0), point(1, 4096, 6.0)],
    };
    assert!(!html(&[run], &Options::default()).contains("id=\"bandwidth-best-threads\""));
}

#[test]
fn svg_files_one_per_chart() {
    let dir = tempfile::tempdir().unwrap();
    let written = svg_files(&runs(), &options(), dir.path(), false).unwrap();
    let again = svg_files(&runs(), &options(), dir.path(), false).unwrap_err();
    assert_eq!(
        again.kind(),
        std::io::ErrorKind::AlreadyExists,
        "an existing SVG is not overwritten"
    );
    assert_eq!(
        svg_files(&runs(), &options(), dir.path(), true)
            .unwrap()
            .len(),
        written.len()
    );
    assert!(
        written
            .iter()
            .any(|p| p.ends_with("1-latency-working-set.svg"))
    );
    assert!(written.iter().any(|p| p.ends_with("2-kmer.svg")));
    for p in &written {
        let s = std::fs::read_to_string(p).unwrap();
        assert!(
            s.contains("<svg") && (s.contains("<polyline") || s.contains("<rect")),
            "{}",
            p.display()
        );
    }
}

/// The Chromium binary (installed by ./dev); a missing Chromium fails the test.
fn chromium() -> &'static str {
    ["chromium", "chromium-browser"]
        .into_iter()
        .find(|c| {
            std::process::Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .expect("Chromium is not installed: run ./dev (it installs the Debian package chromium)")
}

/// Runs headless Chromium on `page` with `args` (a fresh profile, nothing fetched) and
/// returns its stdout.
fn run_chromium(page: &std::path::Path, args: &[&str]) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--window-size=1400,4000",
        ])
        .args(args)
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("file://{}", page.canonicalize().unwrap().display()))
        .output()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Renders the report in headless Chromium and keeps the screenshot as
/// target/test-output/report.png.
#[test]
fn renders_in_headless_chromium() {
    let out = output_dir();
    let page = out.join("chromium-report.html");
    std::fs::write(&page, html(&runs(), &options())).unwrap();
    let shot = out.join("report.png");
    let _ = std::fs::remove_file(&shot);
    run_chromium(&page, &[&format!("--screenshot={}", shot.display())]);
    let png = std::fs::read(&shot).expect("chromium wrote no screenshot");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 50_000,
        "screenshot too small: {} bytes",
        png.len()
    );
}

/// The script the layout check adds to a copy of the page (the report itself has none):
/// the box of every non-empty `<text>` of every SVG as the browser lays it out, a line for
/// each text leaving its SVG and each pair overlapping by more than a pixel both ways,
/// written into the DOM for `--dump-dom`.
const LAYOUT_CHECK: &str = r#"<script>
(function () {
  const problems = [];
  document.querySelectorAll('svg').forEach(function (svg, n) {
    const where = (svg.closest('section') || {}).id || ('svg ' + n);
    const box = svg.getBoundingClientRect();
    const texts = Array.from(svg.querySelectorAll('text'))
      .filter(function (t) { return t.textContent.trim() !== ''; });
    const rects = texts.map(function (t) { return t.getBoundingClientRect(); });
    texts.forEach(function (t, i) {
      const r = rects[i];
      if (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1) {
        problems.push('clipped in ' + where + ': "' + t.textContent.trim() + '"');
      }
      for (let j = 0; j < i; j++) {
        const o = rects[j];
        const dx = Math.min(r.right, o.right) - Math.max(r.left, o.left);
        const dy = Math.min(r.bottom, o.bottom) - Math.max(r.top, o.top);
        if (dx > 1 && dy > 1) {
          problems.push('overlap in ' + where + ': "' + texts[j].textContent.trim() + '" and "' + t.textContent.trim() + '"');
        }
      }
    });
  });
  const pre = document.createElement('pre');
  pre.id = 'layout-problems';
  pre.textContent = JSON.stringify(problems);
  document.body.appendChild(pre);
})();
</script>"#;

/// The layout problems Chromium finds in `html` (overlapping or clipped SVG text).
fn layout_problems(html: &str, name: &str) -> Vec<String> {
    let page = output_dir().join(name);
    std::fs::write(
        &page,
        html.replace("</body>", &format!("{LAYOUT_CHECK}</body>")),
    )
    .unwrap();
    let dom = run_chromium(&page, &["--dump-dom", "--virtual-time-budget=3000"]);
    let start = dom
        .find("<pre id=\"layout-problems\">")
        .expect("the layout check did not run")
        + "<pre id=\"layout-problems\">".len();
    let end = dom[start..].find("</pre>").unwrap() + start;
    let json = dom[start..end]
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"))
}

/// No text of any chart overlaps another or leaves its chart, as Chromium lays the page
/// out. The check itself is shown to work on a page with one overlap and one clipped label.
#[test]
fn no_chart_text_overlaps_or_is_clipped() {
    let control = "<!DOCTYPE html><html><body><section id=\"control\"><svg width=\"200\" height=\"100\" xmlns=\"http://www.w3.org/2000/svg\">\
        <text x=\"10\" y=\"30\" font-size=\"12\">first label</text><text x=\"14\" y=\"32\" font-size=\"12\">second label</text>\
        <text x=\"170\" y=\"60\" font-size=\"12\">cut off here</text><text x=\"10\" y=\"90\" font-size=\"12\">alone</text>\
        </svg></section></body></html>";
    let found = layout_problems(control, "layout-control.html");
    assert_eq!(found.len(), 2, "the check misses what it is for: {found:?}");
    assert!(found.iter().any(|p| p.starts_with("overlap in control")));
    assert!(
        found
            .iter()
            .any(|p| p.starts_with("clipped in control: \"cut off here\""))
    );
    let problems = layout_problems(&html(&runs(), &options()), "layout-report.html");
    assert!(
        problems.is_empty(),
        "{} layout problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// The text of every `<text>` element of an SVG fragment, trimmed.
fn svg_texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let body = &t[t.find('>')? + 1..];
            Some(body[..body.find("</text>")?].trim().to_string())
        })
        .collect()
}

/// A run measured over seven suite steps at loads 3.5-5.2, every point carrying the same
/// environment warning: each figure shows busy-machine once with its count and range, the
/// environment warning is stated once in the run's trust box and in no figure.
#[test]
fn warnings_once_per_figure_with_count_and_range_and_the_environment_in_the_trust_box() {
    let mut runs = runs();
    runs.truncate(1);
    let loads = [3.5, 4.0, 4.4, 5.2, 3.9, 4.1, 4.8];
    let n = runs[0].records.len();
    for (i, r) in runs[0].records.iter_mut().enumerate() {
        let load = loads[i * loads.len() / n];
        r.warnings = vec![
            Warning::new(
                "busy-machine",
                format!(
                    "the 1-minute load average is {load:.2} on 2 CPUs: other work competes for cores and memory bandwidth"
                ),
                "stop other jobs",
            ),
            Warning::new(
                "governor-unknown",
                "the CPU frequency governor is unknown (no cpufreq in sysfs, as in most VMs)",
                "in a VM the host decides",
            ),
        ];
    }
    let page = html(&runs, &options());
    assert_eq!(page.matches("How far to trust this run").count(), 1);
    let trust_end = page.find("<h2>Observations</h2>").unwrap();
    let trust = &page[..trust_end];
    assert_eq!(trust.matches("governor-unknown").count(), 1, "{trust}");
    assert!(
        trust.contains("1-minute load average 3.50–5.20 on 2 CPUs"),
        "{trust}"
    );
    for fig in FIGURES {
        let s = section(&page, fig.id());
        assert!(
            !s.contains("governor-unknown"),
            "{}: environment warning repeated",
            fig.id()
        );
        assert_eq!(s.matches("busy-machine").count(), 1, "{}: {s}", fig.id());
    }
    // The fixture's latency records span three of the steps, whose loads cover the range.
    assert!(
        section(&page, "latency-working-set")
            .contains("busy-machine ×3: 1-minute load average 3.50–5.20 on 61 points"),
        "{}",
        section(&page, "latency-working-set")
    );
}

/// Points carry their 95 % interval as error bars, with the legend saying what they are;
/// counts (threads, jobs) are labelled with whole numbers only.
#[test]
fn error_bars_with_their_legend_and_whole_number_count_axes() {
    let page = html(&runs()[..1], &options());
    for id in [
        "latency-working-set",
        "instruction-latency",
        "bandwidth-threads",
        "loaded-latency",
        "sync",
        "poly",
    ] {
        assert!(
            section(&page, id).contains("bars: 95 % interval of the median"),
            "{id}: no error bars"
        );
    }
    // The histograms have no intervals, so no legend entry for them.
    assert!(!section(&page, "latency-histogram").contains("95 % interval"));
    for id in ["bandwidth-threads", "fio"] {
        let texts = svg_texts(section(&page, id));
        for n in ["1", "2", "3", "4"] {
            assert!(
                texts.iter().any(|t| t == n),
                "{id}: no tick {n} in {texts:?}"
            );
        }
        assert!(
            !texts
                .iter()
                .any(|t| ["1.2", "1.5", "2.5", "3.5", "0.5"].contains(&t.as_str())),
            "{id}: fractional count ticks {texts:?}"
        );
    }
    // Full-width panels: one run per row, each chart as wide as its panel.
    assert!(
        page.contains(".panel{border:1px solid #ddd;padding:8px;box-sizing:border-box;width:100%}")
    );
}

/// A Table 5 cell whose point missed its precision target is marked, with the footnote.
#[test]
fn table5_marks_points_that_missed_their_precision_target() {
    let mut runs = runs();
    runs.truncate(1);
    let page = html(&runs, &Options::default());
    assert!(!section(&page, "table5").contains('†'));
    for r in runs[0].records.iter_mut().filter(|r| {
        r.experiment == "inst"
            && r.params["op"] == "load"
            && r.params["pattern"] == "rand"
            && r.params["access_bytes"] == 64
    }) {
        r.precision = Some(pmscope_core::precision::Precision {
            low: 50.0,
            high: 150.0,
            n: 8,
            disturbed: 3,
            target: Some(0.03),
            met: false,
            step: None,
        });
    }
    let page = html(&runs, &Options::default());
    let t5 = section(&page, "table5");
    assert!(
        t5.contains("<tr><td>rand read</td><td>64</td><td title=\"missed its precision target\">"),
        "{t5}"
    );
    assert!(t5.contains("† the point missed its precision target"));
    assert!(page.contains("Disturbed repetitions</b>"));
}

/// No axis draws more curves than a reader can tell apart ([`MAX_CURVES`]): a figure with
/// more draws small multiples. Each chart's accessible description counts its curves.
#[test]
fn no_axis_draws_more_curves_than_a_reader_can_tell_apart() {
    let html = html(&runs(), &options());
    let mut charts = 0;
    for desc in html.split("<desc>").skip(1) {
        let text = &desc[..desc.find("</desc>").expect("closed")];
        if let Some(rest) = text.strip_prefix("line chart of ") {
            let n: usize = rest.split(' ').next().unwrap().parse().unwrap();
            assert!(n <= MAX_CURVES, "{text}");
            charts += 1;
        }
    }
    assert!(charts >= 10, "{charts} line charts described");
    // The instruction histograms: one chart per sequence.
    let s = section(&html, "inst-histogram");
    assert!(
        s.matches("<desc>line chart").count() >= 2 * 5,
        "two runs, five sequences"
    );
}
