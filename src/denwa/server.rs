//! The DenwaRenji socket server an agent hosts (denwa/1).

use std::fs;
use std::io::ErrorKind;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::conn::{ServerLimits, Shared};
use super::discovery::{self, Announcement, MAX_SOCKET_PATH};
use super::error::DenwaError;
use super::protocol::{Hello, PROTOCOL};
use super::renji::DenwaRenji;

/// What a server needs to know about the agent it serves.
#[derive(Debug, Clone, Default)]
pub struct ServerConfig {
    /// The session directory (for a subagent too: the main session's
    /// directory; `denwa.json` then goes to `subagents/<agent_id>/`).
    pub session_dir: PathBuf,
    /// The session id, as in the directory name. Sanitised for the socket name.
    pub session_id: String,
    /// `None` for the main agent, `Some(agent_id)` for a subagent.
    pub agent: Option<String>,
    /// Reported by `hello`, e.g. `"worldline-demo 0.1.0"`.
    pub server_name: String,
    /// Stands in for `$XDG_RUNTIME_DIR` (the socket goes in
    /// `<runtime_dir>/worldline/`); `None` reads the environment.
    pub runtime_dir: Option<PathBuf>,
}

/// A running server. Serves on background threads until [`shutdown`] or drop,
/// both of which remove the socket and `denwa.json`.
///
/// [`shutdown`]: DenwaServer::shutdown
///
/// ```no_run
/// use std::sync::{Arc, Mutex};
/// use worldline::denwa::{DenwaRenji, DenwaServer, ServerConfig};
///
/// let renji = Arc::new(Mutex::new(DenwaRenji::new()));
/// let server = DenwaServer::start(
///     ServerConfig {
///         session_dir: "/path/to/session".into(),
///         session_id: "0a1b2c3d-0000-4000-8000-00000000abcd".into(),
///         agent: None,
///         server_name: "my-agent 0.1.0".into(),
///         runtime_dir: None,
///     },
///     Arc::clone(&renji),
/// )?;
/// // The agent loop, at every step:
/// renji.lock().unwrap().set_n_checkpoints(3);
/// // …and at the end of each step:
/// if let Some(dmail) = renji.lock().unwrap().fetch_pending_dmail() {
///     println!("revert to checkpoint {}: {}", dmail.checkpoint_id, dmail.message);
/// }
/// server.shutdown(); // or just drop it
/// # Ok::<(), worldline::denwa::DenwaError>(())
/// ```
pub struct DenwaServer {
    socket: PathBuf,
    announce: PathBuf,
    announcement: Announcement,
    renji: Arc<Mutex<DenwaRenji>>,
    running: Option<Running>,
}

struct Running {
    lock: super::lock::LockFile,
    wake: UnixStream,
    accept: JoinHandle<()>,
    /// The private directory used when the usual one was unusable.
    fallback: Option<tempfile::TempDir>,
}

impl DenwaServer {
    /// Binds the short socket path, writes `denwa.json` atomically, and serves
    /// on background threads. Fails with [`DenwaError::AlreadyRunning`] when a
    /// live server already has this session's socket; a stale socket file
    /// (nothing listening) is replaced.
    pub fn start(
        cfg: ServerConfig,
        renji: Arc<Mutex<DenwaRenji>>,
    ) -> Result<DenwaServer, DenwaError> {
        Self::start_with_limits(cfg, renji, ServerLimits::default())
    }

    /// [`DenwaServer::start`] with other bounds on idle and simultaneous
    /// connections.
    ///
    /// When the socket directory cannot be used (another user pre-created
    /// `/tmp/worldline-<uid>`, or it is a symlink or a file), the socket goes
    /// to a fresh private directory `worldline-<uid>-XXXXXX` next to it
    /// (in the runtime dir, else `$TMPDIR`), removed on shutdown; clients
    /// find it through `denwa.json` as always.
    pub fn start_with_limits(
        cfg: ServerConfig,
        renji: Arc<Mutex<DenwaRenji>>,
        limits: ServerLimits,
    ) -> Result<DenwaServer, DenwaError> {
        check_agent_id(&cfg)?;
        let runtime_dir = cfg.runtime_dir.clone().or_else(discovery::env_runtime_dir);
        let socket = discovery::socket_path_in(
            runtime_dir.as_deref(),
            &cfg.session_id,
            cfg.agent.as_deref(),
        );
        let mut socket = std::path::absolute(&socket).map_err(|e| DenwaError::io(&socket, e))?;
        let dir = socket.parent().unwrap_or(Path::new("/")).to_owned();
        let mut fallback = None;
        if let Err(refused) = discovery::ensure_socket_dir(&dir) {
            let base = runtime_dir.unwrap_or_else(std::env::temp_dir);
            let private = fallback_dir(&base).map_err(|e| DenwaError::Config {
                path: dir.clone(),
                detail: format!(
                    "{refused}; and no private fallback directory in {}: {e}",
                    base.display()
                ),
            })?;
            socket = private.path().join(socket.file_name().unwrap_or_default());
            // Without the shared directory's lock file, a second server is
            // only seen through the announcement.
            let announce_dir = discovery::announce_dir(&cfg.session_dir, cfg.agent.as_deref());
            if let Ok(c) = super::client::DenwaClient::connect_session(&announce_dir) {
                return Err(DenwaError::AlreadyRunning {
                    socket: c.socket_path().to_owned(),
                });
            }
            fallback = Some(private);
        }
        if socket.as_os_str().len() > MAX_SOCKET_PATH {
            return Err(DenwaError::Config {
                path: socket,
                detail: format!("socket path is longer than {MAX_SOCKET_PATH} bytes"),
            });
        }

        let lock_path = socket.with_extension("sock.lock");
        let Some(lock) = super::lock::LockFile::try_acquire(&lock_path)? else {
            return Err(DenwaError::AlreadyRunning { socket });
        };
        // From here on a failure drops `lock`, which removes the lock file.
        let listener = bind(&socket)?;

        let agent = cfg.agent.clone().unwrap_or_else(|| "main".into());
        let announcement = Announcement {
            protocol: PROTOCOL.into(),
            socket: socket.clone(),
            pid: i64::from(std::process::id()),
            agent: agent.clone(),
        };
        let announce_dir = discovery::announce_dir(&cfg.session_dir, cfg.agent.as_deref());
        if cfg.agent.is_some() && cfg.session_dir.is_dir() {
            // A subagent's directory may not exist yet when its agent starts.
            let _ = fs::create_dir_all(&announce_dir);
        }
        let announce = match discovery::write_announcement(&announce_dir, &announcement) {
            Ok(p) => p,
            Err(e) => {
                let _ = fs::remove_file(&socket);
                return Err(e);
            }
        };

        let shared = Arc::new(Shared {
            renji: Arc::clone(&renji),
            hello: Hello {
                protocol: PROTOCOL.into(),
                session: cfg.session_id.clone(),
                agent,
                server: cfg.server_name.clone(),
            },
            limits,
        });
        let (wake, wake_rx) = match UnixStream::pair() {
            Ok(p) => p,
            Err(e) => {
                let _ = fs::remove_file(&announce);
                let _ = fs::remove_file(&socket);
                return Err(DenwaError::io(&socket, e));
            }
        };
        let spawned = std::thread::Builder::new()
            .name("denwa-accept".into())
            .spawn(move || super::accept::accept_loop(listener, wake_rx, shared));
        let accept = match spawned {
            Ok(h) => h,
            Err(e) => {
                let _ = fs::remove_file(&announce);
                let _ = fs::remove_file(&socket);
                return Err(DenwaError::io(&socket, e));
            }
        };
        Ok(DenwaServer {
            socket,
            announce,
            announcement,
            renji,
            running: Some(Running {
                lock,
                wake,
                accept,
                fallback,
            }),
        })
    }

