//! The example systemd units, and input from hosts, files and servers that must
//! reach a terminal escaped and short.

use super::*;

#[test]
fn systemd_example_units_verify_and_their_command_runs() {
    let ex = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/systemd");
    let service = std::fs::read_to_string(ex.join("tmpfsctl-collect.service")).unwrap();
    let timer = std::fs::read_to_string(ex.join("tmpfsctl-collect.timer")).unwrap();
    let exec = service
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .unwrap();
    let args: Vec<&str> = exec.split_whitespace().collect();
    assert_eq!(args[0], "/usr/bin/tmpfsctl");
    // Run the unit's command line with our binary and the output in a temp dir.
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("tmpfsctl.prom");
    let mut cmd: Vec<String> = args[1..].iter().map(|s| s.to_string()).collect();
    let i = cmd.iter().position(|a| a == "--output").unwrap();
    assert_eq!(
        cmd[i + 1],
        "/var/lib/prometheus/node-exporter/tmpfsctl.prom"
    );
    cmd[i + 1] = out.to_str().unwrap().to_string();
    let refs: Vec<&str> = cmd.iter().map(String::as_str).collect();
    let o = tmpfsctl(&refs);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.contains("tmpfsctl_path_used_bytes{path=\"/tmp\"}"),
        "{text}"
    );
    assert!(
        text.contains("tmpfsctl_path_used_bytes{path=\"/var/tmp\"}"),
        "{text}"
    );
    if Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .is_err()
    {
        crate::skip!("systemd-analyze verify: systemd-analyze not installed");
    }
    std::fs::write(
        d.path().join("tmpfsctl-collect.service"),
        service.replace("/usr/bin/tmpfsctl", env!("CARGO_BIN_EXE_tmpfsctl")),
    )
    .unwrap();
    std::fs::write(d.path().join("tmpfsctl-collect.timer"), timer).unwrap();
    let v = Command::new("systemd-analyze")
        .arg("verify")
        .arg(d.path().join("tmpfsctl-collect.service"))
        .arg(d.path().join("tmpfsctl-collect.timer"))
        .output()
        .unwrap();
    assert!(
        v.status.success() && v.stderr.is_empty(),
        "systemd-analyze verify: {}",
        stderr(&v)
    );
}

#[test]
fn hostile_host_names_are_escaped_in_text_and_markdown_exact_in_json() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("hosts.jsonl");
    // One host far over half its RAM: it is named as a misfit and an outlier.
    std::fs::write(
        &f,
        "{\"host\":\"evil\\u001b]0;pwned\\u0007<b>&\",\"tmp_used_bytes\":900,\"mem_total_bytes\":1000}\n\
         {\"host\":\"ok\",\"tmp_used_bytes\":1,\"mem_total_bytes\":1000}\n",
    )
    .unwrap();
    let p = f.to_str().unwrap();
    let t = stdout(&tmpfsctl(&["fleet", "analyze", p]));
    assert!(!t.contains('\x1b') && !t.contains('\x07'), "{t:?}");
    assert!(t.contains("evil\\x1b]0;pwned\\x07<b>&"), "{t}");
    let m = stdout(&tmpfsctl(&["fleet", "analyze", p, "--markdown"]));
    assert!(!m.contains('\x1b') && !m.contains("<b>"), "{m:?}");
    assert!(m.contains("evil\\x1b]0;pwned\\x07&lt;b&gt;&amp;"), "{m}");
    let j = json(&tmpfsctl(&["fleet", "analyze", p, "--json"]));
    assert_eq!(j["outliers"][0]["host"], "evil\x1b]0;pwned\x07<b>&");
}

