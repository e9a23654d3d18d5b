//! Text from input or the system (host names, paths, mount names, excerpts of
//! files in errors) made safe to print on a terminal: control characters are
//! shown as visible escapes (`\x1b`, `\n`, `\t`, `\u{9b}`), so a hostile name
//! cannot move the cursor, set the window title or hide a line. JSON output
//! keeps the exact text; only human output goes through here.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::path::Path;

/// `s` with every control character (C0, DEL, C1) and the bidirectional
/// overrides (which reorder what the reader sees) shown as escape sequences.
pub fn safe(s: &str) -> Cow<'_, str> {
    if !s.chars().any(needs_escape) {
        return Cow::Borrowed(s);
    }
    let mut o = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => o.push_str("\\n"),
            '\t' => o.push_str("\\t"),
            '\r' => o.push_str("\\r"),
            c if (c as u32) < 0x80 && c.is_control() => {
                let _ = write!(o, "\\x{:02x}", c as u32);
            }
            c if needs_escape(c) => {
                let _ = write!(o, "\\u{{{:x}}}", c as u32);
            }
            c => o.push(c),
        }
    }
    Cow::Owned(o)
}

/// A path for human output: lossy UTF-8, then [`safe`].
pub fn safe_path(p: &Path) -> String {
    safe(&p.to_string_lossy()).into_owned()
}

/// One shell word for a command the user may paste: plain when it has only
/// characters no shell treats specially, else single-quoted. A word with
/// control characters (or invalid UTF-8) becomes `$'…'` with `\xNN` escapes
/// (bash, zsh, ksh; not dash): pasting it names the same bytes, and nothing
/// raw reaches the terminal.
pub fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+,:=@%".contains(&b))
    {
        return s.to_string();
    }
    if !s.chars().any(needs_escape) {
        return format!("'{}'", s.replace('\'', "'\\''"));
    }
    let mut o = String::from("$'");
    for c in s.chars() {
        match c {
            '\'' | '\\' => {
                o.push('\\');
                o.push(c);
            }
            c if needs_escape(c) => {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    let _ = write!(o, "\\x{b:02x}");
                }
            }
            c => o.push(c),
        }
    }
    o.push('\'');
    o
}

/// [`shell_word`] for a path.
pub fn shell_path(p: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    match std::str::from_utf8(p.as_os_str().as_bytes()) {
        Ok(s) => shell_word(s),
        Err(_) => {
            let mut o = String::from("$'");
            for &b in p.as_os_str().as_bytes() {
                if b.is_ascii_graphic() && b != b'\'' && b != b'\\' || b == b' ' {
                    o.push(b as char);
                } else {
                    let _ = write!(o, "\\x{b:02x}");
                }
            }
            o.push('\'');
            o
        }
    }
}

/// At most `max` bytes of `bytes` (cut at a character boundary), lossy UTF-8,
/// made [`safe`], with "…" when cut: for quoting a bad input line in an error.
pub fn excerpt(bytes: &[u8], max: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut o = safe(&text[..end]).into_owned();
    if end < text.len() {
        o.push('…');
    }
    o
}

fn needs_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_paste_as_the_same_bytes() {
        assert_eq!(shell_word("/tmp/x-1.d"), "/tmp/x-1.d");
        assert_eq!(shell_word("a b$c"), "'a b$c'");
        assert_eq!(shell_word("it's"), "'it'\\''s'");
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_word("a\nb\x1b"), "$'a\\x0ab\\x1b'");
        assert_eq!(shell_word("q'\n"), "$'q\\'\\x0a'");
    }

    #[test]
    fn control_characters_are_shown_not_obeyed() {
        assert_eq!(safe("web1"), "web1");
        assert!(matches!(safe("web1"), Cow::Borrowed(_)));
        assert_eq!(safe("a\x1b]0;pwned\x07b"), "a\\x1b]0;pwned\\x07b");
        assert_eq!(safe("line\nnext\ttab\r"), "line\\nnext\\ttab\\r");
        assert_eq!(safe("\u{9b}31m"), "\\u{9b}31m");
        assert_eq!(safe("\x7f"), "\\x7f");
        assert_eq!(safe("a\u{202e}b"), "a\\u{202e}b");
        assert_eq!(safe("héllo ✓"), "héllo ✓");
    }

    #[test]
    fn excerpts_are_short_safe_and_marked_when_cut() {
        let garbage: Vec<u8> = (0u8..=255).cycle().take(600).collect();
        let e = excerpt(&garbage, 40);
        assert!(!e.chars().any(|c| c.is_control()), "{e:?}");
        assert!(e.ends_with('…'));
        assert_eq!(excerpt(b"ok", 40), "ok");
        assert_eq!(excerpt("ééé".as_bytes(), 3), "é…");
    }
}
