//! Helpers for the live unit tests.

use std::io::Write;
use std::path::Path;

/// Appends `text` to a file, creating it.
pub fn append(path: &Path, text: &str) {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
}
