//! `--partition nodes` (seed 003 §5.4): one sub-table per NUMA node with CPUs, each on its
//! own node's memory, and the worker threads pinned to a node insert only into that
//! node's sub-table.
//!
//! How k-mers are routed: **by hash, so every k-mer lives in exactly one sub-table**
//! ([`part_of`]: the low 32 bits of the hash, mapped onto the parts by multiply-shift; the
//! tables place a k-mer by the high bits, so each sub-table still spreads its share over
//! all its slots). A worker reads its share of the genome, and every k-mer it meets is
//! handed to a worker of the owning node (the exchange in [`super::super::build`]), which
//! inserts it into its own, local sub-table. The genome is exchanged in rounds of at most
//! `EXCHANGE_BLOCK` k-mers per worker, two barriers a round.
//!
//! Why not the seed's own scheme: the seed partitions the *genomes* across the sockets,
//! each socket's table counting its genomes, so a k-mer shared by genomes on both sockets
//! is held twice (it reports about twice the footprint) and the tables must be merged
//! afterwards (a merge its figures leave out). pmscope must give exactly the counts,
//! primers and set operations of one table, so the merge could not be left out; routing
//! by hash needs none (a lookup asks the one sub-table that can hold the k-mer), keeps the
//! footprint of one table, and still keeps every insert node-local. The price is the
//! exchange: each k-mer crosses the interconnect once, written sequentially into its
//! consumer's buffer, instead of a random read-modify-write of a remote slot.
//!
//! Only inserts (and the marks of subtract, which go through the same exchange) are kept
//! local: the scans of the set operations and the out-group lookups of `primers` read
//! every sub-table from every node.
//!
//! Placement: each sub-table is made by its own kind on the job's target with `node=N`
//! (mbind before the first touch), and its mapping's verification (move_pages) is kept per
//! sub-table; [`PartitionedTable::facts`] lists them, with a warning for a sub-table whose
//! pages are not all on the node they were asked on. Or each sub-table has its own target
//! ([`NodePlan::targets`], one per node): a file's or a device's memory (where the file
//! system or the device puts it: its record says which node that was), or a far-memory
//! node's. Which targets can be placed per node is the CLI's decision.

use super::{
    Create, Entry, GenomeId, Inserted, KmerTable, TableError, TableFacts, TableRequest, Unpersisted,
};
use crate::kmer::encode::Kmer;
use pmscope_core::record::TargetRecord;
use pmscope_core::warning::Warning;
use pmscope_mapping::TargetSpec;
use std::sync::atomic::{AtomicU64, Ordering};

/// One node's share of the work: its id and the CPUs its workers are pinned to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeShare {
    /// NUMA node id.
    pub node: u32,
    /// One CPU per worker of this node (worker CPUs, not every CPU of the node).
    pub cpus: Vec<usize>,
}

/// The nodes a partitioned job uses, and those it leaves out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodePlan {
    /// One entry per node with usable CPUs, ascending: one sub-table each.
    pub shares: Vec<NodeShare>,
    /// Nodes with memory but no CPU this process may use: no thread is local to them, so
    /// they get no sub-table (a memory-only CXL or dax/kmem node, say).
    pub without_cpus: Vec<u32>,
    /// The sub-tables' own targets, one per share in order (a file, a device, a far-memory
    /// node each); empty: the job's target bound to each share's node.
    pub targets: Vec<TargetSpec>,
}

