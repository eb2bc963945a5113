//! How `bandwidth` mixes reads and writes (`--mix`), and what each thread does at a point.

use crate::measure::Role;
use pmscope_loops::stream::Streamer;
use std::str::FromStr;

/// How reads and writes are mixed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mix {
    /// No mix: every thread runs the op.
    None,
    /// k readers and n-k writers, for every k from 0 to n (seed 004 Figure 13).
    Split,
    /// Every thread interleaves `reads` reads and `writes` writes (seed 004 Figure 12).
    Ratio {
        /// Reads per round.
        reads: u32,
        /// Writes per round.
        writes: u32,
    },
}

/// `--mix`: `split` or `R:W` (never [`Mix::None`], which is the option left out).
impl FromStr for Mix {
    type Err = String;
    fn from_str(s: &str) -> Result<Mix, String> {
        if s == "split" {
            return Ok(Mix::Split);
        }
        let bad = || {
            "not a mix: use split (k readers, n-k writers) or a ratio R:W such as 2:1".to_string()
        };
        let (r, w) = s.split_once(':').ok_or_else(bad)?;
        let reads: u32 = r.parse().map_err(|_| bad())?;
        let writes: u32 = w.parse().map_err(|_| bad())?;
        if reads == 0 && writes == 0 {
            return Err(bad());
        }
        Ok(Mix::Ratio { reads, writes })
    }
}

/// What each thread does at each point of a thread count, with the point's label: the
/// split gives k readers then n-k writers for every k.
pub fn thread_roles(
    n: usize,
    mix: Mix,
    op: Streamer,
    read: Streamer,
    write: Streamer,
) -> Vec<(String, Vec<Role>)> {
    match mix {
        Mix::None => vec![(String::new(), vec![Role::Stream(op); n])],
        Mix::Split => (0..=n)
            .map(|k| {
                let roles = (0..n)
                    .map(|i| Role::Stream(if i < k { read } else { write }))
                    .collect();
                (format!("{k}R+{}W", n - k), roles)
            })
            .collect(),
        Mix::Ratio { reads, writes } => vec![(
            format!("{reads}:{writes} interleaved"),
            vec![
                Role::Interleave {
                    read,
                    write,
                    reads,
                    writes
                };
                n
            ],
        )],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmscope_loops::stream::StreamOp;
    use pmscope_sys::cpu::CpuFeatures;

    fn streamers() -> (Streamer, Streamer, Streamer) {
        let f = CpuFeatures::detect();
        let mk = |o| Streamer::new(o, Streamer::widest(&f), 4096, &f).unwrap();
        (
            mk(StreamOp::NtStore),
            mk(StreamOp::Read),
            mk(StreamOp::NtStore),
        )
    }

    #[test]
    fn mix_parsing() {
        assert_eq!("split".parse(), Ok(Mix::Split));
        assert_eq!(
            "2:1".parse(),
            Ok(Mix::Ratio {
                reads: 2,
                writes: 1
            })
        );
        assert!("0:0".parse::<Mix>().is_err());
        assert!("2-1".parse::<Mix>().is_err());
        assert!("a:b".parse::<Mix>().is_err());
    }

    #[test]
    fn split_gives_every_reader_count() {
        let (op, r, w) = streamers();
        let configs = thread_roles(4, Mix::Split, op, r, w);
        assert_eq!(configs.len(), 5);
        for (k, (label, roles)) in configs.iter().enumerate() {
            assert_eq!(roles.len(), 4);
            let readers = roles.iter().filter(|x| **x == Role::Stream(r)).count();
            assert_eq!(readers, k);
            assert_eq!(
                roles.iter().filter(|x| **x == Role::Stream(w)).count(),
                4 - k
            );
            assert_eq!(label, &format!("{k}R+{}W", 4 - k));
        }
        let plain = thread_roles(2, Mix::None, op, r, w);
        assert_eq!(plain, vec![(String::new(), vec![Role::Stream(op); 2])]);
        let ratio = thread_roles(
            2,
            Mix::Ratio {
                reads: 2,
                writes: 1,
            },
            op,
            r,
            w,
        );
        assert_eq!(ratio.len(), 1);
        assert_eq!(ratio[0].0, "2:1 interleaved");
        assert!(matches!(
            ratio[0].1[0],
            Role::Interleave {
                reads: 2,
                writes: 1,
                ..
            }
        ));
    }

    /// The null executor's traffic of a role is one pass of it, in the streamers' own
    /// accounting (copy: its half read and its half written).
    #[test]
    fn a_roles_pass_traffic_follows_the_streamers_accounting() {
        let f = CpuFeatures::detect();
        let mk = |o| Streamer::new(o, Streamer::widest(&f), 4096, &f).unwrap();
        let len = 1 << 20;
        let t = Role::Stream(mk(StreamOp::Copy)).pass_traffic(len);
        assert_eq!((t.read, t.written), (len as u64 / 2, len as u64 / 2));
        let t = Role::Stream(mk(StreamOp::Read)).pass_traffic(len);
        assert_eq!((t.read, t.written), (len as u64, 0));
        let (_, r, w) = streamers();
        let (_, roles) = &thread_roles(
            1,
            Mix::Ratio {
                reads: 3,
                writes: 1,
            },
            r,
            r,
            w,
        )[0];
        let t = roles[0].pass_traffic(len);
        assert_eq!((t.read, t.written), (3 * len as u64 / 4, len as u64 / 4));
    }
}
