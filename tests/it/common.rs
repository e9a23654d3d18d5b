//! Shared helpers for integration tests: the binary, root checks, real tmpfs mounts.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tmpfsctl"))
}

/// Run tmpfsctl with args; returns the output (never panics on failure exit).
pub fn tmpfsctl(args: &[&str]) -> Output {
    bin().args(args).output().expect("spawn tmpfsctl")
}

pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Run `script` with `sh -c` as uid/gid 65534 and no other groups: the
/// other user of the hostile-neighbour tests.
pub fn as_nobody(script: &str) -> Output {
    Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
            "sh",
            "-c",
            script,
        ])
        .current_dir("/")
        .output()
        .unwrap()
}

/// Skip the test (see `skip!`) unless running as root.
#[macro_export]
macro_rules! require_root {
    () => {
        if !$crate::common::is_root() {
            $crate::skip!("needs root to mount tmpfs (CI runs as root)");
        }
    };
}

/// A real tmpfs (or ramfs) mounted on a fresh directory, unmounted (lazily) on drop.
pub struct TestMount {
    pub dir: tempfile::TempDir,
    pub path: PathBuf,
}

impl TestMount {
    /// Mount `fstype` with `opts` at `<tempdir>/<name>`.
    pub fn new(fstype: &str, name: &str, opts: &str) -> TestMount {
        let dir = tempfile::Builder::new()
            .prefix("tmpfsctl-it-")
            .tempdir()
            .unwrap();
        let path = dir.path().join(name);
        std::fs::create_dir_all(&path).unwrap();
        let st = Command::new("mount")
            .args(["-t", fstype, "-o", opts, fstype])
            .arg(&path)
            .status()
            .expect("run mount");
        assert!(
            st.success(),
            "mount -t {fstype} -o {opts} {} failed",
            path.display()
        );
        TestMount { dir, path }
    }

    pub fn tmpfs(opts: &str) -> TestMount {
        Self::new("tmpfs", "mnt", opts)
    }
}

impl Drop for TestMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.path).status();
    }
}

/// The binary copied into `t` where uid 65534 can run it (the build tree
/// may sit under a 0700 /root).
pub fn nobody_bin(t: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dst = t.join("tmpfsctl");
    std::fs::copy(env!("CARGO_BIN_EXE_tmpfsctl"), &dst).unwrap();
    std::fs::set_permissions(t, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(0o755)).unwrap();
    dst
}

/// Parse stdout as JSON, with the output in the panic message when it is not.
pub fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): status {:?}\nstdout: {}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The numbers df prints for a path with the given `--output` columns.
fn df(args: &[&str], p: &Path) -> Vec<u64> {
    let out = Command::new("df").args(args).arg(p).output().unwrap();
    let s = String::from_utf8_lossy(&out.stdout);
    s.lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect()
}

/// `df -B1` for a path: (size, used, avail).
pub fn df_bytes(p: &Path) -> (u64, u64, u64) {
    let v = df(&["-B1", "--output=size,used,avail"], p);
    (v[0], v[1], v[2])
}

/// `df -i` for a path: (inodes, inodes used).
pub fn df_inodes(p: &Path) -> (u64, u64) {
    let v = df(&["--output=itotal,iused"], p);
    (v[0], v[1])
}

/// Headless Chromium, or None (with the reason printed) where it is not installed.
pub fn chromium() -> Option<&'static str> {
    let exe = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .find(|p| Path::new(p).exists());
    if exe.is_none() {
        crate::skip::skip(
            module_path!(),
            "chromium rendering: chromium is not installed (scripts/setup installs it)",
        );
    }
    exe
}

pub fn run_chromium(exe: &str, width: u32, height: u32, args: &[String], page: &Path) -> Output {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(exe)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
            "--virtual-time-budget=5000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--window-size={width},{height}"))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The DOM Chromium built from `file` (1280 pixels wide), or None without Chromium.