impl NodePlan {
    /// Spreads `threads` workers over the nodes that have CPUs in `allowed`, round robin
    /// (one per node, then a second per node, ... while a node has CPUs left). Every such
    /// node must get a worker, or its sub-table would have no local inserter.
    pub fn new(
        nodes: &[pmscope_sys::numa::Node],
        allowed: &[usize],
        threads: usize,
    ) -> Result<NodePlan, String> {
        let mut shares: Vec<(u32, Vec<usize>)> = nodes
            .iter()
            .map(|n| {
                let cpus: Vec<usize> = n
                    .cpus
                    .iter()
                    .copied()
                    .filter(|c| allowed.contains(c))
                    .collect();
                (n.id, cpus)
            })
            .filter(|(_, cpus)| !cpus.is_empty())
            .collect();
        let without_cpus: Vec<u32> = nodes
            .iter()
            .filter(|n| n.mem_total_bytes > 0 && !shares.iter().any(|(id, _)| *id == n.id))
            .map(|n| n.id)
            .collect();
        if shares.is_empty() {
            // No node inventory (a container without /sys/devices/system/node): one table
            // on the allowed CPUs, as node 0.
            shares.push((0, allowed.to_vec()));
        }
        if threads < shares.len() {
            let ids: Vec<String> = shares.iter().map(|(id, _)| id.to_string()).collect();
            return Err(format!(
                "--partition nodes needs a thread on each of the {} nodes with CPUs ({}); give --threads {} or more",
                shares.len(),
                ids.join(", "),
                shares.len()
            ));
        }
        let mut out: Vec<NodeShare> = shares
            .iter()
            .map(|(id, _)| NodeShare {
                node: *id,
                cpus: Vec::new(),
            })
            .collect();
        let mut given = 0;
        let mut round = 0;
        while given < threads {
            let before = given;
            for (i, (_, cpus)) in shares.iter().enumerate() {
                if given < threads && round < cpus.len() {
                    out[i].cpus.push(cpus[round]);
                    given += 1;
                }
            }
            if given == before {
                return Err(format!(
                    "{threads} threads asked for but the nodes have only {given} CPUs pmscope may use"
                ));
            }
            round += 1;
        }
        Ok(NodePlan {
            shares: out,
            without_cpus,
            targets: Vec::new(),
        })
    }

    /// This plan with one target per share, in share order: each sub-table lives on its
    /// own target instead of the job's.
    pub fn with_targets(mut self, targets: Vec<TargetSpec>) -> Result<NodePlan, String> {
        if targets.len() != self.shares.len() {
            return Err(format!(
                "{} targets for {} sub-tables: give one per node with CPUs",
                targets.len(),
                self.shares.len()
            ));
        }
        self.targets = targets;
        Ok(self)
    }

    /// The target of share `i`'s sub-table: its own, or `job`'s bound to its node.
    pub fn target_of(&self, i: usize, job: &TargetSpec) -> TargetSpec {
        self.targets.get(i).cloned().unwrap_or_else(|| {
            let mut spec = job.clone();
            spec.node = Some(self.shares[i].node);
            spec
        })
    }

    /// The workers' CPUs, node by node, and each worker's part (index into `shares`).
    pub fn workers(&self) -> (Vec<usize>, Vec<usize>) {
        let mut cpus = Vec::new();
        let mut parts = Vec::new();
        for (p, s) in self.shares.iter().enumerate() {
            cpus.extend(&s.cpus);
            parts.extend(std::iter::repeat_n(p, s.cpus.len()));
        }
        (cpus, parts)
    }

    /// Worker threads in all.
    pub fn threads(&self) -> usize {
        self.shares.iter().map(|s| s.cpus.len()).sum()
    }
}

/// The part (of `parts`) that holds the k-mer of `hash`: the low 32 bits by multiply-shift,
/// independent of the high bits that place a k-mer inside a table.
#[inline(always)]
pub fn part_of(hash: u64, parts: usize) -> usize {
    (((hash & 0xffff_ffff) * parts as u64) >> 32) as usize
}

/// One sub-table and what it was given.
struct Part<T> {
    node: u32,
    /// The node its memory was asked on (`None`: a file's or device's, where it is).
    memory_node: Option<u32>,
    cpus: Vec<usize>,
    table: T,
    inserts: AtomicU64,
}

/// A sub-table as the record lists it.
#[derive(Debug, Clone)]
pub struct PartFacts {
    /// The NUMA node of its workers.
    pub node: u32,
    /// The node its memory was asked on: its workers' node, another (a far-memory node),
    /// or `None` for a file's or a device's memory, which is where it is.
    pub memory_node: Option<u32>,
    /// The CPUs of its workers.
    pub cpus: Vec<usize>,
    /// k-mers inserted into it (with repeats).
    pub inserts: u64,
    /// Distinct k-mers it holds.
    pub distinct: u64,
    /// Its slots.
    pub slots: u64,
    /// Bytes it maps.
    pub footprint_bytes: u64,
    /// Its mapping as asked (`node=N`) and as verified (pages per node by move_pages).
    pub target: TargetRecord,
}

