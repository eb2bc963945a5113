//! A study measured in blocks (`--blocks B`, above 1) runs in rounds: round r runs block r
//! of every step in turn, so each point's blocks are spread over the whole run and a slow
//! minute of the host touches every point a little instead of one step wholly (on this
//! project's 2-vCPU guest, one step's random reads once ran at half speed for its whole 16
//! seconds, and only blocks from other minutes can show that). Each block of a step is a
//! *unit* of the run, stored as a step of its own (so an interrupted run resumes by
//! unit); once every round is in, each step's points are merged over their blocks, stored
//! as the step, and its units are discarded. A step whose experiment does not measure in
//! blocks (a server, a workload mapping its own tables) runs whole, once, in the first
//! round.

use crate::Step;
use pmscope_runner::harness::BlockIndex;

/// One thing the suite runs and stores as a step of the run: a study step whole, or one
/// block of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    /// Its index among the run's stored steps: the study step's own when it runs whole;
    /// past the study's steps, one per round, for a block.
    pub index: usize,
    /// Its name in the store.
    pub name: String,
    /// The study step it measures.
    pub step: usize,
    /// The block it is, for a block.
    pub round: Option<BlockIndex>,
}

/// The units of a study of `steps` (their names, and whether each measures in blocks) in
/// `blocks` blocks, in the order they run.
pub fn units(steps: &[(&str, bool)], blocks: usize) -> Vec<Unit> {
    let n = steps.len();
    if blocks <= 1 {
        return steps
            .iter()
            .enumerate()
            .map(|(i, (name, _))| Unit {
                index: i,
                name: name.to_string(),
                step: i,
                round: None,
            })
            .collect();
    }
    let mut out = Vec::new();
    for r in 0..blocks {
        for (i, (name, in_blocks)) in steps.iter().enumerate() {
            if *in_blocks {
                out.push(Unit {
                    index: n * (r + 1) + i,
                    name: format!("{name} (block {} of {blocks})", r + 1),
                    step: i,
                    round: Some(BlockIndex {
                        index: r,
                        of: blocks,
                    }),
                });
            } else if r == 0 {
                out.push(Unit {
                    index: i,
                    name: name.to_string(),
                    step: i,
                    round: None,
                });
            }
        }
    }
    out
}

/// The names of a study step as the store knows them: `(name, in blocks)` of each.
pub fn step_names(steps: &[(&'static str, Step)]) -> Vec<(&'static str, bool)> {
    steps.iter().map(|(n, s)| (*n, s.in_blocks())).collect()
}

/// The name the store may hold at `index` for a run of these units: a unit's, or a study
/// step's own (a step measured whole, or merged from its blocks).
pub fn expected_name(steps: &[(&str, bool)], units: &[Unit], index: usize) -> Option<String> {
    if let Some((name, _)) = steps.get(index) {
        return Some(name.to_string());
    }
    units
        .iter()
        .find(|u| u.index == index)
        .map(|u| u.name.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three steps, the second run whole: one unit per block of the others, round after
    /// round, the whole one in the first round; indexes never collide with a step's own.
    #[test]
    fn rounds_take_every_step_in_turn() {
        let steps = [("a", true), ("b", false), ("c", true)];
        let u = units(&steps, 3);
        let names: Vec<&str> = u.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "a (block 1 of 3)",
                "b",
                "c (block 1 of 3)",
                "a (block 2 of 3)",
                "c (block 2 of 3)",
                "a (block 3 of 3)",
                "c (block 3 of 3)"
            ]
        );
        let mut idx: Vec<usize> = u.iter().map(|u| u.index).collect();
        assert_eq!(idx, [3, 1, 5, 6, 8, 9, 11]);
        idx.sort();
        idx.dedup();
        assert_eq!(idx.len(), 7);
        assert!(u.iter().all(|u| u.round.is_none() == (u.step == 1)));
        assert_eq!(expected_name(&steps, &u, 0).as_deref(), Some("a"));
        assert_eq!(
            expected_name(&steps, &u, 8).as_deref(),
            Some("c (block 2 of 3)")
        );
        assert_eq!(expected_name(&steps, &u, 7), None);
        // One block: the steps themselves.
        let one = units(&steps, 1);
        assert_eq!(one.iter().map(|u| u.index).collect::<Vec<_>>(), [0, 1, 2]);
        assert!(one.iter().all(|u| u.round.is_none()));
    }
}