#[test]
fn bad_input_is_quoted_short_and_escaped_in_errors() {
    let d = tempfile::tempdir().unwrap();
    // A CSV header with an escape sequence in a cell.
    let csv = d.path().join("h.csv");
    std::fs::write(&csv, "name\x1b[2J,used\n1,2\n").unwrap();
    // Binary garbage given by mistake (no newline, so all of it is "line 1").
    let bin_file = d.path().join("g.bin");
    let garbage: Vec<u8> = (0..600u32)
        .map(|i| (i * 151 % 256) as u8)
        .map(|b| if b == b'\n' { b'x' } else { b })
        .collect();
    std::fs::write(
        &bin_file,
        [b"host,tmp_used_bytes,".as_slice(), &garbage].concat(),
    )
    .unwrap();
    for f in [&csv, &bin_file] {
        let o = tmpfsctl(&["fleet", "analyze", f.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2));
        let e = stderr(&o);
        assert!(e.contains("CSV header"), "{e}");
        assert!(!e.trim_end().chars().any(|c| c.is_control()), "{e:?}");
        assert!(e.len() < 400, "{} bytes: {e:?}", e.len());
    }
    assert!(
        stderr(&tmpfsctl(&["fleet", "analyze", csv.to_str().unwrap()])).contains("name\\x1b[2J")
    );
}

#[test]
fn a_survey_tsv_with_a_bad_first_line_reports_line_1() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("survey.tsv");
    let rest = "b\t4\t1000\t500\t500\t0\t0\t0\t0\t0\t0\t1\n";
    for bad in ["-1", "NaN", "1e400"] {
        std::fs::write(
            &f,
            format!("a\t{bad}\t1000\t500\t500\t0\t0\t0\t0\t0\t0\t1\n{rest}"),
        )
        .unwrap();
        let o = tmpfsctl(&["fleet", "analyze", f.to_str().unwrap(), "--json"]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
        let e = stderr(&o);
        assert!(e.contains("survey.tsv:1: not a number"), "{e}");
    }
}

#[test]
fn a_hostile_server_answer_is_quoted_short_and_escaped() {
    let body = format!("\x1b]0;pwned\x07\x1b[2J{}", "x".repeat(600));
    let resp: &'static str = Box::leak(
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_boxed_str(),
    );
    let p = fake_http(resp);
    let o = tmpfsctl(&[
        "fleet",
        "analyze",
        "--prometheus",
        &format!("http://127.0.0.1:{p}"),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("\\x1b]0;pwned\\x07"), "{e}");
    assert!(!e.trim_end().chars().any(|c| c.is_control()), "{e:?}");
    assert!(e.len() < 500, "{} bytes: {e:?}", e.len());
}

#[test]
fn one_host_is_one_host_not_one_hosts() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("one.tsv");
    // /tmp 3 GiB on 4 GiB of RAM: the single host is also the single outlier.
    std::fs::write(
        &f,
        "web1\t3145728\t4194304\t0\t1048576\t0\t0\t0\t0\t0\t0\t10\n",
    )
    .unwrap();
    let o = tmpfsctl(&["fleet", "analyze", f.to_str().unwrap()]);
    let out = stdout(&o);
    assert!(out.contains("1 host from files"), "{out}");
    assert!(out.contains("(1 host does not fit"), "{out}");
    assert!(!out.contains("1 hosts"), "{out}");
}

/// A gzip answer of 1 MiB that decodes to 1 GiB: the body limit counts
/// decoded bytes, so tmpfsctl stops at 256 MiB of them (exit 2, saying so)
/// instead of reading the whole gigabyte.
#[test]
fn a_gzip_bomb_from_prometheus_stops_at_the_decoded_limit() {
    // One gzip member of 64 MiB of blanks (JSON whitespace, so a parser
    // reading as it goes keeps reading); 16 members in a row are one gzip
    // stream of 1 GiB (RFC 1952: members are concatenated).
    let member = Command::new("sh")
        .args([
            "-c",
            "head -c 67108864 /dev/zero | tr '\\0' ' ' | gzip -1 -c",
        ])
        .output()
        .unwrap();
    assert!(member.status.success() && member.stdout.len() < 1 << 20);
    let body = member.stdout.repeat(16);
    let (_, e, code, peak_mib) = analyze_against(gzip_answer(&body));
    assert_eq!(code, 2, "{e}");
    assert!(e.contains("larger than 256 MiB once decompressed"), "{e}");
    // Past 256 MiB of decoded body it stopped reading.
    assert!(peak_mib < 600, "peak RSS {peak_mib} MiB");
}