impl PartFacts {
    /// The fraction of its verified pages that are on the node its memory was asked on
    /// (`None`: none verified, or no node asked).
    pub fn on_node(&self) -> Option<f64> {
        let node = self.memory_node?;
        let nodes = &self.target.achieved.nodes;
        let all: u64 = nodes.values().sum();
        (all > 0).then(|| nodes.get(&node).copied().unwrap_or(0) as f64 / all as f64)
    }

    /// The node holding most of its verified pages (`None`: none verified).
    pub fn achieved_node(&self) -> Option<u32> {
        let nodes = &self.target.achieved.nodes;
        nodes
            .iter()
            .filter(|(_, pages)| **pages > 0)
            .max_by_key(|(node, pages)| (**pages, std::cmp::Reverse(**node)))
            .map(|(node, _)| *node)
    }
}

/// Sub-tables of kind `T`, one per node, routed by [`part_of`].
pub struct PartitionedTable<const W: usize, T> {
    parts: Vec<Part<T>>,
}

impl<const W: usize, T: KmerTable<W>> PartitionedTable<W, T> {
    #[inline(always)]
    fn of(&self, hash: u64) -> &T {
        &self.parts[part_of(hash, self.parts.len())].table
    }

    /// The sub-tables, in node order.
    pub fn sub_tables(&self) -> impl Iterator<Item = &T> {
        self.parts.iter().map(|p| &p.table)
    }

    /// Builds a partitioned table of existing sub-tables (`(node, cpus, table)`), in the
    /// order their parts are numbered, each with its memory asked on its workers' node.
    pub fn of_tables(tables: Vec<(u32, Vec<usize>, T)>) -> Self {
        Self::placed(
            tables
                .into_iter()
                .map(|(node, cpus, table)| (node, Some(node), cpus, table))
                .collect(),
        )
    }

    /// Builds a partitioned table of sub-tables `(node, memory node, cpus, table)`.
    fn placed(tables: Vec<(u32, Option<u32>, Vec<usize>, T)>) -> Self {
        PartitionedTable {
            parts: tables
                .into_iter()
                .map(|(node, memory_node, cpus, table)| Part {
                    node,
                    memory_node,
                    cpus,
                    table,
                    inserts: AtomicU64::new(0),
                })
                .collect(),
        }
    }
}

/// What one part of `total` new k-mers can be: the even share plus eight standard
/// deviations of the binomial split and a constant margin, so routing by hash never
/// overfills one sub-table that its even share would not.
fn share(total: u64, parts: usize) -> u64 {
    let even = total.div_ceil(parts as u64);
    even + (8.0 * (even as f64).sqrt()) as u64 + 1024
}

impl<const W: usize, T: Create<W>> Create<W> for PartitionedTable<W, T> {
    const KIND: super::TableKind = T::KIND;
    const MAX_GENOMES: u64 = T::MAX_GENOMES;

    fn create(r: &TableRequest<'_>) -> Result<Self, TableError> {
        let Some(plan) = r.partition else {
            return Err(TableError::Limit(
                "a partitioned table needs the job's node plan".into(),
            ));
        };
        let n = plan.shares.len();
        let mut tables = Vec::with_capacity(n);
        for (i, s) in plan.shares.iter().enumerate() {
            let spec = plan.target_of(i, r.target);
            let table = T::create(&TableRequest {
                target: &spec,
                expected_distinct: share(r.expected_distinct, n),
                parallel: s.cpus.len().max(1),
                pool: None,
                ..r.clone()
            })?;
            tables.push((s.node, spec.node, s.cpus.clone(), table));
        }
        Ok(Self::placed(tables))
    }
}

impl<const W: usize, T: KmerTable<W>> KmerTable<W> for PartitionedTable<W, T> {
    #[inline(always)]
    fn prefetch(&self, hash: u64) {
        self.of(hash).prefetch(hash);
    }

    fn insert(&self, kmer: &Kmer<W>, hash: u64, genome: GenomeId) -> Inserted {
        self.of(hash).insert(kmer, hash, genome)
    }

