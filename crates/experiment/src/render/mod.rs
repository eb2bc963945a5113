//! What the terminal tables share: a table layout, a histogram, grouping records, the
//! precision of a point.

pub mod fields;
pub mod histogram;
pub mod precision;
pub mod table;

/// `30860126` → `30 860 126` (a space groups digits, as SI does; tables right-align it).
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn thousands_are_grouped_by_spaces() {
        assert_eq!(super::thousands(0), "0");
        assert_eq!(super::thousands(999), "999");
        assert_eq!(super::thousands(1000), "1 000");
        assert_eq!(super::thousands(30_860_126), "30 860 126");
    }
}
