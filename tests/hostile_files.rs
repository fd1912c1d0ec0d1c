//! Hostile session files: special files under every metadata name, floods
//! of malformed lines, escape sequences in names, records that only Python
//! reads as equal. Each case runs the real binary (with a deadline, so a
//! hang fails instead of blocking) on a copy in its own temp dir, with
//! `KIMI_SHARE_DIR` pointing into that temp dir.

mod common;

use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

const FIXTURE: &str = "fixtures/kimi-cli/dmail_basic/sessions/ea9bdfc2413a1d6606914448ef07fc6d/7600d855-00b0-4139-aa93-a9aed5dee7dc";

struct Ran {
    code: Option<i32>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    took: Duration,
}

impl Ran {
    fn out(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
    fn err(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
    fn json(&self) -> Value {
        serde_json::from_slice(&self.stdout).unwrap_or_else(|e| panic!("{e}: {}", self.out()))
    }
}

/// Runs worldline with a hard deadline (a hang is a failure, not a stuck
/// test run).
fn run(share: &Path, args: &[&OsStr]) -> Ran {
    let start = Instant::now();
    let mut child = common::worldline()
        .args(args)
        .env("KIMI_SHARE_DIR", share)
        .env_remove("XDG_RUNTIME_DIR")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let o = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let e = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let deadline = start + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("worldline {args:?} still running after 20 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Ran {
        code: status.code(),
        took: start.elapsed(),
        stdout: o.join().unwrap(),
        stderr: e.join().unwrap(),
    }
}

fn tree(share: &Path, dir: &Path, format: &str) -> Ran {
    run(
        share,
        &[
            OsStr::new("tree"),
            dir.as_os_str(),
            OsStr::new("--format"),
            OsStr::new(format),
        ],
    )
}

/// A copy of the dmail_basic fixture at `<tmp>/sessions/<hash>/<name>`.
fn session_copy(tmp: &Path, name: &OsStr) -> PathBuf {
    let dir = tmp
        .join("sessions")
        .join("ea9bdfc2413a1d6606914448ef07fc6d")
        .join(name);
    copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE), &dir);
    dir
}

fn files_of(v: &Value) -> Vec<String> {
    v["world_lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["file"].as_str().unwrap().to_string())
        .collect()
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// Every way a name can be hostile: a FIFO, two endless devices, a directory.
fn plant(p: &Path, how: &str) {
    let _ = std::fs::remove_file(p);
    match how {
        "fifo" => mkfifo(p),
        "zero" => std::os::unix::fs::symlink("/dev/zero", p).unwrap(),
        "urandom" => std::os::unix::fs::symlink("/dev/urandom", p).unwrap(),
        "dir" => std::fs::create_dir(p).unwrap(),
        _ => unreachable!(),
    }
}

const HOSTILE: [&str; 4] = ["fifo", "zero", "urandom", "dir"];

#[test]
fn special_wire_files_end_at_once_with_a_warning() {
    for how in HOSTILE {
        let tmp = tempfile::tempdir().unwrap();
        let dir = session_copy(tmp.path(), OsStr::new("s"));
        plant(&dir.join("wire.jsonl"), how);
        let r = tree(tmp.path(), &dir, "json");
        assert_eq!(r.code, Some(0), "{how}: {}", r.err());
        assert!(r.took < Duration::from_secs(5), "{how}: {:?}", r.took);
        let v = r.json();
        let warned = v["warnings"].as_array().unwrap().iter().any(|w| {
            w["file"] == "wire.jsonl"
                && w["message"]
                    .as_str()
                    .unwrap()
                    .contains("not a regular file")
        });
        assert!(warned, "{how}: {}", v["warnings"]);
        assert_eq!(v["world_lines"].as_array().unwrap().len(), 2, "{how}");
    }
}

#[test]
fn special_context_files_fail_fast_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = session_copy(tmp.path(), OsStr::new("s"));
    // The guard itself: index_file on a FIFO returns at once.
    let fifo = dir.join("fifo.jsonl");
    mkfifo(&fifo);
    let start = Instant::now();
    let e = worldline::read::index_file(&fifo, "fifo.jsonl").unwrap_err();
    assert!(e.to_string().contains("FIFO"), "{e}");
    assert!(start.elapsed() < Duration::from_secs(1));
}

#[test]
fn three_thousand_malformed_lines_keep_a_hundred_warnings_and_a_count() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = session_copy(tmp.path(), OsStr::new("s"));
    let mut text = std::fs::read(dir.join("context.jsonl")).unwrap();
    text.extend(b"x\n".repeat(3000));
    std::fs::write(dir.join("context.jsonl"), text).unwrap();
    let v = tree(tmp.path(), &dir, "json").json();
    let w = v["warnings"].as_array().unwrap();
    assert_eq!(w.len(), 101, "100 kept and one that counts the rest");
    let last = w[100]["message"].as_str().unwrap();
    assert!(
        last.starts_with("2900 more warnings in this file"),
        "{last}"
    );
    let r = tree(tmp.path(), &dir, "text");
    assert!(r.out().contains("2900 more warnings"), "{}", r.out());
}