pub fn chromium_dom(file: &Path) -> Option<String> {
    let exe = chromium()?;
    let out = run_chromium(exe, 1280, 900, &["--dump-dom".into()], file);
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Lays `html` out in Chromium at `width` CSS pixels and returns what
/// tests/it/layout.js measured: per inline SVG its size, its number of texts
/// and shapes, the smallest text height, and the labels that are clipped,
/// overlap each other or sit on a drawn curve; the tables and code blocks.
/// The script goes into a copy: the report itself stays script-free.
pub fn chromium_layout(html: &Path, width: u32) -> Option<serde_json::Value> {
    let exe = chromium()?;
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("layout.html");
    let page = std::fs::read_to_string(html).unwrap();
    let script = format!("<script>{}</script></body>", include_str!("layout.js"));
    assert!(page.contains("</body>"), "no </body> in {}", html.display());
    std::fs::write(&copy, page.replacen("</body>", &script, 1)).unwrap();
    let out = run_chromium(exe, width, 900, &["--dump-dom".to_string()], &copy);
    let dom = String::from_utf8_lossy(&out.stdout);
    let json = dom
        .split("<pre id=\"layout-findings\">")
        .nth(1)
        .and_then(|s| s.split("</pre>").next())
        .unwrap_or_else(|| {
            panic!(
                "the layout script left no findings in the DOM of {}",
                html.display()
            )
        });
    let json = json
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&");
    Some(serde_json::from_str(&json).unwrap())
}

/// Every layout fault in `findings`, each naming the chart and its labels:
/// clipped text, overlapping text, text on a curve or crossed by a line,
/// empty charts, text shrunk below `min_text_px`, a page wider than the window.
pub fn layout_faults(findings: &serde_json::Value, min_text_px: f64) -> Vec<String> {
    let mut faults = Vec::new();
    let width = &findings["width"];
    for c in findings["charts"].as_array().unwrap() {
        let name = c["name"].as_str().unwrap_or("?");
        for t in c["clipped"].as_array().unwrap() {
            faults.push(format!(
                "{name} at {width}px: label {t} is clipped by the chart's edge"
            ));
        }
        for p in c["overlaps"].as_array().unwrap() {
            faults.push(format!(
                "{name} at {width}px: labels {} and {} overlap",
                p[0], p[1]
            ));
        }
        for t in c["on_curve"].as_array().unwrap() {
            faults.push(format!("{name} at {width}px: label {t} sits on the curve"));
        }
        for x in c["crossed"].as_array().unwrap() {
            faults.push(format!(
                "{name} at {width}px: label {} is crossed by a {} line",
                x[0], x[1]
            ));
        }
        if c["texts"].as_u64() == Some(0) || c["shapes"].as_u64() == Some(0) {
            faults.push(format!("{name} at {width}px: empty chart {c}"));
        }
        if c["min_font_px"].as_f64().is_some_and(|f| f < min_text_px) {
            faults.push(format!(
                "{name} at {width}px: text {}px high, below {min_text_px}px",
                c["min_font_px"]
            ));
        }
    }
    for t in findings["tables"].as_array().unwrap() {
        if t["rows"].as_u64().unwrap_or(0) < 2 || t["cells"].as_u64() == Some(0) {
            faults.push(format!("table at {width}px has no data rows: {t}"));
        }
        if t["overflows"].as_bool() == Some(true) {
            faults.push(format!("table at {width}px is wider than the window: {t}"));
        }
    }
    if findings["page_overflows"].as_bool() == Some(true) {
        faults.push(format!("the page is wider than a {width}px window"));
    }
    faults
}

/// A PNG of `html` at `width`×`height`; when TMPFSCTL_SCREENSHOTS names a
/// directory the PNG is copied there for a person to look at.
pub fn chromium_screenshot(html: &Path, width: u32, height: u32, name: &str) -> Option<Vec<u8>> {
    let exe = chromium()?;
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join(format!("{name}.png"));
    run_chromium(
        exe,
        width,
        height,
        &[format!("--screenshot={}", png.display())],
        html,
    );
    let bytes = std::fs::read(&png).unwrap();
    if let Some(keep) = std::env::var_os("TMPFSCTL_SCREENSHOTS") {
        std::fs::write(Path::new(&keep).join(format!("{name}.png")), &bytes).unwrap();
    }
    Some(bytes)
}

/// A path as the `&str` argument a command line wants (test paths are UTF-8).
pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A fresh directory named `tmpfsctl-it-<area>-…`, so a leftover says which
/// tests left it; removed on drop.
pub fn scratch(area: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("tmpfsctl-it-{area}-"))
        .tempdir()
        .unwrap()
}

/// findmnt's COLUMN for the mount at exactly `p` ("" when nothing is mounted there).
fn findmnt(column: &str, p: &Path) -> String {
    let o = Command::new("findmnt")
        .args(["-n", "-o", column, "--mountpoint"])
        .arg(p)
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// The options of the mount at exactly `p`, as findmnt prints them.
pub fn findmnt_options(p: &Path) -> String {
    findmnt("OPTIONS", p)
}

/// The filesystem type mounted at exactly `p`, or None when `p` is no mount point.
pub fn findmnt_fstype(p: &Path) -> Option<String> {
    Some(findmnt("FSTYPE", p)).filter(|t| !t.is_empty())
}

/// Every extended attribute of `p` (not following a symlink), sorted.
pub fn xattrs(p: &Path) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut names = vec![0u8; 4096];
    let n = rustix::fs::llistxattr(p, &mut names[..]).unwrap_or(0);
    let mut v: Vec<(Vec<u8>, Vec<u8>)> = names[..n]
        .split(|&b| b == 0)
        .filter(|n| !n.is_empty())
        .map(|name| {
            let mut val = vec![0u8; 65536];
            let c = std::ffi::CString::new(name).unwrap();
            let len = rustix::fs::lgetxattr(p, &c, &mut val[..]).unwrap();
            (name.to_vec(), val[..len].to_vec())
        })
        .collect();
    v.sort();
    v
}

