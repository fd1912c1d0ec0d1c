//! denwa/1 over a real socket: every request and reply, the error paths, and
//! the server's lifecycle rules. Each test has its own runtime and session dir.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tempfile::TempDir;
use worldline::denwa::{
    is_live, read_announcement, socket_path_in, DMail, DenwaClient, DenwaError, DenwaRenji,
    DenwaServer, ServerConfig, MAX_LINE,
};

const SID: &str = "0a1b2c3d-0000-4000-8000-00000000abcd";

struct Fixture {
    runtime: TempDir,
    session: TempDir,
    renji: Arc<Mutex<DenwaRenji>>,
}

impl Fixture {
    fn new(n_checkpoints: i64) -> Fixture {
        let mut r = DenwaRenji::new();
        r.set_n_checkpoints(n_checkpoints);
        Fixture {
            runtime: tempfile::tempdir().unwrap(),
            session: tempfile::tempdir().unwrap(),
            renji: Arc::new(Mutex::new(r)),
        }
    }

    fn config(&self) -> ServerConfig {
        ServerConfig {
            session_dir: self.session.path().to_owned(),
            session_id: SID.into(),
            agent: None,
            server_name: "test-agent 0.0.1".into(),
            runtime_dir: Some(self.runtime.path().to_owned()),
        }
    }

    fn start(&self) -> DenwaServer {
        DenwaServer::start(self.config(), Arc::clone(&self.renji)).unwrap()
    }
}

/// A raw line-level connection, to test exactly what goes over the wire.
struct Raw {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl Raw {
    fn connect(socket: &Path) -> Raw {
        let s = UnixStream::connect(socket).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Raw {
            reader: BufReader::new(s.try_clone().unwrap()),
            writer: s,
        }
    }

    fn send(&mut self, line: &str) {
        self.writer.write_all(line.as_bytes()).unwrap();
        self.writer.write_all(b"\n").unwrap();
    }

    fn reply(&mut self) -> Value {
        let mut line = String::new();
        let n = self.reader.read_line(&mut line).unwrap();
        assert!(n > 0, "connection closed before a reply");
        assert!(line.ends_with('\n'));
        serde_json::from_str(&line).unwrap()
    }

    fn ask(&mut self, line: &str) -> Value {
        self.send(line);
        self.reply()
    }

