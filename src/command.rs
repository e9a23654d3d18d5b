//! The command contract, in one place: every command is a plain
//! [`Request`] (no clap type: the command line builds it) run with the
//! [`Context`]; its `run` hands back a [`Report`], which shows itself in
//! each [`Format`] it offers; the command line builds one [`Output`]
//! saying what stdout shows and which files are written besides, and the
//! command ends with an [`ExitCode`]. What a command says on stderr goes
//! through [`note`], [`warn`] and [`error`]: one prefix, coloured when
//! stderr is a terminal, every line made safe for it.
//!
//! `Output::write` writes every command's report the same way: `-` is
//! stdout, `fd:N` a descriptor the caller opened, at most one thing on
//! stdout, no file named twice, files replaced atomically (`sys::atomic`),
//! all checked before any work.
//!
//! Structured formats (JSON) are written here, once, for every report,
//! from the document the report hands over ([`Report::document`]); a new
//! one is a [`Format`] const and an arm in [`structured`] here, plus its
//! flag in `cli/output.rs`. A format only some reports have (a table, CSV,
//! HTML) is an arm in those reports' `render`, next to their render code.
//!
//! This module sits below every capability: capabilities import it, never
//! the crate root, so data and imports flow one way (cli -> capability ->
//! sys).

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use serde::Serialize;

use crate::render::color::{Tone, paint_err};
use crate::render::paragraph;
use crate::sys::Sysroot;
use crate::sys::atomic::{AtomicWrite, check_writable, file_identity, same_destination};
use crate::sys::descriptor;
use crate::term::{safe, safe_path};

/// What every command gets besides its own arguments.
#[derive(Debug, Clone)]
pub struct Context {
    pub sysroot: Sysroot,
}

/// How a command ended, as the process exit status (see README).
///
/// Like fd's and ripgrep's: 0 ok, 1 "the command ran and found the problem you
/// asked about", 2 usage or runtime error, 130 stopped by an interrupt. `run`
/// hands on its child's own status through [`ExitCode::Child`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    Ok,
    Problem,
    Error,
    Interrupted,
    /// The exit status of a command tmpfsctl ran for the user, passed on as is.
    Child(u8),
}

impl ExitCode {
    pub fn code(self) -> u8 {
        match self {
            ExitCode::Ok => 0,
            ExitCode::Problem => 1,
            ExitCode::Error => 2,
            ExitCode::Interrupted => 130,
            ExitCode::Child(c) => c,
        }
    }

    /// `Problem` when `bad`, else `Ok`: commands whose answer is yes/no.
    pub fn problem_if(bad: bool) -> ExitCode {
        if bad { ExitCode::Problem } else { ExitCode::Ok }
    }
}

impl From<ExitCode> for std::process::ExitCode {
    fn from(c: ExitCode) -> Self {
        std::process::ExitCode::from(c.code())
    }
}

/// "tmpfsctl: note: …" on stderr: something worth knowing that changes
/// nothing (a check skipped, a file kept). Each line is made safe for the
/// terminal.
pub fn note(message: &str) {
    eprint!("{}", noted(message));
}

/// "tmpfsctl: warning: …" on stderr: something the user should act on.
/// Each line is made safe for the terminal.
pub fn warn(message: &str) {
    eprint!("{}", warned(message));
}

/// "tmpfsctl: …" on stderr, no label: what a command tells as it goes or
/// ends (a run's summary, a scratch kept, a journal recovered, the query it
/// sends). Each line is made safe for the terminal.
pub fn say(message: &str) {
    eprint!("{}", said(None, "", message));
}

/// What a command shows on stderr that is no diagnostic and passes as it
/// is: the plan it is about to carry out, the question it asks. The caller
/// made it safe (it may carry colour).
pub fn show(text: &str) {
    eprint!("{text}");
}

