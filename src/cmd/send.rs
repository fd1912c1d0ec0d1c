//! `worldline send`: its own exit codes (0 accepted, 1 refused, 2 usage or
//! unreachable) come from `denwa::send_command`.

use std::process::ExitCode;

use worldline::denwa::{send_command, SendOptions};

use super::args::SendArgs;

pub fn send(a: &SendArgs) -> anyhow::Result<ExitCode> {
    let Some(target) = &a.target else {
        // `--status` alone: which sessions are live, and where.
        return super::live::live_status();
    };
    // An id names a session the way every other command finds it (a live
    // demo's too, registered outside every home).
    let target = match std::path::Path::new(target).exists() {
        true => target.clone(),
        false => worldline::sources::lookup::resolve(
            Some(target),
            &worldline::sources::lookup::Locator::from_env(),
        )
        .map_or_else(|_| target.clone(), |p| p.to_string_lossy().into_owned()),
    };
    send_command(&SendOptions {
        target,
        checkpoint: a.checkpoint,
        turns_back: a.turns_back,
        keep_turns: a.turn,
        load: a.load,
        message: a.message.clone(),
        status: a.status,
    })
}
