//! Issue #12's report: hostile inputs against the release binary, with the
//! bounds the README's "Reliability" section promises.
//!
//! ```text
//! cargo bench --bench hostile [-- --big]   (WORLDLINE_HOSTILE_ONLY=text: only the inputs named so)
//! ```
//!
//! Each case builds a session (or a peer) in a temp dir, runs `worldline`
//! with a 10 s deadline (a hang is killed and reported), takes its peak RSS
//! from `wait4` (an upper bound), and checks the output: it must end, stay under
//! its time and memory bound, say what it skipped, and print no raw control
//! character. `--big` adds the largest inputs (3 M malformed lines, a 200 MB
//! wire line, a 50 MB title). Under `cargo test --benches` it only says how
//! to run it. Issue #19's round 2 (Kimi Code side files and branches,
//! `send`'s limits, a live wire line, Mermaid directives, `replay --dir`,
//! rotation 2^64−1) is in `hostile/round2.rs`.

use std::ffi::OsString;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use worldline::denwa::{DenwaRenji, DenwaServer, ServerConfig};

const FIXTURE: &str = "fixtures/kimi-cli/subagent";

struct Outcome {
    secs: f64,
    rss_kb: u64,
    code: Option<i32>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

/// Runs with a deadline; `None` when it had to be killed.
// The child is reaped by `wait4` (for its rusage), which clippy cannot see.
#[allow(clippy::zombie_processes)]
fn run(cmd: &mut Command, deadline: Duration) -> Option<Outcome> {
    // The big inputs were built in this process: give their memory back,
    // so the child's ru_maxrss (which counts this process until the exec)
    // is the child's own.
    // SAFETY: malloc_trim only releases free heap memory.
    unsafe { libc::malloc_trim(0) };
    let t = Instant::now();
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn worldline");
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let o = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = so.read_to_end(&mut v);
        v
    });
    let e = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = se.read_to_end(&mut v);
        v
    });
    // wait4's ru_maxrss: the child's peak, an upper bound (a vfork-style
    // spawn counts this process's resident set until the exec).
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    let (code, rss_kb) = loop {
        let mut status = 0;
        // SAFETY: an all-zero rusage is a valid value to be overwritten.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: valid out-pointers; WNOHANG returns at once.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
            break (code, u64::try_from(usage.ru_maxrss).unwrap_or(0));
        }
        if t.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    Some(Outcome {
        secs: t.elapsed().as_secs_f64(),
        rss_kb,
        code,
        stdout: o.join().unwrap(),
        stderr: e.join().unwrap(),
    })
}

fn raw_controls(bytes: &[u8]) -> usize {
    String::from_utf8_lossy(bytes)
        .chars()
        .filter(|&c| {
            (c.is_control() && c != '\n' && c != '\t') || ('\u{80}'..='\u{9f}').contains(&c)
        })
        .count()
}

/// A fresh share dir holding a copy of the subagent fixture.
struct Share {
    _tmp: tempfile::TempDir,
    share: PathBuf,
    session: PathBuf,
}

fn share() -> Share {
    let tmp = tempfile::tempdir().unwrap();
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE);
    copy_dir(&from, tmp.path());
    let share = tmp.path().to_owned();
    let session = first_session(&share);
    Share {
        _tmp: tmp,
        share,
        session,
    }
}

fn first_session(share: &Path) -> PathBuf {
    let only = |d: &Path| {
        std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.is_dir())
            .unwrap()
    };
    only(&only(&share.join("sessions")))
}

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

fn plant(p: &Path, how: &str) {
    let _ = std::fs::remove_file(p);
    match how {
        "FIFO" => {
            let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
            // SAFETY: a valid NUL-terminated path.
            unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
        }
        "/dev/zero" | "/dev/urandom" => std::os::unix::fs::symlink(how, p).unwrap(),
        _ => unreachable!(),
    }
}

