//! Published reference profiles overlaid on the figures, each figure with its source.

use serde::Deserialize;

/// One published figure.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Entry {
    /// The quantity it gives (e.g. `idle_read_latency_rand_ns`), matched by the figures.
    pub quantity: String,
    /// Its value, in `unit`.
    pub value: f64,
    /// Its unit.
    pub unit: String,
    /// The legend label.
    pub label: String,
    /// Where it is published (seed, section, table or figure).
    pub source: String,
}

/// A named profile of published figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    /// Its name, e.g. `optane-g1`.
    pub name: String,
    /// Its figures.
    pub entries: Vec<Entry>,
}

/// The profiles built in: (name, JSON).
const PROFILES: &[(&str, &str)] = &[("optane-g1", include_str!("../data/optane-g1.json"))];

impl Reference {
    /// The names of the built-in profiles.
    pub fn names() -> Vec<&'static str> {
        PROFILES.iter().map(|p| p.0).collect()
    }

    /// A built-in profile by name.
    pub fn named(name: &str) -> Option<Reference> {
        let (name, json) = PROFILES.iter().find(|p| p.0 == name)?;
        let entries =
            serde_json::from_str(json).expect("built-in profiles are valid JSON (tested)");
        Some(Reference {
            name: name.to_string(),
            entries,
        })
    }

    /// The entry of a quantity.
    pub fn value(&self, quantity: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.quantity == quantity)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optane_g1_holds_the_seed_figures_with_sources() {
        let r = Reference::named("optane-g1").expect("built in");
        let v = |q: &str| r.value(q).map(|e| e.value);
        assert_eq!(v("idle_read_latency_rand_ns"), Some(305.0));
        assert_eq!(v("idle_read_latency_seq_ns"), Some(169.0));
        assert_eq!(v("store_flush_latency_ns"), Some(94.0));
        assert_eq!(v("read_bw_per_dimm_gb_s"), Some(6.6));
        assert_eq!(v("write_bw_per_dimm_gb_s"), Some(2.3));
        assert_eq!(v("read_bw_6dimm_gb_s"), Some(39.4));
        assert_eq!(v("write_bw_6dimm_gb_s"), Some(13.9));
        assert_eq!(v("access_granularity_bytes"), Some(256.0));
        assert_eq!(v("read_buffer_bytes"), Some(16384.0));
        assert!(r.entries.iter().all(|e| e.source.starts_with("seed 00")));
        assert!(Reference::named("optane-g9").is_none());
    }
}
