//! The binary as a user runs it: finding sessions, output formats, exit codes.

use std::path::{Path, PathBuf};
use std::process::Command;

fn bin() -> Command {
    let mut c = common::worldline();
    c.env_remove("KIMI_SHARE_DIR");
    c
}

mod common;

fn fixture(name: &str) -> PathBuf {
    common::fixture_session("kimi-cli", name)
}

/// A share dir holding copies of the given fixtures, under their real folders.
fn share_with(names: &[&str]) -> tempfile::TempDir {
    let share = tempfile::tempdir().unwrap();
    for n in names {
        let src = fixture(n);
        let work = src.parent().unwrap().file_name().unwrap();
        let dst = share
            .path()
            .join("sessions")
            .join(work)
            .join(src.file_name().unwrap());
        copy_dir(&src, &dst);
    }
    share
}

fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        if e.path().is_dir() {
            copy_dir(&e.path(), &dst.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn tree_json_is_the_contract() {
    let out = bin()
        .args(["tree", "--format", "json"])
        .arg(fixture("dmail_twice"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["session_id"], "4790595f-e52c-4341-a141-f521d0d58738");
    let lines = v["world_lines"].as_array().unwrap();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[2]["fork"]["kind"], "dmail");
    assert_eq!(lines[2]["fork"]["checkpoint"], 2);
    assert_eq!(lines[2]["fork"]["origin"], "context_2.jsonl");
    assert_eq!(lines[2]["current"], true);
    for key in ["session_dir", "subagents", "dmail_attempts", "warnings"] {
        assert!(v.get(key).is_some(), "{key}");
    }
}

#[test]
fn a_context_file_argument_means_its_directory() {
    let f = fixture("dmail_basic").join("context_1.jsonl");
    let out = bin()
        .args(["tree", "--format", "json"])
        .arg(f)
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["world_lines"].as_array().unwrap().len(), 2);
}

#[test]
fn text_dot_and_mermaid_show_the_dmail() {
    let dir = fixture("dmail_basic");
    let text = bin().arg("tree").arg(&dir).output().unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    // World lines by name, as the TUI and the pictures call them; the
    // D-Mail with its mark, from its sender back to its checkpoint.
    assert!(
        text.contains("\n● α  context_1.jsonl  16 records · 3 checkpoints\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "└─● β  context.jsonl (current)  12 records · 3 checkpoints  ✉ D-Mail from α → ⚑1"
        ),
        "{text}"
    );
    assert!(!text.contains('⟲'), "⟲ is no mark of worldline's: {text}");
    assert!(text.contains("only line 42 matters"), "{text}");
    let dot = bin()
        .args(["tree", "--format", "dot"])
        .arg(&dir)
        .output()
        .unwrap();
    let dot = String::from_utf8(dot.stdout).unwrap();
    assert!(
        dot.starts_with("digraph") && dot.contains("a0l0 -> a0l1"),
        "{dot}"
    );
    let mm = bin()
        .args(["tree", "--format", "mermaid"])
        .arg(&dir)
        .output()
        .unwrap();
    let mm = String::from_utf8(mm.stdout).unwrap();
    assert!(
        mm.starts_with("graph LR") && mm.contains("a0l0 -->|"),
        "{mm}"
    );
}

#[test]
fn errors_name_the_path_and_exit_2() {
    let out = bin()
        .args(["tree", "/definitely/not/here"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("/definitely/not/here"), "{err}");
    assert_eq!(err.lines().count(), 1, "one line, no backtrace: {err}");

    let empty = tempfile::tempdir().unwrap();
    let out = bin().arg("tree").arg(empty.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8(out.stderr)
        .unwrap()
        .contains("no context file"));
}

#[test]
fn ids_prefixes_and_the_newest_session() {
    let share = share_with(&["dmail_basic", "dmail_twice", "with_clear"]);
    let run = |args: &[&str], cwd: &Path| {
        bin()
            .env("KIMI_SHARE_DIR", share.path())
            .current_dir(cwd)
            .args(args)
            .output()
            .unwrap()
    };
    let here = tempfile::tempdir().unwrap();
    // A unique prefix finds the session.
    let out = run(&["tree", "--format", "json", "4790"], here.path());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["world_lines"].as_array().unwrap().len(), 3);
    // An unknown id exits 2 and says what it looked for.
    let out = run(&["tree", "zzzz"], here.path());
    assert_eq!(out.status.code(), Some(2));
    // No argument: the newest session overall (none belongs to this cwd).
    let newest = share.path().join("sessions");
    let target = std::fs::read_dir(&newest)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let target = std::fs::read_dir(target)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let f = std::fs::OpenOptions::new()
        .append(true)
        .open(target.join("context.jsonl"))
        .unwrap();
    f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(60))
        .unwrap();
    let out = run(&["tree", "--format", "json"], here.path());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["session_id"],
        target.file_name().unwrap().to_str().unwrap()
    );
    // list --all --json has every session with its world-line count.
    let out = run(&["list", "--all", "--json"], here.path());
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0]["id"], target.file_name().unwrap().to_str().unwrap());
    let twice = rows
        .iter()
        .find(|r| r["id"] == "4790595f-e52c-4341-a141-f521d0d58738")
        .unwrap();
    assert_eq!(twice["world_lines"], 3);
    assert_eq!(twice["title"], "Do the thing");
}

