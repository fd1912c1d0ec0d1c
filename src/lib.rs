//! worldline: reads kimi-cli agent sessions, rebuilds their divergence tree of
//! world lines, and shows it in a terminal UI.
//!
//! Data flows one way: `session` finds the files, `read` indexes them into
//! `model` records, `worldline` builds the graph, `export` prints it and `ui`
//! draws it; `live` feeds new bytes back in; `denwa` talks to a live agent;
//! `kimi_writer` and `demo` write sessions the way kimi-cli does.

pub mod cli;
pub mod demo;
pub mod denwa;
pub mod error;
pub mod export;
pub mod kimi_writer;
pub mod live;
pub mod model;
pub mod read;
pub mod replay;
pub mod session;
pub mod sources;
pub mod text;
pub mod ui;
pub mod worldline;

pub use error::{Error, Result};
