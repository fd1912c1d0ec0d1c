//! Hostile peers and forged announcements: a `denwa.json` planted in a
//! session directory must receive nothing, a hostile server must not write
//! to the terminal, and idle clients must not lock a real one out. Every
//! server here lives in the test's own temp dirs.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::denwa::Live;
use serde_json::{json, Value};
use tempfile::TempDir;
use worldline::denwa::{is_live, DenwaClient, DenwaError, ServerLimits};

const SID: &str = "0a1b2c3d-0000-4000-8000-00000000abcd";

fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn private_dir(parent: &Path, name: &str) -> PathBuf {
    let d = parent.join(name);
    std::fs::create_dir(&d).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
    d
}

fn announce(session: &Path, socket: &Path, pid: i64) {
    let ann = json!({"protocol":"denwa/1","socket":socket,"pid":pid,"agent":"main"});
    std::fs::write(session.join("denwa.json"), ann.to_string()).unwrap();
}

fn my_pid() -> i64 {
    i64::from(std::process::id())
}

/// A scripted server on `socket`: answers each request line with
/// `reply(op)` (`None`: says nothing) and records every line it got.
struct Fake {
    got: Arc<Mutex<Vec<String>>>,
}

impl Fake {
    fn serve(socket: &Path, reply: fn(&str) -> Option<Value>) -> Fake {
        let listener = UnixListener::bind(socket).unwrap();
        let got: Arc<Mutex<Vec<String>>> = Arc::default();
        let g = Arc::clone(&got);
        std::thread::spawn(move || {
            for s in listener.incoming() {
                let Ok(s) = s else { return };
                let g = Arc::clone(&g);
                std::thread::spawn(move || {
                    let mut w = s.try_clone().unwrap();
                    for line in BufReader::new(s).lines() {
                        let Ok(line) = line else { return };
                        g.lock().unwrap().push(line.clone());
                        let v: Value = serde_json::from_str(&line).unwrap_or_default();
                        let op = v["op"].as_str().unwrap_or("").to_string();
                        match reply(&op) {
                            Some(mut r) => {
                                r["id"] = v["id"].clone();
                                let _ = w.write_all(format!("{r}\n").as_bytes());
                            }
                            None => std::thread::sleep(Duration::from_secs(60)),
                        }
                    }
                });
            }
        });
        Fake { got }
    }

    fn lines(&self) -> Vec<String> {
        self.got.lock().unwrap().clone()
    }
}

fn hello_v1(op: &str) -> Option<Value> {
    match op {
        "hello" => Some(
            json!({"ok":true,"protocol":"denwa/1","session":SID,"agent":"main","server":"fake 1"}),
        ),
        _ => Some(json!({"ok":true})),
    }
}

fn worldline(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = common::worldline()
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(text) = stdin {
        let mut i = child.stdin.take().unwrap();
        let text = text.to_owned();
        std::thread::spawn(move || {
            let _ = i.write_all(text.as_bytes());
        });
    }
    child.wait_with_output().unwrap()
}

/// No C0 (but newline and tab), DEL or C1 character.

#[test]
fn a_relative_socket_in_denwa_json_receives_nothing() {
    let t = tempfile::tempdir().unwrap();
    let session = t.path().join("session");
    std::fs::create_dir(&session).unwrap();
    let dir = private_dir(t.path(), "run");
    let fake = Fake::serve(&dir.join("s.sock"), hello_v1);
    // Relative to wherever the client runs: here, the private dir.
    announce(&session, Path::new("s.sock"), my_pid());
    let out = common::worldline()
        .args([
            "send",
            session.to_str().unwrap(),
            "--checkpoint",
            "0",
            "--message",
            "secret",
        ])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("relative"), "{err}");
    std::thread::sleep(Duration::from_millis(100));
    assert!(fake.lines().is_empty(), "{:?}", fake.lines());
}

#[test]
fn pid_1_and_dead_pids_are_not_live() {
    let t = tempfile::tempdir().unwrap();
    let dir = private_dir(t.path(), "run");
    let socket = dir.join("s.sock");
    let fake = Fake::serve(&socket, hello_v1);
    for pid in [1, 0, -1, i64::from(i32::MAX)] {
        announce(t.path(), &socket, pid);
        assert!(!is_live(t.path()), "pid {pid}");
        let e = DenwaClient::connect_session(t.path()).err().unwrap();
        assert!(e.is_not_live(), "pid {pid}: {e}");
    }
    assert!(fake.lines().is_empty());
}

