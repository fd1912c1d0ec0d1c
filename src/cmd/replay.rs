//! `worldline replay`: a copy of a session written again at its own pace,
//! shown in the TUI (or only written, headless).

use worldline::replay::{self, ReplayOptions};
use worldline::sources::lookup::{resolve, Locator};

use super::args::ReplayArgs;

pub fn replay(a: &ReplayArgs) -> anyhow::Result<()> {
    let dir = resolve(a.session.as_deref(), &Locator::from_env())?;
    let opts = ReplayOptions {
        speed: a.speed,
        ..Default::default()
    };
    replay::run(&dir, a.dir.as_deref(), a.headless, a.poll, opts)
}