/// Ask `question` on the terminal; `yes` (the `--yes` flag) skips it. With no
/// terminal to ask on, refuse rather than guess.
pub fn confirm(question: &str, yes: bool) -> Result<()> {
    if yes {
        return Ok(());
    }
    if !std::io::stdin().is_terminal() {
        bail!("stdin is not a terminal, so I cannot ask for confirmation; pass --yes to go ahead");
    }
    show(&format!("{question} [y/N] "));
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    if matches!(line.trim(), "y" | "Y" | "yes" | "YES" | "Yes") {
        Ok(())
    } else {
        bail!("not confirmed; nothing changed")
    }
}

/// "tmpfsctl: error: …" on stderr, the one way an error is said. Errors
/// quote paths and excerpts of files: each line is made safe for the
/// terminal, the line breaks of the message kept.
pub fn error(e: impl std::fmt::Display) {
    eprint!("{}", said(Some(Tone::Bad), "error:", &format!("{e:#}")));
}

/// The line [`note`] writes, for a report's [`Report::after`].
pub fn noted(message: &str) -> String {
    said(None, "note:", message)
}

/// The line [`warn`] writes, for a report's [`Report::after`].
pub fn warned(message: &str) -> String {
    said(Some(Tone::Warn), "warning:", message)
}

/// [`warned`] as a paragraph: on a terminal wrapped at spaces to its width
/// (a long warning under a wide table), piped one line.
pub fn warned_paragraph(message: &str) -> String {
    let label = paint_err(Tone::Warn, "warning:");
    let text: Vec<_> = message.lines().map(safe).collect();
    let mut out = paragraph("", &format!("tmpfsctl: {label} {}", text.join(" ")));
    out.push('\n');
    out
}

fn said(tone: Option<Tone>, label: &str, message: &str) -> String {
    let text: Vec<_> = message.lines().map(safe).collect();
    if label.is_empty() {
        return format!("tmpfsctl: {}\n", text.join("\n"));
    }
    let label = tone.map_or_else(|| label.to_string(), |t| paint_err(t, label));
    format!("tmpfsctl: {label} {}\n", text.join("\n"))
}

/// A format a report can be written in, by the name a user knows it by. The
/// common ones are here; a format only one report has can be declared next
/// to the code that renders it with [`Format::new`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Format(&'static str);

impl Format {
    /// What a person reads on a terminal (tables, prose).
    pub const TEXT: Format = Format("text");
    /// The versioned document for machines (it carries `schema_version`).
    pub const JSON: Format = Format("json");
    pub const MARKDOWN: Format = Format("markdown");
    pub const CSV: Format = Format("csv");
    pub const HTML: Format = Format("html");
    /// node_exporter textfile metrics.
    pub const PROM: Format = Format("prom");

    pub const fn new(name: &'static str) -> Format {
        Format(name)
    }

    pub fn name(self) -> &'static str {
        self.0
    }

    /// Whether the format is written from the report's document by
    /// [`structured`], not by the report's own `render`.
    pub fn is_structured(self) -> bool {
        STRUCTURED.contains(&self)
    }
}

/// The formats written from a report's document, for every report alike.
const STRUCTURED: &[Format] = &[Format::JSON];

/// `doc` in the structured `format`; `one_line`: as a record in a stream
/// (JSON on one line) rather than a document for a person to read too.
fn structured<T: Serialize>(format: Format, doc: &T, one_line: bool) -> Option<Result<Vec<u8>>> {
    match format {
        Format::JSON if one_line => Some(json_line(doc)),
        Format::JSON => Some(json(doc)),
        _ => None,
    }
}

/// What a command found or did, able to show itself in each format the
/// command offers.
pub trait Report {
    /// What the structured formats (JSON, …) are written from: the report
    /// itself, or a view of it (a `schema_version` put first).
    type Document<'a>: Serialize
    where
        Self: 'a;

    /// Structured formats write one record a line (`collect`'s snapshot,
    /// appended to a file `fleet analyze` reads) rather than an indented
    /// document.
    const ONE_LINE: bool = false;

    /// The document, or `None` when this report has none: then the
    /// structured formats are asked of [`Report::render`] like any other.
    fn document(&self) -> Option<Self::Document<'_>>;