// ---------------------------------------------------------------- Prometheus

/// A real server (prometheus, node_exporter) started by a test and killed by its PID (and reaped) when the test ends, pass or fail.
/// A server process killed (and reaped) when the test ends, pass or fail.
pub struct Server {
    pub child: std::process::Child,
    pub name: &'static str,
    pub log: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    pub fn start(name: &'static str, cmd: &mut Command, log: PathBuf) -> Option<Server> {
        let f = std::fs::File::create(&log).unwrap();
        match cmd.stdout(f.try_clone().unwrap()).stderr(f).spawn() {
            Ok(child) => Some(Server { child, name, log }),
            Err(e) => {
                crate::skip::skip(
                    module_path!(),
                    &format!(
                        "cannot start {name} ({e}); install Debian's prometheus and prometheus-node-exporter"
                    ),
                );
                None
            }
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub fn http_get(url: &str) -> Option<String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(std::time::Duration::from_secs(5)))
        .build()
        .into();
    agent.get(url).call().ok()?.body_mut().read_to_string().ok()
}

/// Poll until `ok` holds for the body at `url`, up to 60 s.
pub fn wait_for(srv: &Server, url: &str, ok: impl Fn(&str) -> bool) {
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(60) {
        if let Some(b) = http_get(url)
            && ok(&b)
        {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    panic!("{} not ready at {url}; log:\n{}", srv.name, srv.log());
}

pub fn prometheus(dir: &Path, data: &Path, scrape: Option<u16>) -> Option<(Server, String)> {
    let port = free_port();
    let cfg = dir.join("prometheus.yml");
    let jobs = match scrape {
        Some(p) => format!(
            "scrape_configs:\n  - job_name: node\n    static_configs:\n      - targets: ['127.0.0.1:{p}']\n"
        ),
        None => "scrape_configs: []\n".into(),
    };
    std::fs::write(
        &cfg,
        format!("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n{jobs}"),
    )
    .unwrap();
    let srv = Server::start(
        "prometheus",
        Command::new("prometheus")
            .arg(format!("--config.file={}", cfg.display()))
            .arg(format!("--storage.tsdb.path={}", data.display()))
            .arg("--storage.tsdb.retention.time=30d")
            .arg(format!("--web.listen-address=127.0.0.1:{port}")),
        dir.join("prometheus.log"),
    )?;
    let url = format!("http://127.0.0.1:{port}");
    wait_for(&srv, &format!("{url}/-/ready"), |_| true);
    Some((srv, url))
}

/// The instant-query URL of Prometheus at `url` for the PromQL `q`.
pub fn query_url(url: &str, q: &str) -> String {
    let enc: String = q
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    format!("{url}/api/v1/query?query={enc}")
}

pub fn query_has_result(url: &str, q: &str) -> bool {
    http_get(&query_url(url, q))
        .map(|b| b.contains("\"result\":[{"))
        .unwrap_or(false)
}

/// Whether process `pid` has a file (not DIR itself) under `dir` open: its
/// copy (or the check after it) is under way. Measuring DIR beforehand opens
/// only directories.
pub fn has_open_under(pid: u32, dir: &Path) -> bool {
    let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    rd.flatten()
        .any(|e| std::fs::read_link(e.path()).is_ok_and(|t| t.starts_with(dir) && t != dir))
}

/// Whether process `pid` has a handler for signal `sig` (commands install
/// theirs just before they start changing anything).
pub fn catches(pid: u32, sig: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .is_some_and(|m| m & (1 << (sig - 1)) != 0)
}

/// The status a shell reports for a finished process (`$?`): its exit code,
/// or 128 + the signal that ended it.
pub fn shell_status(s: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    s.code().or(s.signal().map(|g| 128 + g)).unwrap_or(-1)
}

/// Run tmpfsctl with `args` and send it `sig` once its copy is under way (it
/// handles `sig` and has a file under `dir` open), or let it end if it ends
/// first; its output.
pub fn signal_mid_copy(args: &[&str], dir: &Path, sig: rustix::process::Signal) -> Output {
    let mut child = bin()
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    while !(catches(pid, sig.as_raw()) && has_open_under(pid, dir))
        && child.try_wait().unwrap().is_none()
    {
        std::thread::yield_now();
    }
    let _ = rustix::process::kill_process(rustix::process::Pid::from_raw(pid as i32).unwrap(), sig);
    child.wait_with_output().unwrap()
}
