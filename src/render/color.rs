//! Colour, ripgrep-style: `--color auto|always|never`; auto means "on a
//! terminal, unless NO_COLOR is set" (https://no-color.org). Colour goes only
//! where it earns its place: verdicts, yes/NO fits, warnings, ratios. Piped
//! output never carries escape codes unless asked with `always`.

use std::sync::atomic::{AtomicU8, Ordering};

use anstyle::{AnsiColor, Style};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

crate::variants::all_variants!(ColorChoice, [Auto, Always, Never]);

/// Bit 0: colour on stdout; bit 1: colour on stderr. Set once by [`init`].
static ENABLED: AtomicU8 = AtomicU8::new(0);

/// Decide once, at start-up, from the flag, NO_COLOR and the terminals.
pub fn init(choice: ColorChoice) {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let on = |tty: bool| match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            tty && !no_color && std::env::var_os("TERM").is_none_or(|t| t != "dumb")
        }
    };
    let bits = u8::from(on(super::stdout_is_tty())) | (u8::from(on(super::stderr_is_tty())) << 1);
    ENABLED.store(bits, Ordering::Relaxed);
}

/// What a piece of text means, and so its colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    /// A good outcome: fits, faster, nothing to change.
    Good,
    /// A bad outcome: does not fit, slower, an error.
    Bad,
    /// Worth a look: warnings, uncertain figures.
    Warn,
    /// The answer itself: a verdict, a heading.
    Strong,
    /// Less important detail.
    Dim,
}

fn style(t: Tone) -> Style {
    match t {
        Tone::Good => AnsiColor::Green.on_default(),
        Tone::Bad => AnsiColor::Red.on_default().bold(),
        Tone::Warn => AnsiColor::Yellow.on_default(),
        Tone::Strong => Style::new().bold(),
        Tone::Dim => Style::new().dimmed(),
    }
}

fn wrap(on: bool, t: Tone, text: &str) -> String {
    if on && !text.is_empty() {
        let s = style(t);
        format!("{}{text}{}", s.render(), s.render_reset())
    } else {
        text.to_string()
    }
}

/// `text` coloured for standard output (unchanged when colour is off).
pub fn paint(t: Tone, text: &str) -> String {
    wrap(ENABLED.load(Ordering::Relaxed) & 1 != 0, t, text)
}

/// `text` coloured for standard error (unchanged when colour is off).
pub fn paint_err(t: Tone, text: &str) -> String {
    wrap(ENABLED.load(Ordering::Relaxed) & 2 != 0, t, text)
}

/// The heading over a command's warnings, the same on every command.
pub fn warnings_heading() -> String {
    paint(Tone::Warn, "Warnings")
}

/// One warning as a line of a report: "[code] message", the code in the
/// warning colour. `message` must already be safe for a terminal.
pub fn warning_line(code: &str, message: &str) -> String {
    format!("{} {message}", paint(Tone::Warn, &format!("[{code}]")))
}

/// A tmpfs this full (use% or inodes, strictly above) gets status's
/// `tmpfs_nearly_full` warning, which points at `top` and `explain`, and is
/// painted yellow: at 90% a 16 MiB scratch has 1.6 MiB left, one more build
/// artefact. One threshold, here below both, so the colour and the warning
/// never disagree.
pub const NEARLY_FULL_PERCENT: f64 = 90.0;

/// How full a mount is, as a colour: red when it shows as 100% (writers
/// already get ENOSPC), yellow when nearly full (above the threshold of
/// status's `tmpfs_nearly_full` warning), none otherwise. status
/// and top colour their use% and inode cells with it.
pub fn fullness(percent: f64) -> Option<Tone> {
    if percent >= 99.5 {
        Some(Tone::Bad)
    } else if percent > NEARLY_FULL_PERCENT {
        Some(Tone::Warn)
    } else {
        None
    }
}

/// `text` (a use% or inode cell) coloured by [`fullness`].
pub fn paint_fullness(percent: Option<f64>, text: &str) -> String {
    match percent.and_then(fullness) {
        Some(t) => paint(t, text),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_adds_codes_only_when_on() {
        assert_eq!(wrap(false, Tone::Bad, "NO"), "NO");
        let on = wrap(true, Tone::Bad, "NO");
        assert!(
            on.starts_with('\x1b') && on.contains("NO") && on.ends_with("\x1b[0m"),
            "{on:?}"
        );
        assert_eq!(wrap(true, Tone::Good, ""), "");
    }

    #[test]
    fn a_full_mount_is_red_and_a_nearly_full_one_yellow() {
        assert_eq!(fullness(100.0), Some(Tone::Bad));
        assert_eq!(fullness(99.6), Some(Tone::Bad));
        assert_eq!(fullness(95.0), Some(Tone::Warn));
        assert_eq!(fullness(90.0), None);
        assert_eq!(fullness(0.0), None);
    }
}
