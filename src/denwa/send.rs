//! `worldline send`: hand a D-Mail to a live session, or show its status,
//! by the route its source names: a DenwaRenji socket (checkpoint ids) or
//! a server that takes turns back.
//!
//! Exit codes: 0 accepted (or status shown), 1 refused by the agent,
//! 2 usage error or the session cannot be reached.

use std::io::{IsTerminal, Read};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::client::DenwaClient;
use super::error::DenwaError;
use super::protocol::{Status, MAX_LINE};
use super::route::{Back, DMailRoute, TurnsError, TurnsStatus};
use crate::sources::Source;
use crate::text::sanitize_message;

/// What `worldline send` was asked to do.
#[derive(Debug, Clone, Default)]
pub struct SendOptions {
    /// Session directory (or id), or the path of a denwa socket.
    pub target: String,
    /// Checkpoint id to send the D-Mail back to (DenwaRenji).
    pub checkpoint: Option<i64>,
    /// Turns to go back (a turns server; the running one counts as one).
    pub turns_back: Option<u32>,
    /// Turns to keep (a turns server): 1..=K stay.
    pub keep_turns: Option<u32>,
    /// A turns server may load a session no server has loaded.
    pub load: bool,
    /// The D-Mail text (read from stdin when absent).
    pub message: Option<String>,
    /// Show n_checkpoints and the pending D-Mail instead of sending.
    pub status: bool,
}

const REJECTED: u8 = 1;
const UNREACHABLE: u8 = 2;

/// Runs `worldline send`. Every failure is reported here (one line on
/// stderr), so this returns `Ok` with the exit code in all expected cases.
pub fn send_command(args: &SendOptions) -> anyhow::Result<ExitCode> {
    let path = match resolve_target(&args.target) {
        Ok(p) => p,
        Err(e) => return Ok(fail(UNREACHABLE, &e.to_string())),
    };
    let is_socket = std::fs::metadata(&path).is_ok_and(|m| m.file_type().is_socket());
    if !is_socket {
        if let Some(source) = crate::sources::source_for(&path) {
            match source.dmail_route(&path) {
                DMailRoute::Checkpoints { .. } => {}
                DMailRoute::Turns => return Ok(send_turns(args, source, &path)),
                DMailRoute::None(why) => return Ok(fail(UNREACHABLE, &why)),
            }
        }
    }
    if args.turns_back.is_some() || args.keep_turns.is_some() {
        return Ok(fail(
            UNREACHABLE,
            "this session goes back by checkpoints: use --checkpoint N",
        ));
    }
    let mut client = match connect(&path) {
        Ok(c) => c,
        Err(e) => return Ok(fail(UNREACHABLE, &e.to_string())),
    };
    // connect() said hello and checked the protocol already.
    let hello = client.server_hello().clone();

    if args.status {
        return Ok(match client.status() {
            Ok(st) => {
                say(&status_text(
                    &hello.session,
                    &hello.agent,
                    &hello.server,
                    &st,
                ));
                ExitCode::SUCCESS
            }
            Err(e) => fail(UNREACHABLE, &e.to_string()),
        });
    }

    let Some(checkpoint) = args.checkpoint else {
        return Ok(fail(
            UNREACHABLE,
            "--checkpoint N is required (or use --status)",
        ));
    };
    let message = match message_of(args) {
        Ok(m) => m,
        Err(code) => return Ok(code),
    };
    Ok(match client.send_dmail(&message, checkpoint) {
        Ok(Ok(())) => {
            say(&format!(
                "D-Mail accepted: pending for checkpoint {checkpoint}; \
                 the agent applies it at the end of its current step\n"
            ));
            ExitCode::SUCCESS
        }
        Ok(Err(reason)) => fail(
            REJECTED,
            &format!("D-Mail rejected by session {}: {reason}", hello.session),
        ),
        Err(e) => fail(UNREACHABLE, &e.to_string()),
    })
}

/// The D-Mail text: `--message`, else stdin; never empty.
fn message_of(args: &SendOptions) -> Result<String, ExitCode> {
    let message = match &args.message {
        Some(m) => m.clone(),
        None => read_stdin_message()
            .map_err(|e| fail(UNREACHABLE, &format!("reading the D-Mail from stdin: {e}")))?,
    };
    if message.trim().is_empty() {
        return Err(fail(UNREACHABLE, "the D-Mail message is empty"));
    }
    Ok(message)
}

/// A session whose agent takes turns back through a server.
fn send_turns(args: &SendOptions, source: &dyn Source, path: &Path) -> ExitCode {
    let code_of = |e: &TurnsError| match e {
        TurnsError::NoServer(_) => UNREACHABLE,
        TurnsError::Refused(_) | TurnsError::Failed(_) => REJECTED,
    };
    if args.status {
        return match source.turns_status(path) {
            Ok(st) => {
                say(&turns_status_text(&source.session_id(path), &st));
                ExitCode::SUCCESS
            }
            Err(e) => fail(code_of(&e), &e.to_string()),
        };
    }
    let back =
        match (args.turns_back, args.keep_turns, args.checkpoint) {
            (Some(n), None, None) => Back::Turns(n),
            (None, Some(k), None) => Back::KeepTurns(k),
            (None, None, Some(_)) => return fail(
                UNREACHABLE,
                "this session goes back by turns, not checkpoints: use --turns-back N or --turn K",
            ),
            _ => {
                return fail(
                    UNREACHABLE,
                    "say how far back: --turns-back N or --turn K (or use --status)",
                )
            }
        };
    let message = match message_of(args) {
        Ok(m) => m,
        Err(code) => return code,
    };
    match source.send_turns_back(path, back, &message, args.load) {
        Ok(sent) => {
            say(&format!(
                "D-Mail accepted by {}: {}{} turn(s) undone, the message is the next prompt ({})\n",
                sent.server,
                if sent.aborted {
                    "the running turn aborted, "
                } else {
                    ""
                },
                sent.turns,
                sent.prompt_id
            ));
            ExitCode::SUCCESS
        }
        Err(e) => fail(
            code_of(&e),
            &format!("D-Mail not delivered to {}: {e}", source.session_id(path)),
        ),
    }
}

