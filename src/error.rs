//! The library's error type. Every variant names the file (and line where
//! there is one) so a user can find what went wrong.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: no such file or directory")]
    NotFound { path: PathBuf },
    #[error("{path}: no context file (context.jsonl or context_N.jsonl) in this directory")]
    NoContextFile { path: PathBuf },
    #[error("{path}: not a session of any agent worldline reads ({known})")]
    UnknownFormat { path: PathBuf, known: String },
    #[error("no session matches {query:?}{hint}")]
    NoSession { query: String, hint: String },
    #[error("session id prefix {prefix:?} is ambiguous: {candidates}")]
    AmbiguousSession { prefix: String, candidates: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Other(String),
}

impl Error {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        let path = path.into();
        if source.kind() == std::io::ErrorKind::NotFound {
            Error::NotFound { path }
        } else {
            Error::Io { path, source }
        }
    }

    /// "Not found" and usage errors exit with 2, the rest with 1.
    pub fn is_not_found(&self) -> bool {
        matches!(
            self,
            Error::NotFound { .. }
                | Error::NoContextFile { .. }
                | Error::UnknownFormat { .. }
                | Error::NoSession { .. }
                | Error::AmbiguousSession { .. }
                | Error::Usage(_)
        )
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
