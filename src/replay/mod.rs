//! `worldline replay`: plays a finished session as if it were live. The
//! original files are only read; the replay writes its own copy, into a
//! fresh temporary directory (or one the user names), write by write as
//! kimi-cli made them, paced by the session's wire times (or evenly without
//! them), and the TUI follows that copy through the ordinary live machinery.
//! Once played, the copy opens exactly as the original does. Flat sessions
//! (kimi-cli ≤ 0.58: files in the work dir's folder) replay into a folder
//! of their own, opened by their main file.

mod appends;
pub mod plan;

use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use plan::{Event, Op, Plan, EVEN_STEP};

use crate::error::{Error, Result};

/// Plain option values (the library never sees the command line).
#[derive(Debug, Clone)]
pub struct ReplayOptions {
    /// Wall-clock speed-up over the session's own pace.
    pub speed: f64,
    /// The longest wait between two writes, after `speed`: idle minutes of a
    /// real run (the user reading, a slow tool) don't stall a talk.
    pub max_gap: Duration,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            speed: 1.0,
            max_gap: Duration::from_secs(2),
        }
    }
}

/// The longest uninterrupted sleep, so a stop request is seen quickly.
const SLEEP_SLICE: Duration = Duration::from_millis(50);

/// Runs a plan's writes into `dst` in order.
pub struct Player {
    plan: Plan,
    dst: PathBuf,
    next: usize,
}

impl Player {
    /// `dst` is created if missing; an existing one must be empty. A
    /// replay appends to the files it writes, so a directory already
    /// holding some (a `wire.jsonl`, a `state.json`, a session) would have
    /// them corrupted.
    pub fn new(plan: Plan, dst: &Path) -> Result<Player> {
        std::fs::create_dir_all(dst).map_err(|e| Error::io(dst, e))?;
        let mut entries = std::fs::read_dir(dst).map_err(|e| Error::io(dst, e))?;
        if let Some(first) = entries.next() {
            let what = if crate::sources::source_for(dst).is_some() {
                "already holds a session".to_string()
            } else {
                let name = first.map(|e| e.file_name()).unwrap_or_default();
                format!("is not empty (it holds {})", Path::new(&name).display())
            };
            return Err(Error::Usage(crate::text::sanitize_message(&format!(
                "{}: {what}; replay into an empty directory",
                dst.display()
            ))));
        }
        Ok(Player {
            plan,
            dst: dst.to_path_buf(),
            next: 0,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dst
    }

    pub fn done(&self) -> bool {
        self.next >= self.plan.events.len()
    }

    /// What the TUI opens: the replay directory, or a flat session's main
    /// file in it.
    pub fn session_path(&self) -> PathBuf {
        if self.plan.open.as_os_str().is_empty() {
            self.dst.clone()
        } else {
            self.dst.join(&self.plan.open)
        }
    }

    /// Writes at once everything up to the main agent's first context file
    /// (the first file a plan creates), so the copy is a session the TUI can
    /// open.
    pub fn start(&mut self) -> Result<()> {
        if let Some(n) = self.plan.opening {
            while self.next < n.min(self.plan.events.len()) {
                self.step()?;
            }
            return Ok(());
        }
        while let Some(e) = self.plan.events.get(self.next) {
            let opens = matches!(&e.op, Op::Create(_));
            self.step()?;
            if opens {
                break;
            }
        }
        Ok(())
    }

    /// Runs the next write.
    pub fn step(&mut self) -> Result<()> {
        let Some(e) = self.plan.events.get(self.next) else {
            return Ok(());
        };
        apply(&self.dst, &e.op)?;
        self.next += 1;
        Ok(())
    }

    /// Plays the rest, sleeping between writes as `opts` says, until done or
    /// `stop` is set.
    pub fn play(&mut self, opts: &ReplayOptions, stop: &AtomicBool) -> Result<()> {
        let speed = if opts.speed.is_finite() && opts.speed > 0.0 {
            opts.speed
        } else {
            1.0
        };
        let mut due = Instant::now();
        let mut last_at = self.plan.events.get(self.next).map_or(0.0, |e| e.at);
        while !self.done() {
            if stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            let at = self.plan.events[self.next].at;
            let gap = Duration::try_from_secs_f64(((at - last_at) / speed).max(0.0))
                .unwrap_or(opts.max_gap)
                .min(opts.max_gap);
            last_at = at;
            due += gap;
            while let Some(left) = due.checked_duration_since(Instant::now()) {
                if left.is_zero() || stop.load(Ordering::Relaxed) {
                    break;
                }
                std::thread::sleep(left.min(SLEEP_SLICE));
            }
            self.step()?;
        }
        Ok(())
    }
}

fn apply(dst: &Path, op: &Op) -> Result<()> {
    match op {
        Op::Mkdir(p) => {
            let p = dst.join(p);
            std::fs::create_dir_all(&p).map_err(|e| Error::io(&p, e))
        }
        Op::Create(p) => {
            let p = dst.join(p);
            std::fs::File::create(&p)
                .map(drop)
                .map_err(|e| Error::io(&p, e))
        }
        Op::Rename(a, b) => {
            let (a, b) = (dst.join(a), dst.join(b));
            std::fs::rename(&a, &b).map_err(|e| Error::io(&a, e))
        }
        Op::Copy {
            from,
            to,
            start,
            end,
        } => {
            let mut src = std::fs::File::open(from).map_err(|e| Error::io(from, e))?;
            src.seek(SeekFrom::Start(*start))
                .map_err(|e| Error::io(from, e))?;
            let to = dst.join(to);
            let mut out = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&to)
                .map_err(|e| Error::io(&to, e))?;
            let want = end - start;
            let copied =
                std::io::copy(&mut src.take(want), &mut out).map_err(|e| Error::io(&to, e))?;
            if copied != want {
                return Err(Error::Other(format!(
                    "{}: shorter than when the replay was planned (changed while replaying?)",
                    from.display()
                )));
            }
            Ok(())
        }
    }
}

/// Where a replay writes: a fresh temporary directory named like the
/// original session (removed when dropped), or the user's own.
pub enum Target {
    Temp(tempfile::TempDir, PathBuf),
    Dir(PathBuf),
}

impl Target {
    pub fn new(src: &Path, dir: Option<&Path>) -> Result<Target> {
        match dir {
            Some(d) => Ok(Target::Dir(d.to_path_buf())),
            None => {
                let tmp = tempfile::Builder::new()
                    .prefix("worldline-replay-")
                    .tempdir()
                    .map_err(|e| Error::io(std::env::temp_dir(), e))?;
                // Named like the original (a flat session: like its folder).
                let named = if src.is_dir() {
                    Some(src)
                } else {
                    src.parent()
                };
                let name = named
                    .and_then(Path::file_name)
                    .map(PathBuf::from)
                    .unwrap_or("session".into());
                let path = tmp.path().join(name);
                Ok(Target::Temp(tmp, path))
            }
        }
    }

