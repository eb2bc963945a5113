//! CPU and node lists in the kernel's notation (`0-3,8,10-11`), as `/sys` writes them and as
//! `--cpus` accepts them.

/// Why a list did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not a CPU list: expected numbers and ranges such as 0-3,8")]
pub struct ListError(pub String);

/// Parses `0-3,8` into `[0, 1, 2, 3, 8]` (sorted, without duplicates). An empty string or a
/// lone newline is the empty list, as `/sys/devices/system/node/nodeN/cpulist` is for a
/// memory-only node.
pub fn parse_list(s: &str) -> Result<Vec<usize>, ListError> {
    let t = s.trim();
    let mut out = Vec::new();
    if t.is_empty() {
        return Ok(out);
    }
    for part in t.split(',') {
        let part = part.trim();
        let bad = || ListError(s.trim().to_string());
        if let Some((a, b)) = part.split_once('-') {
            let a: usize = a.trim().parse().map_err(|_| bad())?;
            let b: usize = b.trim().parse().map_err(|_| bad())?;
            if b < a || b - a > 1 << 16 {
                return Err(bad());
            }
            out.extend(a..=b);
        } else {
            out.push(part.parse().map_err(|_| bad())?);
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Formats a sorted list back into ranges (`[0,1,2,3,8]` → `0-3,8`).
pub fn format_list(items: &[usize]) -> String {
    let mut v = items.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let start = v[i];
        let mut end = start;
        while i + 1 < v.len() && v[i + 1] == end + 1 {
            i += 1;
            end = v[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        assert_eq!(parse_list("0-3,8").unwrap(), vec![0, 1, 2, 3, 8]);
        assert_eq!(parse_list("\n").unwrap(), Vec::<usize>::new());
        assert_eq!(parse_list("1,0,1").unwrap(), vec![0, 1]);
        assert_eq!(format_list(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert!(parse_list("3-1").is_err());
        assert!(parse_list("a").is_err());
        assert!(parse_list("1,,2").is_err());
    }
}
