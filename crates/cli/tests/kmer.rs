//! `pmscope kmer` end to end: malformed inputs give one sentence, the right exit code and
//! no output file; results agree with a brute-force count; --kmers and -o are never
//! clobbered and never name one place; --json prints only records; the demo
//! runs on the Debian genomes that `./dev setup` installs.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn pmscope(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pmscope"))
        .current_dir(dir)
        .env("PMSCOPE_RESULTS", dir.join("pmscope-test-results.sqlite"))
        .args(args)
        .output()
        .expect("run pmscope")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut child = Command::new("gzip")
        .arg("-c")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("gzip");
    child.stdin.take().unwrap().write_all(bytes).unwrap();
    child.wait_with_output().unwrap().stdout
}

/// A directory of small genome files, the malformed ones included.
fn fixtures() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let w = |name: &str, bytes: &[u8]| std::fs::write(dir.path().join(name), bytes).unwrap();
    w(
        "a.fa",
        b">a1 first\nACGTACGTTTGACCAGT\nNACGGTCA\n>a2\nttgacCAGTAAC\n",
    );
    w("b.fa", b">b1\nACGTACGTTTGACGGTCAAAT\n");
    w("c.fa", b">c1\nTTGACCAGTAACGTAC\n");
    w("empty.fa", b"");
    w("text.fa", b"hello world\n");
    w("star.fa", b">s\nACGTACGTAC\nAC*TACGTAC\n");
    w("short.fa", b">s\nACG\n");
    let mut records = Vec::new();
    for i in 0..300 {
        records.extend_from_slice(format!(">r{i}\nACGTTGCAACGTTGCATTGACCAGGT\n").as_bytes());
    }
    let gz = gzip(&records);
    w("cut.fa.gz", &gz[..gz.len() / 2]);
    w("whole.fa.gz", &gz);
    dir
}

/// (arguments, exit code, exact stderr). Each also passes `-o out.tsv`, which must not
/// appear.
const MALFORMED: &[(&[&str], i32, &str)] = &[
    (
        &["count", "-k", "5", "empty.fa"],
        2,
        "pmscope: empty.fa: the file is empty; a genome file holds FASTA records ('>name' then bases)\n",
    ),
    (
        &["count", "-k", "5", "text.fa"],
        2,
        "pmscope: text.fa, line 1: not a FASTA file: it starts with 'h'; a FASTA file starts with '>' and a record name\n",
    ),
    (
        &["count", "-k", "5", "a.fa", "star.fa"],
        2,
        "pmscope: star.fa, line 3: '*' in record 's' is not a nucleotide (A, C, G, T, N or another IUPAC code); is this a FASTA file of DNA?\n",
    ),
    (
        &[
            "primers",
            "-k",
            "5",
            "--in-group",
            "a.fa",
            "--out-group",
            "short.fa",
        ],
        2,
        "pmscope: short.fa: genome 'short' is shorter than k = 5 (its longest record has 3 bases); choose a smaller -k or leave the file out\n",
    ),
    (
        &["count", "-k", "0", "a.fa"],
        2,
        "pmscope: -k 0 is out of range: k must be between 1 and 128\n",
    ),
    (
        &["count", "-k", "129", "a.fa"],
        2,
        "pmscope: -k 129 is out of range: k must be between 1 and 128\n",
    ),
    (
        &["count", "-k", "5", "a.fa", "--threads", "0"],
        2,
        "pmscope: --threads 0: must be at least 1\n",
    ),
    (
        &[
            "count", "-k", "5", "a.fa", "-t", "dram:4k", "-t", "dram:thp",
        ],
        2,
        "pmscope: pmscope kmer places its table on one --target; give it once (or once per node with CPUs with --partition nodes)\n",
    ),
    (
        &["count", "-k", "5", "a.fa", "-t", "ram"],
        2,
        "pmscope: --target ram: unknown target kind 'ram': use one of dram, file, shm, devdax\n",
    ),
    (
        &["count", "-k", "5", "missing.fa"],
        2,
        "pmscope: missing.fa: cannot open it (No such file or directory (os error 2))\n",
    ),
];

