use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = worldline::cli::Cli::parse();
    match worldline::cli::run(cli) {
        Ok(code) => code,
        Err(err) => {
            // Errors embed paths and file contents: never raw to the terminal.
            let text = worldline::text::sanitize_message(&format!("{err:#}"));
            eprintln!("worldline: {text}");
            ExitCode::from(worldline::cli::exit_code_for(&err))
        }
    }
}
