//! Running the demo: pick the directory, host DenwaRenji, pace the agent,
//! stop on Ctrl-C/SIGTERM, and open the TUI unless headless.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;

use crate::denwa::DenwaRenji;

use super::agent::{DemoAgent, DemoConfig, DemoError};
use super::clock::{Clock, SystemClock};
use super::rng::Rng;

/// The longest uninterrupted sleep, so a stop request is seen quickly.
const SLEEP_SLICE: Duration = Duration::from_millis(50);

/// Whether the agent keeps waiting for D-Mails once its story has ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtEnd {
    /// Return: a headless run ends with its story.
    Stop,
    /// Keep serving: the TUI is open and a D-Mail may wake the agent.
    Wait,
}

/// Steps `agent` until `stop` is set (or, with `AtEnd::Stop`, until the
/// story ends), sleeping each beat's pause / `speed`.
pub fn run_agent(
    agent: &mut DemoAgent,
    clock: &dyn Clock,
    speed: f64,
    at_end: AtEnd,
    stop: &AtomicBool,
) -> Result<(), DemoError> {
    while !stop.load(Ordering::Relaxed) {
        let pause = agent.step()?.div_f64(speed);
        if at_end == AtEnd::Stop && agent.finished() {
            return Ok(());
        }
        let mut left = pause;
        while !left.is_zero() && !stop.load(Ordering::Relaxed) {
            let slice = left.min(SLEEP_SLICE);
            clock.sleep(slice);
            left -= slice;
        }
    }
    Ok(())
}

/// Keeps the demo's DenwaRenji reachable from `worldline send` and the TUI.
pub struct DenwaHosting {
    server: Option<crate::denwa::DenwaServer>,
}

impl DenwaHosting {
    /// Removes the socket, `denwa.json` and the registration.
    pub fn shutdown(mut self) {
        self.close();
    }

    fn close(&mut self) {
        if let Some(server) = self.server.take() {
            crate::denwa::live_list::unregister(server.socket_path());
            server.shutdown();
        }
    }
}

impl Drop for DenwaHosting {
    /// An error on the way out (the terminal gone) still unregisters.
    fn drop(&mut self) {
        self.close();
    }
}

fn start_denwa(
    session_dir: &Path,
    session_id: &str,
    renji: Arc<Mutex<DenwaRenji>>,
) -> anyhow::Result<DenwaHosting> {
    let cfg = crate::denwa::ServerConfig {
        session_dir: session_dir.to_owned(),
        session_id: session_id.to_owned(),
        agent: None,
        server_name: format!("worldline-demo {}", env!("CARGO_PKG_VERSION")),
        runtime_dir: None,
    };
    let server = crate::denwa::DenwaServer::start(cfg, renji)?;
    // The session lives in a temporary directory no listing looks in:
    // registered, `send --status`, `list` and ids find it while it runs.
    let _ = crate::denwa::live_list::register(server.socket_path(), session_dir);
    Ok(DenwaHosting {
        server: Some(server),
    })
}

fn seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    nanos ^ (u64::from(std::process::id()) << 32)
}

/// How to run the demo: plain values, so the library never sees the command line.
#[derive(Debug, Clone, PartialEq)]
pub struct DemoOptions {
    /// Write the session here instead of a fresh temporary directory.
    pub dir: Option<PathBuf>,
    /// Run only the agent; print the session directory on the first line.
    pub headless: bool,
    /// Pace multiplier over the base pace (about a record a second at 1).
    pub speed: f64,
}

impl Default for DemoOptions {
    fn default() -> Self {
        DemoOptions {
            dir: None,
            headless: false,
            speed: 2.0,
        }
    }
}

/// What to tell the user once the demo is over: where its session stays,
/// how many world lines it has and what to run on it.
pub fn farewell(session_dir: &Path, finished: bool, world_lines: usize) -> String {
    let dir = session_dir.display().to_string();
    let quoted = if dir.contains(|c: char| c.is_whitespace() || "'\"$`\\".contains(c)) {
        format!("'{}'", dir.replace('\'', "'\\''"))
    } else {
        dir.clone()
    };
    let ending = if finished {
        "The demo's story ended"
    } else {
        "The demo stopped before its story ended"
    };
    let s = if world_lines == 1 { "" } else { "s" };
    format!(
        "{ending}; its session ({world_lines} world line{s}) stays in\n  {dir}\n\
         Look at it again with\n  \
         worldline {quoted}\n  \
         worldline tree {quoted}\n  \
         worldline watch --json {quoted}\n\
         (`worldline send` needs a live agent: run another `worldline demo` to send it D-Mails.)\n"
    )
}

/// `worldline demo`.
pub fn run(args: &DemoOptions) -> anyhow::Result<()> {
    if !(args.speed.is_finite() && args.speed > 0.0) {
        return Err(crate::Error::Usage(format!(
            "--speed must be a positive number, not {}",
            args.speed
        ))
        .into());
    }
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        // A second signal while the first is being handled exits at once.
        signal_hook::flag::register_conditional_shutdown(sig, 130, Arc::clone(&stop))?;
        signal_hook::flag::register(sig, Arc::clone(&stop))?;
    }

    // The session is the point of the demo afterwards: it always stays.
    let share_dir = match &args.dir {
        Some(d) => {
            std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
            std::path::absolute(d).unwrap_or_else(|_| d.clone())
        }
        None => tempfile::Builder::new()
            .prefix("worldline-demo-")
            .tempdir()
            .context("creating a temporary directory")?
            .keep(),
    };
    let mut rng = Rng::new(seed());
    let session_id = rng.uuid();
    let work_dir = std::env::current_dir().unwrap_or_else(|_| share_dir.join("tally"));
    let cfg = DemoConfig {
        share_dir: share_dir.clone(),
        work_dir,
        session_id: session_id.clone(),
        seed: rng.next_u64(),
    };
    let renji = Arc::new(Mutex::new(DenwaRenji::new()));
    let mut agent = DemoAgent::create(&cfg, Arc::clone(&renji), Box::new(SystemClock))?;
    let session_dir: PathBuf = agent.session_dir().to_owned();
    let hosting = start_denwa(&session_dir, &session_id, renji)?;

    let (result, (finished, world_lines)) = if args.headless {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", session_dir.display())?;
        out.flush()?;
        drop(out);
        let r = run_agent(&mut agent, &SystemClock, args.speed, AtEnd::Stop, &stop);
        (
            r.map_err(anyhow::Error::from),
            (agent.finished(), agent.world_lines()),
        )
    } else {
        let speed = args.speed;
        let agent_stop = Arc::clone(&stop);
        let worker = std::thread::spawn(move || {
            let r = run_agent(&mut agent, &SystemClock, speed, AtEnd::Wait, &agent_stop);
            (r, (agent.finished(), agent.world_lines()))
        });
        let ui = crate::ui::run_on(session_dir.clone(), true, false);
        stop.store(true, Ordering::Relaxed);
        let (agent_result, finished) = match worker.join() {
            Ok((r, f)) => (r.map_err(anyhow::Error::from), f),
            Err(_) => (Err(anyhow::anyhow!("the demo agent panicked")), (false, 0)),
        };
        (ui.and(agent_result), finished)
    };
    hosting.shutdown();
    // Said even after an error: the session is there either way.
    let mut out = std::io::stdout().lock();
    let _ = write!(out, "{}", farewell(&session_dir, finished, world_lines));
    let _ = out.flush();
    result
}