/// Human text for `--status` of a turns server.
pub fn turns_status_text(session: &str, st: &TurnsStatus) -> String {
    let mut out = format!(
        "session {}, served by {}\n",
        sanitize_message(session),
        sanitize_message(&st.server)
    );
    if !st.loaded {
        out.push_str(
            "loaded: no (a D-Mail needs it loaded: if a Kimi Code TUI has it open, type /web \
             there; if nothing has it open, send with --load)\n",
        );
        return out;
    }
    out.push_str(&format!(
        "loaded: yes; {}\n",
        if st.busy {
            "busy (a turn runs)"
        } else {
            "idle"
        }
    ));
    let (turns, undoable) = (st.turns.unwrap_or(0), st.undoable.unwrap_or(0));
    out.push_str(&format!("turns: {turns}; "));
    out.push_str(&match undoable {
        0 => "nothing can be undone".to_string(),
        n => format!("a D-Mail may go back 1..={n} turn(s)"),
    });
    if st.stopped_at_compaction {
        out.push_str(" (undo stops at a compaction)");
    }
    out.push('\n');
    out
}

/// Turns the `target` argument into a session directory or a socket path.
///
/// Anything that isn't a path is a session id or unique id prefix, looked up
/// among every agent's sessions like every other command does.
pub fn resolve_target(target: &str) -> Result<PathBuf, crate::Error> {
    let path = Path::new(target);
    let Ok(m) = std::fs::metadata(path) else {
        return crate::sources::lookup::resolve(
            Some(target),
            &crate::sources::lookup::Locator::from_env(),
        );
    };
    if m.file_type().is_socket() {
        return Ok(path.to_owned());
    }
    // A session of any agent, or a file inside one (a Kimi Code wire).
    if let Some(found) = crate::sources::SOURCES
        .iter()
        .find_map(|s| s.session_of(path))
    {
        return Ok(found);
    }
    if m.is_dir() {
        return Ok(path.to_owned());
    }
    // A file inside the session dir (context.jsonl, denwa.json…) means its dir.
    Ok(path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_owned())
}

fn connect(path: &Path) -> Result<DenwaClient, DenwaError> {
    let is_socket = std::fs::metadata(path).is_ok_and(|m| m.file_type().is_socket());
    if is_socket {
        DenwaClient::connect_socket(path)
    } else {
        DenwaClient::connect_session(path)
    }
}

/// Every message may carry a server's words or a path: sanitised.
/// Prints to stdout. A closed stdout is the reader's choice: the exit code
/// still says what happened (the command layer's policy, kept here because
/// `send` reports its own outcome).
fn say(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

fn fail(code: u8, message: &str) -> ExitCode {
    eprintln!("worldline: {}", sanitize_message(message));
    ExitCode::from(code)
}

/// The whole of stdin, minus one trailing newline (what `echo` adds). At
/// most a denwa/1 line is read: a longer message could not be sent anyway,
/// and `< /dev/zero` must not fill memory.
fn read_stdin_message() -> std::io::Result<String> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        eprintln!("Type the D-Mail, then Ctrl-D:");
    }
    let mut text = String::new();
    // The line limit, plus a line end that is stripped below.
    let cap = MAX_LINE as u64 + 2;
    stdin.lock().take(cap + 1).read_to_string(&mut text)?;
    if text.len() as u64 > cap {
        return Err(std::io::Error::other(format!(
            "longer than denwa/1's {MAX_LINE}-byte (1 MiB) line limit; not sent"
        )));
    }
    if text.ends_with('\n') {
        text.pop();
        if text.ends_with('\r') {
            text.pop();
        }
    }
    Ok(text)
}

/// Human text for `--status`. Every string the server sent is sanitised:
/// a hostile server must not write escape sequences to the terminal.
pub fn status_text(session: &str, agent: &str, server: &str, st: &Status) -> String {
    let mut out = format!(
        "session {} (agent {}), served by {}\n",
        sanitize_message(session),
        sanitize_message(agent),
        sanitize_message(server)
    );
    out.push_str(&format!("n_checkpoints: {}", st.n_checkpoints));
    if st.n_checkpoints > 0 {
        out.push_str(&format!(
            " (a D-Mail may target checkpoints 0..={})",
            st.n_checkpoints - 1
        ));
    }
    out.push('\n');
    match &st.pending {
        None => out.push_str("pending D-Mail: none\n"),
        Some(d) => {
            out.push_str(&format!(
                "pending D-Mail for checkpoint {}:\n",
                d.checkpoint_id
            ));
            for line in d.message.lines() {
                out.push_str("  ");
                out.push_str(&sanitize_message(line));
                out.push('\n');
            }
        }
    }
    out
}
