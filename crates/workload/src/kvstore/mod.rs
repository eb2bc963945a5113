//! Real key-value servers and their own load generators (seed 004 sections 4.3, 4.4 and 5.5):
//! how to start memcached and redis-server on 127.0.0.1, the workloads the seed ran against
//! them, the bounded run of their benchmark clients ([`Client`]) and what those print
//! ([`parse_memaslap`], [`parse_redis_csv`]), and the directory redis keeps an append-only
//! file in ([`AofDir`]). Placing a server's heap on a target, and starting and stopping it,
//! is `pmscope_runner::launch`'s; `pmscope app` composes the two.

mod aof;
mod client;
mod parse;
mod stats;

pub use aof::AofDir;
pub use client::{Client, memaslap_config};
pub use parse::{ClientResult, ParseError, parse_memaslap, parse_redis_csv};
pub use stats::{ServerStats, server_stats};

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// Key size of memcached's workloads (seed 004 section 4.3: 128-byte keys).
pub const MEMCACHED_KEY_BYTES: u64 = 128;

/// Key size of redis-benchmark's random keys (`key:` and 12 digits).
pub const REDIS_KEY_BYTES: u64 = 16;

/// A key-value server pmscope can drive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Server {
    /// memcached, loaded by memaslap (`memcaslap` in Debian's libmemcached-tools).
    Memcached,
    /// redis-server, loaded by redis-benchmark.
    Redis,
}

/// A program pmscope runs and the Debian package that provides it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Program {
    /// The executable's name, looked up in PATH.
    pub name: &'static str,
    /// The Debian package that installs it.
    pub package: &'static str,
}

impl Server {
    /// Every server, in the order the command line lists them.
    pub const ALL: [Server; 2] = [Server::Memcached, Server::Redis];

    /// The server's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Server::Memcached => "memcached",
            Server::Redis => "redis",
        }
    }

    /// The server program.
    pub fn program(self) -> Program {
        match self {
            Server::Memcached => Program {
                name: "memcached",
                package: "memcached",
            },
            Server::Redis => Program {
                name: "redis-server",
                package: "redis-server",
            },
        }
    }

    /// The load generator.
    pub fn client(self) -> Program {
        match self {
            Server::Memcached => Program {
                name: "memcaslap",
                package: "libmemcached-tools",
            },
            Server::Redis => Program {
                name: "redis-benchmark",
                package: "redis-tools",
            },
        }
    }

    /// Arguments of a server listening on 127.0.0.1:`port` only, in the foreground, keeping
    /// nothing on disk unless `aof_dir` asks redis for an append-only file there, fsynced
    /// after every write (`appendfsync always`, seed 004 Figure 27). `memory_mib` bounds
    /// the store (memcached's item memory, redis's maxmemory); `threads` is memcached's
    /// worker threads (one per CPU it is given; redis serves from one thread).
    pub fn args(
        self,
        port: u16,
        memory_mib: u64,
        threads: u64,
        as_root: bool,
        aof_dir: Option<&Path>,
    ) -> Vec<String> {
        let mut a: Vec<String> = match self {
            Server::Memcached => vec![
                "-l".into(),
                "127.0.0.1".into(),
                "-p".into(),
                port.to_string(),
                "-U".into(),
                "0".into(),
                "-m".into(),
                memory_mib.to_string(),
                "-t".into(),
                threads.max(1).to_string(),
            ],
            Server::Redis => vec![
                "--bind".into(),
                "127.0.0.1".into(),
                "--port".into(),
                port.to_string(),
                "--protected-mode".into(),
                "yes".into(),
                "--daemonize".into(),
                "no".into(),
                "--save".into(),
                String::new(),
                "--loglevel".into(),
                "warning".into(),
                "--maxmemory".into(),
                format!("{memory_mib}mb"),
                // Evict as memcached does when the store outgrows its limit, rather than
                // refusing writes: a store-size sweep then measures a full store.
                "--maxmemory-policy".into(),
                "allkeys-lru".into(),
            ],
        };
        // memcached refuses to run as root unless told which user to be; staying root keeps
        // the placement library able to create its files where pmscope created them.
        if self == Server::Memcached && as_root {
            a.extend(["-u".into(), "root".into()]);
        }
        if self == Server::Redis {
            match aof_dir {
                Some(dir) => a.extend([
                    "--appendonly".into(),
                    "yes".into(),
                    "--appendfsync".into(),
                    "always".into(),
                    "--dir".into(),
                    dir.display().to_string(),
                ]),
                None => a.extend(["--appendonly".into(), "no".into()]),
            }
        }
        a
    }
}