#[test]
fn escape_sequences_in_dir_names_never_reach_the_terminal() {
    let tmp = tempfile::tempdir().unwrap();
    let evil =
        OsStr::from_bytes(b"s\x1b]0;pwned\x07\x1b]52;c;ZXZpbA==\x07\x1b]8;;http:x\x07\xc2\x9b31m");
    let dir = session_copy(tmp.path(), evil);
    // Not UTF-8 either: clap would refuse it as an argument, not as a subdir.
    let sub = dir
        .join("subagents")
        .join(OsStr::from_bytes(b"a\x1b[2J\xff"));
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::copy(dir.join("context.jsonl"), sub.join("context.jsonl")).unwrap();
    for format in ["text", "dot", "mermaid", "html", "svg"] {
        let r = tree(tmp.path(), &dir, format);
        assert_eq!(r.code, Some(0), "{format}: {}", r.err());
        common::assert_no_raw_controls(format, &r.stdout);
        common::assert_no_raw_controls(format, &r.stderr);
    }
    // JSON escapes them as JSON does.
    let r = tree(tmp.path(), &dir, "json");
    common::assert_no_raw_controls("json", &r.stdout);
    // An error naming the path is escaped too.
    let missing = dir.join("nope.jsonl");
    let r = run(tmp.path(), &[OsStr::new("tree"), missing.as_os_str()]);
    assert_ne!(r.code, Some(0));
    common::assert_no_raw_controls("error", &r.stderr);
    assert!(r.err().contains("␛]0;pwned␇"), "{}", r.err());
}

/// kimi-cli writes `_checkpoint c` again when it reverts; an old spelling
/// with a repeated key is the same record to Python, so the D-Mail fork
/// stays a D-Mail fork instead of turning into `/clear`.
#[test]
fn a_rewritten_shared_record_with_a_repeated_key_is_still_shared() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = session_copy(tmp.path(), OsStr::new("s"));
    let old = std::fs::read_to_string(dir.join("context_1.jsonl")).unwrap();
    let old = old.replacen(
        "{\"role\": \"_checkpoint\", \"id\": 0}",
        "{\"role\": \"_checkpoint\", \"id\": 0, \"id\": 0}",
        1,
    );
    std::fs::write(dir.join("context_1.jsonl"), old).unwrap();
    let v = tree(tmp.path(), &dir, "json").json();
    let fork = &v["world_lines"][1]["fork"];
    assert_eq!(fork["kind"], "dmail", "{fork}");
    assert_eq!(fork["checkpoint"], 1, "{fork}");
}

/// Thousands of distinct tool names (more than the index's name table
/// holds): every call keeps its own name and every result finds its call.
#[test]
fn thousands_of_distinct_tool_names_each_stay_their_own() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = session_copy(tmp.path(), OsStr::new("s"));
    let mut text = std::fs::read_to_string(dir.join("context.jsonl")).unwrap();
    let n = 3000;
    for i in 0..n {
        let call = serde_json::json!({"role": "assistant", "content": "go", "tool_calls": [
            {"type": "function", "id": format!("c{i}"), "function": {"name": format!("tool{i}"), "arguments": "{}"}}]});
        let result =
            serde_json::json!({"role": "tool", "content": "ok", "tool_call_id": format!("c{i}")});
        text.push_str(&format!("{call}\n{result}\n"));
    }
    std::fs::write(dir.join("context.jsonl"), &text).unwrap();
    let ix = worldline::read::index_file(&dir.join("context.jsonl"), "context.jsonl").unwrap();
    let tail = ix
        .records
        .range(ix.records.len() - 2 * n..)
        .collect::<Vec<_>>();
    for (i, pair) in tail.chunks(2).enumerate() {
        let call = pair[0].tool_calls().first().expect("a call");
        assert_eq!(call.name(), format!("tool{i}"));
        assert!(call.is(&format!("c{i}")));
        assert!(pair[1].answers(call.key()), "result {i} finds its call");
    }
    // The page labels each result with its call's tool name.
    let html = tree(tmp.path(), &dir, "html").out();
    for i in [0, 1500, n - 1] {
        assert!(html.contains(&format!("← tool{i}<")), "tool{i}");
    }
}

