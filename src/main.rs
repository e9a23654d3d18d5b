use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // Die quietly on a closed pipe (`tmpfsctl status | head`) like other Unix
    // tools, instead of panicking inside println!.
    // SAFETY: called before any thread exists; SIG_DFL is always a valid disposition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = match tmpfsctl::cli::Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand | ErrorKind::MissingSubcommand
            ) {
                // Bare `tmpfsctl`: the short help is the answer, not an error
                // message; still exit 2, since no command ran.
                use clap::CommandFactory;
                let _ = tmpfsctl::cli::Cli::command().write_help(&mut std::io::stderr());
                return tmpfsctl::ExitCode::Error.into();
            }
            if !e.use_stderr() {
                // --help and --version: their text on stdout, exit 0.
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            // One error style for clap's errors and ours: "tmpfsctl: error: …",
            // then clap's usage line and what to try.
            let text = e.render().to_string();
            let text = text.strip_prefix("error: ").unwrap_or(&text);
            tmpfsctl::error(text);
            return tmpfsctl::ExitCode::Error.into();
        }
    };
    match tmpfsctl::run(cli) {
        Ok(tmpfsctl::ExitCode::Interrupted) => tmpfsctl::exit_as_caught(),
        Ok(code) => code.into(),
        Err(e) => {
            tmpfsctl::error(&e);
            tmpfsctl::ExitCode::Error.into()
        }
    }
}
