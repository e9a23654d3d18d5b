//! The output flags every report shares: one flag per structured format,
//! flattened into each command's arguments where its `--json` stood. Each
//! command keeps its own help line for them ([`json_help`]: the schema
//! version it writes, what the flag replaces). A new structured format is a field
//! here and its line in `chosen`, beside the `Format` it names in
//! `command.rs`.

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

/// Set `--json`'s help line (and what it conflicts with) for one command:
/// `#[command(mut_args(json_help("…", &[])))]`. In place, not by
/// `mut_arg`, which moves the argument last: completions list arguments in
/// the order they were defined.
pub fn json_help(
    help: &'static str,
    conflicts: &'static [&'static str],
) -> impl FnMut(clap::Arg) -> clap::Arg {
    move |a| {
        if a.get_id() == "json" {
            a.help(help).conflicts_with_all(conflicts)
        } else {
            a
        }
    }
}
