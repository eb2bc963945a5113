//! A server's own benchmark client, run once per workload and value size against
//! 127.0.0.1, bounded (memaslap by its duration, redis-benchmark by its requests, both by a
//! timeout and by Ctrl-C) and supervised by `pmscope_runner::child`.

use super::{
    ClientResult, MEMCACHED_KEY_BYTES, REDIS_KEY_BYTES, Server, Workload, parse_memaslap,
    parse_redis_csv,
};
use anyhow::{Context, Result, bail};
use pmscope_runner::child::{describe_status, last_line, run_supervised};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// redis-benchmark's key space (-r) without a store size.
const DEFAULT_REDIS_KEY_SPACE: u64 = 1_000_000;

/// memaslap's configuration file for one workload: fixed key and value sizes, the SET and
/// GET proportions.
pub fn memaslap_config(key_bytes: u64, value_bytes: u64, set_fraction: f64) -> String {
    format!(
        "key\n{key_bytes} {key_bytes} 1\nvalue\n{value_bytes} {value_bytes} 1\ncmd\n0 {set_fraction}\n1 {}\n",
        1.0 - set_fraction
    )
}

/// The load generator of a server, as every one of its runs is given.
#[derive(Debug, Clone)]
pub struct Client {
    /// The server it loads.
    pub server: Server,
    /// Its executable (`Server::client`, found in PATH).
    pub bin: PathBuf,
    /// Concurrent connections.
    pub clients: u64,
    /// Its threads (memaslap -T, redis-benchmark --threads), at most `clients`.
    pub threads: u64,
    /// The store to fill: its key space is sized so that keys × (key + value) bytes is this
    /// many bytes. `None`: the client's own key space.
    pub store_bytes: Option<u64>,
    /// The CPUs it is started on (it inherits them); empty: pmscope's own.
    pub cpus: Vec<usize>,
    /// memcached: seconds per run (rounded up to whole seconds, at least 1).
    pub duration_s: f64,
    /// redis: requests per run.
    pub requests: u64,
}

impl Client {
    /// The distinct keys a run with values of `value_bytes` draws from: for a store size,
    /// enough keys of the workload's key size that their items fill it (memaslap's key
    /// space is its window per connection, in whole KiB-counts of keys, times the
    /// connections, so it is rounded up to that); else redis-benchmark's -r 1000000, and `None` for memaslap's own
    /// default.
    pub fn key_space(&self, value_bytes: u64) -> Option<u64> {
        let key = match self.server {
            Server::Memcached => MEMCACHED_KEY_BYTES,
            Server::Redis => REDIS_KEY_BYTES,
        };
        match (self.store_bytes, self.server) {
            (Some(store), Server::Memcached) => {
                let items = store.div_ceil(key + value_bytes);
                let window = items.div_ceil(self.clients).div_ceil(1024) * 1024;
                Some(window * self.clients)
            }
            (Some(store), Server::Redis) => Some(store.div_ceil(key + value_bytes)),
            (None, Server::Memcached) => None,
            (None, Server::Redis) => Some(DEFAULT_REDIS_KEY_SPACE),
        }
    }

    /// The arguments of one run of `w` with values of `value_bytes` against
    /// 127.0.0.1:`port` (memaslap's configuration file is `config`).
    pub fn args(&self, w: &Workload, value_bytes: u64, port: u16, config: &Path) -> Vec<String> {
        let mut a: Vec<String> = Vec::new();
        match self.server {
            Server::Memcached => {
                let secs = self.duration_s.ceil().max(1.0) as u64;
                a.extend(["-s".into(), format!("127.0.0.1:{port}")]);
                a.extend(["-T".into(), self.threads.to_string()]);
                a.extend(["-c".into(), self.clients.to_string()]);
                a.extend([
                    "-t".into(),
                    format!("{secs}s"),
                    "-S".into(),
                    format!("{secs}s"),
                ]);
                if let Some(keys) = self.key_space(value_bytes) {
                    // memaslap reads its window only with a unit (k: 1024).
                    a.extend(["-w".into(), format!("{}k", keys / self.clients / 1024)]);
                }
                a.extend(["-F".into(), config.display().to_string()]);
            }
            Server::Redis => {
                a.extend([
                    "-h".into(),
                    "127.0.0.1".into(),
                    "-p".into(),
                    port.to_string(),
                ]);
                a.extend(["-t".into(), w.redis_test.into()]);
                a.extend(["-n".into(), self.requests.to_string()]);
                a.extend(["-d".into(), value_bytes.to_string()]);
                a.extend(["-c".into(), self.clients.to_string()]);
                if self.threads > 1 {
                    a.extend(["--threads".into(), self.threads.to_string()]);
                }
                let keys = self
                    .key_space(value_bytes)
                    .unwrap_or(DEFAULT_REDIS_KEY_SPACE);
                a.extend(["-r".into(), keys.to_string(), "--csv".into()]);
            }
        }
        a
    }

