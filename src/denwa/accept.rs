//! The accept loop: peer check, connection bound, thread per connection, and
//! an orderly stop that closes every open connection. Only the server's own
//! uid is served, so the connection bound is a per-uid cap; when it is
//! reached the connection idle longest is closed to make room, so idle
//! connections can never lock a real client out.

use std::collections::HashMap;
use std::io::{ErrorKind, Write};
use std::os::unix::io::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::conn::{self, Shared};
use super::protocol::error_reply;

/// Default bound on simultaneous connections (each costs a thread). Past it
/// the longest-idle connection is closed; only when every one is in the
/// middle of a request does a newcomer get a "busy" error.
pub const MAX_CONNECTIONS: usize = 128;

/// One open connection, as the accept loop sees it.
struct Entry {
    stream: UnixStream,
    activity: Arc<conn::Activity>,
}

/// Accepts until woken through `wake`, then closes every open connection and
/// waits for their threads.
pub(super) fn accept_loop(listener: UnixListener, wake: UnixStream, shared: Arc<Shared>) {
    // SAFETY: geteuid cannot fail.
    let my_uid = unsafe { libc::geteuid() };
    let open: Arc<Mutex<HashMap<u64, Entry>>> = Arc::default();
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
            if registry.len() >= shared.limits.max_connections && !evict_idlest(&mut registry) {
                drop(registry);
                refuse_busy(stream, shared.limits.max_connections);
                continue;
            }
            let Ok(handle) = stream.try_clone() else {
                continue;
            };
            next_id += 1;
            let id = next_id;
            let activity = Arc::new(conn::Activity::new());
            registry.insert(
                id,
                Entry {
                    stream: handle,
                    activity: Arc::clone(&activity),
                },
            );
            drop(registry);
            let (shared, open2) = (Arc::clone(&shared), Arc::clone(&open));
            let spawned = std::thread::Builder::new()
                .name("denwa-conn".into())
                .spawn(move || {
                    conn::serve(stream, &shared, &activity);
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
    for e in open.lock().unwrap_or_else(|e| e.into_inner()).values() {
        let _ = e.stream.shutdown(std::net::Shutdown::Both);
    }
    for t in threads {
        let _ = t.join();
    }
}

/// Closes the connection that has waited longest for a request (its thread
/// sees EOF and leaves the registry). False when every one is mid-request.
fn evict_idlest(registry: &mut HashMap<u64, Entry>) -> bool {
    let idlest = registry
        .iter()
        .filter_map(|(&id, e)| e.activity.idle_since().map(|t| (t, id)))
        .min();
    let Some((_, id)) = idlest else {
        return false;
    };
    if let Some(e) = registry.remove(&id) {
        let _ = e.stream.shutdown(std::net::Shutdown::Both);
    }
    true
}

fn refuse_busy(mut stream: UnixStream, max: usize) {
    let _ = stream.set_write_timeout(Some(Duration::from_millis(200)));
    let msg = format!("server busy: {max} connections, all in the middle of a request");
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