    /// The report in `format`, for the formats that are not written from
    /// the document (text, Markdown, CSV, HTML, metrics); `None` when the
    /// command has no such format.
    fn render(&self, format: Format) -> Option<Result<Vec<u8>>>;

    /// How the command ends: 0, or 1 when it found the problem asked about.
    fn exit_code(&self) -> ExitCode {
        ExitCode::Ok
    }

    /// What goes to stderr after the report, knowing what stdout showed
    /// (`None`: nothing): notes a format other than text has no room for,
    /// each line made by [`noted`] or [`warned`]. Returned, not printed:
    /// [`Output::write`] says it after stdout.
    fn after(&self, _stdout: Option<Format>) -> String {
        String::new()
    }
}

/// The two items of a [`Report`] that is its own document (most are):
/// `impl Report for X { its_own_document!(); … }`.
macro_rules! its_own_document {
    () => {
        type Document<'a> = &'a Self;

        fn document(&self) -> Option<&Self> {
            Some(self)
        }
    };
}
pub(crate) use its_own_document;

/// What a command is asked, as a plain value: `run` does the work and hands
/// back the report, printing nothing of it (what shows and where is the
/// [`Output`]'s business). Another command, a test or a future API can run
/// it without faking a command line.
pub trait Request {
    type Report: Report;

    fn run(&self, ctx: &Context) -> Result<Self::Report>;
}

/// A command that showed all it had while it ran (a child's output, a live
/// screen, a generated script): only its exit code is left.
#[derive(Debug, Clone, Copy)]
pub struct Shown(pub ExitCode);

impl Report for Shown {
    type Document<'a> = ();

    fn document(&self) -> Option<()> {
        None
    }

    /// Nothing more to show, in any format.
    fn render(&self, _format: Format) -> Option<Result<Vec<u8>>> {
        Some(Ok(Vec::new()))
    }

    fn exit_code(&self) -> ExitCode {
        self.0
    }
}

/// The JSON form of every report: pretty, with a trailing newline.
fn json<T: Serialize>(value: &T) -> Result<Vec<u8>> {
    let mut v = serde_json::to_vec_pretty(value)?;
    v.push(b'\n');
    Ok(v)
}

/// Compact JSON, one line, newline-terminated.
fn json_line<T: Serialize>(value: &T) -> Result<Vec<u8>> {
    let mut v = serde_json::to_vec(value)?;
    v.push(b'\n');
    Ok(v)
}

/// Text already built as a `String`, as a render result.
pub fn text(s: String) -> Option<Result<Vec<u8>>> {
    Some(Ok(s.into_bytes()))
}

/// One file the report is written to besides stdout (`-`: stdout itself;
/// `fd:N`: descriptor N, opened by the caller).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Export {
    /// The option that named it, as the user typed it (`--export-csv`).
    pub flag: &'static str,
    pub format: Format,
    pub path: PathBuf,
}

/// Where an export goes, as its option's value says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dest<'a> {
    /// `-` or `fd:1`.
    Stdout,
    /// `fd:N`: written as a stream, never replaced or closed.
    Fd(i32),
    File(&'a Path),
}

impl Export {
    fn dest(&self) -> Result<Dest<'_>> {
        if self.path == Path::new("-") {
            return Ok(Dest::Stdout);
        }
        let Some(n) = self.path.to_str().and_then(|s| s.strip_prefix("fd:")) else {
            return Ok(Dest::File(&self.path));
        };
        match n.parse::<i32>() {
            Ok(1) => Ok(Dest::Stdout),
            Ok(n) if n >= 0 => Ok(Dest::Fd(n)),
            _ => bail!(
                "{} {}: not a descriptor number; write fd:N with a number (fd:3 with `3>file`), or ./{} for a file of that name",
                self.flag,
                safe_path(&self.path),
                safe_path(&self.path)
            ),
        }
    }

    fn is_stdout(&self) -> bool {
        matches!(self.dest(), Ok(Dest::Stdout))
    }

    /// Whether writing `self` and `other` would land in one file: one
    /// descriptor twice, or a descriptor and a path (or two descriptors)
    /// open on one regular file; paths as `same_destination` says.
    fn collides(&self, other: &Export) -> bool {
        match (self.dest(), other.dest()) {
            (Ok(Dest::File(a)), Ok(Dest::File(b))) => same_destination(a, b),
            (Ok(Dest::Fd(a)), Ok(Dest::Fd(b))) if a == b => true,
            (Ok(a), Ok(b)) => {
                matches!((a.file_identity(), b.file_identity()), (Some(x), Some(y)) if x == y)
            }
            _ => false,
        }
    }
}

