//! End to end in a real terminal: tmux runs the binary on a fixture,
//! send-keys navigates, capture-pane shows the world lines and the D-Mail
//! text, and `q` leaves a clean shell. Skipped (loudly) without tmux.

mod common;

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

struct Tmux {
    socket: String,
    /// The socket file, removed on drop (kill-server may leave it).
    socket_path: Option<PathBuf>,
}

impl Tmux {
    fn cmd(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux runs")
    }

    fn capture(&self) -> String {
        String::from_utf8_lossy(&self.cmd(&["capture-pane", "-p", "-t", "wl"]).stdout).into_owned()
    }

    fn keys(&self, keys: &[&str]) {
        for k in keys {
            self.cmd(&["send-keys", "-t", "wl", k]);
            std::thread::sleep(Duration::from_millis(150));
        }
    }

    /// Polls the pane until `pred` holds (at most 10 s).
    fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let pane = self.capture();
            if pred(&pane) {
                return pane;
            }
            if start.elapsed() > Duration::from_secs(10) {
                panic!("timed out waiting for {what}; the pane shows:\n{pane}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
        if let Some(p) = &self.socket_path {
            let _ = std::fs::remove_file(p);
        }
    }
}

fn fixture(name: &str) -> std::path::PathBuf {
    common::fixture_session("kimi-cli", name)
}

fn start(size: (u16, u16), tag: &str) -> Option<Tmux> {
    let bin = env!("CARGO_BIN_EXE_worldline");
    let dir = fixture("dmail_twice");
    let script = format!("'{}' '{}'; echo WL-EXITED-$?; sleep 30", bin, dir.display());
    start_script(size, tag, &script)
}

fn start_script(size: (u16, u16), tag: &str, script: &str) -> Option<Tmux> {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("\n!!! tmux is not installed: SKIPPING the end-to-end TUI test !!!\n");
        return None;
    }
    let mut t = Tmux {
        socket: format!("wl-test-{}-{tag}", std::process::id()),
        socket_path: None,
    };
    let out = t.cmd(&[
        "-f",
        "/dev/null",
        "new-session",
        "-d",
        "-s",
        "wl",
        "-x",
        &size.0.to_string(),
        "-y",
        &size.1.to_string(),
        "env",
        "TERM=xterm-256color",
        "sh",
        "-c",
        script,
    ]);
    assert!(out.status.success(), "tmux new-session: {out:?}");
    let path = t.cmd(&["display-message", "-p", "#{socket_path}"]).stdout;
    let path = String::from_utf8_lossy(&path).trim().to_string();
    t.socket_path = (!path.is_empty()).then(|| PathBuf::from(path));
    Some(t)
}

/// The map is up: its title rule and every line's reason.
fn map_shown(p: &str) -> bool {
    p.contains("─ world lines") && p.contains("← D-Mail from β at ⚑3")
}

#[test]
fn navigates_world_lines_and_quits_cleanly() {
    let Some(t) = start((120, 40), "big") else {
        return;
    };
    let pane = t.wait_for("the map", map_shown);
    eprintln!("120x40 first screen:\n{pane}");
    // Every world line named on the first screen, with its reason.
    for reason in [
        "the first world line",
        "← D-Mail from α at ⚑2 → ⚑1",
        "← D-Mail from β at ⚑3 → ⚑2",
    ] {
        assert!(pane.contains(reason), "{reason}:\n{pane}");
    }
    assert!(pane.contains("γ: back to ⚑2 from β"), "caption:\n{pane}");
    // Opens on the head of the current line, one row per step.
    assert!(
        pane.contains("◆ γ  ⚑3  asst   Done after two D-Mails."),
        "{pane}"
    );
    assert!(!pane.contains("CHECKPOINT"), "no bookkeeping rows:\n{pane}");
    assert!(pane.contains("●─╮"), "branch glyphs:\n{pane}");
    // g ] ] lands on α's step with the SendDMail call; its detail names it.
    t.keys(&["g", "]", "]"]);
    let pane = t.wait_for("the sender", |p| p.contains("SendDMail → checkpoint 1"));
    assert!(pane.contains("accepted: created"), "{pane}");
    // l switches to β; Enter unfolds the step; j Enter opens a record.
    t.keys(&["l", "Enter"]);
    let pane = t.wait_for("β unfolded", |p| {
        p.contains("β: back to ⚑1 from α") && p.contains("▾")
    });
    assert!(pane.contains(" · tool "), "the step's records:\n{pane}");
    t.keys(&["j", "Enter"]);
    t.wait_for("a record in full", |p| p.contains("record (Enter/Esc back"));
    t.keys(&["Escape", "?"]);
    t.wait_for("help", |p| p.contains("Divergence N.ppphhh"));
    t.keys(&["?", "q"]);
    let pane = t.wait_for("the shell", |p| p.contains("WL-EXITED-0"));
    // Back on the normal screen: the TUI's rows are gone.
    assert!(
        !pane.contains("─ world lines"),
        "alternate screen left:\n{pane}"
    );
}

#[test]
fn fits_80x24() {
    let Some(t) = start((80, 24), "small") else {
        return;
    };
    // A capture can land mid-frame (rows drawn, footer not yet): wait for
    // the whole first screen, footer included.
    let pane = t.wait_for("the map and the footer", |p| {
        map_shown(p) && p.contains("q quit")
    });
    eprintln!("80x24 first screen:\n{pane}");
    let footer = pane.lines().rfind(|l| !l.trim().is_empty()).unwrap();
    assert!(footer.contains("? help  q quit"), "{footer}");
    assert!(pane.contains("Done after two D-Mails"), "{pane}");
    assert!(pane.contains("Second fold"), "{pane}");
    t.keys(&["C-c"]);
    t.wait_for("the shell", |p| p.contains("WL-EXITED-0"));
}

#[test]
fn sigterm_restores_the_terminal() {
    signal_restores_the_terminal("TERM");
}

/// SIGQUIT and SIGUSR1 end the process by default (SIGQUIT with a core):
/// caught, they quit like SIGTERM and the terminal comes back.
#[test]
fn sigquit_and_sigusr1_restore_the_terminal() {
    signal_restores_the_terminal("QUIT");
    signal_restores_the_terminal("USR1");
}

fn signal_restores_the_terminal(signal: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let pidfile = tmp.path().join("pid");
    let bin = env!("CARGO_BIN_EXE_worldline");
    let dir = fixture("dmail_twice");
    // The inner shell writes its pid, then becomes worldline.
    let script = format!(
        "sh -c 'echo $$ > {}; exec {} {}'; echo WL-EXITED-$?; sleep 30",
        pidfile.display(),
        bin,
        dir.display()
    );
    let name = format!("sig{}", signal.to_lowercase());
    let Some(t) = start_script((100, 30), &name, &script) else {
        return;
    };
    t.wait_for("the map", map_shown);
    let pid = std::fs::read_to_string(&pidfile).unwrap();
    let status = Command::new("kill")
        .args([&format!("-{signal}"), pid.trim()])
        .status()
        .unwrap();
    assert!(status.success());
    let pane = t.wait_for("the shell", |p| p.contains("WL-EXITED-"));
    assert!(
        !pane.contains("─ world lines"),
        "SIG{signal}: alternate screen left:\n{pane}"
    );
}
