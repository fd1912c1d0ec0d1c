//! worldline: reads kimi-cli agent sessions, rebuilds their divergence tree of
//! world lines, and shows it in a terminal UI. The library never sees the
//! command line: the binary's `cmd/` layer parses it and calls in with plain
//! options.
//!
//! Data flows one way: `sources` finds a session's files (each agent format
//! its own module) and, with `read`, indexes them into `model` records,
//! `worldline` builds the graph from those parts, `export` prints it and `ui`
//! draws it; `live` feeds new bytes back in; `denwa` talks to a live agent;
//! `kimi_writer` and `demo` write sessions the way kimi-cli does.

pub mod demo;
pub mod denwa;
pub mod error;
pub mod export;
pub mod kimi_writer;
pub mod live;
pub mod model;
pub mod read;
pub mod replay;
pub mod sources;
pub mod text;
pub mod ui;
pub mod worldline;

pub use error::{Error, Result};

/// Finding sessions of every agent (`sources::lookup`), under the name
/// callers used before `sources`.
pub use sources::lookup as session;
