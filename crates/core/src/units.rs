//! Byte sizes. Sizes use binary prefixes (`K` = `KiB` = 1024); rates elsewhere use decimal
//! GB/s (10^9 B/s) as the seed papers and likwid do. Both rules are stated in
//! `docs/results-schema.md`.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A number of bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Bytes(pub u64);

/// 4 KiB, the base page size on x86-64.
pub const KIB4: u64 = 4 << 10;
/// 2 MiB, the PMD (huge page) size on x86-64.
pub const MIB2: u64 = 2 << 20;
/// 1 GiB, the PUD (gigantic page) size on x86-64.
pub const GIB1: u64 = 1 << 30;

/// Why a size did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    /// Nothing was given.
    #[error("empty size")]
    Empty,
    /// The number part is not a whole number.
    #[error(
        "'{0}' is not a size: expected a whole number with an optional unit (B, K/KiB, M/MiB, G/GiB, T/TiB)"
    )]
    Malformed(String),
    /// The unit is not one of ours.
    #[error("'{0}' has an unknown unit: use B, K/KiB, M/MiB, G/GiB or T/TiB (binary: 1K = 1024)")]
    Unit(String),
    /// The value does not fit in 64 bits.
    #[error("'{0}' is too large: a size is at most 16 EiB (18446744073709551615 bytes)")]
    Overflow(String),
}

impl FromStr for Bytes {
    type Err = SizeError;

    fn from_str(s: &str) -> Result<Self, SizeError> {
        let t = s.trim();
        if t.is_empty() {
            return Err(SizeError::Empty);
        }
        let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        if num.is_empty() {
            return Err(SizeError::Malformed(s.to_string()));
        }
        let n: u64 = num
            .parse()
            .map_err(|_| SizeError::Overflow(s.to_string()))?;
        let shift = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 0,
            "k" | "kb" | "kib" => 10,
            "m" | "mb" | "mib" => 20,
            "g" | "gb" | "gib" => 30,
            "t" | "tb" | "tib" => 40,
            _ => {
                return Err(if unit.starts_with('.') {
                    SizeError::Malformed(s.to_string())
                } else {
                    SizeError::Unit(s.to_string())
                });
            }
        };
        n.checked_mul(1u64 << shift)
            .map(Bytes)
            .ok_or_else(|| SizeError::Overflow(s.to_string()))
    }
}

impl fmt::Display for Bytes {
    /// The largest binary unit that divides the value exactly (`4KiB`, `1536MiB`), so that
    /// `Display` and `FromStr` round-trip.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(u32, &str); 4] = [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")];
        for (shift, name) in UNITS {
            let unit = 1u64 << shift;
            if self.0 >= unit && self.0.is_multiple_of(unit) {
                return write!(f, "{}{}", self.0 / unit, name);
            }
        }
        write!(f, "{}B", self.0)
    }
}

impl Bytes {
    /// A human rendering with one decimal (`1.5 GiB`), for messages; not parseable.
    pub fn human(self) -> String {
        let v = self.0 as f64;
        const UNITS: [(f64, &str); 4] = [
            (1_099_511_627_776.0, "TiB"),
            (1_073_741_824.0, "GiB"),
            (1_048_576.0, "MiB"),
            (1024.0, "KiB"),
        ];
        for (unit, name) in UNITS {
            if v >= unit {
                return format!("{:.1} {}", v / unit, name);
            }
        }
        format!("{} B", self.0)
    }
}

/// The short name of a page size as the target grammar spells it (`4k`, `2m`, `1g`).
pub fn page_size_name(bytes: u64) -> String {
    match bytes {
        KIB4 => "4k".into(),
        MIB2 => "2m".into(),
        GIB1 => "1g".into(),
        other => Bytes(other).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_binary_units() {
        assert_eq!("64".parse::<Bytes>(), Ok(Bytes(64)));
        assert_eq!("64B".parse::<Bytes>(), Ok(Bytes(64)));
        assert_eq!("4k".parse::<Bytes>(), Ok(Bytes(4096)));
        assert_eq!("4KiB".parse::<Bytes>(), Ok(Bytes(4096)));
        assert_eq!("2M".parse::<Bytes>(), Ok(Bytes(2 << 20)));
        assert_eq!("1GiB".parse::<Bytes>(), Ok(Bytes(1 << 30)));
        assert_eq!("1t".parse::<Bytes>(), Ok(Bytes(1 << 40)));
    }

    #[test]
    fn rejects_malformed() {
        assert_eq!("".parse::<Bytes>(), Err(SizeError::Empty));
        assert!(matches!("G".parse::<Bytes>(), Err(SizeError::Malformed(_))));
        assert!(matches!(
            "1.5G".parse::<Bytes>(),
            Err(SizeError::Malformed(_))
        ));
        assert!(matches!("3X".parse::<Bytes>(), Err(SizeError::Unit(_))));
        assert!(matches!(
            "-1".parse::<Bytes>(),
            Err(SizeError::Malformed(_))
        ));
        assert!(matches!(
            "99999999999T".parse::<Bytes>(),
            Err(SizeError::Overflow(_))
        ));
    }

    #[test]
    fn displays_exact_units() {
        assert_eq!(Bytes(4096).to_string(), "4KiB");
        assert_eq!(Bytes(1536 << 20).to_string(), "1536MiB");
        assert_eq!(Bytes(100).to_string(), "100B");
        assert_eq!(Bytes(3 << 30).human(), "3.0 GiB");
    }

    proptest! {
        #[test]
        fn display_round_trips(n in 0u64..(1u64 << 50)) {
            let b = Bytes(n);
            prop_assert_eq!(b.to_string().parse::<Bytes>(), Ok(b));
        }
    }
}