#[test]
fn a_socket_in_a_shared_directory_receives_nothing() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("shared");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let socket = dir.join("s.sock");
    let fake = Fake::serve(&socket, hello_v1);
    announce(t.path(), &socket, my_pid());
    assert!(!is_live(t.path()));
    let e = DenwaClient::connect_session(t.path()).err().unwrap();
    assert!(matches!(e, DenwaError::Untrusted { .. }), "{e}");
    assert!(e.to_string().contains("not private"), "{e}");
    assert!(fake.lines().is_empty());
}

/// As root, a socket owned by someone else, and a socket of ours whose
/// server runs as someone else (SO_PEERCRED), in a private directory.
#[test]
fn another_users_socket_or_server_receives_nothing() {
    if !is_root() {
        eprintln!("skipped: needs root to play another user");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let dir = private_dir(t.path(), "run");
    let socket = dir.join("s.sock");
    let fake = Fake::serve(&socket, hello_v1);
    std::os::unix::fs::lchown(&socket, Some(65534), Some(65534)).unwrap();
    announce(t.path(), &socket, my_pid());
    let e = DenwaClient::connect_session(t.path()).err().unwrap();
    assert!(e.to_string().contains("belongs to uid 65534"), "{e}");
    assert!(fake.lines().is_empty());

    // A server run by uid 65534 behind a socket file that root then owns.
    let theirs = private_dir(t.path(), "theirs");
    std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
    let sock2 = theirs.join("x.sock");
    let log = t.path().join("got.txt");
    std::fs::write(&log, "").unwrap();
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o666)).unwrap();
    let script = format!(
        "import socket,os\ns=socket.socket(socket.AF_UNIX)\ns.bind({:?})\ns.listen(1)\nprint('up',flush=True)\nc,_=s.accept()\nc.settimeout(3)\ntry:\n  d=c.recv(100)\nexcept Exception:\n  d=b''\nopen({:?},'ab').write(d)\n",
        sock2.to_str().unwrap(),
        log.to_str().unwrap()
    );
    use std::os::unix::process::CommandExt;
    let mut child = Command::new("python3")
        .args(["-c", &script])
        .uid(65534)
        .gid(65534)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut up = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut up)
        .unwrap();
    assert_eq!(up.trim(), "up");
    std::os::unix::fs::lchown(&sock2, Some(0), Some(0)).unwrap();
    std::os::unix::fs::chown(&theirs, Some(0), Some(0)).unwrap();
    announce(t.path(), &sock2, my_pid());
    let e = DenwaClient::connect_session(t.path()).err().unwrap();
    assert!(e.to_string().contains("runs as uid 65534"), "{e}");
    let _ = child.wait();
    assert_eq!(std::fs::read(&log).unwrap(), b"", "the stranger got bytes");
}

#[test]
fn special_files_as_denwa_json_fail_fast() {
    let t = tempfile::tempdir().unwrap();
    let fifo = t.path().join("denwa.json");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let start = Instant::now();
    assert!(!is_live(t.path()));
    let e = DenwaClient::connect_session(t.path()).err().unwrap();
    assert!(e.to_string().contains("FIFO"), "{e}");
    std::fs::remove_file(&fifo).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &fifo).unwrap();
    let e = DenwaClient::connect_session(t.path()).err().unwrap();
    assert!(e.to_string().contains("character device"), "{e}");
    assert!(start.elapsed() < Duration::from_secs(1));
}

/// The TUI's send (`ui::compose::send`) says hello first, like `worldline
/// send`, and sends nothing to a server that is not denwa/1.
#[test]
fn the_tui_send_says_hello_and_refuses_another_protocol() {
    use worldline::ui::compose::{send, Reply, SendRequest};
    let t = tempfile::tempdir().unwrap();
    let dir = private_dir(t.path(), "run");
    let req = SendRequest {
        dir: t.path().to_owned(),
        back: worldline::ui::compose::Back::Checkpoint(0),
        session: t.path().to_owned(),
        tool: worldline::sources::Tool::KimiCli,
        message: "m".into(),
        lines_before: 1,
    };
    let good = Fake::serve(&dir.join("a.sock"), hello_v1);
    announce(t.path(), &dir.join("a.sock"), my_pid());
    assert_eq!(send(&req), Reply::Accepted);
    let ops: Vec<Value> = good
        .lines()
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(ops[0]["op"], "hello");
    assert_eq!(ops[1]["op"], "send_dmail");

    fn v2(op: &str) -> Option<Value> {
        (op == "hello").then(
            || json!({"ok":true,"protocol":"denwa/2","session":SID,"agent":"main","server":"x"}),
        )
    }
    let other = Fake::serve(&dir.join("b.sock"), v2);
    announce(t.path(), &dir.join("b.sock"), my_pid());
    match send(&req) {
        Reply::Failed(e) => assert!(e.contains("denwa/2"), "{e}"),
        r => panic!("{r:?}"),
    }
    assert_eq!(
        other.lines().len(),
        1,
        "only the hello: {:?}",
        other.lines()
    );
}

