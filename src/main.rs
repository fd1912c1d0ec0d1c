//! The `worldline` binary: parse the command line, run it, exit.

mod cmd;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    cmd::exit(cmd::run(cmd::Cli::parse()))
}