impl Dest<'_> {
    /// (device, inode) of the regular file a write here lands in; stdout is
    /// checked on its own (two claims on it), so it has none here.
    fn file_identity(&self) -> Option<(u64, u64)> {
        match self {
            Dest::Stdout => None,
            Dest::Fd(n) => descriptor::file_identity(*n),
            Dest::File(p) => file_identity(p),
        }
    }
}

/// Where a command's report goes: built from the command line, checked
/// before the command does any work, written when it is done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// What stdout shows when no export takes it; `None`: nothing.
    stdout: Option<Format>,
    /// The option that chose `stdout` (`--json`), when one did: it and an
    /// export to `-` cannot both have stdout.
    chosen_by: Option<&'static str>,
    exports: Vec<Export>,
}

impl Default for Output {
    fn default() -> Self {
        Output::stdout(Format::TEXT)
    }
}

impl Output {
    /// `format` on stdout unless a flag or an export to `-` says otherwise.
    pub fn stdout(format: Format) -> Output {
        Output {
            stdout: Some(format),
            chosen_by: None,
            exports: Vec::new(),
        }
    }

    /// Nothing on stdout (the command showed what it had while it ran, or
    /// its report goes only to the files named).
    pub fn nothing() -> Output {
        Output {
            stdout: None,
            chosen_by: None,
            exports: Vec::new(),
        }
    }

    /// `format` on stdout when `flag` was given (`--json`, `--markdown`).
    pub fn or_when(mut self, given: bool, flag: &'static str, format: Format) -> Output {
        if given {
            self.stdout = Some(format);
            self.chosen_by = Some(flag);
        }
        self
    }

    /// Also write the report as `format` to `path`, when `flag` named one.
    pub fn export(mut self, flag: &'static str, format: Format, path: Option<&PathBuf>) -> Output {
        if let Some(p) = path {
            self.exports.push(Export {
                flag,
                format,
                path: p.clone(),
            });
        }
        self
    }

    /// The report files `bench` and `fleet analyze` both offer, in the order
    /// they are written: `--export-json`, `--export-csv`,
    /// `--export-markdown`, `--html`.
    pub fn report_files(
        self,
        json: Option<&PathBuf>,
        csv: Option<&PathBuf>,
        markdown: Option<&PathBuf>,
        html: Option<&PathBuf>,
    ) -> Output {
        self.export("--export-json", Format::JSON, json)
            .export("--export-csv", Format::CSV, csv)
            .export("--export-markdown", Format::MARKDOWN, markdown)
            .export("--html", Format::HTML, html)
    }

    /// The format stdout will show, if any.
    pub fn shows(&self) -> Option<Format> {
        match self.exports.iter().find(|e| e.is_stdout()) {
            Some(e) => Some(e.format),
            None => self.stdout,
        }
    }

