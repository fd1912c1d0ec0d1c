//! The command layer: the only code that sees clap, stdout and exit codes.
//! Each subcommand converts its arguments into a library call with plain
//! options and prints what comes back under one output policy: a closed
//! stdout (`| head`) ends the command quietly with exit 0.

pub mod args;
mod compare;
mod list;
mod live;
mod out;
mod replay;
mod send;
mod tree;
mod view;
mod watch;

use std::process::ExitCode;

pub use args::Cli;
use args::Command;
pub use out::Closed;

/// Runs a parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let done = |r: anyhow::Result<()>| r.map(|()| ExitCode::SUCCESS);
    match cli.command {
        None => done(view::view(&cli.view)),
        Some(Command::View(a)) => done(view::view(&a)),
        Some(Command::Tree(a)) => done(tree::tree(&a)),
        Some(Command::List(a)) => done(list::list(&a)),
        Some(Command::Watch(a)) => done(watch::watch(&a)),
        Some(Command::Send(a)) => send::send(&a),
        Some(Command::Demo(a)) => done(view::demo(&a)),
        Some(Command::Replay(a)) => done(replay::replay(&a)),
        Some(Command::Compare(a)) => done(compare::compare(&a)),
    }
}

/// The exit code for how a command ended: a closed stdout is success, 2 for
/// "not found" and usage errors, 1 for everything else.
pub fn exit(result: anyhow::Result<ExitCode>) -> ExitCode {
    match result {
        Ok(code) => code,
        Err(e) if e.downcast_ref::<Closed>().is_some() => ExitCode::SUCCESS,
        // A library entry point that printed a line itself (`demo` and
        // `replay` print their directory when headless) hit a closed stdout.
        Err(e)
            if e.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe) =>
        {
            ExitCode::SUCCESS
        }
        Err(err) => {
            // Errors embed paths and file contents: never raw to the terminal.
            let text = worldline::text::sanitize_message(&format!("{err:#}"));
            eprintln!("worldline: {text}");
            ExitCode::from(exit_code_for(&err))
        }
    }
}

fn exit_code_for(err: &anyhow::Error) -> u8 {
    match err.downcast_ref::<worldline::Error>() {
        Some(e) if e.is_not_found() => 2,
        _ => 1,
    }
}
