//! `worldline send`: its own exit codes (0 accepted, 1 refused, 2 usage or
//! unreachable) come from `denwa::send_command`.

use std::process::ExitCode;

use worldline::denwa::{send_command, SendOptions};

use super::args::SendArgs;

pub fn send(a: &SendArgs) -> anyhow::Result<ExitCode> {
    send_command(&SendOptions {
        target: a.target.clone(),
        checkpoint: a.checkpoint,
        turns_back: a.turns_back,
        keep_turns: a.turn,
        load: a.load,
        message: a.message.clone(),
        status: a.status,
    })
}
