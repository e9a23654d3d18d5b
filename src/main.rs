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
            let code = if e.use_stderr() {
                tmpfsctl::ExitCode::Error.code()
            } else {
                0
            };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    match tmpfsctl::run(cli) {
        Ok(code) => code.into(),
        Err(e) => {
            eprintln!("tmpfsctl: error: {e:#}");
            tmpfsctl::ExitCode::Error.into()
        }
    }
}