#[test]
fn send_dmail_with_unreadable_arguments_is_an_attempt() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = session_copy(tmp.path(), OsStr::new("s"));
    let mut text = std::fs::read_to_string(dir.join("context.jsonl")).unwrap();
    text.push_str(concat!(
        r#"{"role":"assistant","content":"go","tool_calls":[{"type":"function","id":"bad1","function":{"name":"SendDMail","arguments":"{\"message\": \"x\", \"checkpoint_id\": "}}]}"#,
        "\n",
        r#"{"role":"tool","content":"<system>ERROR: Error parsing JSON arguments</system>","tool_call_id":"bad1"}"#,
        "\n"
    ));
    std::fs::write(dir.join("context.jsonl"), text).unwrap();
    let v = tree(tmp.path(), &dir, "json").json();
    let a = v["dmail_attempts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["tool_call_id"] == "bad1")
        .unwrap_or_else(|| panic!("{}", v["dmail_attempts"]))
        .clone();
    assert_eq!(a["accepted"], false);
    assert!(
        a["arguments_error"]
            .as_str()
            .unwrap()
            .contains("checkpoint_id"),
        "{a}"
    );
    let r = tree(tmp.path(), &dir, "text");
    assert!(
        r.out().contains("✗ from β → ⚑?: unreadable arguments"),
        "{}",
        r.out()
    );
}

/// A wire line far over the kept limit: its start still gives the times.
#[test]
fn a_huge_wire_line_is_read_by_its_start() {
    let tmp = tempfile::tempdir().unwrap();
    let wire = tmp.path().join("wire.jsonl");
    let big = "y".repeat(9 << 20);
    let text = format!(
        "{{\"timestamp\": 10.5, \"message\": {{\"type\": \"TurnBegin\", \"payload\": {{\"user_input\": \"hi\", \"pad\": \"{big}\"}}}}}}\n\
         {{\"timestamp\": 11.0, \"message\": {{\"type\": \"ToolCall\", \"payload\": {{\"id\": \"c9\", \"pad\": \"{big}\"}}}}}}\n\
         {{\"timestamp\": 12.0, \"message\": {{\"type\": \"TurnEnd\", \"payload\": {{}}}}}}\n"
    );
    std::fs::write(&wire, text).unwrap();
    let log = worldline::sources::WireLog::read_checked(&wire)
        .unwrap()
        .unwrap();
    assert_eq!(log.checkpoint_times(), &[10.5]);
    let c9 = worldline::model::CallKey::of("c9");
    assert_eq!((log.call_time(c9), log.result_time(c9)), (Some(11.0), None));
}

/// A world line whose file disappears gets an event, by name.
#[test]
fn watch_says_when_a_world_line_disappears() {
    use worldline::live::watch::events_between;
    use worldline::worldline::Session;
    let tmp = tempfile::tempdir().unwrap();
    let dir = session_copy(tmp.path(), OsStr::new("s"));
    let before = Session::load(&dir).unwrap();
    std::fs::remove_file(dir.join("context_1.jsonl")).unwrap();
    let after = Session::load(&dir).unwrap();
    let events = events_between(Some(&before), &after);
    let removed: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "world_line_removed")
        .collect();
    assert_eq!(removed.len(), 1, "{events:?}");
    assert_eq!(removed[0]["file"], "context_1.jsonl");
    assert_eq!(removed[0]["agent"], "main");
}