    #[inline(always)]
    fn insert_deferred(
        &self,
        kmer: &Kmer<W>,
        hash: u64,
        genome: GenomeId,
        unpersisted: &mut Unpersisted,
    ) -> Inserted {
        let p = part_of(hash, self.parts.len());
        // A group holds one sub-table's words: the exchange feeds a worker only its own
        // part, so this switch never happens there, but any caller stays correct.
        if p != unpersisted.part && !unpersisted.is_empty() {
            self.parts[unpersisted.part]
                .table
                .persist_deferred(unpersisted);
        }
        unpersisted.part = p;
        self.parts[p]
            .table
            .insert_deferred(kmer, hash, genome, unpersisted)
    }

    fn persist_deferred(&self, unpersisted: &mut Unpersisted) {
        if !unpersisted.is_empty() {
            self.parts[unpersisted.part]
                .table
                .persist_deferred(unpersisted);
        }
    }

    fn get(&self, kmer: &Kmer<W>, hash: u64) -> Option<Entry> {
        self.of(hash).get(kmer, hash)
    }

    fn mark(&self, kmer: &Kmer<W>, hash: u64) -> Option<Entry> {
        self.of(hash).mark(kmer, hash)
    }

    fn add_distinct(&self, n: u64) {
        // The drivers report a partitioned table's inserts per part (`add_part_counts`);
        // this keeps the total right for any other caller.
        self.parts[0].table.add_distinct(n);
    }

    fn distinct(&self) -> u64 {
        self.parts.iter().map(|p| p.table.distinct()).sum()
    }

    fn reserve(&mut self, additional: u64) -> Result<bool, TableError> {
        let n = self.parts.len();
        let mut grew = false;
        for p in &mut self.parts {
            grew |= p.table.reserve(share(additional, n).min(additional))?;
        }
        Ok(grew)
    }

    fn slots(&self) -> usize {
        self.parts.iter().map(|p| p.table.slots()).sum()
    }

    fn entry_at(&self, mut slot: usize) -> Option<(Kmer<W>, Entry)> {
        for p in &self.parts {
            let n = p.table.slots();
            if slot < n {
                return p.table.entry_at(slot);
            }
            slot -= n;
        }
        None
    }

    fn for_each_in(&self, slots: std::ops::Range<usize>, f: &mut dyn FnMut(Kmer<W>, Entry)) {
        let mut base = 0;
        for p in &self.parts {
            let n = p.table.slots();
            let (lo, hi) = (slots.start.max(base), slots.end.min(base + n));
            if lo < hi {
                p.table.for_each_in(lo - base..hi - base, f);
            }
            base += n;
        }
    }

    fn footprint_bytes(&self) -> u64 {
        self.parts.iter().map(|p| p.table.footprint_bytes()).sum()
    }

    fn facts(&self) -> TableFacts {
        let subs: Vec<TableFacts> = self.parts.iter().map(|p| p.table.facts()).collect();
        let mut facts = subs[0].clone();
        facts.slots = subs.iter().map(|f| f.slots).sum();
        facts.footprint_bytes = self.footprint_bytes();
        facts.load_factor = self.distinct() as f64 / facts.slots.max(1) as f64;
        facts.grown = subs.iter().map(|f| f.grown).max().unwrap_or(0);
        facts.persist = subs
            .iter()
            .filter_map(|f| f.persist)
            .reduce(|a, b| (a.0 + b.0, a.1 + b.1));
        // Every sub-table resolved the same request on the same CPU.
        facts.persister = subs[0].persister;
        facts.warnings = Vec::new();
        for (p, f) in self.parts.iter().zip(&subs) {
            let part = PartFacts {
                node: p.node,
                memory_node: p.memory_node,
                cpus: p.cpus.clone(),
                inserts: p.inserts.load(Ordering::Relaxed),
                distinct: p.table.distinct(),
                slots: f.slots,
                footprint_bytes: f.footprint_bytes,
                target: f.target.clone(),
            };
            // Judged against the node its memory was asked on; a file's or a device's
            // memory was asked on none, and its record says where it is.
            let off = match (part.memory_node, part.on_node()) {
                (None, _) => None,
                (Some(_), Some(x)) if x < 1.0 => Some(format!(
                    "{:.1}% of its pages are on other nodes than {} ({:?})",
                    100.0 * (1.0 - x),
                    p.memory_node.unwrap_or(p.node),
                    part.target.achieved.nodes
                )),
                (Some(_), None) => Some("move_pages could not tell where its pages are".into()),
                _ => None,
            };
            if let Some(what) = off {
                facts.warnings.push(Warning::new(
                    "sub-table-off-node",
                    format!("the sub-table of node {}: {what}", p.node),
                    "check the node's free memory (`pmscope info`); its inserts are not all local",
                ));
            }
            for w in &f.warnings {
                if !facts.warnings.contains(w) {
                    facts.warnings.push(w.clone());
                }
            }
            facts.parts.push(part);
        }
        facts
    }

