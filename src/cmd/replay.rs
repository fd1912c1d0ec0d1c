//! `worldline replay`: a copy of a session written again at its own pace,
//! shown in the TUI (or only written, headless).

use worldline::replay::{self, ReplayOptions};
use worldline::sources::kimi_code::home::is_session_dir as is_kimi_code;
use worldline::sources::lookup::{resolve, Locator};

use super::args::ReplayArgs;

pub fn replay(a: &ReplayArgs) -> anyhow::Result<()> {
    let dir = resolve(a.session.as_deref(), &Locator::from_env())?;
    if is_kimi_code(&dir) {
        // Replay rewrites kimi-cli's files in kimi-cli's order; Kimi Code's
        // branches live inside one wire and have no such plan yet.
        return Err(worldline::Error::Usage(format!(
            "{}: a Kimi Code session; replay plays kimi-cli sessions only (open it with `worldline` or `worldline tree`)",
            worldline::text::sanitize_path(&dir)
        ))
        .into());
    }
    let opts = ReplayOptions {
        speed: a.speed,
        ..Default::default()
    };
    replay::run(&dir, a.dir.as_deref(), a.headless, a.poll, opts)
}
