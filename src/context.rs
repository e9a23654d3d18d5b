//! What every command gets besides its own request, and how it ends.
//!
//! This module sits below every capability: capabilities import it, never the
//! crate root, so data and imports flow one way (cli -> capability -> sys).

use crate::sys::Sysroot;

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

#[cfg(test)]
mod tests {
    use super::ExitCode;

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
}
