//! What a running server says it holds: memcached's `stats` and redis's `INFO`, read over
//! the same loopback port its client loads, so a store-size sweep records what the store
//! achieved (bytes, items) and what the server did to stay within its limit (evictions).

use super::Server;
use anyhow::{Context, Result, bail};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, TcpStream};
use std::time::Duration;

/// A server's own account of its store.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServerStats {
    /// Bytes it holds (memcached `bytes`, redis `used_memory`).
    pub bytes: u64,
    /// Items it holds (memcached `curr_items`, redis keys of db0).
    pub items: u64,
    /// Items evicted since it started (memcached `evictions`, redis `evicted_keys`).
    pub evictions: u64,
}

/// Asks the server on 127.0.0.1:`port` for its stats (a few seconds at most).
pub fn server_stats(server: Server, port: u16) -> Result<ServerStats> {
    let addr = (Ipv4Addr::LOCALHOST, port).into();
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .with_context(|| format!("asking {server} on port {port} for its stats"))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut r = BufReader::new(s.try_clone()?);
    match server {
        Server::Memcached => {
            s.write_all(b"stats\r\n")?;
            let mut text = String::new();
            loop {
                let mut line = String::new();
                if r.read_line(&mut line)? == 0 || line.trim_end() == "END" {
                    break;
                }
                text += &line;
            }
            Ok(parse_memcached_stats(&text))
        }
        Server::Redis => {
            s.write_all(b"INFO\r\n")?;
            let mut header = String::new();
            r.read_line(&mut header)?;
            let Some(len) = header
                .trim_end()
                .strip_prefix('$')
                .and_then(|n| n.parse().ok())
            else {
                bail!("redis answered INFO with {:?}", header.trim_end());
            };
            let mut body = vec![0u8; len];
            r.read_exact(&mut body)?;
            Ok(parse_redis_info(&String::from_utf8_lossy(&body)))
        }
    }
}

/// memcached's `STAT name value` lines.
pub fn parse_memcached_stats(text: &str) -> ServerStats {
    let stat = |name: &str| {
        text.lines()
            .filter_map(|l| l.strip_prefix("STAT "))
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
            .unwrap_or(0)
    };
    ServerStats {
        bytes: stat("bytes"),
        items: stat("curr_items"),
        evictions: stat("evictions"),
    }
}

/// redis's `INFO` sections of `name:value` lines (`db0:keys=N,expires=...`).
pub fn parse_redis_info(text: &str) -> ServerStats {
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.trim_end().strip_prefix(name)?.strip_prefix(':'))
    };
    let number = |name: &str| field(name).and_then(|v| v.parse().ok()).unwrap_or(0);
    ServerStats {
        bytes: number("used_memory"),
        items: field("db0")
            .and_then(|v| v.split(',').find_map(|kv| kv.strip_prefix("keys=")))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0),
        evictions: number("evicted_keys"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memcached_stats_are_read_by_name() {
        let t = "STAT pid 1\r\nSTAT bytes_read 99\r\nSTAT bytes 4096\r\nSTAT curr_items 3\r\nSTAT evictions 7\r\n";
        assert_eq!(
            parse_memcached_stats(t),
            ServerStats {
                bytes: 4096,
                items: 3,
                evictions: 7
            }
        );
    }

    #[test]
    fn redis_info_is_read_by_name() {
        let t = "# Memory\r\nused_memory:1000\r\nused_memory_human:1000B\r\n# Stats\r\nevicted_keys:5\r\n# Keyspace\r\ndb0:keys=42,expires=0,avg_ttl=0\r\n";
        assert_eq!(
            parse_redis_info(t),
            ServerStats {
                bytes: 1000,
                items: 42,
                evictions: 5
            }
        );
        assert_eq!(parse_redis_info(""), ServerStats::default());
    }
}
