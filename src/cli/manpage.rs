//! Man pages laid out the way man-pages(7) orders a section-1 page: NAME,
//! SYNOPSIS, DESCRIPTION, OPTIONS, COMMANDS, EXIT STATUS, ENVIRONMENT,
//! FILES, EXAMPLES, SEE ALSO. clap_mangen renders the parts clap knows
//! (name, synopsis, options); the rest comes from the command's help text
//! ("Examples:" lines become EXAMPLES, an "Exit …" paragraph EXIT STATUS,
//! the other paragraphs join DESCRIPTION) and from the tables below.

use anyhow::Result;

/// Environment variables tmpfsctl reads: name, the top-level commands that
/// read it (empty: every command), what it does.
const ENVIRONMENT: &[(&str, &[&str], &str)] = &[
    (
        "NO_COLOR",
        &[],
        "When set and not empty, no colour with --color auto (https://no-color.org); --color always still colours.",
    ),
    ("TERM", &[], "dumb: no colour with --color auto."),
    (
        "TMPFSCTL_SYSROOT",
        &[],
        "Read /proc and /etc under this directory instead of / (the same as --sysroot).",
    ),
    (
        "TMPFSCTL_PERSIST_REGISTRY",
        &["persist"],
        "The list of persisted directories (the same as --registry; default /var/lib/tmpfsctl/persist/registry.json).",
    ),
    (
        "TMPFSCTL_ANON_SALT",
        &["collect"],
        "The salt of --anonymize (the same as --salt); keep it secret and the same across the fleet.",
    ),
    (
        "SUDO_UID",
        &["plan", "apply", "revert", "advise"],
        "The user who ran sudo: trusted, like the caller, not to move things under DIR.",
    ),
    (
        "TMPDIR",
        &["status"],
        "Reported as a temp directory beside /tmp and /var/tmp.",
    ),
    (
        "HOME",
        &["bench"],
        "The disk directory compared with when /var/tmp is RAM-backed or missing.",
    ),
    (
        "XDG_RUNTIME_DIR",
        &["run", "shell"],
        "Where an unprivileged scratch that is a plain directory goes, if it is yours with mode 0700.",
    ),
    (
        "SHELL",
        &["shell"],
        "The shell started in the scratch (default /bin/sh).",
    ),
];

/// Files tmpfsctl reads or writes: path, the top-level commands concerned
/// (empty: every command), what it is.
const FILES: &[(&str, &[&str], &str)] = &[
    (
        "/proc/self/mountinfo, /proc/meminfo",
        &[],
        "What is mounted and how much memory there is (under --sysroot when given).",
    ),
    (
        "/etc/fstab",
        &["status", "plan", "apply", "revert", "advise", "persist"],
        "Mounts that come back at boot (--boot fstab); apply and revert change it atomically, keeping a backup.",
    ),
    (
        "/etc/systemd/system/*.mount",
        &["status", "plan", "apply", "revert", "persist"],
        "Mount units (--boot systemd) and tmp.mount drop-ins.",
    ),
    (
        "/run/tmpfsctl-journal/",
        &["apply", "revert"],
        "Notes that let an interrupted apply or revert be finished or undone.",
    ),
    (
        "/var/lib/tmpfsctl/persist/",
        &["persist"],
        "The registry (registry.json) and, by default, each persisted directory's store.",
    ),
    (
        "/run/tmpfsctl (root), $XDG_RUNTIME_DIR/tmpfsctl, /dev/shm/tmpfsctl-UID",
        &["run", "shell"],
        "Where the private tmpfs is mounted, in CMD's own mount namespace: a 0700 directory of the caller's, checked on every run (CMD sees it as $TMPDIR).",
    ),
    (
        "/run/tmpfsctl-scratch/, /dev/shm/tmpfsctl-UID-scratch/",
        &["run", "shell"],
        "Where a scratch that is a plain directory goes when it cannot be a private tmpfs.",
    ),
    (
        "/etc/tmpfiles.d, /run/tmpfiles.d, /usr/local/lib/tmpfiles.d, /usr/lib/tmpfiles.d",
        &["explain"],
        "systemd-tmpfiles rules, to say what will be deleted under PATH and when.",
    ),
];

/// Columns an example line may use: 80 less man's indent (7) and the
/// examples' own (4).
const EXAMPLE_WIDTH: usize = 69;