    pub fn path(&self) -> &Path {
        match self {
            Target::Temp(_, p) | Target::Dir(p) => p,
        }
    }

    /// The copy outlives the run (a temporary directory is not removed):
    /// a headless replay's only output is the path it printed.
    pub fn kept(self) -> Target {
        match self {
            Target::Temp(tmp, p) => {
                let _ = tmp.keep();
                Target::Dir(p)
            }
            d => d,
        }
    }
}

/// Plays `src` into `target` on a thread; the returned flag stops it and
/// the handle reports how it ended.
pub fn spawn(
    mut player: Player,
    opts: ReplayOptions,
) -> (Arc<AtomicBool>, std::thread::JoinHandle<Result<()>>) {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let handle = std::thread::Builder::new()
        .name("worldline-replay".into())
        .spawn(move || player.play(&opts, &flag))
        .expect("spawning the replay thread");
    (stop, handle)
}

/// `worldline replay`: the TUI on a live copy of `src`, or with `headless`
/// just the copy, its directory printed first.
pub fn run(
    src: &Path,
    dir: Option<&Path>,
    headless: bool,
    poll: bool,
    opts: ReplayOptions,
) -> anyhow::Result<()> {
    if !(opts.speed.is_finite() && opts.speed > 0.0) {
        return Err(Error::Usage(format!(
            "--speed must be a positive number, not {}",
            opts.speed
        ))
        .into());
    }
    let plan = Plan::of(src)?;
    let mut target = Target::new(src, dir)?;
    if headless {
        target = target.kept();
    }
    let mut player = Player::new(plan, target.path())?;
    player.start()?;
    if headless {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", player.session_path().display())?;
        out.flush()?;
        drop(out);
        let stop = crate::ui::terminal::signal_flag();
        player.play(&opts, &stop)?;
        return Ok(());
    }
    let path = player.session_path();
    let (stop, handle) = spawn(player, opts);
    let shown = crate::ui::run_on(path, true, poll);
    stop.store(true, Ordering::Relaxed);
    let played = handle
        .join()
        .map_err(|_| anyhow::anyhow!("the replay thread panicked"))?;
    shown?;
    Ok(played?)
}