const SUBAGENT_FIXTURE: &str = "fixtures/kimi-cli/subagent/sessions/41d844fffc890c288a37435e20f9ad7d/3fe17231-90ce-4fd9-b414-ba53b7d7fd7a";

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// The subagent fixture at `<tmp>/sessions/<hash>/s`.
fn subagent_copy(tmp: &Path) -> PathBuf {
    let dir = tmp
        .join("sessions")
        .join("41d844fffc890c288a37435e20f9ad7d")
        .join("s");
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join(SUBAGENT_FIXTURE),
        &dir,
    );
    dir
}

fn warnings_of(v: &Value) -> Vec<(String, String)> {
    v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w["file"].as_str().unwrap().to_string(),
                w["message"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn list_all(share: &Path) -> Ran {
    run(share, &[OsStr::new("list"), OsStr::new("--all")])
}

#[test]
fn special_files_under_every_metadata_name_end_at_once_with_a_warning() {
    for how in HOSTILE {
        // state.json: tree warns, list warns on stderr and still lists.
        let tmp = tempfile::tempdir().unwrap();
        let dir = subagent_copy(tmp.path());
        plant(&dir.join("state.json"), how);
        let r = tree(tmp.path(), &dir, "json");
        assert_eq!(r.code, Some(0), "state.json {how}: {}", r.err());
        assert!(r.took < Duration::from_secs(5), "{how}: {:?}", r.took);
        let w = warnings_of(&r.json());
        assert!(
            w.iter()
                .any(|(f, m)| f == "state.json" && m.contains("not a regular file")),
            "{how}: {w:?}"
        );
        let r = list_all(tmp.path());
        assert_eq!(r.code, Some(0), "{how}: {}", r.err());
        assert!(
            r.err().contains("state.json") && r.err().contains("not a regular file"),
            "{how}: {}",
            r.err()
        );
        assert!(
            r.out().contains("s "),
            "{how}: the session is still listed: {}",
            r.out()
        );

        // meta.json of a subagent: its world lines stay, with a warning.
        let tmp = tempfile::tempdir().unwrap();
        let dir = subagent_copy(tmp.path());
        plant(&dir.join("subagents/aede5373b/meta.json"), how);
        let r = tree(tmp.path(), &dir, "json");
        assert_eq!(r.code, Some(0), "meta.json {how}: {}", r.err());
        let v = r.json();
        assert_eq!(v["subagents"].as_array().unwrap().len(), 1);
        let w = warnings_of(&v);
        assert!(
            w.iter().any(|(f, _)| f == "subagents/aede5373b/meta.json"),
            "{how}: {w:?}"
        );

        // kimi.json: list warns and lists.
        let tmp = tempfile::tempdir().unwrap();
        subagent_copy(tmp.path());
        plant(&tmp.path().join("kimi.json"), how);
        let r = list_all(tmp.path());
        assert_eq!(r.code, Some(0), "kimi.json {how}: {}", r.err());
        assert!(r.took < Duration::from_secs(5), "{how}: {:?}", r.took);
        assert!(r.err().contains("kimi.json"), "{how}: {}", r.err());
    }
}

#[test]
fn a_huge_title_is_refused_and_a_long_one_cut() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = subagent_copy(tmp.path());
    let huge = "T".repeat(5 << 20);
    std::fs::write(
        dir.join("state.json"),
        serde_json::json!({"custom_title": huge}).to_string(),
    )
    .unwrap();
    let v = tree(tmp.path(), &dir, "json").json();
    assert_eq!(v["title"], Value::Null);
    assert!(warnings_of(&v)
        .iter()
        .any(|(f, m)| f == "state.json" && m.contains("limit")));
    let long = "L\u{1b}]0;x\u{7}".repeat(100_000);
    std::fs::write(
        dir.join("state.json"),
        serde_json::json!({"custom_title": long}).to_string(),
    )
    .unwrap();
    let v = tree(tmp.path(), &dir, "json").json();
    assert!(v["title"].as_str().unwrap().chars().count() <= 1001);
    let r = tree(tmp.path(), &dir, "text");
    assert!(
        r.out().lines().next().unwrap().chars().count() < 200,
        "{}",
        r.out()
    );
    common::assert_no_raw_controls("text", &r.stdout);
    let r = list_all(tmp.path());
    assert!(r.stdout.len() < 4096, "{}", r.out());
    common::assert_no_raw_controls("list", &r.stdout);
}

#[test]
fn tree_dot_names_the_real_session() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = session_copy(
        tmp.path(),
        OsStr::new("7600d855-00b0-4139-aa93-a9aed5dee7dc"),
    );
    let mut c = common::worldline();
    c.args(["tree", ".", "--format", "json"])
        .current_dir(&dir)
        .env("KIMI_SHARE_DIR", tmp.path());
    let v: Value = serde_json::from_str(&common::stdout_of(c)).unwrap();
    assert_eq!(v["session_id"], "7600d855-00b0-4139-aa93-a9aed5dee7dc");
    let sd = PathBuf::from(v["session_dir"].as_str().unwrap());
    assert!(sd.is_absolute(), "{sd:?}");
    assert_eq!(sd, dir.canonicalize().unwrap());
}