/// An answer of about 100 MiB (decoded) in which each of 1,000 hosts has
/// 300 series, each with a dozen labels: what tmpfsctl keeps is one figure a
/// host, so its peak RSS stays far below the answer's size (it held the body
/// and a parsed tree of it before: 2.1 GiB for an answer of 165 MiB).
#[test]
fn a_large_prometheus_answer_costs_memory_by_host_not_by_series() {
    use std::io::Write;
    let mut gz = Command::new("gzip")
        .args(["-1", "-c"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = gz.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let mut w = std::io::BufWriter::new(&mut input);
        w.write_all(br#"{"status":"success","data":{"resultType":"vector","result":["#)
            .unwrap();
        let mut first = true;
        for series in 0..300u64 {
            for h in 0..1000 {
                if !first {
                    w.write_all(b",").unwrap();
                }
                first = false;
                write!(
                    w,
                    r#"{{"metric":{{"__name__":"node_filesystem_size_bytes","instance":"host-{h:04}.example.net:9100","job":"node","device":"/dev/mapper/vg{series}-lv{series}","fstype":"ext4","mountpoint":"/srv/data/{series}","datacenter":"eu-west-{}","rack":"r{}","team":"storage-platform","env":"production","kernel":"6.12.0-amd64","os":"debian-13"}},"value":[1764000000.123,"{}"]}}"#,
                    h % 7,
                    h % 40,
                    (1u64 << 30) + series
                )
                .unwrap();
            }
        }
        w.write_all(b"]}}").unwrap();
    });
    let out = gz.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(out.status.success());
    let (o, e, code, peak_mib) = analyze_against(gzip_answer(&out.stdout));
    // Every query got the same answer: 1,000 hosts, each with 1 GiB + 299
    // bytes at its largest series (its /tmp as big as its RAM: exit 1).
    assert_eq!(code, 1, "{e}");
    let v: serde_json::Value = serde_json::from_str(&o).unwrap();
    assert_eq!(v["hosts"], 1000, "{e}");
    assert_eq!(v["tmp_used_bytes"]["max"], (1u64 << 30) + 299);
    assert!(
        peak_mib < 100,
        "peak RSS {peak_mib} MiB for an answer of ~100 MiB"
    );
}

/// An HTTP answer carrying a gzip body, for [`fake_http_bytes`].
fn gzip_answer(body: &[u8]) -> Vec<u8> {
    let mut resp = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    resp.extend_from_slice(body);
    resp
}

/// `fleet analyze --prometheus` against a server answering `resp` to every
/// request, with `--json`: its stdout, stderr, exit code and own peak RSS
/// in MiB.
fn analyze_against(resp: Vec<u8>) -> (String, String, i32, i64) {
    let p = fake_http_bytes(resp);
    let (out, err) = (tempfile::tempfile().unwrap(), tempfile::tempfile().unwrap());
    // Waited for below with wait4, which std's Child cannot do.
    let pid = bin()
        .args(["fleet", "analyze", "--prometheus"])
        .arg(format!("http://127.0.0.1:{p}"))
        .arg("--json")
        .stdin(Stdio::null())
        .stdout(out.try_clone().unwrap())
        .stderr(err.try_clone().unwrap())
        .spawn()
        .unwrap()
        .id() as i32;
    // wait4: this child's own peak RSS, not the largest of every child the
    // test binary has waited for.
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid value for wait4 to fill.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: the pid is our unwaited child; status and ru are valid for writing.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    assert_eq!(r, pid);
    assert!(libc::WIFEXITED(status));
    use std::io::{Read, Seek};
    let [o, e] = [out, err].map(|mut f| {
        let mut s = String::new();
        f.rewind().unwrap();
        f.read_to_string(&mut s).unwrap();
        s
    });
    // ru_maxrss is in KiB.
    eprintln!("fleet analyze --prometheus: peak RSS {} KiB", ru.ru_maxrss);
    (o, e, libc::WEXITSTATUS(status), ru.ru_maxrss / 1024)
}