fn hostile(op: &str) -> Option<Value> {
    let evil = "\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m\u{7f}";
    match op {
        "hello" => Some(
            json!({"ok":true,"protocol":"denwa/1","session":format!("s{evil}"),"agent":"main","server":format!("x{evil}")}),
        ),
        "status" => Some(
            json!({"ok":true,"n_checkpoints":2,"pending":{"message":format!("a{evil}\nb\r{evil}"),"checkpoint_id":1}}),
        ),
        _ => Some(json!({"ok":false,"error":format!("no{evil}")})),
    }
}

#[test]
fn a_hostile_servers_strings_are_escaped() {
    let t = tempfile::tempdir().unwrap();
    let dir = private_dir(t.path(), "run");
    let _fake = Fake::serve(&dir.join("s.sock"), hostile);
    announce(t.path(), &dir.join("s.sock"), my_pid());
    let target = t.path().to_str().unwrap();
    let out = worldline(&["send", target, "--status"], None);
    assert_eq!(out.status.code(), Some(0));
    common::assert_no_raw_controls("status stdout", &out.stdout);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("␛]0;pwned␇"), "{text}");
    let out = worldline(
        &["send", target, "--checkpoint", "1", "--message", "m"],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    common::assert_no_raw_controls("refusal stderr", &out.stderr);
}

