//! The output flags every report shares: one flag per structured format,
//! flattened into each command's arguments where its `--json` stood. Each
//! command keeps its own help line for `--json` and what it conflicts with
//! ([`json_help`]: the schema version it writes, what the flag replaces).
//! A new structured format is a field here, its line in `chosen` and its
//! name in `FLAGS`, beside the `Format` it names in `command.rs`.

use crate::command::{Format, Output};

// A plain comment, not a doc comment: a doc comment on a flattened struct
// would become the about of every command that flattens it.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct Structured {
    /// Print a JSON document instead of text
    #[arg(long)]
    pub json: bool,
}

impl Structured {
    /// The flag given and the format it names, if one was.
    pub fn chosen(self) -> Option<(&'static str, Format)> {
        [(self.json, "--json", Format::JSON)]
            .into_iter()
            .find_map(|(given, flag, format)| given.then_some((flag, format)))
    }

    /// `out`, with stdout showing the format a flag chose.
    pub fn on(self, out: Output) -> Output {
        match self.chosen() {
            Some((flag, format)) => out.or_when(true, flag, format),
            None => out,
        }
    }

    /// Whether stdout is for a machine (a structured format was chosen).
    pub fn any(self) -> bool {
        self.chosen().is_some()
    }
}

/// The flags of [`Structured`], by clap id.
const FLAGS: &[&str] = &["json"];

/// Set `--json`'s help line for one command, and what every structured
/// flag conflicts with there: `#[command(mut_args(json_help("…", &[])))]`.
/// In place, not by `mut_arg`, which moves the argument last: completions
/// list arguments in the order they were defined.
pub fn json_help(
    help: &'static str,
    conflicts: &'static [&'static str],
) -> impl FnMut(clap::Arg) -> clap::Arg {
    move |a| {
        let a = if a.get_id() == "json" {
            a.help(help)
        } else {
            a
        };
        if FLAGS.contains(&a.get_id().as_str()) {
            a.conflicts_with_all(conflicts)
        } else {
            a
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_structured_flag_takes_stdout_and_says_which_it_was() {
        let none = Structured::default();
        assert_eq!(none.chosen(), None);
        assert!(!none.any());
        assert_eq!(none.on(Output::default()), Output::default());
        let json = Structured { json: true };
        assert_eq!(json.chosen(), Some(("--json", Format::JSON)));
        assert!(json.any());
        assert_eq!(
            json.on(Output::default()),
            Output::default().or_when(true, "--json", Format::JSON)
        );
    }

    #[test]
    fn every_structured_flag_is_in_flags() {
        use clap::{Args, Command};
        let cmd = Structured::augment_args(Command::new("t"));
        let ids: Vec<&str> = cmd.get_arguments().map(|a| a.get_id().as_str()).collect();
        assert_eq!(ids, FLAGS);
    }
}