#[test]
fn the_cwd_sessions_come_first() {
    let share = share_with(&["dmail_basic", "with_clear"]);
    // Register a work dir whose md5 is the folder of with_clear's session.
    let wd = tempfile::tempdir().unwrap();
    let hash = worldline::sources::kimi_cli::share::work_dir_hash(&wd.path().to_string_lossy());
    let src = fixture("with_clear");
    copy_dir(
        &src,
        &share.path().join("sessions").join(&hash).join("mine"),
    );
    let out = bin()
        .env("KIMI_SHARE_DIR", share.path())
        .current_dir(wd.path())
        .args(["list", "--json"])
        .output()
        .unwrap();
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 1);
    assert_eq!(rows[0]["id"], "mine");
    let out = bin()
        .env("KIMI_SHARE_DIR", share.path())
        .current_dir(wd.path())
        .args(["tree", "--format", "json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["session_id"], "mine");
}

fn history(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/kimi-cli-history")
        .join(name)
}

/// Runs with stdout a pipe whose reader is gone before anything is written.
fn with_closed_stdout(share: &Path, args: &[&str]) -> std::process::Output {
    let mut child = bin()
        .env("KIMI_SHARE_DIR", share)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    child.wait_with_output().unwrap()
}

#[test]
fn a_closed_stdout_ends_every_command_quietly_with_exit_0() {
    let share = history("v1_40_0_fork_undo");
    let id = "0706220a-4234-46bf-958b-2c56b11dcb00";
    let cases: [&[&str]; 8] = [
        &["list", "--all"],
        &["list", "--all", "--json"],
        &["tree", id],
        &["tree", "--format", "json", id],
        &["tree", "--format", "dot", id],
        &["tree", "--format", "mermaid", id],
        &["watch", "--json", id],
        &["watch", "--json", "--poll", id],
    ];
    let copy = tempfile::tempdir().unwrap();
    let copy = copy.path().join("copy").display().to_string();
    let replay: &[&str] = &["replay", "--headless", "--speed", "100", "--dir", &copy, id];
    for args in cases.into_iter().chain([replay]) {
        let out = with_closed_stdout(&share, args);
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert!(
            out.stderr.is_empty(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn watch_ends_when_its_reader_goes_away_even_on_a_quiet_session() {
    use std::io::BufRead;
    let share = history("v1_40_0_fork_undo");
    for mode in [&["--poll"][..], &[][..]] {
        let mut child = bin()
            .env("KIMI_SHARE_DIR", &share)
            .args(["watch", "--json"])
            .args(mode)
            .arg("0706220a-4234-46bf-958b-2c56b11dcb00")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Read the first event, then go away as `| head -1` does. Nothing
        // changes in the session, so no later write would notice.
        let mut first = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        assert!(first.contains("world_line"), "{first}");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if std::time::Instant::now() > deadline {
                child.kill().unwrap();
                panic!("{mode:?}: watch kept running after its reader left");
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        assert_eq!(status.code(), Some(0), "{mode:?}");
    }
}

#[test]
fn list_shows_forks_under_their_source_and_flat_sessions_of_old_releases() {
    let share = history("v1_40_0_fork_undo");
    let out = bin()
        .env("KIMI_SHARE_DIR", &share)
        .args(["list", "--all"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(rows.len(), 3, "{text}");
    assert!(
        rows[0].starts_with("0706220a-4234-46bf-958b-2c56b11dcb00"),
        "{text}"
    );
    let mut forks: Vec<&str> = rows[1..]
        .iter()
        .map(|r| r.split_whitespace().nth(1).unwrap())
        .collect();
    forks.sort();
    assert_eq!(forks, ["fork", "undo"], "{text}");
    let out = bin()
        .env("KIMI_SHARE_DIR", &share)
        .args(["list", "--all", "--json"])
        .output()
        .unwrap();
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let fork = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "1daf86b9-2123-4299-843b-fa06669261a9")
        .unwrap();
    assert_eq!(fork["forked_from"], "0706220a-4234-46bf-958b-2c56b11dcb00");
    assert_eq!(fork["fork_kind"], "fork");

    // A 0.55 share dir: one flat session with a subagent.
    let share = history("v0_55_subagent_dmail");
    let out = bin()
        .env("KIMI_SHARE_DIR", &share)
        .args(["list", "--all", "--json"])
        .output()
        .unwrap();
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["id"], "fb737bcc-f403-41a3-b5cc-447f8d2fd329");
    assert_eq!(rows[0]["world_lines"], 1);
    assert_eq!(rows[0]["subagents"], 1);
    // ...and it is the default session of that share dir.
    let here = tempfile::tempdir().unwrap();
    let out = bin()
        .env("KIMI_SHARE_DIR", &share)
        .current_dir(here.path())
        .args(["tree", "--format", "json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["session_id"], "fb737bcc-f403-41a3-b5cc-447f8d2fd329");
}

#[test]
fn text_dot_and_mermaid_show_the_lineage() {
    let share = history("v1_40_0_fork_undo");
    let tree = |fmt: &str, id: &str| {
        let out = bin()
            .env("KIMI_SHARE_DIR", &share)
            .args(["tree", "--format", fmt, id])
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    let src = "0706220a-4234-46bf-958b-2c56b11dcb00";
    let fork = "1daf86b9-2123-4299-843b-fa06669261a9";
    let text = tree("text", fork);
    assert!(
        text.contains(&format!(
            "forked from {src} by /fork (shares its first 23 records)"
        )),
        "{text}"
    );
    let text = tree("text", src);
    assert!(
        text.contains(&format!("/fork made {fork} from its first 23 records")),
        "{text}"
    );
    assert!(text.contains("/undo made e299ef2f"), "{text}");
    let dot = tree("dot", src);
    assert!(
        dot.contains(&format!("[label=\"session\\n{fork}\", shape=folder")),
        "{dot}"
    );
    assert!(
        dot.contains("a0l0 -> fork0 [label=\"/undo · 19 records\""),
        "{dot}"
    );
    let mm = tree("mermaid", fork);
    assert!(
        mm.contains(&format!("src[/\"session<br/>{src}\"/]")),
        "{mm}"
    );
    assert!(mm.contains("src ==>|\"/fork · 23 records\"| a0l0"), "{mm}");
}

/// Every `.rs` file under `src/`, as a path relative to `src/` and its
/// text, for the layering tests.
fn source_files() -> Vec<(PathBuf, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut stack = vec![src.clone()];
    let mut out = Vec::new();
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let rel = p.strip_prefix(&src).unwrap().to_path_buf();
                out.push((rel, std::fs::read_to_string(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// The library never sees the command line: `grep -rn clap src` finds only
/// the binary's command layer (`src/cmd/`, `src/main.rs`).
#[test]
fn only_the_command_layer_imports_clap() {
    let offenders: Vec<PathBuf> = source_files()
        .into_iter()
        .filter(|(rel, _)| !rel.starts_with("cmd") && rel != Path::new("main.rs"))
        .filter(|(_, text)| text.contains("clap"))
        .map(|(rel, _)| rel)
        .collect();
    assert!(offenders.is_empty(), "clap outside cmd/: {offenders:?}");
}

#[test]
fn the_text_tree_marks_compaction_and_clear_in_their_own_words() {
    for (name, mark) in [
        (
            "with_compact",
            "└─● β  context.jsonl (current)  13 records · 3 checkpoints  ⊜ compaction",
        ),
        (
            "with_clear",
            "└─● β  context.jsonl (current)  7 records · 2 checkpoints  ∅ /clear",
        ),
    ] {
        let text = bin().arg("tree").arg(fixture(name)).output().unwrap();
        let text = String::from_utf8(text.stdout).unwrap();
        assert!(text.contains(mark), "{name}: {text}");
        assert!(!text.contains('⟲'), "{name}: {text}");
    }
}

#[test]
fn a_subagent_is_described_by_what_its_session_says() {
    let dir = history("v1_0_subagent_dmail")
        .join("sessions/a6da2585adb9e0416e718130ba8b0e5c/9a8ad359-98be-4a9d-93a8-787571a18770");
    let text = bin().arg("tree").arg(&dir).output().unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    // No type or description recorded: left out, not `(?) ""`.
    assert!(
        text.contains("\nsubagent sub_1 ← Agent call t1\n"),
        "{text}"
    );
    assert!(!text.contains("(?)") && !text.contains("\"\""), "{text}");
}

#[test]
fn a_warning_about_a_whole_file_names_no_line_0() {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/kimi-code-legacy/broken-state-json");
    let text = bin().arg("tree").arg(&dir).output().unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("\n  state.json: not valid JSON"), "{text}");
    assert!(!text.contains(":0:"), "{text}");
}

/// A file no source recognises is refused in one line naming it and what
/// worldline reads, with exit 2; it never opens as some agent's session.
/// A kimi-cli flat session (`<sid>.jsonl`) still reads.
#[test]
fn a_file_of_no_known_format_exits_2_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("x.jsonl", "{\"foo\": 1}\n{\"foo\": 2}\n"),
        ("y.jsonl", "{\"type\":\"something_else\",\"payload\":{}}\n"),
        ("z.txt", "not json at all\n"),
    ];
    for (name, body) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, body).unwrap();
        for format in ["text", "json"] {
            let out = bin()
                .args(["tree", "--format", format])
                .arg(&path)
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(2), "{name}: {out:?}");
            assert!(out.stdout.is_empty(), "{name}: printed a session");
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(err.lines().count(), 1, "{name}: {err}");
            assert!(err.contains(name), "{err}");
            assert!(err.contains("not a session of any agent"), "{err}");
            assert!(err.contains("kimi-cli"), "{err}");
        }
    }
    let sessions = history("v0_55_dmail").join("sessions");
    let folder = std::fs::read_dir(&sessions)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let main = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| !p.file_name().unwrap().to_string_lossy().contains('_'))
        .unwrap();
    let out = bin()
        .args(["tree", "--format", "json"])
        .arg(&main)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["tool"], "kimi-cli");
    assert!(v["world_lines"].as_array().unwrap().len() >= 2);
}

/// Nothing outside `src/sources/` (and the kimi writer and demo, which
/// write kimi-format sessions) names an agent: everything else asks a
/// session's source.
#[test]
fn only_sources_name_an_agent() {
    let offenders: Vec<PathBuf> = source_files()
        .into_iter()
        .filter(|(rel, _)| {
            !["sources", "kimi_writer", "demo"]
                .iter()
                .any(|room| rel.starts_with(room))
        })
        .filter(|(_, text)| {
            ["kimi_cli::", "kimi_code::", "Tool::Kimi"]
                .iter()
                .any(|n| text.contains(n))
        })
        .map(|(rel, _)| rel)
        .collect();
    assert!(
        offenders.is_empty(),
        "files outside sources/ naming an agent: {offenders:?}"
    );
}

/// The world-line builder opens no file: sources hand it world lines with
/// their forks, and bodies and line heads come through the session's
/// source. Tests inside its files may make sessions on disk.
#[test]
fn the_builder_opens_no_file() {
    let mut offenders = Vec::new();
    // `tests.rs` is a `#[cfg(test)]` module of its own.
    for (rel, text) in source_files()
        .into_iter()
        .filter(|(rel, _)| rel.starts_with("worldline") && !rel.ends_with("tests.rs"))
    {
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for n in [
            "std::fs",
            "File::open",
            "OpenOptions",
            "read::load",
            "read::guard",
            "same_record_on_disk",
            "index_file",
        ] {
            if code.contains(n) {
                offenders.push(format!("{}: {n}", rel.display()));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "the builder opens files: {offenders:?}"
    );
}
