//! Issue #19 section 3, "Hostile input, round 2", with its bounds: Kimi Code
//! side files as FIFOs and devices (and `watch` on one), a `meta.json`
//! symlink, Kimi Code wires whose branch views would repeat 10^8 records,
//! `send` against a server that never accepts or trickles and a message
//! from `/dev/zero`, a live kimi-cli wire line of 200 MB (1 GB with
//! `--big`), a Mermaid directive in a D-Mail, `replay --dir` into a
//! directory holding files, and a rotation numbered 2^64−1.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::{copy_dir, os, plant, share, text, worldline, Outcome, Report};

const CODE_HOME: &str = "fixtures/kimi-code/a_undo1/home";

/// A fresh Kimi Code home (a copy of a fixture's) and its one session.
struct CodeHome {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    session: PathBuf,
}

fn code_home() -> CodeHome {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join(CODE_HOME),
        &home,
    );
    let only = |d: &Path| {
        std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.is_dir())
            .unwrap()
    };
    let session = only(&only(&home.join("sessions")));
    CodeHome {
        _tmp: tmp,
        home,
        session,
    }
}

/// The binary against a Kimi Code home (and no kimi-cli share).
fn code(home: &Path, args: &[OsString]) -> Command {
    let mut c = worldline(&home.join("no-kimi-cli"), args);
    c.env("KIMI_CODE_HOME", home).current_dir(home);
    c
}