    /// Fail (exit 2) now, not after minutes of work, when a file could not
    /// be written (a missing directory, a directory given as the file, no
    /// write permission, an `fd:N` not open for writing), when one file is
    /// named by two options (however each spells it), or when two options
    /// both want stdout.
    pub fn check(&self) -> Result<()> {
        for (i, e) in self.exports.iter().enumerate() {
            match e.dest()? {
                Dest::Stdout => continue,
                Dest::Fd(n) => descriptor::check_writable(e.flag, n)?,
                Dest::File(p) => check_writable(e.flag, p)?,
            }
            if let Some(other) = self.exports[..i].iter().find(|o| o.collides(e)) {
                let spelled = if other.path == e.path {
                    String::new()
                } else {
                    format!(" (the second as {})", safe_path(&e.path))
                };
                bail!(
                    "{} and {} both name {}{spelled}; give each output its own file",
                    other.flag,
                    e.flag,
                    safe_path(&other.path)
                );
            }
        }
        let stdout: Vec<&str> = self
            .chosen_by
            .into_iter()
            .chain(
                self.exports
                    .iter()
                    .filter(|e| e.is_stdout())
                    .map(|e| e.flag),
            )
            .collect();
        if stdout.len() > 1 {
            bail!(
                "{} all write to stdout; give all but one a file name",
                stdout.join(" and ")
            );
        }
        Ok(())
    }

    /// Write `report` everywhere asked: the files (each replaced whole,
    /// readable by others: reports are for sharing) and descriptors, then
    /// stdout, then what the report has to say on stderr.
    pub fn write<R: Report>(&self, report: &R) -> Result<()> {
        for e in &self.exports {
            let dest = e.dest()?;
            if dest == Dest::Stdout {
                continue;
            }
            let data = rendered(report, e.flag, e.format)?;
            match dest {
                Dest::Fd(n) => descriptor::write_all(e.flag, n, &data)?,
                Dest::File(p) => AtomicWrite::report(e.flag).write(p, &data)?,
                Dest::Stdout => {}
            }
        }
        let shows = self.shows();
        if let Some(f) = shows {
            let flag = self
                .exports
                .iter()
                .find(|e| e.is_stdout())
                .map_or(self.chosen_by.unwrap_or("stdout"), |e| e.flag);
            let data = rendered(report, flag, f)?;
            let mut out = std::io::stdout().lock();
            match out.write_all(&data).and_then(|()| out.flush()) {
                // A closed pipe (`| head`) is the reader's choice, not an error.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                other => other?,
            }
        }
        let after = report.after(shows);
        if !after.is_empty() {
            eprint!("{after}");
        }
        Ok(())
    }
}

/// `report` in `format`, as [`Output::write`] writes it: the structured
/// formats from its document, here for every report; the rest (and the
/// structured ones of a report with no document) from its own `render`.
/// `None`: the report has no such form.
pub fn render<R: Report>(report: &R, format: Format) -> Option<Result<Vec<u8>>> {
    report
        .document()
        .and_then(|doc| structured(format, &doc, R::ONE_LINE))
        .or_else(|| report.render(format))
}

