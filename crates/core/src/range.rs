//! The one grammar for every sweep axis (thread counts, access sizes, working sets, delays).
//!
//! ```text
//! axis  := item ( ',' item )*
//! item  := value | value '..' value [ ':' step ]
//! step  := 'x' N        geometric: each value N times the previous (default for sizes)
//!        | '+' value    arithmetic
//! ```
//! `64..4KiB:x2` is 64, 128, ..., 4096; `1..4` is 1, 2, 3, 4 for counts; `1,2,4` is a list.
//! Values are sizes (`4KiB`) or plain integers, chosen by the caller's item parser.

use crate::units::Bytes;

/// Why an axis did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AxisError {
    /// A value inside the axis is malformed.
    #[error("'{item}' in '{axis}': {reason}")]
    Item {
        /// The whole axis as given.
        axis: String,
        /// The offending item.
        item: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The range is empty or its step would not advance.
    #[error(
        "'{0}' is an empty or endless range: the end must not be below the start and the step must grow (x2 or more, +1 or more)"
    )]
    Empty(String),
    /// The axis would have more points than anyone means to measure.
    #[error("'{0}' expands to more than {1} points")]
    TooMany(String, usize),
}

/// How values of an axis are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AxisKind {
    /// Plain counts (threads, repetitions); default step +1.
    Count,
    /// Byte sizes with units; default step x2.
    Size,
}

const MAX_POINTS: usize = 10_000;

fn parse_value(kind: AxisKind, axis: &str, s: &str) -> Result<u64, AxisError> {
    let err = |reason: String| AxisError::Item {
        axis: axis.to_string(),
        item: s.to_string(),
        reason,
    };
    match kind {
        AxisKind::Count => crate::whole::parse::<u64>(s).map_err(err),
        AxisKind::Size => s
            .parse::<Bytes>()
            .map(|b| b.0)
            .map_err(|e| err(e.to_string())),
    }
}

/// Expands an axis into its points, in the order given, without duplicates.
pub fn parse_axis(axis: &str, kind: AxisKind) -> Result<Vec<u64>, AxisError> {
    let mut out: Vec<u64> = Vec::new();
    if axis.trim().is_empty() {
        return Err(AxisError::Empty(axis.to_string()));
    }
    for item in axis.split(',') {
        let item = item.trim();
        if let Some((a, rest)) = item.split_once("..") {
            let (b, step) = match rest.split_once(':') {
                Some((b, step)) => (b, Some(step)),
                None => (rest, None),
            };
            let start = parse_value(kind, axis, a)?;
            let end = parse_value(kind, axis, b)?;
            if end < start {
                return Err(AxisError::Empty(axis.to_string()));
            }
            enum Step {
                Mul(u64),
                Add(u64),
            }
            let step = match step {
                None if kind == AxisKind::Size => Step::Mul(2),
                None => Step::Add(1),
                Some(s) if s.starts_with('x') => {
                    Step::Mul(s[1..].trim().parse().map_err(|_| AxisError::Item {
                        axis: axis.into(),
                        item: s.into(),
                        reason: "the factor after 'x' must be a whole number".into(),
                    })?)
                }
                Some(s) if s.starts_with('+') => Step::Add(parse_value(kind, axis, &s[1..])?),
                Some(s) => {
                    return Err(AxisError::Item {
                        axis: axis.into(),
                        item: s.into(),
                        reason: "a step is 'xN' (geometric) or '+N' (arithmetic)".into(),
                    });
                }
            };
            match step {
                Step::Mul(f) if f < 2 || start == 0 => {
                    return Err(AxisError::Empty(axis.to_string()));
                }
                Step::Add(0) => return Err(AxisError::Empty(axis.to_string())),
                _ => {}
            }
            let mut v = start;
            loop {
                if !out.contains(&v) {
                    out.push(v);
                }
                if out.len() > MAX_POINTS {
                    return Err(AxisError::TooMany(axis.to_string(), MAX_POINTS));
                }
                let next = match step {
                    Step::Mul(f) => v.checked_mul(f),
                    Step::Add(d) => v.checked_add(d),
                };
                match next {
                    Some(n) if n <= end => v = n,
                    _ => break,
                }
            }
        } else {
            let v = parse_value(kind, axis, item)?;
            if !out.contains(&v) {
                out.push(v);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_ranges() {
        assert_eq!(parse_axis("1,2,4", AxisKind::Count).unwrap(), vec![1, 2, 4]);
        assert_eq!(
            parse_axis("1..4", AxisKind::Count).unwrap(),
            vec![1, 2, 3, 4]
        );
        assert_eq!(
            parse_axis("64..1KiB", AxisKind::Size).unwrap(),
            vec![64, 128, 256, 512, 1024]
        );
        assert_eq!(
            parse_axis("0..10:+5", AxisKind::Count).unwrap(),
            vec![0, 5, 10]
        );
        assert_eq!(
            parse_axis("4K..64K:x4", AxisKind::Size).unwrap(),
            vec![4096, 16384, 65536]
        );
        assert_eq!(
            parse_axis("2,1..3", AxisKind::Count).unwrap(),
            vec![2, 1, 3]
        );
    }

    #[test]
    fn rejects_bad_axes() {
        assert!(matches!(
            parse_axis("", AxisKind::Count),
            Err(AxisError::Empty(_))
        ));
        assert!(matches!(
            parse_axis("4..1", AxisKind::Count),
            Err(AxisError::Empty(_))
        ));
        assert!(matches!(
            parse_axis("1..4:x1", AxisKind::Count),
            Err(AxisError::Empty(_))
        ));
        assert!(matches!(
            parse_axis("1..4:+0", AxisKind::Count),
            Err(AxisError::Empty(_))
        ));
        assert!(matches!(
            parse_axis("1..4:y2", AxisKind::Count),
            Err(AxisError::Item { .. })
        ));
        assert!(matches!(
            parse_axis("a", AxisKind::Count),
            Err(AxisError::Item { .. })
        ));
        assert!(matches!(
            parse_axis("1..100000", AxisKind::Count),
            Err(AxisError::TooMany(..))
        ));
    }
}
