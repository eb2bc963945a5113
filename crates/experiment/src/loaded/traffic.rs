//! The traffic of `loaded`: what the other threads do while the probe measures (`--rw`,
//! `--traffic-op`, `--traffic-pattern`, `--traffic-access`).

use super::Params;
use crate::error::usage;
use crate::measure::TrafficMix;
use anyhow::Result;
use pmscope_core::vocab::Pattern;
use pmscope_loops::catalog;
use pmscope_loops::stream::{StreamOp, Streamer};
use pmscope_sys::cpu::CpuFeatures;
use std::str::FromStr;

/// The traffic's read:write ratio (`--rw`): reads and writes per round, not both zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rw {
    /// Read accesses per round.
    pub reads: u32,
    /// Write accesses per round.
    pub writes: u32,
}

impl FromStr for Rw {
    type Err = String;
    fn from_str(s: &str) -> Result<Rw, String> {
        match s
            .split_once(':')
            .and_then(|(r, w)| Some((r.parse::<u32>().ok()?, w.parse::<u32>().ok()?)))
        {
            Some((reads, writes)) if reads + writes > 0 => Ok(Rw { reads, writes }),
            _ => Err("give the traffic's read:write ratio, e.g. 1:0, 2:1 or 1:1".into()),
        }
    }
}

impl std::fmt::Display for Rw {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.reads, self.writes)
    }
}

/// The order the traffic visits its region.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TrafficPattern {
    /// Blocks in address order.
    Seq,
    /// A random permutation of every block, each once per pass.
    Rand,
}

impl TrafficPattern {
    /// The pattern, as records spell it.
    pub fn pattern(self) -> Pattern {
        match self {
            TrafficPattern::Seq => Pattern::Seq,
            TrafficPattern::Rand => Pattern::Rand,
        }
    }
}

/// The stream op of `--traffic-op`.
pub(super) fn traffic_op(s: &str) -> Result<StreamOp, String> {
    catalog::stream_op(s).ok_or_else(|| {
        format!(
            "use {} (or a row of `pmscope list ops` that streams as one, such as store or store+clwb+sfence)",
            StreamOp::names()
        )
    })
}

/// The help of `--traffic-op`, from the stream ops.
pub(super) fn traffic_op_help() -> String {
    format!(
        "What the traffic does: {} (read: read-only traffic). A row of `pmscope list ops` that \
         streams as one of them (load, store, store+clwb+sfence, ...) is accepted too \
         [default: read, or write when --rw has writes]",
        StreamOp::names()
    )
}

/// The traffic of `--traffic-op`, `--rw`, `--traffic-pattern` and `--traffic-access`: its
/// streams checked against this CPU, and the read:write ratio it runs.
pub(super) fn traffic(a: &Params, f: &CpuFeatures) -> Result<(TrafficMix, Rw)> {
    // The traffic's writer: --traffic-op (a stream op, or a catalog row that streams as
    // one), ordinary stores by default; `read` asks for read-only traffic.
    let op = a.traffic_op;
    let writing = op.filter(|&o| o.writes());
    // read-ahead asks for read-only traffic too, read by its own loop.
    let reader = op.filter(|&o| !o.writes()).unwrap_or(StreamOp::Read);
    let rw = a.rw.unwrap_or(Rw {
        reads: u32::from(writing.is_none()),
        writes: u32::from(writing.is_some()),
    });
    if writing.is_none() && op.is_some() && rw.writes > 0 {
        return Err(usage(format!(
            "--rw {rw} asks for writes but --traffic-op {} writes nothing: give a writing op (write, ntstore, store+clwb)",
            reader.name()
        )));
    }
    let access_bytes = a.traffic_access.0 as usize;
    let width = Streamer::widest(f);
    let mix = TrafficMix {
        read: Streamer::new(reader, width, access_bytes, f)?,
        write: Streamer::new(writing.unwrap_or(StreamOp::Write), width, access_bytes, f)?,
        reads: rw.reads,
        writes: rw.writes,
        random: a.traffic_pattern.pattern() == Pattern::Rand,
    };
    Ok((mix, rw))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let d = crate::defaults::<Params>();
        assert_eq!(d.probe.probe, super::super::Probe::Chase);
        assert_eq!(d.traffic_pattern.pattern(), Pattern::Seq);
        assert_eq!((d.rw, d.traffic_op), (None, None));
        assert_eq!(traffic_op("store+clwb+sfence"), Ok(StreamOp::StoreClwb));
    }

    #[test]
    fn ratios() {
        assert_eq!(
            "2:1".parse(),
            Ok(Rw {
                reads: 2,
                writes: 1
            })
        );
        assert_eq!("0:1".parse::<Rw>().unwrap().to_string(), "0:1");
        for bad in ["x", "0:0", "1", "1:-1", ":1"] {
            assert!(bad.parse::<Rw>().is_err(), "{bad}");
        }
    }
}