fn rendered<R: Report>(report: &R, flag: &str, format: Format) -> Result<Vec<u8>> {
    match render(report, format) {
        Some(r) => r,
        None => bail!("{flag}: this report has no {} form", format.name()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_the_documented_ones() {
        assert_eq!(ExitCode::Ok.code(), 0);
        assert_eq!(ExitCode::Problem.code(), 1);
        assert_eq!(ExitCode::Error.code(), 2);
        assert_eq!(ExitCode::Interrupted.code(), 130);
        assert_eq!(ExitCode::Child(77).code(), 77);
        assert_eq!(ExitCode::problem_if(true), ExitCode::Problem);
        assert_eq!(ExitCode::problem_if(false), ExitCode::Ok);
    }

    #[test]
    fn every_stderr_line_has_the_one_prefix_and_is_made_safe() {
        assert_eq!(
            said(None, "", "scratch kept in /t/\x1b[2J"),
            "tmpfsctl: scratch kept in /t/\\x1b[2J\n"
        );
        assert_eq!(noted("a\nb"), "tmpfsctl: note: a\nb\n");
        // Not on a terminal (as under cargo test): one line, no colour.
        assert_eq!(
            warned_paragraph("disk \x07 is slow"),
            "tmpfsctl: warning: disk \\x07 is slow\n"
        );
    }

    struct Two;
    impl Report for Two {
        type Document<'a> = ();
        fn document(&self) -> Option<()> {
            None
        }
        fn render(&self, f: Format) -> Option<Result<Vec<u8>>> {
            match f {
                Format::TEXT => text("t\n".into()),
                Format::CSV => text("c\n".into()),
                _ => None,
            }
        }
    }

    /// A report with a document: JSON comes from it, here, for every
    /// report; the report's own `render` is not asked.
    #[derive(Serialize)]
    struct Doc {
        b: u8,
        a: &'static str,
    }
    impl Report for Doc {
        type Document<'a> = &'a Self;
        fn document(&self) -> Option<&Self> {
            Some(self)
        }
        fn render(&self, f: Format) -> Option<Result<Vec<u8>>> {
            (f == Format::TEXT).then(|| Ok(b"t\n".to_vec()))
        }
    }
    struct Line(Doc);
    impl Report for Line {
        type Document<'a> = &'a Doc;
        const ONE_LINE: bool = true;
        fn document(&self) -> Option<&Doc> {
            Some(&self.0)
        }
        fn render(&self, _f: Format) -> Option<Result<Vec<u8>>> {
            None
        }
    }

    #[test]
    fn structured_formats_come_from_the_document_in_its_field_order() {
        let d = Doc { b: 1, a: "x" };
        let json = render(&d, Format::JSON).unwrap().unwrap();
        assert_eq!(json, b"{\n  \"b\": 1,\n  \"a\": \"x\"\n}\n");
        assert_eq!(render(&d, Format::TEXT).unwrap().unwrap(), b"t\n");
        assert!(render(&d, Format::CSV).is_none());
        let line = render(&Line(d), Format::JSON).unwrap().unwrap();
        assert_eq!(line, b"{\"b\":1,\"a\":\"x\"}\n");
        // No document: the structured formats are the report's to refuse.
        let e = Output::stdout(Format::JSON).write(&Two).unwrap_err();
        assert_eq!(e.to_string(), "stdout: this report has no json form");
        assert!(Format::JSON.is_structured() && !Format::TEXT.is_structured());
    }

    #[test]
    fn an_export_to_dash_takes_stdout_from_the_default_only() {
        let p = PathBuf::from("-");
        let o = Output::stdout(Format::TEXT).export("--export-csv", Format::CSV, Some(&p));
        assert_eq!(o.shows(), Some(Format::CSV));
        o.check().unwrap();
        let o = o.or_when(true, "--json", Format::JSON);
        let e = o.check().unwrap_err().to_string();
        assert_eq!(
            e,
            "--json and --export-csv all write to stdout; give all but one a file name"
        );
    }

    #[test]
    fn fd_1_counts_as_stdout_and_a_bad_descriptor_number_is_named() {
        let one = PathBuf::from("fd:1");
        let o = Output::stdout(Format::TEXT).export("--export-csv", Format::CSV, Some(&one));
        assert_eq!(o.shows(), Some(Format::CSV));
        o.check().unwrap();
        let e = o.or_when(true, "--json", Format::JSON).check().unwrap_err();
        assert!(e.to_string().contains("all write to stdout"), "{e}");
        let bad = PathBuf::from("fd:x");
        let e = Output::nothing()
            .export("--html", Format::HTML, Some(&bad))
            .check()
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("--html fd:x: not a descriptor number") && e.contains("./fd:x"),
            "{e}"
        );
    }

    #[test]
    fn one_file_named_twice_is_refused_naming_both_options() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("r.out");
        let o = Output::stdout(Format::TEXT)
            .export("--export-csv", Format::CSV, Some(&f))
            .export("--html", Format::HTML, Some(&f));
        let e = o.check().unwrap_err().to_string();
        assert!(
            e.starts_with("--export-csv and --html both name ") && e.contains("r.out"),
            "{e}"
        );
    }

    #[test]
    fn files_are_written_whole_and_a_missing_format_is_an_error() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("r.csv");
        let o = Output::nothing().export("--export-csv", Format::CSV, Some(&f));
        o.check().unwrap();
        o.write(&Two).unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "c\n");
        let o = Output::nothing().export("--html", Format::HTML, Some(&f));
        let e = o.write(&Two).unwrap_err().to_string();
        assert_eq!(e, "--html: this report has no html form");
    }
}
