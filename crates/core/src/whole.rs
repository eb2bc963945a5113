//! Whole numbers as the command line gives them: the one rule for every integer option
//! and axis item, so a number too large for its type says so and names the largest one
//! (not "not a whole number"), and a negative one is not called malformed.

use std::num::{IntErrorKind, ParseIntError};
use std::str::FromStr;

/// An unsigned integer type an option holds.
pub trait Whole: FromStr<Err = ParseIntError> + Copy {
    /// The largest value of the type, as the error names it.
    const MAX_TEXT: &'static str;
}

macro_rules! whole {
    ($($t:ty),*) => {$(
        impl Whole for $t {
            const MAX_TEXT: &'static str = {
                // Written out once per type; a test checks each against `<$t>::MAX`.
                match <$t>::BITS {
                    16 => "65535",
                    32 => "4294967295",
                    _ => "18446744073709551615",
                }
            };
        }
    )*};
}
whole!(u16, u32, u64, usize);

/// Parses `s` as a whole number of type `T`: "too large: at most MAX" when it does not
/// fit, "negative" for a minus sign, "not a whole number" otherwise.
pub fn parse<T: Whole>(s: &str) -> Result<T, String> {
    let t = s.trim();
    t.parse::<T>().map_err(|e| match e.kind() {
        IntErrorKind::PosOverflow => format!("too large: at most {}", T::MAX_TEXT),
        IntErrorKind::Empty => "empty: give a whole number".into(),
        _ if t.starts_with('-') && t[1..].bytes().all(|b| b.is_ascii_digit()) && t.len() > 1 => {
            "negative: give a whole number of at least 0".into()
        }
        _ => "not a whole number".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn too_large_names_the_maximum_of_its_type() {
        assert_eq!(u16::MAX_TEXT, u16::MAX.to_string());
        assert_eq!(u32::MAX_TEXT, u32::MAX.to_string());
        assert_eq!(u64::MAX_TEXT, u64::MAX.to_string());
        assert_eq!(usize::MAX_TEXT, usize::MAX.to_string());
        assert_eq!(parse::<u64>(" 42 "), Ok(42));
        assert_eq!(
            parse::<u64>("99999999999999999999"),
            Err("too large: at most 18446744073709551615".into())
        );
        assert_eq!(
            parse::<u16>("70000"),
            Err("too large: at most 65535".into())
        );
        assert_eq!(
            parse::<usize>("-3"),
            Err("negative: give a whole number of at least 0".into())
        );
        assert_eq!(parse::<u32>("1.5"), Err("not a whole number".into()));
        assert_eq!(parse::<u32>("x"), Err("not a whole number".into()));
        assert_eq!(parse::<u32>(""), Err("empty: give a whole number".into()));
    }
}
