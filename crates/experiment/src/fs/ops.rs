//! The file operations of `fs` and the files they work on: one operation opens a file,
//! does its I/O, fsyncs if asked and closes it; [`time_op`] times many of them.

use pmscope_runner::interrupt::{self, Interrupted};
use pmscope_runner::timer::Timer;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// The file operations of seed 004 section 5.1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileOp {
    /// open(O_CREAT|O_EXCL) a new file and close it, no data.
    Create,
    /// open an existing file, write 4 KiB at its end.
    Append4k,
    /// open an existing file, write 4 KiB in its middle.
    Overwrite4k,
    /// open an existing file, write 512 bytes in its middle.
    Overwrite512,
    /// open an existing file, read 4 KiB from its middle.
    Read4k,
}

impl FileOp {
    /// Every operation, in the seed's order.
    pub const ALL: [FileOp; 5] = [
        FileOp::Create,
        FileOp::Append4k,
        FileOp::Overwrite4k,
        FileOp::Overwrite512,
        FileOp::Read4k,
    ];

    /// The name in records and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            FileOp::Create => "create",
            FileOp::Append4k => "append-4k",
            FileOp::Overwrite4k => "overwrite-4k",
            FileOp::Overwrite512 => "overwrite-512",
            FileOp::Read4k => "read-4k",
        }
    }

    /// Bytes read or written per operation.
    pub fn io_bytes(self) -> usize {
        match self {
            FileOp::Create => 0,
            FileOp::Overwrite512 => 512,
            _ => 4096,
        }
    }

    /// The null executor's figure: a plausible page-cache latency, fsync costing more.
    pub fn synthetic_ns(self, fsync: bool) -> f64 {
        let base = match self {
            FileOp::Create => 4000.0,
            FileOp::Append4k => 3000.0,
            FileOp::Overwrite4k => 2500.0,
            FileOp::Overwrite512 => 2000.0,
            FileOp::Read4k => 1500.0,
        };
        if fsync { base * 4.0 } else { base }
    }
}

/// Size of the file the overwrites and reads work in; they touch its middle.
const DATA_BYTES: u64 = 1 << 20;
const MIDDLE: u64 = DATA_BYTES / 2;

/// The files one target's operations work on, in the work directory.
pub struct Files {
    dir: PathBuf,
    append: PathBuf,
    /// The file the overwrites and reads work in.
    pub data: PathBuf,
    created: u64,
    buf: Vec<u8>,
}

impl Files {
    /// Makes the file to append to (empty) and the 1 MiB data file (written and fsynced,
    /// so the timed overwrites find allocated blocks, as in the seed).
    pub fn prepare(dir: &Path) -> std::io::Result<Files> {
        let append = dir.join("append.dat");
        File::create_new(&append)?;
        let data = dir.join("data.dat");
        let mut f = File::create_new(&data)?;
        let chunk: Vec<u8> = (0..64 << 10).map(|i| (i % 251) as u8 + 1).collect();
        for _ in 0..DATA_BYTES / chunk.len() as u64 {
            f.write_all(&chunk)?;
        }
        f.sync_all()?;
        Ok(Files {
            dir: dir.to_path_buf(),
            append,
            data,
            created: 0,
            buf: vec![0x5a; 4096],
        })
    }

    /// One operation: open, I/O, fsync if asked, close (the drop of the file).
    pub fn once(&mut self, op: FileOp, fsync: bool) -> std::io::Result<()> {
        let f = match op {
            FileOp::Create => {
                self.created += 1;
                OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(self.dir.join(format!("c{}", self.created)))?
            }
            FileOp::Append4k => {
                let mut f = OpenOptions::new().append(true).open(&self.append)?;
                f.write_all(&self.buf)?;
                f
            }
            FileOp::Overwrite4k | FileOp::Overwrite512 => {
                let f = OpenOptions::new().write(true).open(&self.data)?;
                f.write_all_at(&self.buf[..op.io_bytes()], MIDDLE)?;
                f
            }
            FileOp::Read4k => {
                let f = File::open(&self.data)?;
                f.read_exact_at(&mut self.buf, MIDDLE)?;
                f
            }
        };
        if fsync {
            f.sync_all()?;
        }
        drop(f);
        Ok(())
    }
}

/// `samples` timed operations after a tenth as many (at least 10) untimed ones; the I/O
/// error that stopped them (e.g. hugetlbfs refusing write), or the interrupt.
pub fn time_op(
    files: &mut Files,
    timer: &Timer,
    op: FileOp,
    fsync: bool,
    samples: usize,
) -> Result<std::io::Result<Vec<f64>>, Interrupted> {
    let mut ns = Vec::with_capacity(samples);
    for i in 0..(samples / 10).max(10) + samples {
        interrupt::check()?;
        let t0 = timer.start();
        let done = files.once(op, fsync);
        let t1 = timer.stop();
        if let Err(e) = done {
            return Ok(Err(e));
        }
        if i >= (samples / 10).max(10) {
            ns.push((timer.ticks_to_ns(t1.wrapping_sub(t0)) - timer.overhead_ns()).max(0.0));
        }
    }
    Ok(Ok(ns))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_does_its_io_and_closes() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = Files::prepare(dir.path()).unwrap();
        for op in FileOp::ALL {
            for fsync in [false, true] {
                f.once(op, fsync).unwrap();
            }
        }
        let len = |p: &Path| std::fs::metadata(p).unwrap().len();
        assert_eq!(len(&f.append), 2 * 4096, "two 4 KiB appends");
        assert_eq!(len(&f.data), DATA_BYTES, "overwrites do not grow the file");
        let data = std::fs::read(&f.data).unwrap();
        assert!(
            data[MIDDLE as usize..MIDDLE as usize + 4096]
                .iter()
                .all(|&b| b == 0x5a)
        );
        assert_ne!(data[MIDDLE as usize + 4096], 0x5a);
        // append, data, and the two created files.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 4);
    }
}