const INTERRUPTED_EXIT: &str = "130: interrupted (Ctrl-C), with nothing left half done.";

const GENERAL_EXIT: &str = "0 success; 1 the command ran and reports a problem you asked about \
     (e.g. \"does not fit\"); 2 a usage or runtime error, named on standard error; \
     130 interrupted (Ctrl-C), with nothing left half done.";

/// Text made safe for roff: hyphens as minus signs (so options copy and
/// paste as typed), backslashes and a leading dot or quote escaped.
fn esc(s: &str) -> String {
    let s = s
        .replace('\\', "\\e")
        .replace('-', "\\-")
        .replace('\'', "\\(aq");
    if s.starts_with('.') {
        format!("\\&{s}")
    } else {
        s
    }
}

/// A command's extra help, split into what man pages put in different
/// sections.
#[derive(Default, Debug, PartialEq)]
struct HelpParts {
    examples: Vec<String>,
    exit: Vec<String>,
    /// Paragraphs, each a list of lines.
    prose: Vec<Vec<String>>,
}

fn split_help(text: &str) -> HelpParts {
    #[derive(PartialEq)]
    enum In {
        Prose,
        Examples,
        Exit,
    }
    let mut p = HelpParts::default();
    let mut state = In::Prose;
    let mut para: Vec<String> = Vec::new();
    let flush = |para: &mut Vec<String>, p: &mut HelpParts| {
        if !para.is_empty() {
            p.prose.push(std::mem::take(para));
        }
    };
    for line in text.lines() {
        let t = line.trim();
        if t.is_empty() {
            flush(&mut para, &mut p);
            state = In::Prose;
            continue;
        }
        match state {
            In::Examples if line.starts_with(char::is_whitespace) => {
                p.examples.push(t.to_string());
                continue;
            }
            In::Exit => {
                p.exit.push(t.to_string());
                if t.ends_with('.') {
                    state = In::Prose;
                }
                continue;
            }
            _ => {}
        }
        if t == "Examples:" {
            flush(&mut para, &mut p);
            state = In::Examples;
        } else if t.starts_with("Exit ") {
            flush(&mut para, &mut p);
            p.exit.push(t.to_string());
            if !t.ends_with('.') {
                state = In::Exit;
            }
        } else {
            state = In::Prose;
            para.push(t.to_string());
        }
    }
    flush(&mut para, &mut p);
    p
}

/// Whether an entry tagged with `commands` belongs on the page of `top`
/// (the first word after tmpfsctl; None for the main page).
fn applies(commands: &[&str], top: Option<&str>) -> bool {
    commands.is_empty() || top.is_none_or(|t| commands.contains(&t))
}

fn definition_list(out: &mut String, items: &[(&str, &[&str], &str)], top: Option<&str>) {
    for (name, commands, what) in items {
        if applies(commands, top) {
            out.push_str(&format!(".TP\n.B {}\n{}\n", esc(name), esc(what)));
        }
    }
}

