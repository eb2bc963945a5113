//! A plain text table: left-aligned text columns, right-aligned numbers.

/// A table with a header.
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column names.
    pub fn new(header: &[&str]) -> Table {
        Table {
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row (as many cells as columns).
    pub fn row(&mut self, cells: Vec<String>) {
        debug_assert_eq!(cells.len(), self.header.len());
        self.rows.push(cells);
    }

    /// Renders with two spaces between columns.
    pub fn render(&self) -> String {
        let n = self.header.len();
        let mut width = vec![0usize; n];
        for r in std::iter::once(&self.header).chain(&self.rows) {
            for (i, c) in r.iter().enumerate() {
                width[i] = width[i].max(c.chars().count());
            }
        }
        let numeric = |s: &str| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_digit() || ".-+%eE ".contains(c))
        };
        let mut out = String::new();
        for (ri, r) in std::iter::once(&self.header).chain(&self.rows).enumerate() {
            let line: Vec<String> = r
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    if ri > 0 && numeric(c) {
                        format!("{c:>w$}", w = width[i])
                    } else {
                        format!("{c:<w$}", w = width[i])
                    }
                })
                .collect();
            out.push_str(line.join("  ").trim_end());
            out.push('\n');
        }
        out.pop();
        out
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn aligns_columns() {
        let mut t = super::Table::new(&["target", "ns"]);
        t.row(vec!["dram:4k".into(), "85.2".into()]);
        t.row(vec!["shm:4k".into(), "101.0".into()]);
        assert_eq!(t.render(), "target   ns\ndram:4k   85.2\nshm:4k   101.0");
    }
}
