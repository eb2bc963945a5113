//! A server's own benchmark client, run once per workload and value size against
//! 127.0.0.1, bounded (memaslap by its duration, redis-benchmark by its requests, both by a
//! timeout and by Ctrl-C) and supervised by `pmscope_runner::child`.

use super::{ClientResult, MEMCACHED_KEY_BYTES, Server, Workload, parse_memaslap, parse_redis_csv};
use anyhow::{Context, Result, bail};
use pmscope_runner::child::{describe_status, last_line, run_supervised};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

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
    /// memcached: seconds per run (rounded up to whole seconds, at least 1).
    pub duration_s: f64,
    /// redis: requests per run.
    pub requests: u64,
}

impl Client {
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
        let _config; // memaslap's configuration file lives until the client is done
        let timeout;
        match self.server {
            Server::Memcached => {
                let f = ConfigFile::create(&memaslap_config(
                    MEMCACHED_KEY_BYTES,
                    value_bytes,
                    w.set_fraction,
                ))?;
                let secs = self.duration_s.ceil().max(1.0) as u64;
                cmd.args(["-s", &format!("127.0.0.1:{port}"), "-T", "1"])
                    .args(["-c", &self.clients.to_string()])
                    .args(["-t", &format!("{secs}s"), "-S", &format!("{secs}s")])
                    .arg("-F")
                    .arg(f.path());
                _config = Some(f);
                timeout = Duration::from_secs(secs * 3 + 30);
            }
            Server::Redis => {
                cmd.args(["-h", "127.0.0.1", "-p", &port.to_string()])
                    .args(["-t", w.redis_test, "-n", &self.requests.to_string()])
                    .args(["-d", &value_bytes.to_string()])
                    .args(["-c", &self.clients.to_string()])
                    .args(["-r", "1000000", "--csv"]);
                _config = None;
                timeout = Duration::from_secs(600);
            }
        }
        let done = run_supervised(&mut cmd, name, timeout, server)?;
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