/// The binary on a hostile input, with at most 4 GB of address space: an
/// unfixed reader of `/dev/zero` must fail here, not eat a shared machine.
fn worldline(share: &Path, args: &[OsString]) -> Command {
    use std::os::unix::process::CommandExt;
    let mut c = Command::new(env!("CARGO_BIN_EXE_worldline"));
    c.args(args)
        .env("KIMI_SHARE_DIR", share)
        .current_dir(share)
        .stdin(Stdio::null());
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

fn os(v: &[&str]) -> Vec<OsString> {
    v.iter().map(OsString::from).collect()
}

struct Report {
    tried: usize,
    handled: usize,
}

impl Report {
    /// Runs one case and prints its row. `check` says what is wrong with a
    /// finished run, if anything.
    fn case(
        &mut self,
        name: &str,
        mut cmd: Command,
        max_secs: f64,
        max_mb: u64,
        check: impl Fn(&Outcome) -> Result<(), String>,
    ) {
        // WORLDLINE_HOSTILE_ONLY=text: only the inputs whose name holds it.
        if std::env::var("WORLDLINE_HOSTILE_ONLY").is_ok_and(|only| !name.contains(&only)) {
            return;
        }
        self.tried += 1;
        let deadline = Duration::from_secs_f64((2.0 * max_secs).max(10.0));
        let (verdict, secs, mb) = match run(&mut cmd, deadline) {
            None => (
                format!("HANG (killed at {} s)", deadline.as_secs()),
                deadline.as_secs_f64(),
                0.0,
            ),
            Some(o) => {
                let mb = o.rss_kb as f64 / 1024.0;
                let controls = raw_controls(&o.stdout) + raw_controls(&o.stderr);
                let verdict = if o.secs > max_secs {
                    format!("SLOW (> {max_secs} s)")
                } else if mb > max_mb as f64 {
                    format!("BIG (> {max_mb} MB)")
                } else if controls > 0 {
                    format!("LEAK ({controls} raw control chars)")
                } else {
                    match check(&o) {
                        Ok(()) => "ok".to_string(),
                        Err(e) => format!("WRONG: {e}"),
                    }
                };
                (verdict, o.secs, mb)
            }
        };
        if verdict == "ok" {
            self.handled += 1;
        }
        println!(
            "{name:<52} {secs:>7.3} s {mb:>8.1} MB  (≤ {max_secs} s, ≤ {max_mb} MB)  {verdict}"
        );
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn warns(o: &Outcome, file: &str) -> Result<(), String> {
    let all = format!("{}{}", text(&o.stdout), text(&o.stderr));
    if o.code != Some(0) {
        return Err(format!("exit {:?}: {}", o.code, text(&o.stderr)));
    }
    if all.contains(file) && (all.contains("not a regular file") || all.contains("not read")) {
        Ok(())
    } else {
        Err(format!("no warning naming {file}"))
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if !args.iter().any(|a| a == "--bench") {
        println!("hostile: a report; run it with `cargo bench --bench hostile [-- --big]`");
        return;
    }
    let big = args.iter().any(|a| a == "--big");
    let mut r = Report {
        tried: 0,
        handled: 0,
    };
    println!("{:<52} {:>9} {:>11}", "input", "time", "peak RSS");

    // 1. Special files under every metadata name.
    for how in ["FIFO", "/dev/zero", "/dev/urandom"] {
        for name in ["wire.jsonl", "state.json", "subagents/*/meta.json"] {
            let s = share();
            let target = match name {
                "subagents/*/meta.json" => {
                    let sub = std::fs::read_dir(s.session.join("subagents"))
                        .unwrap()
                        .next()
                        .unwrap()
                        .unwrap()
                        .path();
                    sub.join("meta.json")
                }
                n => s.session.join(n),
            };
            plant(&target, how);
            let file = name.rsplit('/').next().unwrap().to_string();
            let cmd = worldline(
                &s.share,
                &[
                    os(&["tree"]),
                    vec![s.session.clone().into()],
                    os(&["--format", "json"]),
                ]
                .concat(),
            );
            r.case(&format!("{name} is {how}: tree"), cmd, 1.0, 50, |o| {
                warns(o, &file)
            });
            if name == "state.json" {
                let cmd = worldline(&s.share, &os(&["list", "--all"]));
                r.case(&format!("{name} is {how}: list"), cmd, 1.0, 50, |o| {
                    warns(o, &file)
                });
            }
        }
        let s = share();
        plant(&s.share.join("kimi.json"), how);
        let cmd = worldline(&s.share, &os(&["list", "--all"]));
        r.case(&format!("kimi.json is {how}: list"), cmd, 1.0, 50, |o| {
            warns(o, "kimi.json")
        });
        let s = share();
        plant(&s.session.join("denwa.json"), how);
        let cmd = worldline(
            &s.share,
            &[
                os(&["send"]),
                vec![s.session.clone().into()],
                os(&["--status"]),
            ]
            .concat(),
        );
        r.case(
            &format!("denwa.json is {how}: send --status"),
            cmd,
            1.0,
            50,
            |o| {
                (o.code == Some(2) && text(&o.stderr).contains("denwa.json"))
                    .then_some(())
                    .ok_or_else(|| text(&o.stderr))
            },
        );
    }

    // 2. Floods of malformed lines.
    let counts: &[usize] = if big {
        &[100_000, 1_000_000, 3_000_000]
    } else {
        &[100_000, 1_000_000]
    };
    for &n in counts {
        let s = share();
        let ctx = s.session.join("context.jsonl");
        let mut bytes = std::fs::read(&ctx).unwrap();
        bytes.extend(b"x\n".repeat(n));
        std::fs::write(&ctx, bytes).unwrap();
        for format in ["json", "text"] {
            let cmd = worldline(
                &s.share,
                &[
                    os(&["tree"]),
                    vec![s.session.clone().into()],
                    os(&["--format", format]),
                ]
                .concat(),
            );
            r.case(
                &format!("{n} malformed lines: tree --format {format}"),
                cmd,
                10.0,
                100,
                |o| {
                    let out = text(&o.stdout);
                    out.contains(&format!("{} more warnings", n - 100))
                        .then_some(())
                        .ok_or("no count of the dropped warnings".into())
                },
            );
        }
    }

    // 3. Huge lines and titles.
    let line_mb = if big { 200 } else { 20 };
    {
        let s = share();
        let wire = s.session.join("wire.jsonl");
        let mut bytes = std::fs::read(&wire).unwrap_or_default();
        bytes.extend(b"{\"timestamp\": 1.0, \"message\": {\"type\": \"ToolResult\", \"payload\": {\"tool_call_id\": \"zz\", \"output\": \"");
        bytes.extend(std::iter::repeat_n(b'q', line_mb << 20));
        bytes.extend(b"\"}}}\n");
        std::fs::write(&wire, bytes).unwrap();
        let cmd = worldline(
            &s.share,
            &[
                os(&["tree"]),
                vec![s.session.clone().into()],
                os(&["--format", "json"]),
            ]
            .concat(),
        );
        r.case(
            &format!("a {line_mb} MB wire line: tree"),
            cmd,
            5.0,
            60,
            |o| (o.code == Some(0)).then_some(()).ok_or(text(&o.stderr)),
        );
    }
    let title_mb = if big { 50 } else { 5 };
    {
        let s = share();
        // Written in pieces: a 50 MB string here would be counted in the
        // child's peak (see `run`).
        use std::io::Write;
        let mut f =
            std::io::BufWriter::new(std::fs::File::create(s.session.join("state.json")).unwrap());
        f.write_all(br#"{"custom_title": ""#).unwrap();
        for _ in 0..(title_mb << 20) / 18 {
            f.write_all(br"T\u001b]0;x\u0007").unwrap();
        }
        f.write_all(br#""}"#).unwrap();
        f.flush().unwrap();
        for args in [
            [os(&["tree"]), vec![s.session.clone().into()]].concat(),
            os(&["list", "--all"]),
        ] {
            let label = format!(
                "a {title_mb} MB title with escapes: {}",
                args[0].to_string_lossy()
            );
            let cmd = worldline(&s.share, &args);
            r.case(&label, cmd, 2.0, 100, |o| {
                (o.stdout.len() < 64 << 10)
                    .then_some(())
                    .ok_or(format!("printed {} bytes", o.stdout.len()))
            });
        }
    }

    // 4. Escape sequences in directory names.
    {
        let s = share();
        let evil = s.session.with_file_name(std::ffi::OsStr::from_bytes(
            b"e\x1b]0;pwned\x07\x1b]52;c;ZXZpbA==\x07\xc2\x9b2J",
        ));
        std::fs::rename(&s.session, &evil).unwrap();
        for args in [
            [os(&["tree"]), vec![evil.clone().into()]].concat(),
            [
                os(&["tree"]),
                vec![evil.clone().into()],
                os(&["--format", "mermaid"]),
            ]
            .concat(),
            [
                os(&["tree"]),
                vec![evil.clone().into()],
                os(&["--format", "json"]),
            ]
            .concat(),
            os(&["list", "--all"]),
        ] {
            let label = format!(
                "escapes in a dir name: {}",
                args.iter()
                    .map(|a| a.to_string_lossy())
                    .filter(|a| !a.contains('\u{1b}'))
                    .collect::<Vec<_>>()
                    .join(" ")
            );
            let cmd = worldline(&s.share, &args);
            r.case(&label, cmd, 1.0, 50, |o| {
                (o.code == Some(0)).then_some(()).ok_or(text(&o.stderr))
            });
        }
    }

    // 5. Forged announcements and a crowded server.
    {
        let tmp = tempfile::tempdir().unwrap();
        let shared = tmp.path().join("shared");
        std::fs::create_dir(&shared).unwrap();
        let sock = shared.join("evil.sock");
        let listener = UnixListener::bind(&sock).unwrap();
        listener.set_nonblocking(true).unwrap();
        let got = Arc::new(AtomicUsize::new(0));
        let g = Arc::clone(&got);
        std::thread::spawn(move || loop {
            if let Ok((mut s, _)) = listener.accept() {
                let mut buf = [0u8; 4096];
                s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
                if let Ok(n) = s.read(&mut buf) {
                    g.fetch_add(n, Ordering::Relaxed);
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        });
        for (label, socket, pid) in [
            (
                "forged denwa.json: socket in a shared dir",
                sock.clone(),
                i64::from(std::process::id()),
            ),
            ("forged denwa.json: pid 1", sock.clone(), 1),
            (
                "forged denwa.json: relative socket",
                PathBuf::from("shared/evil.sock"),
                i64::from(std::process::id()),
            ),
        ] {
            let ann =
                serde_json::json!({"protocol":"denwa/1","socket":socket,"pid":pid,"agent":"main"});
            std::fs::write(tmp.path().join("denwa.json"), ann.to_string()).unwrap();
            let mut cmd = worldline(
                tmp.path(),
                &[
                    os(&["send"]),
                    vec![tmp.path().into()],
                    os(&["--checkpoint", "0", "--message", "secret"]),
                ]
                .concat(),
            );
            cmd.current_dir(tmp.path());
            let got = Arc::clone(&got);
            r.case(label, cmd, 1.0, 50, move |o| {
                std::thread::sleep(Duration::from_millis(50));
                match (o.code, got.load(Ordering::Relaxed)) {
                    (Some(2), 0) => Ok(()),
                    (c, n) => Err(format!("exit {c:?}, the stranger got {n} bytes")),
                }
            });
        }

        let runtime = tempfile::tempdir().unwrap();
        let session = tempfile::tempdir().unwrap();
        let renji = Arc::new(Mutex::new(DenwaRenji::new()));
        renji.lock().unwrap().set_n_checkpoints(2);
        let server = DenwaServer::start(
            ServerConfig {
                session_dir: session.path().to_owned(),
                session_id: "bench".into(),
                agent: None,
                server_name: "bench 0".into(),
                runtime_dir: Some(runtime.path().to_owned()),
            },
            renji,
        )
        .unwrap();
        let idle: Vec<_> = (0..200)
            .filter_map(|_| std::os::unix::net::UnixStream::connect(server.socket_path()).ok())
            .collect();
        let cmd = worldline(
            session.path(),
            &[
                os(&["send"]),
                vec![session.path().into()],
                os(&["--checkpoint", "1", "--message", "real"]),
            ]
            .concat(),
        );
        r.case(
            "200 idle connections, then a real send",
            cmd,
            1.0,
            50,
            |o| (o.code == Some(0)).then_some(()).ok_or(text(&o.stderr)),
        );
        // Through stdin: one argument cannot be that long.
        let msg_file = runtime.path().join("big-dmail.txt");
        std::fs::write(&msg_file, "m".repeat((1 << 20) + 1)).unwrap();
        let mut cmd = worldline(
            session.path(),
            &[
                os(&["send"]),
                vec![session.path().into()],
                os(&["--checkpoint", "0"]),
            ]
            .concat(),
        );
        cmd.stdin(std::fs::File::open(&msg_file).unwrap());
        r.case("a D-Mail over 1 MiB", cmd, 1.0, 50, |o| {
            (o.code == Some(2) && text(&o.stderr).contains("1 MiB"))
                .then_some(())
                .ok_or(text(&o.stderr))
        });
        drop(idle);
    }

    round2::cases(&mut r, big);

    println!(
        "\n{} inputs tried, {} handled within their bounds",
        r.tried, r.handled
    );
}

#[path = "hostile/round2.rs"]
mod round2;
