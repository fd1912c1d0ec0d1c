//! Hostile Kimi Code homes and kimi-cli sessions, round 2, through the
//! binary: side files that are FIFOs, devices or symlinks end at once with a
//! warning naming them; a wire of thousands of undo branches stays bounded
//! and says what it left out; `replay --dir` never writes into a directory
//! holding files; a rotation numbered 2^64−1 is an old world line.

mod common;

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let t = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &t);
        } else {
            std::fs::copy(e.path(), t).unwrap();
        }
    }
}

fn mkfifo(p: &Path) {
    let _ = std::fs::remove_file(p);
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

fn symlink(to: &str, p: &Path) {
    let _ = std::fs::remove_file(p);
    std::os::unix::fs::symlink(to, p).unwrap();
}

/// A copy of a Kimi Code fixture home, and its one session.
fn code_home() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/kimi-code/a_undo1/home"),
        &home,
    );
    let session = common::session_dir(&home);
    (tmp, home, session)
}

/// The binary with its own homes and a deadline: a hang fails the test
/// instead of holding it.
fn run(home: &Path, args: &[&std::ffi::OsStr]) -> (Output, Duration) {
    let t = Instant::now();
    let child = common::worldline()
        .args(args)
        .env("KIMI_CODE_HOME", home)
        .env("KIMI_SHARE_DIR", home.join("no-kimi-cli"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // Output is drained on a thread (a full pipe must not look like a hang).
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(out) => (out.unwrap(), t.elapsed()),
        Err(_) => {
            // SAFETY: killing our own child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("{args:?} hung");
        }
    }
}

fn all_text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn side_files_that_are_fifos_devices_or_symlinks_are_refused_with_a_warning() {
    for how in ["FIFO", "/dev/zero", "/dev/urandom"] {
        let (_t, home, session) = code_home();
        let bucket = session.parent().unwrap().to_path_buf();
        // A neighbour whose state.json is the hostile one.
        let neighbour = bucket.join("session_neighbour");
        copy_dir(&session.join("agents"), &neighbour.join("agents"));
        for p in [
            session.join("state.json"),
            neighbour.join("state.json"),
            home.join("session_index.jsonl"),
            home.join("workspaces.json"),
        ] {
            match how {
                "FIFO" => mkfifo(&p),
                dev => symlink(dev, &p),
            }
        }
        let (o, took) = run(&home, &["tree".as_ref(), session.as_os_str()]);
        let text = all_text(&o);
        assert!(o.status.success(), "{how}: {text}");
        assert!(took < Duration::from_secs(5), "{how}: tree took {took:?}");
        assert!(
            text.contains("state.json") && text.contains("not read"),
            "{how}: {text}"
        );
        let (o, took) = run(&home, &["list".as_ref(), "--all".as_ref()]);
        let text = all_text(&o);
        assert!(o.status.success(), "{how}: {text}");
        assert!(took < Duration::from_secs(5), "{how}: list took {took:?}");
        for name in [
            "session_index.jsonl",
            "workspaces.json",
            "session_neighbour/state.json",
        ] {
            assert!(
                text.contains(name),
                "{how}: no warning naming {name}: {text}"
            );
        }
        common::assert_no_raw_controls(how, &o.stdout);
    }
}

#[test]
fn watch_ends_on_sigterm_when_state_json_becomes_a_fifo() {
    let (_t, home, session) = code_home();
    let mut child = common::worldline()
        .args(["watch", "--json", "--poll"])
        .arg(&session)
        .env("KIMI_CODE_HOME", &home)
        .env("KIMI_SHARE_DIR", home.join("no-kimi-cli"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(800));
    mkfifo(&session.join("state.json"));
    std::thread::sleep(Duration::from_millis(1500));
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > Duration::from_secs(5) {
            let _ = child.kill();
            panic!("watch ignored SIGTERM with state.json a FIFO");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `n` branches all forking from `main`'s third line, one prompt each.
fn star_wire(n: usize) -> String {
    let user = |i: usize| {
        format!(
            r#"{{"type":"context.append_message","message":{{"role":"user","content":[{{"type":"text","text":"p{i}"}}],"origin":{{"kind":"user"}}}}}}"#
        )
    };
    let mut lines = vec![
        r#"{"type":"metadata","protocol_version":"1.5"}"#.to_string(),
        user(0),
        user(1),
    ];
    for i in 0..n {
        lines.push(format!(
            r#"{{"type":"agent.switched","branch":"b{}","reason":"fork","base":{{"branch":"main","line":3}}}}"#,
            i + 1
        ));
        lines.push(user(i + 2));
    }
    lines.join("\n") + "\n"
}

/// Past the per-agent budget (2 M records, a branch weighing 200), the
/// newest branches that fit are shown, main and the current one always,
/// with a warning saying how many were left out. (The undo-shaped wires
/// whose views sum to 10^8 records are the bench's: they take minutes in a
/// debug build.)
#[test]
fn a_wire_of_too_many_branches_stays_bounded_and_says_what_was_left_out() {
    let (_t, home, session) = code_home();
    let wire = session.join("agents/main/wire.jsonl");
    std::fs::write(&wire, star_wire(12_000)).unwrap();
    let (o, took) = run(
        &home,
        &[
            "tree".as_ref(),
            session.as_os_str(),
            "--format".as_ref(),
            "json".as_ref(),
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(took < Duration::from_secs(15), "took {took:?}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let warnings = v["warnings"].to_string();
    assert!(
        warnings.contains("of 12001 branches not shown"),
        "{warnings}"
    );
    let lines = v["world_lines"].as_array().unwrap();
    assert!(lines.len() > 2 && lines.len() < 12_001, "{}", lines.len());
    assert_eq!(lines[0]["branch"], "main");
    // The current branch is the wire's last one, and it is shown.
    let current: Vec<_> = lines.iter().filter(|l| l["current"] == true).collect();
    assert_eq!(current.len(), 1);
    assert_eq!(current[0]["branch"], "b12000", "{}", current[0]);
    assert_eq!(current[0]["parent"], "main", "{}", current[0]);
}

fn kimi_cli_copy(scenario: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let src = common::fixture_session("kimi-cli", scenario);
    let dst = tmp.path().join("s");
    copy_dir(&src, &dst);
    (tmp, dst)
}

#[test]
fn replay_refuses_a_directory_that_holds_files() {
    let (tmp, src) = kimi_cli_copy("dmail_basic");
    let dst = tmp.path().join("dst");
    std::fs::create_dir(&dst).unwrap();
    std::fs::write(dst.join("state.json"), "{\"mine\": 1}").unwrap();
    std::fs::write(dst.join("wire.jsonl"), "keep\n").unwrap();
    let o = common::worldline()
        .args(["replay", "--headless", "--speed", "1000", "--dir"])
        .arg(&dst)
        .arg(&src)
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("not empty"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(
        std::fs::read_to_string(dst.join("state.json")).unwrap(),
        "{\"mine\": 1}"
    );
    assert_eq!(
        std::fs::read_to_string(dst.join("wire.jsonl")).unwrap(),
        "keep\n"
    );
}

#[test]
fn a_rotation_numbered_2_64_minus_1_is_an_old_world_line() {
    let (tmp, s) = kimi_cli_copy("dmail_basic");
    std::fs::rename(
        s.join("context_1.jsonl"),
        s.join("context_18446744073709551615.jsonl"),
    )
    .unwrap();
    let mut c = common::worldline();
    c.args(["tree", "--format", "json"]).arg(&s);
    let v: serde_json::Value = serde_json::from_str(&common::stdout_of(c)).unwrap();
    let lines = v["world_lines"].as_array().unwrap();
    let current: Vec<&str> = lines
        .iter()
        .filter(|l| l["current"] == true)
        .map(|l| l["file"].as_str().unwrap())
        .collect();
    assert_eq!(current, ["context.jsonl"], "{lines:?}");
    // Replayed, the copy keeps context.jsonl as the current file.
    let dst = tmp.path().join("replayed");
    let open = common::replay_headless(&s, &dst);
    assert!(open.join("context.jsonl").is_file() || dst.join("context.jsonl").is_file());
    let mut c = common::worldline();
    c.args(["tree", "--format", "json"]).arg(&open);
    let v: serde_json::Value = serde_json::from_str(&common::stdout_of(c)).unwrap();
    let files: Vec<&str> = v["world_lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["file"].as_str().unwrap())
        .collect();
    assert!(files.contains(&"context.jsonl"), "{files:?}");
}

#[test]
fn absurd_wire_times_are_unknown_not_year_292277026596() {
    let (_tmp, s) = kimi_cli_copy("dmail_basic");
    let wire = std::fs::read_to_string(s.join("wire.jsonl")).unwrap();
    let mut out = String::new();
    for line in wire.lines() {
        let mut v: serde_json::Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(_) => {
                out.push_str(line);
                out.push('\n');
                continue;
            }
        };
        if v.get("timestamp").is_some() {
            v["timestamp"] = serde_json::json!(9.2e18);
        }
        out.push_str(&v.to_string());
        out.push('\n');
    }
    std::fs::write(s.join("wire.jsonl"), out).unwrap();
    for format in ["text", "json", "html", "mermaid"] {
        let mut c = common::worldline();
        c.args(["tree", "--format", format]).arg(&s);
        let printed = common::stdout_of(c);
        assert!(!printed.contains("292277"), "{format}: {printed}");
    }
}

/// `context_sub_N` hangs off the N-th Task/Agent call, not off the call at
/// its position among the files found: with `sub_1` gone, `sub_2` is not
/// the first call's.
#[test]
fn numbered_subagents_link_by_their_number() {
    let tmp = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "fixtures/kimi-cli-history/v1_0_subagent_dmail/sessions/a6da2585adb9e0416e718130ba8b0e5c/9a8ad359-98be-4a9d-93a8-787571a18770",
    );
    let s = tmp.path().join("s");
    copy_dir(&src, &s);
    let sub = |s: &Path| {
        let mut c = common::worldline();
        c.args(["tree", "--format", "json"]).arg(s);
        let v: serde_json::Value = serde_json::from_str(&common::stdout_of(c)).unwrap();
        v["subagents"][0].clone()
    };
    assert_eq!(sub(&s)["parent_tool_call_id"], "t1");
    for (from, to) in [
        ("context_sub_1.jsonl", "context_sub_2.jsonl"),
        ("context_sub_1_1.jsonl", "context_sub_2_1.jsonl"),
    ] {
        std::fs::rename(s.join(from), s.join(to)).unwrap();
    }
    let moved = sub(&s);
    assert_eq!(moved["agent_id"], "sub_2");
    assert!(moved["parent_tool_call_id"].is_null(), "{moved}");
}
