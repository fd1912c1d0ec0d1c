//! `worldline [view]` and `worldline demo`: the TUI, and the demo agent.

use worldline::demo::{self, DemoOptions};
use worldline::ui::{self, ViewOptions};

use super::args::{DemoArgs, ViewArgs};

pub fn view(a: &ViewArgs) -> anyhow::Result<()> {
    ui::run(&ViewOptions {
        session: a.session.clone(),
        pick: a.pick,
        follow: a.follow,
        poll: a.poll,
    })
}

pub fn demo(a: &DemoArgs) -> anyhow::Result<()> {
    demo::run(&DemoOptions {
        dir: a.dir.clone(),
        headless: a.headless,
        speed: a.speed,
    })
}
