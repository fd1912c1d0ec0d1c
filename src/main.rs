use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = worldline::cli::Cli::parse();
    match worldline::cli::run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("worldline: {err:#}");
            ExitCode::from(worldline::cli::exit_code_for(&err))
        }
    }
}