    /// The absolute path of the listening socket.
    pub fn socket_path(&self) -> &Path {
        &self.socket
    }

    /// The `denwa.json` this server wrote.
    pub fn announcement_path(&self) -> &Path {
        &self.announce
    }

    /// The DenwaRenji this server delivers to.
    pub fn renji(&self) -> &Arc<Mutex<DenwaRenji>> {
        &self.renji
    }

    /// Stops serving (open connections are closed), removes the socket and
    /// `denwa.json`. Dropping the server does the same.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        let Some(running) = self.running.take() else {
            return;
        };
        // Closing our end of the pair wakes the accept thread's poll.
        let _ = running.wake.shutdown(std::net::Shutdown::Both);
        let _ = running.accept.join();
        // Leave denwa.json alone if someone else has since announced there.
        if discovery::read_announcement(self.announce.parent().unwrap_or(Path::new(".")))
            .is_ok_and(|a| a == self.announcement)
        {
            let _ = fs::remove_file(&self.announce);
        }
        let _ = fs::remove_file(&self.socket);
        drop(running.lock);
        drop(running.fallback);
    }
}

impl Drop for DenwaServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A new directory only this user can enter (mode 0700, as `mkdtemp`).
fn fallback_dir(base: &Path) -> std::io::Result<tempfile::TempDir> {
    let uid = super::trust::my_uid();
    let d = tempfile::Builder::new()
        .prefix(&format!("worldline-{uid}-"))
        .tempdir_in(base)?;
    fs::set_permissions(d.path(), fs::Permissions::from_mode(0o700))?;
    Ok(d)
}

/// The agent id becomes a path component of `subagents/<agent_id>/`.
fn check_agent_id(cfg: &ServerConfig) -> Result<(), DenwaError> {
    if let Some(a) = &cfg.agent {
        if a.is_empty() || a == "." || a == ".." || a.contains(['/', '\0']) {
            return Err(DenwaError::Config {
                path: cfg.session_dir.clone(),
                detail: format!("invalid agent id {a:?}"),
            });
        }
    }
    Ok(())
}

/// Replaces a stale socket file, refuses a live one, binds, and sets 0600.
/// The caller holds the lock file, so no other worldline server races us.
fn bind(socket: &Path) -> Result<UnixListener, DenwaError> {
    match fs::symlink_metadata(socket) {
        Ok(m) if m.file_type().is_socket() => match UnixStream::connect(socket) {
            // A server that does not use the lock file (another implementation).
            Ok(_) => {
                return Err(DenwaError::AlreadyRunning {
                    socket: socket.to_owned(),
                })
            }
            Err(_) => match fs::remove_file(socket) {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => return Err(DenwaError::io(socket, e)),
            },
        },
        Ok(_) => {
            return Err(DenwaError::Config {
                path: socket.to_owned(),
                detail: "exists and is not a socket".into(),
            })
        }
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(DenwaError::io(socket, e)),
    }
    let listener = UnixListener::bind(socket).map_err(|e| match e.kind() {
        ErrorKind::AddrInUse => DenwaError::AlreadyRunning {
            socket: socket.to_owned(),
        },
        _ => DenwaError::io(socket, e),
    })?;
    // The directory is 0700 already, so the brief window before chmod is private.
    let setup = fs::set_permissions(socket, fs::Permissions::from_mode(0o600))
        .and_then(|()| listener.set_nonblocking(true));
    if let Err(e) = setup {
        let _ = fs::remove_file(socket);
        return Err(DenwaError::io(socket, e));
    }
    Ok(listener)
}
