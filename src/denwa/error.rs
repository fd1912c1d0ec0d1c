//! Errors of the denwa socket layer. Every message names the path involved so
//! the user can find the session, socket or file that went wrong.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum DenwaError {
    /// No `denwa.json`, a dead pid, or nothing listening on the socket.
    #[error("not live: no DenwaRenji socket for this session ({})", path.display())]
    NotLive { path: PathBuf },
    /// Another server already serves this session's socket.
    #[error("a DenwaRenji server is already running for this session ({})", socket.display())]
    AlreadyRunning { socket: PathBuf },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The peer sent something that is not denwa/1 (or `denwa.json` is malformed).
    #[error("{}: protocol error: {detail}", path.display())]
    Protocol { path: PathBuf, detail: String },
    /// The server answered a request with `{"ok":false,"error":…}`.
    #[error("{}: server error: {message}", path.display())]
    Server { path: PathBuf, message: String },
    /// A socket (or the `denwa.json` naming it) that fails a trust check:
    /// not absolute, not owned by this user, not in a private directory,
    /// or a peer running as another user. Nothing was sent to it.
    #[error("{}: not trusted, nothing sent: {detail}", path.display())]
    Untrusted { path: PathBuf, detail: String },
    /// The server did not answer (or take the request) in time.
    #[error("{}: timed out: the server did not answer within {secs} s", path.display())]
    Timeout { path: PathBuf, secs: u64 },
    /// A request longer than the protocol's line limit; it was not sent.
    #[error("{}: the request is {len} bytes; denwa/1 allows at most {max} bytes (1 MiB) a line, so it was not sent", path.display())]
    TooLarge {
        path: PathBuf,
        len: usize,
        max: usize,
    },
    /// A `ServerConfig` that cannot be served (bad agent id, unsafe socket dir…).
    #[error("{}: {detail}", path.display())]
    Config { path: PathBuf, detail: String },
}

impl DenwaError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        DenwaError::Io {
            path: path.into(),
            source,
        }
    }

    /// True when the session simply has no live DenwaRenji.
    pub fn is_not_live(&self) -> bool {
        matches!(self, DenwaError::NotLive { .. })
    }
}