    /// True when the server has closed the connection (EOF or reset).
    fn closed(&mut self) -> bool {
        let mut buf = [0u8; 1];
        matches!(self.reader.read(&mut buf), Ok(0) | Err(_))
    }
}

fn err_text(v: &Value) -> &str {
    assert_eq!(v["ok"], json!(false), "{v}");
    v["error"].as_str().unwrap()
}

#[test]
fn hello_status_send_with_id_echo() {
    let fx = Fixture::new(3);
    let server = fx.start();
    let mut c = Raw::connect(server.socket_path());

    let hello = c.ask(r#"{"op":"hello","id":1}"#);
    assert_eq!(
        hello,
        json!({"ok":true,"protocol":"denwa/1","session":SID,"agent":"main",
               "server":"test-agent 0.0.1","id":1})
    );
    let st = c.ask(r#"{"op":"status","id":"two"}"#);
    assert_eq!(
        st,
        json!({"ok":true,"n_checkpoints":3,"pending":null,"id":"two"})
    );
    let sent = c.ask(r#"{"op":"send_dmail","message":"try B","checkpoint_id":1,"id":[3]}"#);
    assert_eq!(sent, json!({"ok":true,"id":[3]}));
    let st = c.ask(r#"{"op":"status"}"#);
    assert_eq!(
        st,
        json!({"ok":true,"n_checkpoints":3,"pending":{"message":"try B","checkpoint_id":1}})
    );
    // No id in, no id out.
    assert!(st.get("id").is_none());
    // "ok" leads the line, as the doc shows.
    c.send(r#"{"op":"hello"}"#);
    let mut line = String::new();
    c.reader.read_line(&mut line).unwrap();
    assert!(line.starts_with(r#"{"ok":true,"#), "{line}");

    assert_eq!(
        fx.renji.lock().unwrap().fetch_pending_dmail(),
        Some(DMail {
            message: "try B".into(),
            checkpoint_id: 1
        })
    );
}

#[test]
fn typed_client_round_trip() {
    let fx = Fixture::new(2);
    let server = fx.start();
    let mut c = DenwaClient::connect_session(fx.session.path()).unwrap();
    let h = c.hello().unwrap();
    assert_eq!(
        (h.protocol.as_str(), h.session.as_str(), h.agent.as_str()),
        ("denwa/1", SID, "main")
    );
    assert_eq!(h.server, "test-agent 0.0.1");
    let st = c.status().unwrap();
    assert_eq!((st.n_checkpoints, st.pending), (2, None));
    assert_eq!(
        c.send_dmail("hi", 5).unwrap(),
        Err("There is no checkpoint with the given ID".into())
    );
    assert_eq!(c.send_dmail("hi", 0).unwrap(), Ok(()));
    let st = c.status().unwrap();
    assert_eq!(st.pending.unwrap().message, "hi");
    // The socket path works as well as the session dir.
    let mut c2 = DenwaClient::connect_socket(server.socket_path()).unwrap();
    assert_eq!(c2.status().unwrap().n_checkpoints, 2);
}

#[test]
fn denwa_renji_errors_verbatim() {
    let fx = Fixture::new(2);
    let server = fx.start();
    let mut c = Raw::connect(server.socket_path());
    let send = |c: &mut Raw, k: i64| {
        c.ask(&json!({"op":"send_dmail","message":"m","checkpoint_id":k}).to_string())
    };
    assert_eq!(
        err_text(&send(&mut c, -1)),
        "The checkpoint ID can not be negative"
    );
    assert_eq!(
        err_text(&send(&mut c, 2)),
        "There is no checkpoint with the given ID"
    );
    assert_eq!(send(&mut c, 1), json!({"ok":true}));
    assert_eq!(
        err_text(&send(&mut c, 0)),
        "Only one D-Mail can be sent at a time"
    );
    // Once the agent fetches it, the next one is accepted.
    fx.renji.lock().unwrap().fetch_pending_dmail();
    assert_eq!(send(&mut c, 0), json!({"ok":true}));
}

#[test]
fn malformed_requests_get_errors_and_keep_the_connection() {
    let fx = Fixture::new(3);
    let server = fx.start();
    let mut c = Raw::connect(server.socket_path());
    let cases: &[(&str, &str)] = &[
        ("{not json", "bad JSON"),
        ("", "empty request line"),
        ("[1,2]", "request must be a JSON object"),
        (r#"{"id":4}"#, r#"missing field "op""#),
        (r#"{"op":7}"#, r#"field "op" must be a string"#),
        (r#"{"op":"launch"}"#, r#"unknown op "launch""#),
        (
            r#"{"op":"send_dmail","message":"m","checkpoint_id":"1"}"#,
            r#"field "checkpoint_id" must be an integer"#,
        ),
        (
            r#"{"op":"send_dmail","message":"m","checkpoint_id":1.5}"#,
            r#"field "checkpoint_id" must be an integer"#,
        ),
        (
            r#"{"op":"send_dmail","message":5,"checkpoint_id":1}"#,
            r#"field "message" must be a string"#,
        ),
        (
            r#"{"op":"send_dmail","checkpoint_id":1}"#,
            r#"missing field "message""#,
        ),
        (
            r#"{"op":"send_dmail","message":"m"}"#,
            r#"missing field "checkpoint_id""#,
        ),
    ];
    for (line, want) in cases {
        let reply = c.ask(line);
        let text = err_text(&reply);
        assert!(text.contains(want), "{line:?} → {text:?}, wanted {want:?}");
    }
    // The id survives even when the rest is wrong.
    let reply = c.ask(r#"{"op":"nope","id":"abc"}"#);
    assert_eq!(reply["id"], json!("abc"));
    // Nothing was accepted, and the connection still works.
    assert_eq!(c.ask(r#"{"op":"status"}"#)["pending"], Value::Null);
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let fx = Fixture::new(1);
    let server = fx.start();
    let mut c = Raw::connect(server.socket_path());
    let mut batch = String::new();
    for i in 0..200 {
        batch.push_str(&format!("{{\"op\":\"status\",\"id\":{i}}}\n"));
    }
    c.writer.write_all(batch.as_bytes()).unwrap();
    for i in 0..200 {
        assert_eq!(c.reply()["id"], json!(i));
    }
}

#[test]
fn over_long_line_gets_error_then_close() {
    let fx = Fixture::new(1);
    let server = fx.start();
    let mut c = Raw::connect(server.socket_path());
    let mut w = c.writer.try_clone().unwrap();
    // Written from another thread: the server stops reading mid-line, so this
    // write may fail with EPIPE, which is fine.
    let writer = std::thread::spawn(move || {
        let big = vec![b'x'; MAX_LINE + 10];
        let _ = w.write_all(&big);
        let _ = w.write_all(b"\n");
    });
    let reply = c.reply();
    assert!(err_text(&reply).contains("longer than"), "{reply}");
    assert!(c.closed());
    writer.join().unwrap();

    // A line of exactly MAX_LINE bytes is still accepted.
    let mut c = Raw::connect(server.socket_path());
    let pad = MAX_LINE - r#"{"op":"hello","pad":""}"#.len();
    let line = format!(r#"{{"op":"hello","pad":"{}"}}"#, "y".repeat(pad));
    assert_eq!(line.len(), MAX_LINE);
    assert_eq!(c.ask(&line)["ok"], json!(true));
}

#[test]
fn fifty_concurrent_senders_one_accepted() {
    let fx = Fixture::new(5);
    let server = fx.start();
    let barrier = Arc::new(Barrier::new(50));
    let threads: Vec<_> = (0..50)
        .map(|i| {
            let socket = server.socket_path().to_owned();
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                let mut c = Raw::connect(&socket);
                barrier.wait();
                c.ask(
                    &json!({"op":"send_dmail","message":format!("from {i}"),"checkpoint_id":i % 5})
                        .to_string(),
                )
            })
        })
        .collect();
    let replies: Vec<Value> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let ok = replies.iter().filter(|r| **r == json!({"ok":true})).count();
    let busy = replies
        .iter()
        .filter(|r| r["error"] == json!("Only one D-Mail can be sent at a time"))
        .count();
    assert_eq!((ok, busy), (1, 49), "{replies:?}");
    assert!(fx.renji.lock().unwrap().pending().is_some());
}

#[test]
fn stale_socket_is_replaced() {
    let fx = Fixture::new(1);
    let socket = socket_path_in(Some(fx.runtime.path()), SID, None);
    std::fs::create_dir_all(socket.parent().unwrap()).unwrap();
    drop(UnixListener::bind(&socket).unwrap()); // leaves the file, nobody listening
    assert!(socket.exists());
    let server = fx.start();
    assert_eq!(server.socket_path(), socket);
    let mut c = Raw::connect(&socket);
    assert_eq!(c.ask(r#"{"op":"hello"}"#)["ok"], json!(true));
}

#[test]
fn second_server_is_refused_and_first_keeps_serving() {
    let fx = Fixture::new(1);
    let server = fx.start();
    let err = DenwaServer::start(fx.config(), Arc::clone(&fx.renji))
        .err()
        .expect("second server must be refused");
    assert!(matches!(err, DenwaError::AlreadyRunning { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("already running"), "{text}");
    assert!(
        text.contains(&server.socket_path().display().to_string()),
        "{text}"
    );
    // The refused start touched nothing of the first server's.
    assert!(is_live(fx.session.path()));
    let mut c = DenwaClient::connect_session(fx.session.path()).unwrap();
    assert_eq!(c.hello().unwrap().agent, "main");
}

#[test]
fn a_foreign_live_listener_is_not_replaced() {
    // A server that does not use worldline's lock file (another implementation).
    let fx = Fixture::new(1);
    let socket = socket_path_in(Some(fx.runtime.path()), SID, None);
    std::fs::create_dir_all(socket.parent().unwrap()).unwrap();
    let _other = UnixListener::bind(&socket).unwrap();
    let err = DenwaServer::start(fx.config(), Arc::clone(&fx.renji))
        .err()
        .unwrap();
    assert!(matches!(err, DenwaError::AlreadyRunning { .. }), "{err:?}");
    assert!(socket.exists());
}

#[test]
fn socket_and_dir_modes() {
    let fx = Fixture::new(1);
    let server = fx.start();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(server.socket_path()), 0o600);
    assert_eq!(mode(server.socket_path().parent().unwrap()), 0o700);
    assert_eq!(
        server.socket_path().parent().unwrap(),
        fx.runtime.path().join("worldline")
    );
}

#[test]
fn loose_existing_socket_dir_is_tightened() {
    let fx = Fixture::new(1);
    let dir = fx.runtime.path().join("worldline");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let _server = fx.start();
    assert_eq!(
        std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
        0o700
    );
}

#[test]
fn deep_session_dir_works() {
    let fx = Fixture::new(1);
    let mut deep: PathBuf = fx.session.path().to_owned();
    while deep.as_os_str().len() <= 150 {
        deep.push("a-rather-long-directory-name");
    }
    deep.push(SID);
    std::fs::create_dir_all(&deep).unwrap();
    assert!(deep.as_os_str().len() > 108);
    let cfg = ServerConfig {
        session_dir: deep.clone(),
        ..fx.config()
    };
    let server = DenwaServer::start(cfg, Arc::clone(&fx.renji)).unwrap();
    assert!(server.socket_path().starts_with(fx.runtime.path()));
    assert!(server.socket_path().as_os_str().len() <= 107);
    let mut c = DenwaClient::connect_session(&deep).unwrap();
    assert_eq!(c.status().unwrap().n_checkpoints, 1);
}

#[test]
fn denwa_json_contents() {
    let fx = Fixture::new(1);
    let server = fx.start();
    let raw: Value =
        serde_json::from_slice(&std::fs::read(fx.session.path().join("denwa.json")).unwrap())
            .unwrap();
    assert_eq!(
        raw,
        json!({"protocol":"denwa/1","socket":server.socket_path(),
               "pid":std::process::id(),"agent":"main"})
    );
    assert!(server.socket_path().is_absolute());
    // No temp files left behind by the atomic write.
    let names: Vec<_> = std::fs::read_dir(fx.session.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec!["denwa.json"]);
}

#[test]
fn subagent_server_announces_in_its_own_dir() {
    let fx = Fixture::new(4);
    let cfg = ServerConfig {
        agent: Some("sub-7".into()),
        ..fx.config()
    };
    let main = fx.start();
    let sub = DenwaServer::start(cfg, Arc::new(Mutex::new(DenwaRenji::new()))).unwrap();
    assert_ne!(main.socket_path(), sub.socket_path());
    assert!(sub.socket_path().ends_with(format!("{SID}-sub-7.sock")));
    let dir = fx.session.path().join("subagents").join("sub-7");
    assert_eq!(read_announcement(&dir).unwrap().agent, "sub-7");
    let mut c = DenwaClient::connect_session(&dir).unwrap();
    let h = c.hello().unwrap();
    assert_eq!((h.session.as_str(), h.agent.as_str()), (SID, "sub-7"));
    assert_eq!(c.status().unwrap().n_checkpoints, 0);

    let bad = ServerConfig {
        agent: Some("../escape".into()),
        ..fx.config()
    };
    assert!(matches!(
        DenwaServer::start(bad, Arc::clone(&fx.renji)),
        Err(DenwaError::Config { .. })
    ));
}

#[test]
fn odd_session_ids_get_safe_socket_names() {
    let fx = Fixture::new(1);
    let cfg = ServerConfig {
        session_id: "../../etc/x y".into(),
        ..fx.config()
    };
    let server = DenwaServer::start(cfg, Arc::clone(&fx.renji)).unwrap();
    assert_eq!(
        server.socket_path().parent().unwrap(),
        fx.runtime.path().join("worldline")
    );
    let mut c = DenwaClient::connect_session(fx.session.path()).unwrap();
    assert_eq!(c.hello().unwrap().session, "../../etc/x y");
}

#[test]
fn shutdown_and_drop_remove_socket_and_denwa_json() {
    let fx = Fixture::new(1);
    let server = fx.start();
    let socket = server.socket_path().to_owned();
    let ann = fx.session.path().join("denwa.json");
    // An open connection must not keep the server from stopping.
    let mut open = Raw::connect(&socket);
    assert_eq!(open.ask(r#"{"op":"hello"}"#)["ok"], json!(true));
    assert!(socket.exists() && ann.exists() && is_live(fx.session.path()));
    server.shutdown();
    assert!(!socket.exists() && !ann.exists());
    assert!(!is_live(fx.session.path()));
    assert!(open.closed());
    let err = DenwaClient::connect_session(fx.session.path())
        .err()
        .unwrap();
    assert!(err.is_not_live(), "{err:?}");
    // Nothing left in the socket dir (the lock file goes too).
    assert_eq!(
        std::fs::read_dir(socket.parent().unwrap()).unwrap().count(),
        0
    );

    // Drop does the same, and a new server can start afterwards.
    let again = fx.start();
    assert!(again.socket_path().exists());
    drop(again);
    assert!(!socket.exists() && !ann.exists());
}

#[test]
fn no_denwa_json_is_not_live() {
    let dir = tempfile::tempdir().unwrap();
    let err = DenwaClient::connect_session(dir.path()).err().unwrap();
    assert!(err.is_not_live(), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!(
            "not live: no DenwaRenji socket for this session ({})",
            dir.path().display()
        )
    );
    assert!(!is_live(dir.path()));
}

#[test]
fn dead_pid_is_not_live() {
    let fx = Fixture::new(1);
    let server = fx.start();
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    // The socket is even still there: the pid alone decides.
    let ann = json!({"protocol":"denwa/1","socket":server.socket_path(),"pid":dead,"agent":"main"});
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("denwa.json"), ann.to_string()).unwrap();
    assert!(!is_live(dir.path()));
    let err = DenwaClient::connect_session(dir.path()).err().unwrap();
    assert!(err.is_not_live(), "{err:?}");
    assert!(err.to_string().contains(&dir.path().display().to_string()));
}

#[test]
fn refused_connection_is_not_live() {
    let fx = Fixture::new(1);
    // A private directory, as a real server's: only the liveness is at issue.
    let dir = fx.runtime.path().join("private");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let socket = dir.join("stale.sock");
    drop(UnixListener::bind(&socket).unwrap());
    let ann = json!({"protocol":"denwa/1","socket":socket,"pid":std::process::id(),"agent":"main"});
    std::fs::write(fx.session.path().join("denwa.json"), ann.to_string()).unwrap();
    let err = DenwaClient::connect_session(fx.session.path())
        .err()
        .unwrap();
    assert!(err.is_not_live(), "{err:?}");
    assert!(err
        .to_string()
        .contains(&fx.session.path().display().to_string()));
}

#[test]
fn malformed_denwa_json_is_a_protocol_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("denwa.json"), "{oops").unwrap();
    let err = DenwaClient::connect_session(dir.path()).err().unwrap();
    assert!(matches!(err, DenwaError::Protocol { .. }), "{err:?}");
    assert!(err.to_string().contains("denwa.json"));
}

#[test]
fn a_client_that_never_reads_does_not_block_others() {
    let fx = Fixture::new(1);
    let server = fx.start();
    let mut hog = UnixStream::connect(server.socket_path()).unwrap();
    let flood = std::thread::spawn(move || {
        // Far more replies than the socket buffers hold; never read any.
        let line = b"{\"op\":\"hello\"}\n".repeat(20_000);
        for _ in 0..20 {
            if hog.write_all(&line).is_err() {
                return; // the server gave up on us, as it should
            }
        }
    });
    let start = Instant::now();
    let mut c = DenwaClient::connect_session(fx.session.path()).unwrap();
    for _ in 0..20 {
        c.status().unwrap();
    }
    assert!(start.elapsed() < Duration::from_secs(2));
    // With the server still up, its write timeout alone must cut the hog off.
    flood.join().unwrap();
    assert!(start.elapsed() < Duration::from_secs(15));
    let mut c = DenwaClient::connect_session(fx.session.path()).unwrap();
    assert_eq!(c.status().unwrap().n_checkpoints, 1);
    drop(server);
}

#[test]
fn a_full_server_closes_its_longest_idle_connection_for_a_newcomer() {
    use worldline::denwa::MAX_CONNECTIONS;
    let fx = Fixture::new(1);
    let server = fx.start();
    // A round trip on each guarantees the server has registered it.
    let mut held: Vec<Raw> = (0..MAX_CONNECTIONS)
        .map(|_| {
            let mut c = Raw::connect(server.socket_path());
            assert_eq!(c.ask(r#"{"op":"hello"}"#)["ok"], json!(true));
            c
        })
        .collect();
    // One more is served at once; the oldest idle one is closed for it.
    let mut extra = Raw::connect(server.socket_path());
    assert_eq!(extra.ask(r#"{"op":"status"}"#)["ok"], json!(true));
    assert!(held[0].closed(), "the longest-idle connection was closed");
    // The newest of the old ones is still served.
    let last = held.last_mut().unwrap();
    assert_eq!(last.ask(r#"{"op":"status"}"#)["ok"], json!(true));
}