/// The man page of `cmd`, whose name is `tmpfsctl` or
/// `tmpfsctl-COMMAND[-SUB]`; `path` is the command words after tmpfsctl.
pub fn render(cmd: clap::Command, path: &[String]) -> Result<Vec<u8>> {
    let mut cmd = cmd;
    cmd.build();
    let extra = cmd
        .get_after_long_help()
        .or_else(|| cmd.get_after_help())
        .map(|s| s.to_string())
        .unwrap_or_default();
    let parts = split_help(&extra);
    let name = cmd.get_name().to_string();
    let subs: Vec<(String, String)> = cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
        .map(|s| {
            (
                format!("{name}-{}", s.get_name()),
                s.get_about().map(|a| a.to_string()).unwrap_or_default(),
            )
        })
        .collect();
    let (version, date) = version_and_date();
    // The footer shows source, date and NAME(1) on one 80-column line: a
    // short source and the date on its own keep them apart.
    // clap_mangen's synopsis names options without their values
    // (`[-s|--size]`); a usage of our own says `[-s|--size SIZE]`.
    let man = clap_mangen::Man::new(cmd.clone().override_usage(synopsis(&cmd)))
        .date(date)
        .source(version)
        .manual("User Commands");
    let mut buf = Vec::new();
    man.render_title(&mut buf)?;
    // No hyphenation: an option or a path broken with a hyphen reads as
    // another option or path.
    // Left-aligned: stretched spaces in option and path lists read badly.
    buf.extend_from_slice(b".nh\n.ad l\n");
    man.render_name_section(&mut buf)?;
    man.render_synopsis_section(&mut buf)?;
    man.render_description_section(&mut buf)?;
    let mut out = String::new();
    for para in &parts.prose {
        out.push_str(".PP\n");
        for l in para {
            out.push_str(&esc(l));
            out.push('\n');
        }
    }
    buf.extend_from_slice(out.as_bytes());
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut buf)?;
    }
    let top = path.first().map(String::as_str);
    let mut out = String::new();
    if !subs.is_empty() {
        out.push_str(".SH COMMANDS\n");
        for (n, about) in &subs {
            out.push_str(&format!(".TP\n.BR {} (1)\n{}\n", esc(n), esc(about)));
        }
    }
    out.push_str(".SH \"EXIT STATUS\"\n");
    if parts.exit.is_empty() {
        out.push_str(&format!("{}\n", esc(GENERAL_EXIT)));
    } else {
        for l in &parts.exit {
            out.push_str(&format!("{}\n", esc(l)));
        }
        // Unless the command passes on its child's status (run, shell).
        if !parts.exit.iter().any(|l| l.contains("128+N")) {
            out.push_str(&format!("{}\n", esc(INTERRUPTED_EXIT)));
        }
    }
    out.push_str(".SH ENVIRONMENT\n");
    definition_list(&mut out, ENVIRONMENT, top);
    out.push_str(".SH FILES\n");
    definition_list(&mut out, FILES, top);
    if !parts.examples.is_empty() {
        out.push_str(".SH EXAMPLES\n.RS 4\n.nf\n");
        for e in &parts.examples {
            // A trailing "# why" goes on the line above, as a shell comment,
            // and a long command breaks before its options: nothing runs
            // past 80 columns.
            let (cmd, why) = match e.split_once("  #") {
                Some((c, w)) => (c.trim(), Some(w.trim())),
                None => (e.as_str(), None),
            };
            if let Some(w) = why {
                out.push_str(&format!("# {}\n", esc(w)));
            }
            for l in crate::render::command_at("", cmd, EXAMPLE_WIDTH).lines() {
                for piece in break_shell_line(l, EXAMPLE_WIDTH) {
                    out.push_str(&format!("{}\n", esc(&piece)));
                }
            }
        }
        out.push_str(".fi\n.RE\n");
    }
    out.push_str(".SH \"SEE ALSO\"\n");
    out.push_str(&see_also(path, &subs));
    buf.extend_from_slice(out.as_bytes());
    Ok(buf)
}

/// One line: the command's name, then every option in the order --help
/// lists them, each with its value (`[--keep[=DIR]]` where the value is
/// optional), then the operands and the subcommand.
fn synopsis(cmd: &clap::Command) -> String {
    let mut line = cmd.get_bin_name().unwrap_or(cmd.get_name()).to_string();
    let mut operands = String::new();
    for a in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
        let value = || {
            a.get_value_names()
                .map(|v| v.join(" "))
                .unwrap_or_else(|| a.get_id().as_str().to_uppercase())
        };
        let takes = a.get_action().takes_values();
        let optional_value = a.get_num_args().is_some_and(|n| n.min_values() == 0);
        let many = a.get_num_args().is_some_and(|n| n.max_values() > 1)
            || matches!(a.get_action(), clap::ArgAction::Append);
        if a.is_positional() {
            let v = value();
            operands.push(' ');
            operands.push_str(&match (a.is_required_set(), many) {
                (true, true) => format!("{v}..."),
                (true, false) => v,
                (false, true) => format!("[{v}...]"),
                (false, false) => format!("[{v}]"),
            });
            continue;
        }
        let text = {
            let names = match (a.get_short(), a.get_long()) {
                (Some(s), Some(l)) => format!("-{s}|--{l}"),
                (Some(s), None) => format!("-{s}"),
                (None, Some(l)) => format!("--{l}"),
                (None, None) => continue,
            };
            let v = if !takes {
                String::new()
            } else if optional_value {
                format!("[={}]", value())
            } else {
                format!(" {}", value())
            };
            if a.is_required_set() {
                format!("{names}{v}")
            } else {
                format!("[{names}{v}]")
            }
        };
        line.push(' ');
        line.push_str(&text);
    }
    line.push_str(&operands);
    if cmd.has_subcommands() {
        line.push_str(" COMMAND");
    }
    line
}