/// Through `sh`, under the same 4 GB address-space limit: a follower
/// started, something done to its files, then SIGTERM. The rusage `wait4`
/// reports covers the shell's waited-for children.
fn sh(script: &str, home: &Path, vars: &[(&str, &Path)]) -> Command {
    use std::os::unix::process::CommandExt;
    let mut c = Command::new("sh");
    c.args(["-c", script])
        .env("WL", env!("CARGO_BIN_EXE_worldline"))
        .env("KIMI_CODE_HOME", home)
        .env("KIMI_SHARE_DIR", home)
        .current_dir(home)
        .stdin(std::process::Stdio::null());
    for (k, v) in vars {
        c.env(k, v);
    }
    // SAFETY: setrlimit is async-signal-safe; nothing else runs in the hook.
    unsafe {
        c.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 4 << 30,
                rlim_max: 4 << 30,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    c
}

fn says(o: &Outcome, words: &[&str]) -> Result<(), String> {
    let all = format!("{}{}", text(&o.stdout), text(&o.stderr));
    match words.iter().find(|w| !all.contains(**w)) {
        None => Ok(()),
        Some(w) => Err(format!(
            "exit {:?}, no {w:?} in: {}",
            o.code,
            all.chars().take(300).collect::<String>()
        )),
    }
}

fn ok_and_says(o: &Outcome, words: &[&str]) -> Result<(), String> {
    if o.code != Some(0) {
        return Err(format!("exit {:?}: {}", o.code, text(&o.stderr)));
    }
    says(o, words)
}

fn user(i: usize) -> String {
    format!(
        r#"{{"type":"context.append_message","message":{{"role":"user","content":[{{"type":"text","text":"p{i}"}}],"origin":{{"kind":"user"}}}}}}"#
    )
}

/// Kimi Code wires whose branch views share long prefixes.
fn wire(shape: &str, n: usize) -> Vec<u8> {
    let mut lines = vec![r#"{"type":"metadata","protocol_version":"1.5"}"#.to_string()];
    let mut active = "main".to_string();
    match shape {
        // Two prompts, then an undo edge of the last: each view one prompt
        // longer than its base's.
        "undo" => {
            for i in 0..n {
                lines.push(user(2 * i));
                lines.push(user(2 * i + 1));
                let at = lines.len() + 1;
                lines.push(format!(
                    r#"{{"type":"agent.switched","branch":"b{}","reason":"undo","base":{{"branch":"{active}","line":{}}},"turns":1,"legacyUndoLine":{}}}"#,
                    i + 1,
                    at - 2,
                    at + 1
                ));
                lines.push(r#"{"type":"context.undo","count":1}"#.into());
                active = format!("b{}", i + 1);
            }
        }
        // Kimi Code ≤ 0.42: undos only, fork points inferred.
        "legacy" => {
            for i in 0..n {
                lines.push(user(2 * i));
                lines.push(user(2 * i + 1));
                lines.push(r#"{"type":"context.undo","count":1}"#.into());
            }
        }
        // Each branch starts where the last ended.
        "chain" => {
            for i in 0..n {
                lines.push(user(i));
                let at = lines.len() + 1;
                lines.push(format!(
                    r#"{{"type":"agent.switched","branch":"b{}","reason":"fork","base":{{"branch":"{active}","line":{}}}}}"#,
                    i + 1,
                    at - 1
                ));
                active = format!("b{}", i + 1);
            }
        }
        // Every branch from main's third line.
        _ => {
            lines.push(user(0));
            lines.push(user(1));
            for i in 0..n {
                lines.push(format!(
                    r#"{{"type":"agent.switched","branch":"b{}","reason":"fork","base":{{"branch":"main","line":3}}}}"#,
                    i + 1
                ));
                lines.push(user(i + 2));
            }
        }
    }
    (lines.join("\n") + "\n").into_bytes()
}

pub fn cases(r: &mut Report, big: bool) {
    side_files(r);
    branches(r, big);
    send(r);
    live_wire_line(r, big);
    mermaid(r);
    replay_and_rotation(r);
    listing(r, big);
}

/// A kimi-cli share whose one work-dir folder holds what `make` writes.
fn kimi_cli_share(make: impl FnOnce(&Path)) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let folder = tmp.path().join("sessions/0123456789abcdef0123456789abcdef");
    std::fs::create_dir_all(&folder).unwrap();
    make(&folder);
    tmp
}

const LINE: &str = "{\"role\": \"user\", \"content\": \"hi\"}\n";

fn listing(r: &mut Report, big: bool) {
    let k = if big { 1 } else { 5 };
    let n = 10_000 / k;
    let t = kimi_cli_share(|f| {
        for i in 0..n {
            std::fs::write(
                f.join(format!("{i:08x}-0000-4000-8000-000000000000.jsonl")),
                LINE,
            )
            .unwrap();
        }
    });
    let cmd = worldline(t.path(), &os(&["list", "--all"]));
    r.case(
        &format!("{n} flat sessions in one folder: list --all"),
        cmd,
        3.0,
        100,
        |o| {
            let rows = text(&o.stdout).lines().count();
            (o.code == Some(0) && rows > n)
                .then_some(())
                .ok_or(format!("exit {:?}, {rows} rows", o.code))
        },
    );
    let n = 2_000 / k;
    let t = kimi_cli_share(|f| {
        for i in 0..n {
            let d = f.join(format!("{i:08x}-0000-4000-8000-000000000000"));
            std::fs::create_dir(&d).unwrap();
            std::fs::write(d.join("context.jsonl"), LINE).unwrap();
            let title = if i == 0 { "base" } else { "Fork: base" };
            std::fs::write(
                d.join("state.json"),
                format!("{{\"custom_title\": \"{title}\"}}"),
            )
            .unwrap();
        }
    });
    let cmd = worldline(t.path(), &os(&["list", "--all"]));
    r.case(
        &format!("{n} forks found by title: list --all"),
        cmd,
        3.0,
        100,
        |o| ok_and_says(o, &["└ fork"]),
    );
    let n = 20_000 / k;
    let t = kimi_cli_share(|f| {
        let d = f.join("00000000-0000-4000-8000-000000000000");
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join("context.jsonl"), LINE).unwrap();
        for i in 1..=n {
            std::fs::write(d.join(format!("context_sub_{i}.jsonl")), LINE).unwrap();
        }
    });
    let session = t
        .path()
        .join("sessions/0123456789abcdef0123456789abcdef/00000000-0000-4000-8000-000000000000");
    let cmd = worldline(t.path(), &[os(&["tree"]), vec![session.into()]].concat());
    r.case(
        &format!("{n} numbered subagents: tree"),
        cmd,
        3.0,
        300,
        |o| (o.code == Some(0)).then_some(()).ok_or(text(&o.stderr)),
    );
    // Kimi Code: an index of 100 000 lines for the current directory.
    let h = code_home();
    let wd = h.home.join("wd");
    std::fs::create_dir(&wd).unwrap();
    let mut index =
        std::io::BufWriter::new(std::fs::File::create(h.home.join("session_index.jsonl")).unwrap());
    let id = h
        .session
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    for i in 0..100_000 / k {
        let sid = if i % 2 == 0 {
            id.clone()
        } else {
            format!("session_{i}")
        };
        writeln!(
            index,
            "{}",
            serde_json::json!({"sessionId": sid, "workDir": wd, "sessionDir": h.session})
        )
        .unwrap();
    }
    index.flush().unwrap();
    drop(index);
    let mut cmd = code(&h.home, &os(&["list"]));
    cmd.current_dir(&wd);
    r.case(
        &format!("{} session_index.jsonl lines: list", 100_000 / k),
        cmd,
        2.0,
        100,
        |o| ok_and_says(o, &[&id[..20]]),
    );
}

fn side_files(r: &mut Report) {
    for how in ["FIFO", "/dev/zero"] {
        let h = code_home();
        let neighbour = h.session.with_file_name("session_neighbour");
        copy_dir(&h.session.join("agents"), &neighbour.join("agents"));
        for p in [
            h.session.join("state.json"),
            neighbour.join("state.json"),
            h.home.join("session_index.jsonl"),
            h.home.join("workspaces.json"),
        ] {
            plant(&p, how);
        }
        let cmd = code(
            &h.home,
            &[os(&["tree"]), vec![h.session.clone().into()]].concat(),
        );
        r.case(
            &format!("Kimi Code state.json is {how}: tree"),
            cmd,
            1.0,
            50,
            |o| ok_and_says(o, &["state.json", "not read"]),
        );
        let cmd = code(&h.home, &os(&["list", "--all"]));
        r.case(
            &format!("Kimi Code index/workspaces/neighbour {how}: list"),
            cmd,
            1.0,
            50,
            |o| {
                ok_and_says(
                    o,
                    &[
                        "session_index.jsonl",
                        "workspaces.json",
                        "session_neighbour/state.json",
                    ],
                )
            },
        );
    }
    {
        let h = code_home();
        let cmd = sh(
            r#"$WL watch --json --poll "$S" >/dev/null 2>&1 & p=$!
               sleep 0.5; rm -f "$S/state.json"; mkfifo "$S/state.json"; sleep 1
               kill -TERM $p; wait $p; echo ended"#,
            &h.home,
            &[("S", &h.session)],
        );
        r.case(
            "Kimi Code watch, state.json turns FIFO, SIGTERM",
            cmd,
            3.0,
            50,
            |o| says(o, &["ended"]),
        );
    }
    {
        let s = share();
        let sub = std::fs::read_dir(s.session.join("subagents"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let elsewhere = s.share.join("elsewhere-meta.json");
        std::fs::rename(sub.join("meta.json"), &elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, sub.join("meta.json")).unwrap();
        let cmd = worldline(
            &s.share,
            &[os(&["tree"]), vec![s.session.clone().into()]].concat(),
        );
        r.case("subagent meta.json is a symlink: tree", cmd, 1.0, 50, |o| {
            ok_and_says(o, &["meta.json", "symbolic link (not followed)"])
        });
    }
}

fn branches(r: &mut Report, big: bool) {
    let shapes: &[(&str, usize)] = if big {
        &[
            ("undo", 10_000),
            ("legacy", 10_000),
            ("chain", 30_000),
            ("star", 100_000),
        ]
    } else {
        &[
            ("undo", 10_000),
            ("legacy", 2_000),
            ("chain", 10_000),
            ("star", 20_000),
        ]
    };
    for &(shape, n) in shapes {
        let h = code_home();
        let bytes = wire(shape, n);
        let mb = bytes.len() as f64 / 1e6;
        std::fs::write(h.session.join("agents/main/wire.jsonl"), bytes).unwrap();
        let cmd = code(
            &h.home,
            &[
                os(&["tree"]),
                vec![h.session.clone().into()],
                os(&["--format", "json"]),
            ]
            .concat(),
        );
        r.case(
            &format!("Kimi Code {n} {shape} branches ({mb:.1} MB): tree"),
            cmd,
            5.0,
            300,
            // Past the world lines shown per agent (10 000), it says so.
            |o| {
                ok_and_says(
                    o,
                    if n >= 10_000 {
                        &["branches not shown"]
                    } else {
                        &[]
                    },
                )
            },
        );
        if shape == "undo" {
            let cmd = sh(
                r#"$WL watch --json --poll "$S" >/dev/null 2>&1 & p=$!
                   sleep 4; kill -TERM $p; wait $p; echo ended"#,
                &h.home,
                &[("S", &h.session)],
            );
            r.case(
                &format!("Kimi Code {n} {shape} branches: watch 4 s"),
                cmd,
                6.0,
                300,
                |o| says(o, &["ended"]),
            );
        }
    }
}

fn send(r: &mut Report) {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::io::AsRawFd;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    // A listener that never accepts, its backlog full.
    let stuck = dir.join("stuck.sock");
    let listener = UnixListener::bind(&stuck).unwrap();
    // SAFETY: listen(2) again on our own socket, to shrink its backlog.
    unsafe { libc::listen(listener.as_raw_fd(), 0) };
    let held = std::os::unix::net::UnixStream::connect(&stuck).unwrap();
    let cmd = worldline(
        tmp.path(),
        &[os(&["send"]), vec![stuck.clone().into()], os(&["--status"])].concat(),
    );
    r.case("send: a server that never accepts", cmd, 11.0, 50, |o| {
        (o.code == Some(2) && text(&o.stderr).contains("timed out"))
            .then_some(())
            .ok_or(text(&o.stderr))
    });
    // A server answering a byte every 100 ms, for ever.
    let trickle = dir.join("trickle.sock");
    let tl = UnixListener::bind(&trickle).unwrap();
    std::thread::spawn(move || {
        for s in tl.incoming() {
            let Ok(mut s) = s else { return };
            std::thread::spawn(move || {
                for b in br#"{"ok":true,"protocol":"denwa/1","#.iter().cycle() {
                    if s.write_all(&[*b]).is_err() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            });
        }
    });
    let cmd = worldline(
        tmp.path(),
        &[
            os(&["send"]),
            vec![trickle.clone().into()],
            os(&["--status"]),
        ]
        .concat(),
    );
    r.case(
        "send: a server trickling a byte per 100 ms",
        cmd,
        11.0,
        50,
        |o| {
            (o.code == Some(2) && text(&o.stderr).contains("timed out"))
                .then_some(())
                .ok_or(text(&o.stderr))
        },
    );
    // A real server; the message from /dev/zero.
    let runtime = tempfile::tempdir().unwrap();
    let session = tempfile::tempdir().unwrap();
    let renji = std::sync::Arc::new(std::sync::Mutex::new(worldline::denwa::DenwaRenji::new()));
    renji.lock().unwrap().set_n_checkpoints(2);
    let _server = worldline::denwa::DenwaServer::start(
        worldline::denwa::ServerConfig {
            session_dir: session.path().to_owned(),
            session_id: "bench".into(),
            agent: None,
            server_name: "bench 0".into(),
            runtime_dir: Some(runtime.path().to_owned()),
        },
        renji,
    )
    .unwrap();
    let mut cmd = worldline(
        session.path(),
        &[
            os(&["send"]),
            vec![session.path().into()],
            os(&["--checkpoint", "0"]),
        ]
        .concat(),
    );
    cmd.stdin(std::fs::File::open("/dev/zero").unwrap());
    r.case("send: the D-Mail from /dev/zero", cmd, 1.0, 50, |o| {
        (o.code == Some(2) && text(&o.stderr).contains("1 MiB"))
            .then_some(())
            .ok_or(text(&o.stderr))
    });
    drop(held);
    drop(listener);
}

fn live_wire_line(r: &mut Report, big: bool) {
    let mb = if big { 1024 } else { 200 };
    let s = share();
    let cmd = sh(
        &format!(
            r#"$WL watch --json --poll "$S" >/dev/null 2>&1 & p=$!
               sleep 0.5
               printf '{{"timestamp": 1.0, "message": {{"type": "ToolResult", "payload": {{"tool_call_id": "zz", "output": "' >> "$S/wire.jsonl"
               head -c {mb}M /dev/zero | tr '\0' q >> "$S/wire.jsonl"
               sleep 1.5; kill -TERM $p; wait $p; echo ended"#
        ),
        &s.share,
        &[("S", &s.session)],
    );
    r.case(
        &format!("a live wire line of {mb} MB being written: watch"),
        cmd,
        if big { 12.0 } else { 5.0 },
        100,
        |o| says(o, &["ended"]),
    );
}

fn mermaid(r: &mut Report) {
    let s = share();
    // The subagent's description is shown in the diagram (label and
    // comment): make it end in a directive and an unclosed one.
    let sub = std::fs::read_dir(s.session.join("subagents"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let meta = sub.join("meta.json");
    let t = std::fs::read_to_string(&meta).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&t).unwrap();
    v["description"] = "explore %%{init: {'theme':'forest'}}%% then %%{x: the rest".into();
    std::fs::write(&meta, v.to_string()).unwrap();
    let cmd = worldline(
        &s.share,
        &[
            os(&["tree"]),
            vec![s.session.clone().into()],
            os(&["--format", "mermaid"]),
        ]
        .concat(),
    );
    r.case(
        "session text spelling %%{init}%%: mermaid",
        cmd,
        1.0,
        50,
        |o| {
            let out = text(&o.stdout);
            let bad = out
                .lines()
                .filter(|l| {
                    let rest = l.trim_start();
                    rest.strip_prefix("%%").unwrap_or(rest).contains('%')
                })
                .count();
            if o.code != Some(0) {
                Err(text(&o.stderr))
            } else if !out.contains("#37;#37;{init") {
                Err("the description is not shown escaped".into())
            } else if bad > 0 {
                Err(format!("{bad} lines with a % of session text"))
            } else {
                Ok(())
            }
        },
    );
}

fn replay_and_rotation(r: &mut Report) {
    let s = share();
    let dst = s.share.join("not-empty");
    std::fs::create_dir(&dst).unwrap();
    std::fs::write(dst.join("state.json"), "{\"mine\":1}").unwrap();
    std::fs::write(dst.join("wire.jsonl"), "keep\n").unwrap();
    let cmd = worldline(
        &s.share,
        &[
            os(&["replay", "--headless", "--speed", "1000", "--dir"]),
            vec![dst.clone().into(), s.session.clone().into()],
        ]
        .concat(),
    );
    let state = dst.join("state.json");
    r.case(
        "replay --dir into a directory with files",
        cmd,
        1.0,
        50,
        move |o| {
            let kept = std::fs::read_to_string(&state).ok().as_deref() == Some("{\"mine\":1}");
            (o.code != Some(0) && kept && text(&o.stderr).contains("not empty"))
                .then_some(())
                .ok_or(format!(
                    "exit {:?}, kept {kept}: {}",
                    o.code,
                    text(&o.stderr)
                ))
        },
    );

    // A session with a rotation: the D-Mail fixture's.
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/kimi-cli/dmail_basic"),
        tmp.path(),
    );
    let session = super::first_session(tmp.path());
    std::fs::rename(
        session.join("context_1.jsonl"),
        session.join("context_18446744073709551615.jsonl"),
    )
    .unwrap();
    let cmd = worldline(
        tmp.path(),
        &[
            os(&["tree"]),
            vec![session.clone().into()],
            os(&["--format", "json"]),
        ]
        .concat(),
    );
    r.case("a rotation numbered 2^64-1: tree", cmd, 1.0, 50, |o| {
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).map_err(|e| e.to_string())?;
        let current: Vec<String> = v["world_lines"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|l| l["current"] == true)
            .map(|l| l["file"].as_str().unwrap_or("").to_string())
            .collect();
        (current == ["context.jsonl"])
            .then_some(())
            .ok_or(format!("current: {current:?}"))
    });
}