#[test]
fn malformed_inputs_give_one_sentence_and_write_nothing() {
    let dir = fixtures();
    for (args, code, message) in MALFORMED {
        let mut a = vec!["kmer"];
        a.extend_from_slice(args);
        a.extend_from_slice(&["--kmers", "out.tsv", "-o", "r.json"]);
        let o = pmscope(dir.path(), &a);
        assert_eq!(o.status.code(), Some(*code), "{args:?}: {}", stderr(&o));
        assert_eq!(&stderr(&o), message, "{args:?}");
        assert!(
            !dir.path().join("out.tsv").exists(),
            "{args:?} wrote out.tsv"
        );
        assert!(!dir.path().join("r.json").exists(), "{args:?} wrote r.json");
    }
    // A truncated gzip names the line where the stream broke, and writes nothing.
    let o = pmscope(
        dir.path(),
        &[
            "kmer",
            "count",
            "-k",
            "5",
            "cut.fa.gz",
            "--kmers",
            "out.tsv",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.starts_with("pmscope: cut.fa.gz, line ")
            && err.contains("the gzip data is truncated or corrupt")
            && err.lines().count() == 1,
        "{err}"
    );
    let line: u64 = err["pmscope: cut.fa.gz, line ".len()..]
        .split(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(line > 1 && line <= 600, "{err}");
    assert!(!dir.path().join("out.tsv").exists());
    // No hidden temporary file is left behind either.
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("pmscope") && !n.starts_with("pmscope-test-results"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// Canonical k-mers of the records of a FASTA text, the obvious way.
fn brute_kmers(fasta: &str, k: usize) -> HashSet<String> {
    let mut out = HashSet::new();
    for rec in fasta.split('>').skip(1) {
        let seq: String = rec.lines().skip(1).collect::<String>().to_ascii_uppercase();
        for w in seq.as_bytes().windows(k) {
            if w.iter().all(|b| b"ACGT".contains(b)) {
                let rc: Vec<u8> = w
                    .iter()
                    .rev()
                    .map(|b| match b {
                        b'A' => b'T',
                        b'C' => b'G',
                        b'G' => b'C',
                        _ => b'A',
                    })
                    .collect();
                out.insert(String::from_utf8(w.to_vec().min(rc)).unwrap());
            }
        }
    }
    out
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap()
}

#[test]
fn count_agrees_with_brute_force_and_reports_a_record() {
    let dir = fixtures();
    let k = 5;
    let mut counts: HashMap<String, usize> = HashMap::new();
    for f in ["a.fa", "b.fa", "c.fa"] {
        for x in brute_kmers(&read(dir.path(), f), k) {
            *counts.entry(x).or_default() += 1;
        }
    }
    let o = pmscope(
        dir.path(),
        &[
            "kmer",
            "count",
            "-k",
            "5",
            "a.fa",
            "b.fa",
            "c.fa",
            "--sorted",
            "--kmers",
            "counts.tsv",
            "-o",
            "r.json",
            "-t",
            "dram:4k",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let mut want: Vec<String> = counts.iter().map(|(x, n)| format!("{x}\t{n}")).collect();
    want.sort();
    let got: Vec<String> = read(dir.path(), "counts.tsv")
        .lines()
        .skip(1)
        .map(String::from)
        .collect();
    assert_eq!(got, want);
    let text = stdout(&o);
    assert!(
        text.contains(&format!("distinct  {}", counts.len()))
            || text.contains(&counts.len().to_string()),
        "{text}"
    );
    // The record: the common schema with the workload's figures and the table's target.
    let r: serde_json::Value =
        serde_json::from_str(read(dir.path(), "r.json").lines().next().unwrap()).unwrap();
    assert_eq!(r["experiment"], "kmer");
    assert_eq!(r["params"]["operation"], "count");
    assert_eq!(r["params"]["k"], 5);
    assert_eq!(
        r["values"]["union_kmers"].as_f64(),
        Some(counts.len() as f64)
    );
    let inserted: u64 = ["a.fa", "b.fa", "c.fa"]
        .iter()
        .map(|f| {
            read(dir.path(), f)
                .split('>')
                .skip(1)
                .map(|rec| {
                    let seq: String = rec.lines().skip(1).collect::<String>().to_ascii_uppercase();
                    seq.as_bytes()
                        .windows(k)
                        .filter(|w| w.iter().all(|b| b"ACGT".contains(b)))
                        .count() as u64
                })
                .sum::<u64>()
        })
        .sum();
    assert_eq!(r["values"]["inserts"].as_f64(), Some(inserted as f64));
    assert_eq!(r["values"]["skipped_kmers"].as_f64(), Some(5.0)); // the 5 windows over N
    for key in [
        "parse_ms",
        "insert_ms",
        "setops_ms",
        "output_ms",
        "insert_mips",
        "table_bytes",
        "peak_rss_bytes",
    ] {
        assert!(r["values"][key].as_f64().is_some(), "{key} missing");
    }
    assert_eq!(r["target"]["spec"], "dram:4k");
    assert!(r["target"]["achieved"]["bytes"].as_u64().unwrap() > 0);
    let hist = r["params"]["genome_count_histogram"].as_array().unwrap();
    assert_eq!(hist.len(), 4);
    let in_all = counts.values().filter(|&&n| n == 3).count();
    assert_eq!(hist[3].as_u64(), Some(in_all as u64));
}

#[test]
fn primers_are_the_in_group_intersection_minus_the_out_group() {
    let dir = fixtures();
    let k = 4;
    let a = brute_kmers(&read(dir.path(), "a.fa"), k);
    let b = brute_kmers(&read(dir.path(), "b.fa"), k);
    let c = brute_kmers(&read(dir.path(), "c.fa"), k);
    let mut want: Vec<String> = a
        .intersection(&b)
        .filter(|x| !c.contains(*x))
        .cloned()
        .collect();
    want.sort();
    assert!(!want.is_empty(), "the fixture should leave candidates");
    let o = pmscope(
        dir.path(),
        &[
            "kmer",
            "primers",
            "-k",
            "4",
            "--in-group",
            "a.fa",
            "b.fa",
            "--out-group",
            "c.fa",
            "--kmers",
            "cand.tsv",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let text = read(dir.path(), "cand.tsv");
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("kmer\tgenome\trecord\tposition\tstrand"));
    let a_text = read(dir.path(), "a.fa");
    let records: Vec<(String, String)> = a_text
        .split('>')
        .skip(1)
        .map(|r| {
            let name = r.split_whitespace().next().unwrap().to_string();
            (
                name,
                r.lines().skip(1).collect::<String>().to_ascii_uppercase(),
            )
        })
        .collect();
    let mut got = Vec::new();
    for line in lines {
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f[1], "a");
        let seq = &records.iter().find(|(n, _)| n == f[2]).unwrap().1;
        let pos: usize = f[3].parse().unwrap();
        let window = &seq[pos - 1..pos - 1 + k];
        assert_eq!(
            brute_kmers(&format!(">x\n{window}\n"), k)
                .into_iter()
                .next()
                .unwrap(),
            f[0]
        );
        assert_eq!(f[4] == "+", window == f[0], "{line}");
        got.push(f[0].to_string());
    }
    got.sort();
    assert_eq!(got, want);
    // FASTA output carries the same candidates.
    let o = pmscope(
        dir.path(),
        &[
            "kmer",
            "primers",
            "-k",
            "4",
            "--in-group",
            "a.fa",
            "b.fa",
            "--out-group",
            "c.fa",
            "--format",
            "fasta",
            "--kmers",
            "cand.fa",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        read(dir.path(), "cand.fa")
            .lines()
            .filter(|l| l.starts_with('>'))
            .count(),
        want.len()
    );
}

#[test]
fn set_commands_match_brute_force() {
    let dir = fixtures();
    let k = 6;
    let sets: Vec<HashSet<String>> = ["a.fa", "b.fa", "c.fa"]
        .iter()
        .map(|f| brute_kmers(&read(dir.path(), f), k))
        .collect();
    let run = |args: &[&str]| -> Vec<String> {
        let _ = std::fs::remove_file(dir.path().join("s.tsv"));
        let mut a = vec!["kmer"];
        a.extend_from_slice(args);
        a.extend_from_slice(&["-k", "6", "--sorted", "--kmers", "s.tsv"]);
        let o = pmscope(dir.path(), &a);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        read(dir.path(), "s.tsv")
            .lines()
            .skip(1)
            .map(|l| l.split('\t').next().unwrap().to_string())
            .collect()
    };
    let sorted = |s: HashSet<String>| {
        let mut v: Vec<String> = s.into_iter().collect();
        v.sort();
        v
    };
    let union: HashSet<String> = sets.iter().flatten().cloned().collect();
    assert_eq!(run(&["union", "a.fa", "b.fa", "c.fa"]), sorted(union));
    let inter: HashSet<String> = sets[0].intersection(&sets[1]).cloned().collect();
    assert_eq!(run(&["intersect", "a.fa", "b.fa"]), sorted(inter));
    let diff: HashSet<String> = sets[0].difference(&sets[2]).cloned().collect();
    assert_eq!(run(&["subtract", "a.fa", "--minus", "c.fa"]), sorted(diff));
    // --genome-per-record: a.fa's two records are two genomes.
    let recs: Vec<HashSet<String>> = read(dir.path(), "a.fa")
        .split('>')
        .skip(1)
        .map(|r| brute_kmers(&format!(">{r}"), k))
        .collect();
    let both: HashSet<String> = recs[0].intersection(&recs[1]).cloned().collect();
    assert_eq!(
        run(&["intersect", "--genome-per-record", "a.fa"]),
        sorted(both)
    );
}

#[test]
fn output_is_never_clobbered_without_force() {
    let dir = fixtures();
    std::fs::write(dir.path().join("out.tsv"), "precious\n").unwrap();
    let o = pmscope(
        dir.path(),
        &["kmer", "count", "-k", "5", "a.fa", "--kmers", "out.tsv"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        "pmscope: out.tsv already exists; pass --force to overwrite it or choose another --kmers file\n"
    );
    assert_eq!(read(dir.path(), "out.tsv"), "precious\n");
    let o = pmscope(
        dir.path(),
        &[
            "kmer", "count", "-k", "5", "a.fa", "--kmers", "out.tsv", "--force",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(read(dir.path(), "out.tsv").starts_with("kmer\tgenomes\n"));
    // --kmers - writes the k-mers to stdout and the summary to stderr.
    let o = pmscope(
        dir.path(),
        &["kmer", "union", "-k", "5", "whole.fa.gz", "--kmers", "-"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("kmer\tgenomes\n"));
    assert!(stderr(&o).contains("pmscope kmer union"));
}

#[test]
fn synthetic_strains_share_most_kmers() {
    let dir = fixtures();
    let o = pmscope(
        dir.path(),
        &[
            "kmer",
            "synth",
            "syn",
            "--length",
            "20k",
            "--strains",
            "3",
            "--snp-rate",
            "0.001",
            "--indel-rate",
            "0",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let files: Vec<PathBuf> = ["reference", "strain_1", "strain_2", "strain_3"]
        .iter()
        .map(|n| dir.path().join("syn").join(format!("{n}.fasta")))
        .collect();
    let mut args = vec![
        "kmer".to_string(),
        "count".into(),
        "-k".into(),
        "21".into(),
        "--json".into(),
    ];
    args.extend(files.iter().map(|f| f.display().to_string()));
    let args: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    let o = pmscope(dir.path(), &args);
    assert!(o.status.success(), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_str(stdout(&o).lines().next().unwrap()).unwrap();
    let distinct = r["values"]["union_kmers"].as_f64().unwrap();
    let in_all = r["values"]["intersection_kmers"].as_f64().unwrap();
    // 20 kbp, ~20 SNPs per strain, each removing at most 21 k-mers from the common set.
    assert!(in_all > 17_000.0 && in_all < 20_000.0, "{in_all}");
    assert!(distinct > in_all && distinct < 22_500.0, "{distinct}");
    // A second synth into the same directory refuses to overwrite.
    let o = pmscope(dir.path(), &["kmer", "synth", "syn", "--length", "1k"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("already holds a synthetic data set"),
        "{}",
        stderr(&o)
    );
}

/// `--preset seed-2 --scale 0.01`: 3 genomes of seed 003's dataset #2 shape (4.7 Mbp each),
/// counted at K = 100 by the binned method: the distinct 100-mers are what the model the
/// record states predicts, within 3 % (the calibration's first-order terms).
#[test]
fn a_preset_pangenome_has_the_distinct_kmers_its_model_states() {
    let dir = fixtures();
    let o = pmscope(
        dir.path(),
        &[
            "--json", "kmer", "synth", "pan", "--preset", "seed-2", "--scale", "0.01",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_str(stdout(&o).lines().next().unwrap()).unwrap();
    assert_eq!(r["params"]["preset"], "seed-2");
    assert_eq!(r["values"]["genomes_written"].as_f64(), Some(3.0));
    let model = r["values"]["distinct_kmers_model"].as_f64().unwrap();
    let bases = r["values"]["bases"].as_f64().unwrap();
    assert!((bases / 3.0 / 4.7e6 - 1.0).abs() < 0.05, "{bases} bases");
    let files: Vec<String> = (1..=3).map(|g| format!("pan/genome_{g}.fasta")).collect();
    let mut args = vec!["kmer", "count", "-k", "100", "--json"];
    args.extend(files.iter().map(|s| s.as_str()));
    let o = pmscope(dir.path(), &args);
    assert!(o.status.success(), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_str(stdout(&o).lines().next().unwrap()).unwrap();
    let distinct = r["values"]["union_kmers"].as_f64().unwrap();
    assert!(
        (distinct / model - 1.0).abs() < 0.03,
        "{distinct} distinct 100-mers, the model says {model}"
    );
    assert_eq!(
        r["values"]["bin_partitions"].as_f64(),
        Some(0.0),
        "in memory"
    );
    // The same genomes generated as they are read, in memory and out of core: the same
    // histogram; out of core, the bins went to a scratch file in --tmp, gone afterwards.
    std::fs::create_dir(dir.path().join("scratch")).unwrap();
    for bins in [
        &["--bins", "memory"][..],
        &["--bins", "disk", "--tmp", "scratch"][..],
    ] {
        let mut args = vec![
            "kmer",
            "count",
            "-k",
            "100",
            "--json",
            "synth:seed-2,scale=0.01",
        ];
        args.extend(bins);
        let o = pmscope(dir.path(), &args);
        assert!(o.status.success(), "{}", stderr(&o));
        let g: serde_json::Value =
            serde_json::from_str(stdout(&o).lines().next().unwrap()).unwrap();
        assert_eq!(
            g["params"]["genome_count_histogram"], r["params"]["genome_count_histogram"],
            "{bins:?}"
        );
        let partitions = g["values"]["bin_partitions"].as_f64().unwrap();
        let scratch = g["values"]["scratch_bytes"].as_f64().unwrap();
        assert_eq!(partitions > 0.0, bins[1] == "disk", "{bins:?}");
        assert_eq!(scratch > 1e6, bins[1] == "disk", "{scratch} bytes");
    }
    assert_eq!(
        std::fs::read_dir(dir.path().join("scratch"))
            .unwrap()
            .count(),
        0,
        "the scratch file outlived the count"
    );
    // Presets and scales are checked; a preset excludes the strain options.
    for (args, wanted) in [
        (
            &["kmer", "synth", "p2", "--preset", "seed-9"][..],
            "is not a preset: use one of seed-2, seed-3, seed-1",
        ),
        (
            &["kmer", "synth", "p2", "--preset", "seed-2", "--scale", "2"][..],
            "is not a fraction of the preset's genomes",
        ),
        (
            &[
                "kmer",
                "synth",
                "p2",
                "--preset",
                "seed-2",
                "--strains",
                "4",
            ][..],
            "cannot be used with",
        ),
        (&["kmer", "synth", "p2", "--scale", "0.5"][..], "--preset"),
    ] {
        let o = pmscope(dir.path(), args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(wanted), "{args:?}: {}", stderr(&o));
        assert!(
            !dir.path().join("p2").exists(),
            "{args:?} wrote before refusing"
        );
    }
}

#[test]
fn demo_finds_candidates_in_the_debian_genomes() {
    let ragout = Path::new("/usr/share/doc/ragout/examples");
    let kaptive = Path::new("/usr/share/doc/kaptive/examples");
    assert!(
        ragout.is_dir() && kaptive.is_dir(),
        "the Debian example genomes are missing: run ./dev setup (it installs ragout-examples and kaptive-example)"
    );
    let dir = tempfile::tempdir().unwrap();
    let o = pmscope(
        dir.path(),
        &["kmer", "demo", "-k", "31", "--kmers", "cand.tsv"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains(
            "in-group: the 5 S. aureus reference genomes; out-group: the other 19 genomes"
        ),
        "{text}"
    );
    assert!(text.contains("primer candidates"), "{text}");
    let lines = read(dir.path(), "cand.tsv").lines().count();
    assert!(lines > 1, "no candidates written");
    // The out-group holds a draft assembly of one of the in-group strains (USA300), so
    // the candidates are few: far fewer than the in-group's shared k-mers.
    assert!(lines < 200_000, "{lines}");
}

#[test]
fn static_pm_counts_like_volatile_resumes_its_pool_and_refuses_a_foreign_one() {
    let dir = fixtures();
    let d = dir.path();
    let common = [
        "kmer", "count", "a.fa", "b.fa", "c.fa", "-k", "5", "--sorted",
    ];
    let run = |extra: &[&str], out: &str| {
        let mut args: Vec<&str> = common.to_vec();
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--kmers", out]);
        pmscope(d, &args)
    };
    let o = run(&[], "vol.tsv");
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&["--table", "static-pm", "-t", "shm:4k"], "spm.tsv");
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(read(d, "spm.tsv"), read(d, "vol.tsv"));
    // The seed's per-slot fences: the same counts, the policy and a fence per write in
    // the record (per group, far fewer fences than flushes).
    for (fence, record) in [("per-slot", "slot.jsonl"), ("per-group", "group.jsonl")] {
        let o = run(
            &[
                "--table",
                "static-pm",
                "-t",
                "shm:4k",
                "--fence",
                fence,
                "-o",
                record,
            ],
            &format!("{fence}.tsv"),
        );
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(read(d, &format!("{fence}.tsv")), read(d, "vol.tsv"));
        let rec: serde_json::Value = serde_json::from_str(read(d, record).trim()).unwrap();
        assert_eq!(rec["params"]["table_fence"], fence, "{rec}");
        let flushes = rec["values"]["persist_flushes"].as_f64().unwrap();
        let fences = rec["values"]["persist_fences"].as_f64().unwrap();
        if fence == "per-slot" {
            assert!(fences + 2.0 >= flushes && fences <= flushes, "{rec}");
        } else {
            assert!(fences * 4.0 < flushes, "{rec}");
        }
    }
    // A pool file: created, then reopened (the job is complete, the counts the same).
    for out in ["pool1.tsv", "pool2.tsv"] {
        let o = run(
            &[
                "--table",
                "static-pm",
                "--pool",
                "counts.pool",
                "--persist",
                "clflush",
            ],
            out,
        );
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(read(d, out), read(d, "vol.tsv"));
    }
    let o = pmscope(d, &["kmer", "recover", "--pool", "counts.pool"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("K = 5"), "{}", stdout(&o));
    assert!(stdout(&o).contains("3 genomes completed"), "{}", stdout(&o));
    // A foreign file is refused with one sentence, exit 2, and left as it was.
    let foreign: Vec<u8> = (0..8192u32).map(|i| (i * 31) as u8).collect();
    std::fs::write(d.join("foreign.pool"), &foreign).unwrap();
    let o = run(
        &[
            "--table",
            "static-pm",
            "--pool",
            "foreign.pool",
            "--persist",
            "clflush",
        ],
        "foreign.tsv",
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("is not a pmscope k-mer pool"),
        "{}",
        stderr(&o)
    );
    assert_eq!(stderr(&o).trim().lines().count(), 1, "{}", stderr(&o));
    assert_eq!(std::fs::read(d.join("foreign.pool")).unwrap(), foreign);
    assert!(!d.join("foreign.tsv").exists());
}

/// Runs pmscope in `dir`, killed after 120 s: no input may hang.
fn pmscope_timed(dir: &Path, args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pmscope"))
        .current_dir(dir)
        .env("PMSCOPE_RESULTS", dir.join("pmscope-test-results.sqlite"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run pmscope");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("{args:?} hung");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// The files of `dir` but the fixtures and the test's results store.
fn left_behind(dir: &Path, fixtures: &[String]) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !fixtures.contains(n) && !n.starts_with("pmscope-test-results"))
        .collect()
}

/// Outputs that collide, and k-mers on stdout under --json: one sentence, exit 2, before
/// any work (a missing genome would otherwise be the error), and no file left behind.
const OUTPUT_CONFLICTS: &[(&[&str], &str)] = &[
    (
        &[
            "count",
            "-k",
            "5",
            "missing.fa",
            "-o",
            "same.tsv",
            "--kmers",
            "same.tsv",
        ],
        "pmscope: --kmers same.tsv and -o same.tsv name the same file: give each output its own\n",
    ),
    (
        &[
            "count",
            "-k",
            "5",
            "missing.fa",
            "-o",
            "./same.tsv",
            "--kmers",
            "same.tsv",
            "--force",
        ],
        "pmscope: --kmers same.tsv and -o ./same.tsv name the same file: give each output its own\n",
    ),
    (
        &["union", "-k", "5", "missing.fa", "-o", "-", "--kmers", "-"],
        "pmscope: --kmers - and -o - name the same stdout: give each output its own\n",
    ),
    (
        &["count", "-k", "5", "missing.fa", "--json", "--kmers", "-"],
        "pmscope: --kmers - with --json: under --json stdout carries only JSON Lines; write the k-mers to a file\n",
    ),
    (
        &[
            "count",
            "-k",
            "5",
            "missing.fa",
            "-o",
            "r.jsonl",
            "--record",
            "r2.jsonl",
        ],
        "pmscope: --record is the old name of -o; give the record file once, with -o\n",
    ),
    (
        &[
            "subtract",
            "-k",
            "5",
            "missing.fa",
            "--minus",
            "b.fa",
            "--kmers",
            "x.tsv",
            "--record",
            "x.tsv",
        ],
        "pmscope: --kmers x.tsv and -o x.tsv name the same file: give each output its own\n",
    ),
    (
        &["count", "-k", "5", "missing.fa", "--threads", "0"],
        "pmscope: --threads 0: must be at least 1\n",
    ),
    (
        &["count", "-k", "5", "missing.fa", "--threads=-1"],
        "pmscope: --threads -1: not a whole number: give a count of at least 1\n",
    ),
];

#[test]
fn colliding_outputs_are_usage_errors_before_any_work() {
    let dir = fixtures();
    let d = dir.path();
    let before = left_behind(d, &[]);
    for (args, message) in OUTPUT_CONFLICTS {
        let mut a = vec!["kmer"];
        a.extend_from_slice(args);
        let o = pmscope_timed(d, &a);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert_eq!(&stderr(&o), message, "{args:?}");
        assert!(o.stdout.is_empty(), "{args:?}: {}", stdout(&o));
        let left = left_behind(d, &before);
        assert!(left.is_empty(), "{args:?} left {left:?}");
    }
    // The same path twice with real genomes: still refused, nothing written.
    let o = pmscope_timed(
        d,
        &[
            "kmer", "count", "-k", "5", "a.fa", "-o", "same", "--kmers", "same",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(left_behind(d, &before).is_empty());
}

/// One rule for thread counts: kmer refuses more threads than CPUs with bandwidth's
/// sentence, word for word.
#[test]
fn thread_counts_follow_the_rule_of_every_command() {
    let dir = fixtures();
    let kmer = pmscope_timed(
        dir.path(),
        &["kmer", "count", "-k", "5", "a.fa", "--threads", "1000"],
    );
    let bandwidth = pmscope_timed(
        dir.path(),
        &["--null-executor", "bandwidth", "--threads", "1000"],
    );
    assert_eq!(kmer.status.code(), Some(2), "{}", stderr(&kmer));
    assert_eq!(bandwidth.status.code(), Some(2), "{}", stderr(&bandwidth));
    assert!(
        stderr(&kmer).starts_with("pmscope: 1000 threads asked for but "),
        "{}",
        stderr(&kmer)
    );
    assert_eq!(stderr(&kmer), stderr(&bandwidth));
}

/// Under --json every k-mer command prints JSON Lines and nothing else, each a record held
/// to its declaration; a job's record carries the timer, the environment checks' findings
/// and where its workers ran, and -o receives the same records.
#[test]
fn every_kmer_command_prints_only_json_under_json() {
    let dir = fixtures();
    let d = dir.path();
    let runs: &[&[&str]] = &[
        &["count", "-k", "5", "a.fa", "b.fa", "--kmers", "c.tsv"],
        &["union", "-k", "5", "a.fa", "b.fa"],
        &["intersect", "-k", "5", "a.fa", "b.fa"],
        &["subtract", "-k", "5", "a.fa", "--minus", "b.fa"],
        &[
            "primers",
            "-k",
            "4",
            "--in-group",
            "a.fa",
            "b.fa",
            "--out-group",
            "c.fa",
        ],
        &[
            "count",
            "-k",
            "5",
            "a.fa",
            "--table",
            "static-pm",
            "--pool",
            "p.pool",
            "-t",
            "shm:4k",
        ],
        &["recover", "--pool", "p.pool"],
        &["synth", "syn", "--length", "2k", "--strains", "2"],
    ];
    for (i, args) in runs.iter().enumerate() {
        let file = format!("r{i}.jsonl");
        let mut a = vec!["kmer"];
        a.extend_from_slice(args);
        a.extend_from_slice(&["--json", "-o", &file]);
        let o = pmscope_timed(d, &a);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        let text = stdout(&o);
        assert!(!text.trim().is_empty(), "{args:?}: no JSON");
        let records: Vec<pmscope_core::record::Record> = text
            .lines()
            .map(|l| {
                serde_json::from_str(l)
                    .unwrap_or_else(|e| panic!("{args:?}: not a record ({e}): {l}"))
            })
            .collect();
        assert_eq!(read(d, &file), text, "{args:?}: -o differs from stdout");
        for r in &records {
            pmscope_core::vocab::check_record(r).unwrap_or_else(|e| panic!("{args:?}: {e}"));
            if r.experiment == "kmer" {
                assert!(r.system.timer.is_some(), "{args:?}: no timer");
                assert!(!r.threads.is_empty(), "{args:?}: no thread placement");
                assert!(r.target.is_some(), "{args:?}: no target");
            }
        }
        let experiment = &records[0].experiment;
        let want = match args[0] {
            "synth" => "kmer-synth",
            "recover" => "kmer-recover",
            _ => "kmer",
        };
        assert_eq!(experiment, want, "{args:?}");
        assert!(!stderr(&o).contains("warning:"), "{args:?}: {}", stderr(&o));
    }
    assert!(read(d, "c.tsv").starts_with("kmer\tgenomes\n"));
}

/// A job's record holds the same environment findings a measuring command records (those
/// that do not depend on what is measured), so none of them reaches only stderr.
#[test]
fn a_kmer_record_carries_the_environment_findings() {
    let dir = fixtures();
    let d = dir.path();
    let o = pmscope_timed(d, &["kmer", "count", "-k", "5", "a.fa", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let kmer: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    let o = pmscope_timed(d, &["verify", "-t", "dram:4k", "--size", "4MiB", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let verify: serde_json::Value =
        serde_json::from_str(stdout(&o).lines().next().unwrap()).unwrap();
    let codes = |r: &serde_json::Value| -> Vec<String> {
        r["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["code"].as_str().unwrap().to_string())
            .collect()
    };
    let kmer_codes = codes(&kmer);
    // The load average may cross its threshold between the two runs; the rest is fixed.
    for code in codes(&verify) {
        if [
            "damon",
            "numa-balancing",
            "thp-always",
            "thp-never",
            "thp-unknown",
            "thp-defrag",
            "governor",
            "governor-unknown",
            "tsc-unusable",
            "tsc-frequency-undeclared",
            "prefetchers",
        ]
        .contains(&code.as_str())
        {
            assert!(
                kmer_codes.contains(&code),
                "{code} missing from {kmer_codes:?}"
            );
        }
    }
}

/// The warning codes of a `kmer count` record on `-t shm` with `table`, and its target.
fn shm_record(dir: &Path, table: &str) -> (Vec<String>, serde_json::Value) {
    let o = pmscope_timed(
        dir,
        &[
            "kmer", "count", "-k", "5", "a.fa", "b.fa", "--table", table, "-t", "shm", "--json",
        ],
    );
    assert!(o.status.success(), "{table}: {}", stderr(&o));
    let r: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    let codes = r["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["code"].as_str().unwrap().to_string())
        .collect();
    (codes, r["target"].clone())
}

/// A persistent table is judged like every persisting command's target: on shm (DRAM-backed
/// tmpfs) its stores survive no power failure, and its record says so
/// (`pmscope_persist::domain_warning`); a volatile table asks for nothing durable and
/// carries no such warning. Either record carries the table's target as achieved.
#[test]
fn a_persistent_table_on_a_non_durable_target_says_so_in_its_record() {
    let dir = fixtures();
    let (codes, target) = shm_record(dir.path(), "static-pm");
    assert!(
        codes.contains(&"persist-on-emulated".to_string()),
        "{codes:?}"
    );
    assert!(
        target["spec"].as_str().unwrap().starts_with("shm"),
        "{target}"
    );
    assert_eq!(target["achieved"]["persistence"], "emulated", "{target}");
    let (codes, target) = shm_record(dir.path(), "volatile");
    assert!(
        !codes.iter().any(|c| c.starts_with("persist-")),
        "{codes:?}"
    );
    assert!(
        target["achieved"]["bytes"].as_u64().unwrap() > 0,
        "{target}"
    );
    // tx-pm persists inside libpmemobj, which msyncs a pool that is not on DAX: on tmpfs
    // that is no more durable.
    if pmscope_workload::kmer::table::TableKind::TxPm
        .available()
        .is_ok()
    {
        let (codes, _) = shm_record(dir.path(), "tx-pm");
        assert!(
            codes.contains(&"persist-on-emulated".to_string()),
            "{codes:?}"
        );
    }
}

/// `-o` is the record file as in every command: a failed job leaves an existing file
/// exactly as it was, also with --force, and the k-mers file is not created.
#[test]
fn a_failed_job_leaves_the_record_file_as_it_was() {
    let dir = fixtures();
    let d = dir.path();
    std::fs::write(d.join("prev.jsonl"), "old\n").unwrap();
    let o = pmscope_timed(
        d,
        &[
            "kmer",
            "count",
            "-k",
            "5",
            "a.fa",
            "text.fa",
            "-o",
            "prev.jsonl",
            "--kmers",
            "k.tsv",
            "--force",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(read(d, "prev.jsonl"), "old\n");
    assert!(!d.join("k.tsv").exists());
    // The same job on good input replaces it with its record.
    let o = pmscope_timed(
        d,
        &[
            "kmer",
            "count",
            "-k",
            "5",
            "a.fa",
            "-o",
            "prev.jsonl",
            "--force",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_str(read(d, "prev.jsonl").trim()).unwrap();
    assert_eq!(r["experiment"], "kmer");
}

/// The first `bases` bases of the first record of a gzipped FASTA file, as a FASTA text.
fn fasta_prefix(path: &Path, bases: usize) -> String {
    let o = Command::new("gzip")
        .arg("-dc")
        .arg(path)
        .output()
        .expect("gzip");
    assert!(o.status.success(), "gzip -dc {}", path.display());
    let text = String::from_utf8(o.stdout).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap().to_string();
    let mut seq = String::new();
    for l in lines.take_while(|l| !l.starts_with('>')) {
        seq.push_str(l.trim());
        if seq.len() >= bases {
            break;
        }
    }
    seq.truncate(bases);
    format!("{header}\n{seq}\n")
}

/// Issue 13's acceptance on the Debian genomes (a subset: the first 60 kbp of four S.
/// aureus references, as tx-pm inserts only ~0.05-0.08 M k-mers/s): static-pm and tx-pm
/// write exactly the volatile table's counts at K = 31 and K = 100, and its primer
/// candidates at K = 100.
#[test]
fn persistent_tables_count_the_debian_genomes_like_the_volatile_one() {
    let refs = Path::new("/usr/share/doc/ragout/examples/S.Aureus/references");
    assert!(
        refs.is_dir(),
        "the Debian example genomes are missing: run ./dev setup (it installs ragout-examples)"
    );
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let names = ["COL", "N315", "RF122", "USA300_FPR3757"];
    for n in names {
        let text = fasta_prefix(&refs.join(format!("{n}.fasta.gz")), 60_000);
        std::fs::write(d.join(format!("{n}.fa")), text).unwrap();
    }
    let files: Vec<String> = names.iter().map(|n| format!("{n}.fa")).collect();
    let tables = [
        ("volatile", vec!["--table", "volatile"]),
        ("static-pm", vec!["--table", "static-pm", "-t", "shm:4k"]),
        ("tx-pm", vec!["--table", "tx-pm", "-t", "shm:4k"]),
    ];
    for k in ["31", "100"] {
        let mut outputs = Vec::new();
        for (name, extra) in &tables {
            let out = format!("count-{k}-{name}.tsv");
            let mut args = vec![
                "kmer",
                "count",
                "-k",
                k,
                "--sorted",
                "--kmers",
                out.as_str(),
            ];
            args.extend(files.iter().map(|f| f.as_str()));
            args.extend(extra.iter().copied());
            let o = pmscope(d, &args);
            assert!(o.status.success(), "{name} k={k}: {}", stderr(&o));
            outputs.push((name, read(d, &out)));
        }
        let (_, truth) = &outputs[0];
        assert!(truth.lines().count() > 100_000, "k={k}: too few k-mers");
        for (name, got) in &outputs[1..] {
            assert!(
                got == truth,
                "{name} k={k}: counts differ from the volatile table's"
            );
        }
    }
    let mut candidates = Vec::new();
    for (name, extra) in &tables {
        let out = format!("primers-{name}.tsv");
        let mut args = vec![
            "kmer",
            "primers",
            "-k",
            "100",
            "--kmers",
            out.as_str(),
            "--in-group",
        ];
        args.extend(files[..3].iter().map(|f| f.as_str()));
        args.push("--out-group");
        args.push(&files[3]);
        args.extend(extra.iter().copied());
        let o = pmscope(d, &args);
        assert!(o.status.success(), "{name} primers: {}", stderr(&o));
        candidates.push((name, read(d, &out)));
    }
    let (_, truth) = &candidates[0];
    assert!(truth.lines().count() > 1, "no primer candidates");
    for (name, got) in &candidates[1..] {
        assert!(
            got == truth,
            "{name}: primer candidates differ from the volatile table's"
        );
    }
}

/// `--partition nodes` writes exactly one table's k-mers, for the volatile and the
/// static-pm table, with one target bound to each node or one target given per node,
/// records its sub-tables (one per node with CPUs; one on a one-node machine, which the
/// summary says), and refuses what it cannot place per node.
#[test]
fn partition_by_node_counts_like_one_table_and_refuses_what_it_cannot_place() {
    let dir = fixtures();
    let d = dir.path();
    let cpu_nodes = std::fs::read_dir("/sys/devices/system/node")
        .map(|dir| {
            dir.filter_map(|e| {
                let name = e.ok()?.file_name().into_string().ok()?;
                let id = name.strip_prefix("node")?.to_string();
                id.parse::<u32>().ok()?;
                let cpus =
                    std::fs::read_to_string(format!("/sys/devices/system/node/{name}/cpulist"))
                        .ok()?;
                (!cpus.trim().is_empty()).then_some(())
            })
            .count()
        })
        .unwrap_or(1)
        .max(1);
    let threads = cpu_nodes.to_string();
    let common = [
        "kmer",
        "count",
        "a.fa",
        "b.fa",
        "c.fa",
        "-k",
        "5",
        "--sorted",
        "--threads",
        threads.as_str(),
    ];
    let run = |extra: &[&str], out: &str| {
        let mut args: Vec<&str> = common.to_vec();
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--kmers", out]);
        pmscope(d, &args)
    };
    let o = run(&[], "one.tsv");
    assert!(o.status.success(), "{}", stderr(&o));
    for (name, extra) in [
        ("volatile", vec!["-t", "dram:4k"]),
        ("static-pm", vec!["--table", "static-pm", "-t", "shm:4k"]),
    ] {
        let out = format!("{name}.tsv");
        let record = format!("{name}.jsonl");
        let mut args = extra.clone();
        args.extend_from_slice(&["--partition", "nodes", "-o", record.as_str()]);
        let o = run(&args, &out);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        assert_eq!(read(d, &out), read(d, "one.tsv"), "{name}");
        let rec: serde_json::Value = serde_json::from_str(read(d, &record).trim()).unwrap();
        assert_eq!(rec["params"]["partition"], "nodes");
        let subs = rec["params"]["sub_tables"].as_array().unwrap();
        assert_eq!(subs.len(), cpu_nodes, "{rec}");
        let inserted: u64 = subs.iter().map(|s| s["inserts"].as_u64().unwrap()).sum();
        assert_eq!(inserted as f64, rec["values"]["inserts"].as_f64().unwrap());
        for s in subs {
            assert_eq!(s["pages_on_node_fraction"], 1.0, "{s}");
        }
        if cpu_nodes == 1 {
            assert!(
                stdout(&o).contains(
                    "partitioned by NUMA node: 1 sub-table, as this machine has one node with CPUs"
                ),
                "{}",
                stdout(&o)
            );
        }
    }
    // One target per node with CPUs, in node order: each sub-table on its own (files
    // here), which its record names; a file's memory was asked on no node, and the record
    // says which node holds it.
    let dirs: Vec<String> = (0..=cpu_nodes)
        .map(|i| {
            let sub = format!("sub{i}");
            std::fs::create_dir(d.join(&sub)).unwrap();
            format!("file:{}", d.join(&sub).display())
        })
        .collect();
    let mut explicit = vec!["--table", "static-pm", "--partition", "nodes"];
    for t in &dirs[..cpu_nodes] {
        explicit.extend_from_slice(&["-t", t.as_str()]);
    }
    explicit.extend_from_slice(&["-o", "explicit.jsonl"]);
    let o = run(&explicit, "explicit.tsv");
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(read(d, "explicit.tsv"), read(d, "one.tsv"));
    let rec: serde_json::Value = serde_json::from_str(read(d, "explicit.jsonl").trim()).unwrap();
    let subs = rec["params"]["sub_tables"].as_array().unwrap();
    assert_eq!(subs.len(), cpu_nodes, "{rec}");
    for (s, t) in subs.iter().zip(&dirs) {
        assert_eq!(s["target"], t.as_str(), "{s}");
        assert_eq!(s["memory_node"], serde_json::Value::Null, "{s}");
        assert!(s.get("achieved_node").is_some(), "{s}");
    }
    // What cannot be placed node by node: one sentence, exit 2, nothing written.
    let mut one_too_many = vec!["--table", "static-pm"];
    for t in &dirs {
        one_too_many.extend_from_slice(&["-t", t.as_str()]);
    }
    for (extra, says) in [
        (
            vec!["--table", "tx-pm", "-t", "shm:4k"],
            "--partition nodes cannot split tx-pm",
        ),
        (
            vec!["--table", "static-pm", "--pool", "p.pool"],
            "--pool holds one table, but --partition nodes makes one per node",
        ),
        (
            one_too_many,
            "--partition nodes places one sub-table per node with CPUs",
        ),
    ] {
        let mut args = extra.clone();
        args.extend_from_slice(&["--partition", "nodes"]);
        let o = run(&args, "refused.tsv");
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{extra:?}: {}", stderr(&o));
        assert_eq!(stderr(&o).trim().lines().count(), 1, "{}", stderr(&o));
        assert!(!d.join("refused.tsv").exists() && !d.join("p.pool").exists());
    }
}

/// `--method binned` writes the table method's k-mers and primer candidates on real genomes
/// (hundreds of bins, the minimizers' real skew, k = 31 and 100), records its method and
/// bins, shows its own phases, and refuses the options that shape the one table rather
/// than ignore them.
#[test]
fn binned_jobs_on_the_debian_genomes_equal_the_tables_and_refuse_table_options() {
    let refs = Path::new("/usr/share/doc/ragout/examples/H.Pylori/references");
    assert!(
        refs.is_dir(),
        "the Debian example genomes are missing: run ./dev setup (it installs ragout-examples)"
    );
    let mut files: Vec<String> = std::fs::read_dir(refs)
        .unwrap()
        .map(|e| e.unwrap().path().display().to_string())
        .filter(|p| p.ends_with(".fasta.gz"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 5);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for k in ["31", "100"] {
        let mut outputs = Vec::new();
        for method in ["table", "binned"] {
            let (out, rec) = (format!("{method}-{k}.tsv"), format!("{method}-{k}.json"));
            let mut args = vec!["kmer", "count", "-k", k, "--sorted", "--method", method];
            args.extend(["--kmers", out.as_str(), "-o", rec.as_str()]);
            args.extend(files.iter().map(|f| f.as_str()));
            let o = pmscope(d, &args);
            assert!(o.status.success(), "{method} k={k}: {}", stderr(&o));
            let r: serde_json::Value =
                serde_json::from_str(read(d, &rec).lines().next().unwrap()).unwrap();
            assert_eq!(r["params"]["method"], method);
            if method == "binned" {
                assert!(stdout(&o).contains("split into bins"), "{}", stdout(&o));
                assert!(r["values"]["bins"].as_f64().unwrap() >= 100.0, "{r}");
                assert!(r["values"]["super_kmers"].as_f64().unwrap() > 0.0);
                assert!(r["values"]["split_ms"].as_f64().is_some());
                assert_eq!(r["params"]["table"], "binned");
                assert_eq!(r["params"]["minimizer_bases"], 15);
                // No estimate was made: the record does not pretend one.
                assert!(r["values"].get("estimated_distinct_kmers").is_none());
            }
            outputs.push((r, read(d, &out)));
        }
        let ((table, truth), (binned, got)) = (&outputs[0], &outputs[1]);
        assert!(truth.lines().count() > 1_000_000, "k={k}: too few k-mers");
        assert!(got == truth, "k={k}: binned k-mers differ from the table's");
        for key in ["union_kmers", "intersection_kmers", "inserts"] {
            assert_eq!(binned["values"][key], table["values"][key], "{key}");
        }
        assert_eq!(
            binned["params"]["genome_count_histogram"],
            table["params"]["genome_count_histogram"]
        );
    }
    // Primers: the in-group's bins, then the out-group looked up in the intersection.
    let mut candidates = Vec::new();
    for method in ["table", "binned"] {
        let out = format!("primers-{method}.tsv");
        let mut args = vec!["kmer", "primers", "-k", "31", "--method", method];
        args.extend(["--kmers", out.as_str(), "--in-group"]);
        args.extend(files[..3].iter().map(|f| f.as_str()));
        args.push("--out-group");
        args.extend(files[3..].iter().map(|f| f.as_str()));
        let o = pmscope(d, &args);
        assert!(o.status.success(), "primers {method}: {}", stderr(&o));
        candidates.push(read(d, &out));
    }
    assert!(candidates[0].lines().count() > 100, "too few candidates");
    assert!(candidates[1] == candidates[0], "binned candidates differ");
    for (extra, option) in [
        (vec!["--table", "static-pm"], "--table static-pm"),
        (vec!["--partition", "nodes"], "--partition nodes"),
        (vec!["--persist", "clwb"], "--persist"),
    ] {
        let mut args = vec!["kmer", "count", "--method", "binned", files[0].as_str()];
        args.extend(extra);
        let o = pmscope(d, &args);
        assert_eq!(o.status.code(), Some(2), "{option}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(&format!("{option} shapes the one table of --method table")),
            "{}",
            stderr(&o)
        );
    }
}

/// Without --method, a job that names no target counts by the binned method (the fastest),
/// and one that names a target (or an option of the one table) counts in one table there,
/// the memory-tier measurement, and says so in one sentence; --method still overrides both.
#[test]
fn the_default_method_is_binned_unless_a_target_names_the_table() {
    let dir = fixtures();
    let d = dir.path();
    let method_of = |args: &[&str]| -> (String, String) {
        let _ = std::fs::remove_file(d.join("m.json"));
        let mut all = args.to_vec();
        all.extend(["-o", "m.json", "--threads", "1"]);
        let o = pmscope(d, &all);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        let r: serde_json::Value =
            serde_json::from_str(read(d, "m.json").lines().next().unwrap()).unwrap();
        (
            r["params"]["method"].as_str().unwrap().to_string(),
            stdout(&o),
        )
    };
    let note = "note: -t names a target, so the k-mers are counted in one table there (the memory-tier measurement); --method binned counts faster";
    for op in [
        vec!["kmer", "count", "-k", "5", "a.fa", "b.fa"],
        vec!["kmer", "union", "-k", "5", "a.fa", "b.fa"],
        vec!["kmer", "intersect", "-k", "5", "a.fa", "b.fa"],
        vec!["kmer", "subtract", "-k", "5", "a.fa", "--minus", "b.fa"],
        vec![
            "kmer",
            "primers",
            "-k",
            "5",
            "--in-group",
            "a.fa",
            "--out-group",
            "c.fa",
        ],
    ] {
        let (method, out) = method_of(&op);
        assert_eq!(method, "binned", "{op:?}: {out}");
        assert!(!out.contains("note:"), "{op:?}: {out}");
        let mut with_target = op.clone();
        with_target.extend(["-t", "dram:4k"]);
        let (method, out) = method_of(&with_target);
        assert_eq!(method, "table", "{with_target:?}");
        assert_eq!(out.matches(note).count(), 1, "{with_target:?}: {out}");
        let mut binned = with_target.clone();
        binned.extend(["--method", "binned"]);
        let (method, out) = method_of(&binned);
        assert_eq!(method, "binned", "{binned:?}");
        assert!(!out.contains("note:"), "{binned:?}: {out}");
        let mut table = op.clone();
        table.extend(["--method", "table"]);
        let (method, out) = method_of(&table);
        assert_eq!(method, "table", "{table:?}");
        assert!(!out.contains("note:"), "{table:?}: {out}");
    }
    // An option of the one table names it too; with --method binned it is one sentence, exit 2.
    let (method, out) = method_of(&[
        "kmer",
        "count",
        "-k",
        "5",
        "--fence",
        "per-slot",
        "--table",
        "static-pm",
        "a.fa",
    ]);
    assert_eq!(method, "table");
    assert!(out.contains("note: --table static-pm shapes the one table, so the k-mers are counted in one table there"), "{out}");
    let o = pmscope(
        d,
        &[
            "kmer",
            "count",
            "--method",
            "binned",
            "--table",
            "static-pm",
            "a.fa",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(stderr(&o).trim().lines().count(), 1, "{}", stderr(&o));
}
