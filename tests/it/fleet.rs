//! Integration tests for `collect` and `fleet analyze`: real trees, real mounts,
//! real Prometheus and node_exporter.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::common::{bin, json, stderr, stdout, tmpfsctl};

mod analyze;
mod collect;
mod hostile;
pub(crate) mod prometheus;

fn du(args: &[&str], p: &Path) -> u64 {
    let o = Command::new("du").args(args).arg(p).output().unwrap();
    assert!(o.status.success());
    stdout(&o)
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// A small /tmp-like tree: nested dirs, a hard link, a symlink, a sparse file.
fn make_tree(d: &Path) {
    std::fs::create_dir_all(d.join("a/b/c")).unwrap();
    std::fs::write(d.join("a/f1"), vec![1u8; 100_000]).unwrap();
    std::fs::write(d.join("a/b/c/f2"), vec![2u8; 5000]).unwrap();
    std::fs::hard_link(d.join("a/f1"), d.join("a/b/f1-link")).unwrap();
    std::os::unix::fs::symlink("/usr", d.join("usr-link")).unwrap();
    let f = std::fs::File::create(d.join("sparse")).unwrap();
    f.set_len(10 << 20).unwrap();
}

fn names(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect()
}

/// Answer every connection with a fixed HTTP response, until the test ends.
fn fake_http(response: &'static str) -> u16 {
    fake_http_bytes(response.as_bytes().to_vec())
}

/// A server on 127.0.0.1 that answers every request with `response` (status
/// line, headers and body, as bytes); its port.
fn fake_http_bytes(response: Vec<u8>) -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            use std::io::{Read, Write};
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = s.write_all(&response);
        }
    });
    port
}