#[test]
fn unreadable_subagents_are_warnings_not_failures() {
    // `subagents` that is not a directory: listed as unreadable.
    let tmp = tempfile::tempdir().unwrap();
    let dir = session_copy(tmp.path(), OsStr::new("s"));
    std::fs::write(dir.join("subagents"), "not a dir").unwrap();
    let r = tree(tmp.path(), &dir, "json");
    assert_eq!(r.code, Some(0), "{}", r.err());
    let w = warnings_of(&r.json());
    assert!(
        w.iter()
            .any(|(f, m)| f == "subagents" && m.contains("cannot be listed")),
        "{w:?}"
    );

    // One subagent directory that cannot be read: the rest still loads.
    let tmp = tempfile::tempdir().unwrap();
    let dir = subagent_copy(tmp.path());
    let bad = dir.join("subagents").join("zz");
    std::fs::create_dir(&bad).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&bad, std::fs::Permissions::from_mode(0o000)).unwrap();
    let mut cmd = common::worldline();
    cmd.args(["tree", "--format", "json"])
        .arg(&dir)
        .env("KIMI_SHARE_DIR", tmp.path());
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        // Root reads anything: run as nobody, with the way in opened.
        use std::os::unix::process::CommandExt;
        let mut p = tmp.path().to_path_buf();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        for part in dir.strip_prefix(tmp.path()).unwrap().components() {
            p.push(part);
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        copy_tree_perms(&dir);
        std::fs::set_permissions(&bad, std::fs::Permissions::from_mode(0o000)).unwrap();
        cmd.uid(65534).gid(65534);
    }
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(err.matches("zz").count(), 0, "no error printed: {err}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["subagents"].as_array().unwrap().len(), 1);
    let w = warnings_of(&v);
    assert!(
        w.iter()
            .any(|(f, m)| f == "subagents/zz" && m.contains("not read")),
        "{w:?}"
    );
}

/// Everything under `dir` readable by others (for the run as nobody).
fn copy_tree_perms(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let mode = if e.file_type().unwrap().is_dir() {
            0o755
        } else {
            0o644
        };
        std::fs::set_permissions(e.path(), std::fs::Permissions::from_mode(mode)).unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_tree_perms(&e.path());
        }
    }
}

#[test]
fn odd_context_names_are_skipped_with_a_word() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = session_copy(tmp.path(), OsStr::new("s"));
    let one = std::fs::read(dir.join("context_1.jsonl")).unwrap();
    for name in [
        "context_+3.jsonl",
        "context_x.jsonl",
        "context_99999999999999999999999.jsonl",
        "context_01.jsonl",
    ] {
        std::fs::write(dir.join(name), &one).unwrap();
    }
    let v = tree(tmp.path(), &dir, "json").json();
    assert_eq!(files_of(&v), ["context_1.jsonl", "context.jsonl"]);
    let w = warnings_of(&v);
    let said = |f: &str, what: &str| w.iter().any(|(wf, m)| wf == f && m.contains(what));
    assert!(said("context_+3.jsonl", "not a rotation name"), "{w:?}");
    assert!(said("context_x.jsonl", "not a rotation name"), "{w:?}");
    assert!(
        said("context_99999999999999999999999.jsonl", "64 bits"),
        "{w:?}"
    );
    assert!(
        said(
            "context_01.jsonl",
            "same rotation number as context_1.jsonl"
        ),
        "{w:?}"
    );

    // kimi-cli's \d+ takes 01 as 1: alone, it is rotation 1.
    std::fs::remove_file(dir.join("context_1.jsonl")).unwrap();
    let v = tree(tmp.path(), &dir, "json").json();
    assert_eq!(files_of(&v), ["context_01.jsonl", "context.jsonl"]);
}

