//! tmpfsctl: answers questions about tmpfs (RAM-backed filesystems) honestly,
//! then acts on the answers. All behaviour lives in this library; `main.rs`
//! only parses arguments, calls [`run`] and maps the result to an exit code.

pub mod advise;
pub mod bench;
pub mod cli;
pub mod context;
pub mod explain;
pub mod fleet;
pub mod mounts;
pub mod persist;
pub mod render;
pub mod status;
pub mod sys;
pub mod top;
pub mod units;
pub mod workspace;

use anyhow::Result;

pub use context::{Context, ExitCode};

/// Run one parsed command line; returns the exit code for success paths.
/// Run the command `cli` names. Every command leaves by this one door when
/// interrupted: whatever error it returns once Ctrl-C (or SIGTERM) was
/// caught, after its own cleanup, becomes [`ExitCode::Interrupted`] with the
/// command's last word on stderr.
pub fn run(cli: cli::Cli) -> Result<ExitCode> {
    match dispatch(cli) {
        Err(e) if sys::signals::is_interrupted(&e) => {
            eprintln!(
                "tmpfsctl: {}",
                render::term::safe(&sys::signals::interrupted_message(&e))
            );
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
            None => sys::Sysroot::default(),
        },
    };
    use cli::Command;
    match cli.command {
        Command::Status(a) => status::run(&ctx, &a.query(), a.json),
        Command::Bench(a) => bench::run(&ctx, &a.request()?),
        Command::Collect(a) => fleet::collect_cmd(&ctx, &a.request()),
        Command::Fleet(a) => match a.command {
            cli::fleet::FleetCommand::Analyze(a) => fleet::analyze_cmd(&a.request()),
        },
        Command::Plan(a) => mounts::plan_cmd(&ctx, &a.request()),
        Command::Apply(a) => mounts::apply(&ctx, &a.request()),
        Command::Revert(a) => mounts::revert(&ctx, &a.request()),
        Command::Run(a) => workspace::run(&ctx, &a.request()?),
        Command::Shell(a) => workspace::run(&ctx, &a.request()),
        Command::Advise(a) => advise::run(&ctx, &a),
        Command::Top(a) => top::run(&ctx, &a.query()),
        Command::Explain(a) => explain::run(&ctx, &a.query()),
        Command::Persist(a) => a.run(&ctx),
        Command::Completions(a) => cli::docs::completions(&a),
        Command::Man(a) => cli::docs::man(&a),
        Command::Help(a) => cli::docs::help(&a),
    }
}
