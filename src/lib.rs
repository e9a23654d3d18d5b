//! tmpfsctl: answers questions about tmpfs (RAM-backed filesystems) honestly,
//! then acts on the answers. All behaviour lives in this library; `main.rs`
//! only parses arguments, calls [`run`] and maps the result to an exit code.

pub(crate) mod advise;
pub(crate) mod attrib;
pub(crate) mod bench;
pub mod cli;
pub(crate) mod command;
pub(crate) mod explain;
pub mod fleet;
#[cfg(test)]
mod floors;
pub(crate) mod mounts;
pub(crate) mod persist;
pub(crate) mod render;
pub(crate) mod status;
pub mod sys;
pub(crate) mod term;
#[cfg(test)]
pub(crate) mod test_support;
// The one skip helper, shared with tests/it and tests/boot.
#[cfg(test)]
#[path = "../tests/support/skip.rs"]
pub(crate) mod skip;
pub(crate) mod top;
pub(crate) mod units;
pub(crate) mod variants;
pub(crate) mod workspace;

use anyhow::Result;

use command::{Output, Report, Request};

pub use command::{ExitCode, error};
pub use sys::signals::exit_as_caught;

use command::Context;

/// Run one parsed command line; returns the exit code for success paths.
/// Run the command `cli` names. Every command leaves by this one door when
/// interrupted: whatever error it returns once Ctrl-C (or SIGTERM) was
/// caught, after its own cleanup, becomes [`ExitCode::Interrupted`] with the
/// command's last word on stderr.
pub fn run(cli: cli::Cli) -> Result<ExitCode> {
    match dispatch(cli) {
        Err(e) if sys::signals::is_interrupted(&e) => {
            command::say(&term::safe(&sys::signals::interrupted_message(&e)));
            Ok(ExitCode::Interrupted)
        }
        r => r,
    }
}

fn dispatch(cli: cli::Cli) -> Result<ExitCode> {
    render::color::init(cli.color);
    let ctx = Context {
        sysroot: match &cli.sysroot {
            Some(p) => {
                if !p.is_dir() {
                    anyhow::bail!(
                        "--sysroot {}: not a directory; give the root of a system tree (it must contain proc/ and etc/)",
                        p.display()
                    );
                }
                sys::Sysroot::new(p)
            }
            None => sys::Sysroot::live(),
        },
    };
    use cli::Command;
    match cli.command {
        Command::Status(a) => command(&ctx, a.output(), || Ok(a.query())),
        Command::Bench(a) => command(&ctx, a.output(), || a.request()),
        Command::Collect(a) => command(&ctx, a.output(), || a.request()),
        Command::Fleet(a) => match a.command {
            cli::fleet::FleetCommand::Analyze(a) => command(&ctx, a.output(), || Ok(a.request())),
        },
        Command::Plan(a) => command(&ctx, a.output(), || Ok(a.request())),
        Command::Apply(a) => command(&ctx, a.output(), || Ok(a.request())),
        Command::Revert(a) => command(&ctx, a.output(), || Ok(a.request())),
        Command::Run(a) => command(&ctx, a.scratch.output(), || a.request()),
        Command::Shell(a) => command(&ctx, a.scratch.output(), || Ok(a.request())),
        Command::Advise(a) => command(&ctx, a.output(), || Ok(a.request())),
        Command::Top(a) => command(&ctx, a.output(), || Ok(a.query())),
        Command::Explain(a) => command(&ctx, a.output(), || Ok(a.query())),
        Command::Persist(a) => command(&ctx, a.output(), || a.request()),
        Command::Completions(a) => cli::docs::completions(&a),
        Command::Man(a) => cli::docs::man(&a),
        Command::Help(a) => cli::docs::help(&a),
    }
}

/// Every command the same way: where its report goes is checked first (a
/// typo in a file name costs nothing), then its request is built and run,
/// then the report is written as the command line chose. A command that ran
/// a child for the user (`run`) keeps the child's exit status even when its
/// report cannot be written: the error is said, the status is the answer.
fn command<Q: Request>(
    ctx: &Context,
    output: Output,
    request: impl FnOnce() -> Result<Q>,
) -> Result<ExitCode> {
    output.check()?;
    let report = request()?.run(ctx)?;
    match (output.write(&report), report.exit_code()) {
        (Err(e), code @ ExitCode::Child(_)) => {
            command::error(&e);
            Ok(code)
        }
        (r, code) => r.map(|()| code),
    }
}