impl fmt::Display for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Server {
    type Err = String;
    fn from_str(s: &str) -> Result<Server, String> {
        Server::ALL
            .into_iter()
            .find(|v| v.name() == s)
            .ok_or_else(|| format!("unknown server '{s}': use memcached or redis"))
    }
}

/// A program that is not in PATH, and how to install it.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "{name} is not installed: install Debian's {package} (apt-get install {package}, or ./dev setup)"
)]
pub struct NotInstalled {
    /// The executable's name.
    pub name: &'static str,
    /// Its Debian package.
    pub package: &'static str,
}

impl Program {
    /// Its path: the first executable file of that name in PATH.
    pub fn find(self) -> Result<PathBuf, NotInstalled> {
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path)
            .map(|d| d.join(self.name))
            .find(|c| is_executable(c))
            .ok_or(NotInstalled {
                name: self.name,
                package: self.package,
            })
    }
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// One load the seed ran against a server.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Workload {
    /// Its name in records and tables.
    pub name: &'static str,
    /// Fraction of SETs (memcached) — redis workloads run one command type each.
    pub set_fraction: f64,
    /// The redis-benchmark test (`set`, `get`, `mset`); empty for memcached.
    pub redis_test: &'static str,
}

/// The seed's workloads for a server: memcached GET-dominant (10 % SET) and SET-dominant
/// (50 % SET), Figure 20; redis pure SETs then pure GETs (Figure 22); with an append-only
/// file, redis MSET of ten pairs (Figure 27).
pub fn workloads(server: Server, aof: bool) -> Vec<Workload> {
    match (server, aof) {
        (Server::Memcached, _) => vec![
            Workload {
                name: "get-heavy",
                set_fraction: 0.1,
                redis_test: "",
            },
            Workload {
                name: "set-heavy",
                set_fraction: 0.5,
                redis_test: "",
            },
        ],
        (Server::Redis, false) => vec![
            Workload {
                name: "set",
                set_fraction: 1.0,
                redis_test: "set",
            },
            Workload {
                name: "get",
                set_fraction: 0.0,
                redis_test: "get",
            },
        ],
        (Server::Redis, true) => vec![Workload {
            name: "mset",
            set_fraction: 1.0,
            redis_test: "mset",
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_are_named_as_the_command_line_names_them() {
        for s in Server::ALL {
            assert_eq!(s.name().parse::<Server>(), Ok(s));
        }
        assert!("redis-server".parse::<Server>().is_err());
    }

    #[test]
    fn servers_listen_on_loopback_only_and_redis_keeps_its_log_where_asked() {
        for s in [Server::Memcached, Server::Redis] {
            let a = s.args(12345, 256, 1, false, None);
            assert!(a.iter().any(|x| x == "127.0.0.1"), "{s}: {a:?}");
            assert!(a.iter().any(|x| x == "12345"));
        }
        let a = Server::Redis.args(1, 64, 1, true, Some(Path::new("/mnt/x")));
        let w = a.join(" ");
        assert!(
            w.contains("--appendonly yes --appendfsync always --dir /mnt/x"),
            "{w}"
        );
        assert!(
            Server::Memcached
                .args(1, 64, 1, true, None)
                .join(" ")
                .ends_with("-u root")
        );
        assert!(
            !Server::Memcached
                .args(1, 64, 1, false, None)
                .contains(&"-u".to_string())
        );
    }
}
