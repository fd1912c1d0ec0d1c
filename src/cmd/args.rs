//! The command line as clap sees it. Each command converts its arguments
//! into the plain options of the library entry point it calls.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "worldline",
    version,
    about = "See an AI coding agent's run as a branching timeline of world lines",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub view: ViewArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Open the TUI on a session (the default command)
    View(ViewArgs),
    /// Print a session's divergence tree
    Tree(TreeArgs),
    /// List sessions
    List(ListArgs),
    /// Stream a session's world lines and records as they appear
    Watch(WatchArgs),
    /// Send a D-Mail to a live session (kimi-cli: its DenwaRenji socket; Kimi Code: its server)
    Send(SendArgs),
    /// Run a simulated agent that writes a live session, and watch it
    Demo(DemoArgs),
    /// Play a finished session into the TUI as if it were live
    Replay(ReplayArgs),
}

#[derive(Debug, Clone, Default, Args)]
pub struct ViewArgs {
    /// Session directory, context file, session id or id prefix (default: newest session of this directory)
    pub session: Option<String>,
    /// Choose the session from a list
    #[arg(long)]
    pub pick: bool,
    /// Keep the newest record in view as the session grows
    #[arg(long)]
    pub follow: bool,
    /// Poll the files instead of using native file notifications
    #[arg(long)]
    pub poll: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum TreeFormat {
    #[default]
    Text,
    Json,
    Dot,
    Mermaid,
    /// One self-contained page: the map, then every world line's conversation
    Html,
    /// The world-line map as a picture
    Svg,
}

#[derive(Debug, Clone, Args)]
pub struct TreeArgs {
    /// Session directory, context file, session id or id prefix
    pub session: Option<String>,
    #[arg(long, value_enum, default_value_t = TreeFormat::Text)]
    pub format: TreeFormat,
}

#[derive(Debug, Clone, Args)]
pub struct ListArgs {
    /// All sessions, not only those of the current directory
    #[arg(long)]
    pub all: bool,
    /// One JSON array on stdout
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct WatchArgs {
    /// Session directory, context file, session id or id prefix
    pub session: Option<String>,
    /// One JSON object per line (the only output format)
    #[arg(long)]
    pub json: bool,
    /// Poll the files instead of using native file notifications
    #[arg(long)]
    pub poll: bool,
}

#[derive(Debug, Clone, Args)]
pub struct SendArgs {
    /// Session directory (or id), or the path of a denwa socket; with
    /// --status and no session, every live session of yours is listed
    #[arg(required_unless_present = "status")]
    pub target: Option<String>,
    /// kimi-cli: the checkpoint id to send the D-Mail back to
    #[arg(long, conflicts_with_all = ["turns_back", "turn"])]
    pub checkpoint: Option<i64>,
    /// Kimi Code: go back N turns (a running turn counts as one)
    #[arg(long, value_name = "N", conflicts_with = "turn")]
    pub turns_back: Option<u32>,
    /// Kimi Code: keep turns 1..=K of the current world line, undo the rest
    #[arg(long, value_name = "K")]
    pub turn: Option<u32>,
    /// Kimi Code: let a running server load a session no server has loaded
    /// (only when no Kimi Code TUI has it open: two writers corrupt it)
    #[arg(long)]
    pub load: bool,
    /// The D-Mail text (read from stdin when absent)
    #[arg(long, conflicts_with = "status")]
    pub message: Option<String>,
    /// Show how far back a D-Mail can go (and kimi-cli's pending D-Mail) instead of sending
    #[arg(long)]
    pub status: bool,
}

#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// Write the demo session here instead of a fresh temporary directory
    /// (either way it is kept, and its path printed on exit)
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Run only the agent until its story ends; print the session directory
    /// on the first line
    #[arg(long)]
    pub headless: bool,
    /// Pace multiplier. At the default, 2, the story takes about 2½ minutes
    /// and the first D-Mail branch comes within the first minute.
    #[arg(long, default_value_t = 2.0)]
    pub speed: f64,
}

#[derive(Debug, Clone, Args)]
pub struct ReplayArgs {
    /// Session directory, context file, session id or id prefix
    pub session: Option<String>,
    /// Speed-up over the session's own pace (its wire.jsonl times; without
    /// them one record every 0.4 s at 1). Waits are capped at 2 s.
    #[arg(long, default_value_t = 1.0)]
    pub speed: f64,
    /// Write the replayed copy here (an empty or new directory) instead of a
    /// temporary one (removed when the TUI closes; kept when --headless)
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Only write the copy, and keep it; print its directory on the first line
    #[arg(long)]
    pub headless: bool,
    /// Poll the files instead of using native file notifications
    #[arg(long)]
    pub poll: bool,
}
