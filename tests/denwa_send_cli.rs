//! `worldline send` end to end: the built binary against a server started in
//! this test process.

mod common;

use std::io::Write;
use std::process::{Command, Output, Stdio};

use common::denwa::Live;
use worldline::denwa::{DMail, ServerLimits};

const SID: &str = "5e55-10n";

fn live(n_checkpoints: i64) -> Live {
    common::denwa::serve(
        SID,
        n_checkpoints,
        "cli-test 1.0",
        ServerLimits::default(),
        tempfile::tempdir().unwrap(),
    )
}

fn worldline(args: &[&str], stdin: Option<&str>) -> Output {
    let mut cmd = common::worldline();
    cmd.args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    if let Some(text) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        pipe.write_all(text.as_bytes()).unwrap();
    }
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn accepted_exits_0() {
    let l = live(3);
    let dir = l.session.path().to_str().unwrap();
    let out = worldline(
        &["send", dir, "--checkpoint", "2", "--message", "go left"],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "D-Mail accepted: pending for checkpoint 2; \
         the agent applies it at the end of its current step\n"
    );
    assert_eq!(
        l.renji.lock().unwrap().pending(),
        Some(&DMail {
            message: "go left".into(),
            checkpoint_id: 2
        })
    );
}

#[test]
fn rejected_exits_1_with_reason() {
    let l = live(3);
    let dir = l.session.path().to_str().unwrap();
    let out = worldline(&["send", dir, "--checkpoint", "3", "--message", "x"], None);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("There is no checkpoint with the given ID"),
        "{err}"
    );
    assert!(err.contains(SID), "{err}");
    assert!(out.stdout.is_empty());

    l.renji
        .lock()
        .unwrap()
        .send_dmail(DMail {
            message: "first".into(),
            checkpoint_id: 0,
        })
        .unwrap();
    let out = worldline(&["send", dir, "--checkpoint", "1", "--message", "x"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("Only one D-Mail can be sent at a time"));

    let out = worldline(&["send", dir, "--checkpoint=-1", "--message", "x"], None);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn no_server_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let out = worldline(&["send", d, "--checkpoint", "0", "--message", "x"], None);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("not live") && err.contains(d), "{err}");

    let out = worldline(&["send", d, "--status"], None);
    assert_eq!(out.status.code(), Some(2));

    // A server that has gone away reads the same.
    let l = live(1);
    let dir = l.session.path().to_owned();
    l.server.shutdown();
    let out = worldline(&["send", dir.to_str().unwrap(), "--status"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("not live"));
}

#[test]
fn unknown_target_and_usage_errors_exit_2() {
    let out = worldline(
        &[
            "send",
            "/no/such/session",
            "--checkpoint",
            "0",
            "--message",
            "x",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("/no/such/session"));

    let l = live(1);
    let dir = l.session.path().to_str().unwrap();
    // Neither --checkpoint nor --status: clap's usage error.
    let out = worldline(&["send", dir, "--message", "x"], None);
    assert_eq!(out.status.code(), Some(2));
    // An empty D-Mail is refused before it reaches the agent.
    let out = worldline(&["send", dir, "--checkpoint", "0"], Some("\n"));
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("empty"));
    assert_eq!(l.renji.lock().unwrap().pending(), None);
}

#[test]
fn message_from_stdin() {
    let l = live(2);
    let dir = l.session.path().to_str().unwrap();
    let out = worldline(
        &["send", dir, "--checkpoint", "1"],
        Some("line one\nline two\n"),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        l.renji
            .lock()
            .unwrap()
            .pending()
            .map(|d| d.message.as_str()),
        Some("line one\nline two")
    );
}

#[test]
fn socket_path_target() {
    let l = live(2);
    let sock = l.server.socket_path().to_str().unwrap();
    let out = worldline(
        &["send", sock, "--checkpoint", "0", "--message", "via socket"],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        l.renji.lock().unwrap().pending().unwrap().message,
        "via socket"
    );
}

#[test]
fn status_output() {
    let l = live(4);
    let dir = l.session.path().to_str().unwrap();
    let out = worldline(&["send", dir, "--status"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        format!(
            "session {SID} (agent main), served by cli-test 1.0\n\
             n_checkpoints: 4 (a D-Mail may target checkpoints 0..=3)\n\
             pending D-Mail: none\n"
        )
    );

    l.renji
        .lock()
        .unwrap()
        .send_dmail(DMail {
            message: "revert\nand retry".into(),
            checkpoint_id: 2,
        })
        .unwrap();
    let out = worldline(&["send", dir, "--status"], None);
    assert_eq!(out.status.code(), Some(0));
    let stdout = text(&out.stdout);
    assert!(
        stdout.ends_with("pending D-Mail for checkpoint 2:\n  revert\n  and retry\n"),
        "{stdout}"
    );
}

/// SO_PEERCRED: a client of another uid is closed without a reply. Needs root
/// (to run the client as another user); skipped otherwise.
#[test]
fn other_uid_is_closed_at_once() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;

    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root to run a client as another uid");
        return;
    }
    let l = live(2);
    let sock = l.server.socket_path().to_owned();
    // Open the way in, which the server never does itself, so only the uid
    // check stands between the other user and the DenwaRenji.
    let open = |p: &std::path::Path, mode| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    open(l.runtime.path(), 0o755);
    open(sock.parent().unwrap(), 0o755);
    open(&sock, 0o666);
    // A raw client: worldline's own client would refuse this socket first
    // (not its owner's), so only the server's uid check is tested here.
    let script = format!(
        "import socket\ns=socket.socket(socket.AF_UNIX)\ns.connect({:?})\ns.settimeout(5)\n\
         s.sendall(b'{{\\\"op\\\":\\\"send_dmail\\\",\\\"message\\\":\\\"intruder\\\",\\\"checkpoint_id\\\":0}}\\n')\n\
         print(repr(s.recv(100)))\n",
        sock.to_str().unwrap()
    );
    let out = Command::new("python3")
        .args(["-c", &script])
        .uid(65534)
        .gid(65534)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = text(&out.stdout);
    assert!(
        !text(&out.stderr).contains("ermission"),
        "{}",
        text(&out.stderr)
    );
    // It got through the file permissions and was cut off by the server.
    assert!(
        out.status.success() || said.is_empty(),
        "{}",
        text(&out.stderr)
    );
    assert!(
        said.trim() == "b''" || said.is_empty(),
        "the server answered: {said}"
    );
    assert_eq!(l.renji.lock().unwrap().pending(), None);
    open(sock.parent().unwrap(), 0o700);
    // Our own uid is still served.
    let out = worldline(&["send", sock.to_str().unwrap(), "--status"], None);
    assert_eq!(out.status.code(), Some(0));
}