#[test]
fn a_context_jsonl_that_is_no_regular_file_is_named() {
    for how in ["dir", "fifo", "symlink"] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = session_copy(tmp.path(), OsStr::new("s"));
        let ctx = dir.join("context.jsonl");
        std::fs::rename(&ctx, dir.join("real.jsonl")).unwrap();
        match how {
            "dir" => std::fs::create_dir(&ctx).unwrap(),
            "fifo" => mkfifo(&ctx),
            _ => std::os::unix::fs::symlink(dir.join("real.jsonl"), &ctx).unwrap(),
        }
        let r = tree(tmp.path(), &dir, "json");
        assert_eq!(r.code, Some(0), "{how}: {}", r.err());
        let w = warnings_of(&r.json());
        assert!(
            w.iter()
                .any(|(f, m)| f == "context.jsonl" && m.contains("not read as a world line")),
            "{how}: {w:?}"
        );
    }
}

#[test]
fn list_escapes_hostile_names() {
    let tmp = tempfile::tempdir().unwrap();
    session_copy(
        tmp.path(),
        OsStr::from_bytes(b"l\x1b]0;pwned\x07\xc2\x9b2J\xff"),
    );
    let r = list_all(tmp.path());
    assert_eq!(r.code, Some(0), "{}", r.err());
    common::assert_no_raw_controls("list", &r.stdout);
    assert!(r.out().contains("l␛]0;pwned␇"), "{}", r.out());
    let r = run(
        tmp.path(),
        &[
            OsStr::new("list"),
            OsStr::new("--all"),
            OsStr::new("--json"),
        ],
    );
    common::assert_no_raw_controls("list --json", &r.stdout);
    assert!(r.out().contains("\\u009b"), "{}", r.out());
}

/// `watch` on a session whose `state.json` is a FIFO: it starts, streams,
/// and says so, instead of hanging in `open()`.
#[test]
fn watch_warns_about_a_fifo_state_json_and_keeps_going() {
    use std::io::BufRead;
    let tmp = tempfile::tempdir().unwrap();
    let dir = session_copy(tmp.path(), OsStr::new("s"));
    plant(&dir.join("state.json"), "fifo");
    let mut child = common::worldline()
        .args(["watch", "--json"])
        .arg(&dir)
        .env("KIMI_SHARE_DIR", tmp.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let out = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    let (mut lines, mut warned) = (0, false);
    while Instant::now() < deadline && !(warned && lines > 1) {
        if let Ok(l) = rx.recv_timeout(Duration::from_millis(100)) {
            let v: Value = serde_json::from_str(&l).unwrap();
            lines += 1;
            warned |= v["event"] == "warning"
                && v["file"] == "state.json"
                && v["message"].as_str().unwrap().contains("FIFO");
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(lines > 1, "watch streamed nothing");
    assert!(warned, "no warning about state.json");
}

/// Native notifications that cannot start (here: no file descriptor left
/// for inotify) fall back to polling, and `watch` says so.
#[test]
fn watch_says_when_it_falls_back_to_polling() {
    use std::io::BufRead;
    use std::os::unix::process::CommandExt;
    let tmp = tempfile::tempdir().unwrap();
    let dir = session_copy(tmp.path(), OsStr::new("s"));
    let mut cmd = common::worldline();
    cmd.args(["watch", "--json"])
        .arg(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    // SAFETY: setrlimit is async-signal-safe; nothing else runs in the hook.
    unsafe {
        cmd.pre_exec(|| {
            // 0–2 and one more: inotify gets its descriptor, its event loop none.
            let lim = libc::rlimit {
                rlim_cur: 4,
                rlim_max: 4,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let out = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    let (mut warned, mut streamed) = (false, false);
    while Instant::now() < deadline && !(warned && streamed) {
        if let Ok(l) = rx.recv_timeout(Duration::from_millis(100)) {
            let v: Value = serde_json::from_str(&l).unwrap();
            warned |= v["event"] == "warning"
                && v["message"]
                    .as_str()
                    .unwrap()
                    .contains("following by polling");
            streamed |= v["event"] == "world_line";
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(warned, "no warning about the fall back to polling");
    assert!(streamed, "watch streamed no world line while polling");
}