#[test]
fn negative_counts_from_a_server_are_refused() {
    fn neg(op: &str) -> Option<Value> {
        match op {
            "status" => Some(json!({"ok":true,"n_checkpoints":-5,"pending":null})),
            o => hello_v1(o),
        }
    }
    let t = tempfile::tempdir().unwrap();
    let dir = private_dir(t.path(), "run");
    let _fake = Fake::serve(&dir.join("s.sock"), neg);
    announce(t.path(), &dir.join("s.sock"), my_pid());
    let out = worldline(&["send", t.path().to_str().unwrap(), "--status"], None);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("negative n_checkpoints -5"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn a_silent_server_times_out_in_words() {
    fn silent(_: &str) -> Option<Value> {
        None
    }
    let t = tempfile::tempdir().unwrap();
    let dir = private_dir(t.path(), "run");
    let _fake = Fake::serve(&dir.join("s.sock"), silent);
    announce(t.path(), &dir.join("s.sock"), my_pid());
    let out = worldline(&["send", t.path().to_str().unwrap(), "--status"], None);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("timed out"), "{err}");
    assert!(!err.contains("temporarily unavailable"), "{err}");
}

fn live_with(limits: ServerLimits, runtime: TempDir) -> Live {
    common::denwa::serve(SID, 3, "test 0", limits, runtime)
}

#[test]
fn a_message_over_1_mib_names_the_limit() {
    let l = live_with(ServerLimits::default(), tempfile::tempdir().unwrap());
    let big = "x".repeat(1 << 20);
    let out = worldline(
        &[
            "send",
            l.session.path().to_str().unwrap(),
            "--checkpoint",
            "1",
        ],
        Some(&big),
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("1 MiB"), "{err}");
    assert!(!err.contains("Broken pipe"), "{err}");
    assert_eq!(l.renji.lock().unwrap().pending(), None);
}

#[test]
fn idle_connections_are_closed_after_the_idle_timeout() {
    let limits = ServerLimits {
        idle_timeout: Duration::from_millis(300),
        ..ServerLimits::default()
    };
    let l = live_with(limits, tempfile::tempdir().unwrap());
    let mut s = UnixStream::connect(l.server.socket_path()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let start = Instant::now();
    let mut buf = [0u8; 1];
    assert!(matches!(s.read(&mut buf), Ok(0) | Err(_)));
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn two_hundred_idle_connections_do_not_stop_a_real_send() {
    let l = live_with(ServerLimits::default(), tempfile::tempdir().unwrap());
    let idle: Vec<UnixStream> = (0..200)
        .map(|_| UnixStream::connect(l.server.socket_path()).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let start = Instant::now();
    let out = worldline(
        &[
            "send",
            l.session.path().to_str().unwrap(),
            "--checkpoint",
            "1",
            "--message",
            "real",
        ],
        None,
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(start.elapsed() < Duration::from_secs(5));
    assert_eq!(l.renji.lock().unwrap().pending().unwrap().message, "real");
    drop(idle);
}

/// Someone else made the runtime's `worldline/` (here: a symlink, and as
/// root a directory of uid 65534): the server moves to a private directory
/// of its own and clients still find it.
#[test]
fn a_hijacked_socket_directory_gets_a_private_fallback() {
    let runtime = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), runtime.path().join("worldline")).unwrap();
    let l = live_with(ServerLimits::default(), runtime);
    let sock = l.server.socket_path().to_owned();
    let dir = sock.parent().unwrap().to_owned();
    assert!(
        dir.file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("worldline-"),
        "{dir:?}"
    );
    assert!(!sock.starts_with(elsewhere.path()));
    let mut c = DenwaClient::connect_session(l.session.path()).unwrap();
    assert_eq!(c.status().unwrap().n_checkpoints, 3);
    drop(c);
    drop(l.server);
    assert!(!dir.exists(), "the fallback dir is removed on shutdown");

    if is_root() {
        let runtime = tempfile::tempdir().unwrap();
        let theirs = runtime.path().join("worldline");
        std::fs::create_dir(&theirs).unwrap();
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
        let l = live_with(ServerLimits::default(), runtime);
        assert!(!l.server.socket_path().starts_with(&theirs));
        assert!(DenwaClient::connect_session(l.session.path()).is_ok());
    }
}

/// A server that accepts nothing (a full listen backlog) or answers a
/// byte at a time: `send` gives up within its 10 s limit, in words.
#[test]
fn a_server_that_never_accepts_or_trickles_is_given_up_on() {
    use std::os::unix::io::AsRawFd;
    let t = tempfile::tempdir().unwrap();
    let dir = private_dir(t.path(), "run");
    let stuck = dir.join("stuck.sock");
    let listener = UnixListener::bind(&stuck).unwrap();
    // SAFETY: listen(2) again on our own socket, to shrink its backlog.
    assert_eq!(unsafe { libc::listen(listener.as_raw_fd(), 0) }, 0);
    // Backlog 0 holds one connection: after this one, a connect waits
    // for an accept that never comes.
    let held = std::os::unix::net::UnixStream::connect(&stuck).unwrap();
    let trickle = dir.join("trickle.sock");
    let tl = UnixListener::bind(&trickle).unwrap();
    std::thread::spawn(move || {
        for s in tl.incoming() {
            let Ok(mut s) = s else { return };
            std::thread::spawn(move || {
                let reply = br#"{"ok":true,"protocol":"denwa/1","session":"x","agent":"main","server":"slow"}"#;
                for b in reply.iter().cycle() {
                    if s.write_all(&[*b]).is_err() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(200));
                }
            });
        }
    });
    for sock in [&trickle, &stuck] {
        let t0 = Instant::now();
        let out = worldline(&["send", sock.to_str().unwrap(), "--status"], None);
        let took = t0.elapsed();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{sock:?}: {err}");
        assert!(err.contains("timed out"), "{sock:?}: {err}");
        assert!(took < Duration::from_secs(13), "{sock:?} took {took:?}");
    }
    drop(held);
}

/// `send < /dev/zero`: stdin is read up to the line limit, not to the end.
#[test]
fn a_message_from_an_endless_stdin_is_refused_at_the_limit() {
    let l = live_with(ServerLimits::default(), tempfile::tempdir().unwrap());
    let t0 = Instant::now();
    let out = common::worldline()
        .args([
            "send",
            l.session.path().to_str().unwrap(),
            "--checkpoint",
            "1",
        ])
        .stdin(std::fs::File::open("/dev/zero").unwrap())
        .output()
        .unwrap();
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("1 MiB") && err.contains("stdin"), "{err}");
    assert_eq!(l.renji.lock().unwrap().pending(), None);
}