    /// One bounded run of workload `w` with values of `value_bytes` against
    /// 127.0.0.1:`port`, read into a [`ClientResult`]. A client that fails, or prints
    /// nothing readable, is an error quoting what it said last. `server` is asked on
    /// every poll whether the server still runs: its error (the server exited) stops the
    /// client at once, so a client never waits on whatever else answers on the port.
    pub fn run(
        &self,
        w: &Workload,
        value_bytes: u64,
        port: u16,
        server: &mut dyn FnMut() -> Result<()>,
    ) -> Result<ClientResult> {
        let name = self.server.client().name;
        let mut cmd = Command::new(&self.bin);
        // memaslap's configuration file lives until the client is done.
        let config = match self.server {
            Server::Memcached => Some(ConfigFile::create(&memaslap_config(
                MEMCACHED_KEY_BYTES,
                value_bytes,
                w.set_fraction,
            ))?),
            Server::Redis => None,
        };
        let path = config.as_ref().map_or(Path::new(""), |c| c.path());
        cmd.args(self.args(w, value_bytes, port, path));
        let timeout = match self.server {
            Server::Memcached => {
                Duration::from_secs(self.duration_s.ceil().max(1.0) as u64 * 3 + 30)
            }
            Server::Redis => Duration::from_secs(600),
        };
        let done = if self.cpus.is_empty() {
            run_supervised(&mut cmd, name, timeout, server)?
        } else {
            pmscope_sys::affinity::run_on(&self.cpus, || {
                run_supervised(&mut cmd, name, timeout, server)
            })
            .with_context(|| format!("starting {name} on CPUs {:?}", self.cpus))?
            .0?
        };
        if !done.status.success() {
            bail!(
                "{name} ({} {} B) ended with {}: {}",
                w.name,
                value_bytes,
                describe_status(done.status),
                last_line(&done.stderr)
                    .or_else(|| last_line(&done.stdout))
                    .unwrap_or("it printed nothing")
            );
        }
        let parsed = match self.server {
            Server::Memcached => parse_memaslap(&done.stdout),
            Server::Redis => parse_redis_csv(&done.stdout, w.redis_test),
        };
        Ok(parsed?)
    }
}

/// memaslap's configuration, in a file created exclusively in the temporary directory and
/// removed when dropped.
struct ConfigFile(PathBuf);

impl ConfigFile {
    fn create(text: &str) -> Result<ConfigFile> {
        use std::io::Write;
        let dir = std::env::temp_dir();
        for n in 0..1000 {
            let path = dir.join(format!("pmscope-memaslap-{}-{n}.cfg", std::process::id()));
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(mut f) => {
                    let file = ConfigFile(path);
                    f.write_all(text.as_bytes())
                        .with_context(|| format!("writing {}", file.0.display()))?;
                    return Ok(file);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e).with_context(|| format!("creating {}", path.display())),
            }
        }
        bail!(
            "no free file name for memaslap's configuration in {}",
            dir.display()
        )
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ConfigFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memaslap_config_has_the_proportions() {
        let c = memaslap_config(128, 1024, 0.1);
        assert_eq!(c, "key\n128 128 1\nvalue\n1024 1024 1\ncmd\n0 0.1\n1 0.9\n");
    }

    fn client(server: Server, clients: u64, threads: u64, store: Option<u64>) -> Client {
        Client {
            server,
            bin: PathBuf::from("x"),
            clients,
            threads,
            store_bytes: store,
            cpus: Vec::new(),
            duration_s: 2.0,
            requests: 100,
        }
    }

    #[test]
    fn threads_and_the_store_reach_the_command_line() {
        let w = super::super::workloads(Server::Memcached, false)[0];
        // 64 MiB of 128 B keys and 896 B values: 65536 items, 4096 (4k) per connection.
        let c = client(Server::Memcached, 16, 4, Some(64 << 20));
        assert_eq!(c.key_space(896), Some(65536));
        let a = c.args(&w, 896, 7, Path::new("/tmp/c")).join(" ");
        assert_eq!(a, "-s 127.0.0.1:7 -T 4 -c 16 -t 2s -S 2s -w 4k -F /tmp/c");
        // 3 connections: 21846 keys each, rounded up to 22k.
        let c = client(Server::Memcached, 3, 1, Some(64 << 20));
        assert_eq!(c.key_space(896), Some(3 * 22 * 1024));
        // Without a store size memaslap keeps its own window.
        let a = client(Server::Memcached, 12, 1, None).args(&w, 896, 7, Path::new("/tmp/c"));
        assert!(!a.contains(&"-w".to_string()), "{a:?}");

        let w = super::super::workloads(Server::Redis, false)[0];
        let c = client(Server::Redis, 24, 2, Some(1 << 20));
        assert_eq!(c.key_space(496), Some(2048));
        let a = c.args(&w, 496, 7, Path::new("")).join(" ");
        assert_eq!(
            a,
            "-h 127.0.0.1 -p 7 -t set -n 100 -d 496 -c 24 --threads 2 -r 2048 --csv"
        );
        let a = client(Server::Redis, 12, 1, None).args(&w, 512, 7, Path::new(""));
        assert!(!a.contains(&"--threads".to_string()) && a.contains(&"1000000".to_string()));
    }

    #[test]
    fn a_failed_client_is_one_sentence_quoting_it() {
        let d = tempfile::tempdir().unwrap();
        let bin = d.path().join("redis-benchmark");
        std::fs::write(&bin, "#!/bin/sh\necho 'Could not connect' >&2\nexit 1\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        let c = Client {
            server: Server::Redis,
            bin,
            clients: 1,
            threads: 1,
            store_bytes: None,
            cpus: Vec::new(),
            duration_s: 1.0,
            requests: 1,
        };
        let w = super::super::workloads(Server::Redis, false)[0];
        let e = c.run(&w, 64, 1, &mut || Ok(())).unwrap_err().to_string();
        assert_eq!(
            e,
            "redis-benchmark (set 64 B) ended with exit status 1: Could not connect"
        );
    }
}
