//! The DenwaRenji socket server an agent hosts (denwa/1).

use std::collections::HashMap;
use std::fs;
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::io::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::conn::{self, Shared};
use super::discovery::{self, Announcement, MAX_SOCKET_PATH};
use super::error::DenwaError;
use super::protocol::{error_reply, Hello, PROTOCOL};
use super::renji::DenwaRenji;

/// More simultaneous connections than this get a "busy" error and are closed:
/// each one costs a thread.
pub const MAX_CONNECTIONS: usize = 128;

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
        check_agent_id(&cfg)?;
        let runtime_dir = cfg.runtime_dir.clone().or_else(discovery::env_runtime_dir);
        let socket = discovery::socket_path_in(
            runtime_dir.as_deref(),
            &cfg.session_id,
            cfg.agent.as_deref(),
        );
        let socket = std::path::absolute(&socket).map_err(|e| DenwaError::io(&socket, e))?;
        if socket.as_os_str().len() > MAX_SOCKET_PATH {
            return Err(DenwaError::Config {
                path: socket,
                detail: format!("socket path is longer than {MAX_SOCKET_PATH} bytes"),
            });
        }
        let dir = socket.parent().unwrap_or(Path::new("/")).to_owned();
        discovery::ensure_socket_dir(&dir)?;

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
            .spawn(move || accept_loop(listener, wake_rx, shared));
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
            running: Some(Running { lock, wake, accept }),
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
    }
}

impl Drop for DenwaServer {
    fn drop(&mut self) {
        self.stop();
    }
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

/// Accepts until woken through `wake`, then closes every open connection and
/// waits for their threads.
fn accept_loop(listener: UnixListener, wake: UnixStream, shared: Arc<Shared>) {
    // SAFETY: geteuid cannot fail.
    let my_uid = unsafe { libc::geteuid() };
    let open: Arc<Mutex<HashMap<u64, UnixStream>>> = Arc::default();
    let mut threads: Vec<JoinHandle<()>> = Vec::new();
    let mut next_id: u64 = 0;
    while wait_readable(&listener, &wake) {
        threads.retain(|t| !t.is_finished());
        loop {
            let stream = match listener.accept() {
                Ok((s, _)) => s,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => {
                    // Out of descriptors or similar: back off instead of spinning.
                    std::thread::sleep(Duration::from_millis(50));
                    break;
                }
            };
            // Other users are closed at once, without a word.
            if conn::peer_uid(&stream).map_or(true, |uid| uid != my_uid) {
                continue;
            }
            if stream.set_nonblocking(false).is_err() {
                continue;
            }
            let mut registry = open.lock().unwrap_or_else(|e| e.into_inner());
            if registry.len() >= MAX_CONNECTIONS {
                drop(registry);
                refuse_busy(stream);
                continue;
            }
            let Ok(handle) = stream.try_clone() else {
                continue;
            };
            next_id += 1;
            let id = next_id;
            registry.insert(id, handle);
            drop(registry);
            let (shared, open2) = (Arc::clone(&shared), Arc::clone(&open));
            let spawned = std::thread::Builder::new()
                .name("denwa-conn".into())
                .spawn(move || {
                    conn::serve(stream, &shared);
                    open2.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
                });
            match spawned {
                Ok(t) => threads.push(t),
                Err(_) => {
                    open.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
                }
            }
        }
    }
    for s in open.lock().unwrap_or_else(|e| e.into_inner()).values() {
        let _ = s.shutdown(std::net::Shutdown::Both);
    }
    for t in threads {
        let _ = t.join();
    }
}

fn refuse_busy(mut stream: UnixStream) {
    let _ = stream.set_write_timeout(Some(Duration::from_millis(200)));
    let msg = format!("server busy: more than {MAX_CONNECTIONS} connections");
    let _ = stream.write_all(&error_reply(&msg, None));
}

/// Blocks until the listener has a connection (true) or `wake` is closed (false).
fn wait_readable(listener: &UnixListener, wake: &UnixStream) -> bool {
    let mut fds = [
        libc::pollfd {
            fd: listener.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: wake.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    loop {
        // SAFETY: `fds` is a valid array of two pollfd for the call's duration.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if r < 0 {
            if std::io::Error::last_os_error().kind() == ErrorKind::Interrupted {
                continue;
            }
            return false;
        }
        if fds[1].revents != 0 {
            return false;
        }
        if fds[0].revents != 0 {
            return true;
        }
    }
}