fn see_also(path: &[String], subs: &[(String, String)]) -> String {
    let mut refs: Vec<String> = Vec::new();
    if !path.is_empty() {
        refs.push("tmpfsctl".into());
    }
    if path.len() > 1 {
        refs.push(format!("tmpfsctl-{}", path[..path.len() - 1].join("-")));
    }
    refs.extend(subs.iter().map(|(n, _)| n.clone()));
    let mut s: Vec<String> = refs.iter().map(|r| format!("{}(1)", esc(r))).collect();
    s.extend(
        ["tmpfs(5)", "mount(8)", "fstab(5)", "systemd.mount(5)"]
            .iter()
            .map(|r| r.to_string()),
    );
    format!("{}\n", s.join(", "))
}

/// A shell line longer than `width` broken at spaces outside quotes with
/// ` \` continuations (still one command when pasted), later pieces
/// indented by four.
fn break_shell_line(line: &str, width: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line.to_string();
    while rest.chars().count() > width {
        let mut quote: Option<char> = None;
        let mut cut = None;
        for (i, c) in rest.char_indices() {
            match (quote, c) {
                (None, '\'' | '"') => quote = Some(c),
                (Some(q), c) if c == q => quote = None,
                (None, ' ') if i > 4 && rest[..i].chars().count() + 2 <= width => cut = Some(i),
                _ => {}
            }
        }
        let Some(i) = cut else { break };
        out.push(format!("{} \\", rest[..i].trim_end()));
        rest = format!("    {}", rest[i..].trim_start());
    }
    out.push(rest);
    out
}

/// "tmpfsctl 0.2.0 (7e9925a)" and "2026-11-25" from the build's long
/// version "0.2.0 (7e9925a 2026-11-25)"; the date is empty outside git.
fn version_and_date() -> (String, String) {
    let long = env!("TMPFSCTL_LONG_VERSION");
    let inner = long
        .split_once('(')
        .map(|(_, r)| r.trim_end_matches(')'))
        .unwrap_or("");
    let mut words = inner.split_whitespace();
    let commit = words.next().unwrap_or("");
    let date = words.next().unwrap_or("").to_string();
    let v = env!("CARGO_PKG_VERSION");
    let source = if commit.is_empty() {
        format!("tmpfsctl {v}")
    } else {
        format!("tmpfsctl {v} ({commit})")
    };
    (source, date)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_text_splits_into_examples_exit_status_and_prose() {
        let p = split_help(
            "Examples:\n  tmpfsctl explain /tmp\n  tmpfsctl explain /x --json\n\n\
             Causes, in order: a, b.\n\
             Exit codes: 0 ok,\n1 binds, 2 error.\n\
             Sizes accept 512M.",
        );
        assert_eq!(
            p.examples,
            ["tmpfsctl explain /tmp", "tmpfsctl explain /x --json"]
        );
        assert_eq!(p.exit, ["Exit codes: 0 ok,", "1 binds, 2 error."]);
        assert_eq!(
            p.prose,
            [
                vec!["Causes, in order: a, b.".to_string()],
                vec!["Sizes accept 512M.".to_string()]
            ]
        );
    }

    #[test]
    fn long_example_lines_break_outside_quotes() {
        let l = "tmpfsctl completions zsh > /usr/local/share/zsh/site-functions/_tmpfsctl";
        let b = break_shell_line(l, 69);
        assert_eq!(
            b,
            [
                "tmpfsctl completions zsh > \\",
                "    /usr/local/share/zsh/site-functions/_tmpfsctl"
            ]
        );
        let q = "run -- sh -c 'a very long quoted script that must not be broken anywhere at all'";
        assert!(
            break_shell_line(q, 30)
                .iter()
                .all(|p| !p.contains("script \\")),
            "{:?}",
            break_shell_line(q, 30)
        );
    }

    #[test]
    fn roff_escapes_what_roff_would_read_as_markup() {
        assert_eq!(esc("--json"), "\\-\\-json");
        assert_eq!(esc(".hidden"), "\\&.hidden");
        assert_eq!(esc("a\\b 'q'"), "a\\eb \\(aqq\\(aq");
    }
}