    fn completed(&self, genome: GenomeId) {
        for p in &self.parts {
            p.table.completed(genome);
        }
    }

    fn resume_after(&self) -> GenomeId {
        self.parts
            .iter()
            .map(|p| p.table.resume_after())
            .min()
            .unwrap_or(0)
    }

    fn health(&self) -> Result<(), TableError> {
        self.parts.iter().try_for_each(|p| p.table.health())
    }

    fn parts(&self) -> usize {
        self.parts.len()
    }

    fn add_part_counts(&self, part: usize, inserts: u64, new: u64) {
        let p = &self.parts[part];
        p.inserts.fetch_add(inserts, Ordering::Relaxed);
        p.table.add_distinct(new);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmscope_sys::numa::Node;

    fn node(id: u32, cpus: &[usize], mem: u64) -> Node {
        Node {
            id,
            cpus: cpus.to_vec(),
            mem_total_bytes: mem,
            mem_free_bytes: mem,
            distances: Vec::new(),
            hmat: None,
            memory_tier: None,
            memory_side_caches: Vec::new(),
        }
    }

    #[test]
    fn one_node_gives_one_share_with_every_thread() {
        let plan = NodePlan::new(&[node(0, &[0, 1], 1 << 30)], &[0, 1], 2).unwrap();
        assert_eq!(
            plan.shares,
            vec![NodeShare {
                node: 0,
                cpus: vec![0, 1]
            }]
        );
        assert!(plan.without_cpus.is_empty());
        assert_eq!(plan.workers(), (vec![0, 1], vec![0, 0]));
    }

    #[test]
    fn cpu_nodes_get_workers_round_robin_and_a_memory_only_node_none() {
        let nodes = [
            node(0, &[0, 1, 2], 1 << 30),
            node(1, &[3], 1 << 30),
            node(2, &[], 1 << 30),
        ];
        let plan = NodePlan::new(&nodes, &[0, 1, 2, 3], 4).unwrap();
        assert_eq!(plan.without_cpus, vec![2]);
        assert_eq!(plan.workers(), (vec![0, 1, 2, 3], vec![0, 0, 0, 1]));
        assert_eq!(plan.shares[1].cpus, vec![3]);
        // CPUs this process may not use are not a node's.
        let plan = NodePlan::new(&nodes, &[0, 1], 2).unwrap();
        assert_eq!(plan.shares.len(), 1);
        assert_eq!(plan.without_cpus, vec![1, 2]);
    }

    #[test]
    fn fewer_threads_than_cpu_nodes_is_refused_with_the_fix() {
        let nodes = [node(0, &[0], 1), node(1, &[1], 1)];
        let e = NodePlan::new(&nodes, &[0, 1], 1).unwrap_err();
        assert!(e.contains("give --threads 2 or more"), "{e}");
    }

    #[test]
    fn parts_are_chosen_evenly_from_the_low_bits() {
        let mut seen = [0u32; 3];
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..30_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            seen[part_of(x, 3)] += 1;
            // The high bits (where a table places the k-mer) do not choose the part.
            assert_eq!(part_of(x, 3), part_of(x ^ (0xffff << 48), 3));
        }
        assert!(
            seen.iter().all(|&n| (9_000..11_000).contains(&n)),
            "{seen:?}"
        );
        assert_eq!(part_of(u64::MAX, 1), 0);
    }
}
