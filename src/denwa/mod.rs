//! D-Mail delivery: DenwaRenji's rules, the denwa/1 socket protocol, its server
//! (inside an agent) and its client (TUI and `worldline send`).
//! See docs/denwa-protocol.md.

mod accept;
mod client;
mod conn;
mod discovery;
mod error;
pub mod live_list;
mod lock;
pub mod protocol;
pub mod renji;
pub mod route;
mod send;
mod server;
mod trust;

pub use accept::MAX_CONNECTIONS;
pub use client::DenwaClient;
pub use conn::{ServerLimits, IDLE_TIMEOUT};
pub use discovery::{
    env_runtime_dir, is_live, read_announcement, safe_name, socket_dir, socket_path_for,
    socket_path_in, Announcement, DENWA_JSON,
};
pub use error::DenwaError;
pub use live_list::{live_sessions, live_text, LiveSession};
pub use protocol::{Hello, Status, MAX_LINE, PROTOCOL};
pub use renji::{DMail, DenwaRenji, DenwaRenjiError};
pub use route::{Back, DMailRoute, TurnsError, TurnsSent, TurnsStatus};
pub use send::{resolve_target, send_command, status_text, SendOptions};
pub use server::{DenwaServer, ServerConfig};
