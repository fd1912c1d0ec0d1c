//! A DenwaRenji server started in the test process, on its own runtime dir,
//! for the `worldline send` tests.

use std::sync::{Arc, Mutex};

use tempfile::TempDir;
use worldline::denwa::{DenwaRenji, DenwaServer, ServerConfig, ServerLimits};

/// A running server and what it serves; dropping it stops the server and
/// removes both directories.
pub struct Live {
    pub runtime: TempDir,
    pub session: TempDir,
    pub renji: Arc<Mutex<DenwaRenji>>,
    pub server: DenwaServer,
}

/// Serves session `sid` with `n_checkpoints` checkpoints as `server_name`,
/// its socket under `runtime`.
pub fn serve(
    sid: &str,
    n_checkpoints: i64,
    server_name: &str,
    limits: ServerLimits,
    runtime: TempDir,
) -> Live {
    let session = tempfile::tempdir().unwrap();
    let mut r = DenwaRenji::new();
    r.set_n_checkpoints(n_checkpoints);
    let renji = Arc::new(Mutex::new(r));
    let server = DenwaServer::start_with_limits(
        ServerConfig {
            session_dir: session.path().to_owned(),
            session_id: sid.into(),
            agent: None,
            server_name: server_name.into(),
            runtime_dir: Some(runtime.path().to_owned()),
        },
        Arc::clone(&renji),
        limits,
    )
    .unwrap();
    Live {
        runtime,
        session,
        renji,
        server,
    }
}
