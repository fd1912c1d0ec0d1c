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

/// Steps `agent` until `stop` is set, sleeping each beat's pause / `speed`.
pub fn run_agent(
    agent: &mut DemoAgent,
    clock: &dyn Clock,
    speed: f64,
    stop: &AtomicBool,
) -> Result<(), DemoError> {
    while !stop.load(Ordering::Relaxed) {
        let pause = agent.step()?.div_f64(speed);
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
    server: crate::denwa::DenwaServer,
}

impl DenwaHosting {
    /// Removes the socket and `denwa.json`.
    pub fn shutdown(self) {
        self.server.shutdown();
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
    Ok(DenwaHosting { server })
}

fn seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    nanos ^ (u64::from(std::process::id()) << 32)
}

/// How to run the demo: plain values, so the library never sees clap.
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
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // A second signal while the first is being handled exits at once.
        signal_hook::flag::register_conditional_shutdown(sig, 130, Arc::clone(&stop))?;
        signal_hook::flag::register(sig, Arc::clone(&stop))?;
    }

    // Only a temp dir made for the TUI is removed afterwards; a headless run
    // prints its dir for someone to use, so it stays.
    let (share_dir, temp) = match &args.dir {
        Some(d) => {
            std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
            (std::path::absolute(d).unwrap_or_else(|_| d.clone()), None)
        }
        None => {
            let t = tempfile::Builder::new()
                .prefix("worldline-demo-")
                .tempdir()
                .context("creating a temporary directory")?;
            (t.path().to_owned(), Some(t))
        }
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
    let mut temp = temp;

    let result = if args.headless {
        let _ = temp.take().map(tempfile::TempDir::keep);
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", session_dir.display())?;
        out.flush()?;
        drop(out);
        run_agent(&mut agent, &SystemClock, args.speed, &stop).map_err(anyhow::Error::from)
    } else {
        let speed = args.speed;
        let agent_stop = Arc::clone(&stop);
        let worker =
            std::thread::spawn(move || run_agent(&mut agent, &SystemClock, speed, &agent_stop));
        let ui = crate::ui::run_on(session_dir.clone(), true, false);
        stop.store(true, Ordering::Relaxed);
        let agent_result = match worker.join() {
            Ok(r) => r.map_err(anyhow::Error::from),
            Err(_) => Err(anyhow::anyhow!("the demo agent panicked")),
        };
        ui.and(agent_result)
    };
    hosting.shutdown();
    drop(temp);
    result
}
