//! Running Kimi Code servers (`kimi web`, or a TUI after `/web`): the
//! instance files they announce themselves in
//! (`$KIMI_CODE_HOME/server/instances/<id>.json`), the bearer token
//! (`server.token`), and one bounded JSON call to their REST API
//! (`/api/v1`, HTTP on 127.0.0.1 only). Which server has a session loaded
//! is asked, not recorded: `GET /sessions/{id}` sets `agent_config.model`
//! only where it is loaded.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use super::Home;

/// One live server, as its instance file announces it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instance {
    pub pid: u32,
    pub port: u16,
    pub version: Option<String>,
    pub file: PathBuf,
}

impl Instance {
    /// `127.0.0.1:port (pid N, kimi-code V)`, for messages.
    pub fn describe(&self) -> String {
        format!(
            "the Kimi Code server on 127.0.0.1:{} (pid {}{})",
            self.port,
            self.pid,
            self.version
                .as_deref()
                .map(|v| format!(", {v}"))
                .unwrap_or_default()
        )
    }
}

/// Instance files bigger than this are not instance files.
const MAX_INSTANCE_FILE: u64 = 64 << 10;

/// The servers whose instance file names a live process, by port. A stale
/// file (its pid dead) is left for Kimi Code to clean up.
pub fn instances(home: &Home) -> Vec<Instance> {
    let dir = home.dir.join("server").join("instances");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<Instance> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter_map(|p| read_instance(&p))
        .filter(|i| pid_alive(i.pid))
        .collect();
    out.sort_by_key(|i| i.port);
    out.dedup_by_key(|i| i.port);
    out
}

fn read_instance(path: &Path) -> Option<Instance> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_INSTANCE_FILE {
        return None;
    }
    let v: Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    Some(Instance {
        pid: u32::try_from(v.get("pid")?.as_u64()?).ok()?,
        port: u16::try_from(v.get("port")?.as_u64()?).ok()?,
        version: v
            .get("host_version")
            .and_then(Value::as_str)
            .map(str::to_string),
        file: path.to_path_buf(),
    })
}

fn pid_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // Signal 0 checks existence; EPERM means alive but not ours.
    // SAFETY: kill with signal 0 sends nothing.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// The bearer token every server of this home takes.
pub fn token(home: &Home) -> Result<String, String> {
    let path = home.dir.join("server.token");
    let meta =
        std::fs::metadata(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if !meta.is_file() || meta.len() > 4096 {
        return Err(format!("{} is not a token file", path.display()));
    }
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let t = text.trim();
    if t.is_empty() {
        return Err(format!("{} is empty", path.display()));
    }
    Ok(t.to_string())
}

/// What a server answered: the HTTP status and its envelope
/// `{code, msg, data}` (refusals come as HTTP 200 with a nonzero `code`).
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub status: u16,
    pub code: i64,
    pub msg: String,
    pub data: Value,
}

impl Reply {
    pub fn ok(&self) -> bool {
        self.status == 200 && self.code == 0
    }

    /// `msg`, or the HTTP status when there is none.
    pub fn reason(&self) -> String {
        if self.msg.is_empty() {
            format!("HTTP {} code {}", self.status, self.code)
        } else {
            self.msg.clone()
        }
    }
}

/// Limits of one call: a local server answers fast or not at all.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
pub const CALL_TIMEOUT: Duration = Duration::from_secs(20);
pub const MAX_RESPONSE: u64 = 8 << 20;

/// A client of one server.
pub struct Api {
    base: String,
    token: String,
    agent: ureq::Agent,
}

impl Api {
    pub fn new(port: u16, token: &str) -> Api {
        let agent = ureq::Agent::config_builder()
            .timeout_connect(Some(CONNECT_TIMEOUT))
            .timeout_global(Some(CALL_TIMEOUT))
            .http_status_as_error(false)
            // Loopback only: no proxy from the environment, no redirects.
            .proxy(None)
            .max_redirects(0)
            .max_response_header_size(64 << 10)
            .build()
            .into();
        Api {
            base: format!("http://127.0.0.1:{port}/api/v1"),
            token: token.to_string(),
            agent,
        }
    }

    pub fn get(&self, path: &str) -> Result<Reply, String> {
        let r = self
            .agent
            .get(format!("{}{path}", self.base))
            .header("Authorization", format!("Bearer {}", self.token))
            .call();
        self.reply(r)
    }

    pub fn post(&self, path: &str, body: &Value) -> Result<Reply, String> {
        let r = self
            .agent
            .post(format!("{}{path}", self.base))
            .header("Authorization", format!("Bearer {}", self.token))
            .content_type("application/json")
            .send(body.to_string());
        self.reply(r)
    }

    fn reply(
        &self,
        r: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> Result<Reply, String> {
        let mut resp = r.map_err(|e| format!("{}: {e}", self.base))?;
        let status = resp.status().as_u16();
        let bytes = resp
            .body_mut()
            .with_config()
            .limit(MAX_RESPONSE)
            .read_to_vec()
            .map_err(|e| format!("{}: reading the answer: {e}", self.base))?;
        let v: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        let code = v
            .get("code")
            .and_then(Value::as_i64)
            .unwrap_or(if status == 200 { -1 } else { i64::from(status) });
        let msg = v
            .get("msg")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        Ok(Reply {
            status,
            code,
            msg,
            data: v.get("data").cloned().unwrap_or(Value::Null),
        })
    }
}

/// A session as one server sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Served {
    pub instance: Instance,
    pub loaded: bool,
    pub busy: bool,
}

/// Is any server of this home running? Cheap: instance files and pids.
pub fn reachable(home: &Home) -> Result<(), String> {
    if instances(home).is_empty() {
        return Err(no_server(home));
    }
    Ok(())
}

fn no_server(home: &Home) -> String {
    format!(
        "no Kimi Code server is running for {} (no live instance in {}); \
         start `kimi web`, or type /web in the Kimi Code TUI that has the session open",
        home.dir.display(),
        home.dir.join("server").join("instances").display()
    )
}

/// The server that has session `id` loaded, else why none. With `load`,
/// else the first server that knows the session (it loads it on the first
/// call that needs it: listing its messages does). `GET /sessions/{id}`
/// loads nothing.
pub fn server_for(home: &Home, id: &str, load: bool) -> Result<(Api, Served), String> {
    let live = instances(home);
    if live.is_empty() {
        return Err(no_server(home));
    }
    let token = token(home)?;
    let mut seen = Vec::new();
    let mut knows: Option<(Api, Served)> = None;
    for inst in live {
        let api = Api::new(inst.port, &token);
        match api.get(&format!("/sessions/{id}")) {
            Ok(r) if r.ok() => {
                let served = served(&inst, &r.data);
                if served.loaded {
                    return Ok((api, served));
                }
                seen.push(format!("{}: not loaded there", inst.describe()));
                if knows.is_none() {
                    knows = Some((api, served));
                }
            }
            Ok(r) if r.status == 401 => {
                seen.push(format!("{}: token refused (401)", inst.describe()))
            }
            Ok(r) => seen.push(format!("{}: {}", inst.describe(), r.reason())),
            Err(e) => seen.push(format!("{}: {e}", inst.describe())),
        }
    }
    let known = knows.is_some();
    if let Some(found) = knows.filter(|_| load) {
        return Ok(found);
    }
    Err(format!(
        "no running Kimi Code server has session {id} loaded ({}). If it is open in a Kimi Code \
         TUI, type /web there: the TUI hands the session to a server (a second writer would \
         corrupt it). If no Kimi Code process has it open, pass --load to let the server load it{}",
        seen.join("; "),
        if known {
            ""
        } else {
            " (no running server knows the session)"
        }
    ))
}

fn served(inst: &Instance, data: &Value) -> Served {
    let flag = |k: &str| data.get(k).and_then(Value::as_bool).unwrap_or(false);
    Served {
        instance: inst.clone(),
        loaded: data
            .pointer("/agent_config/model")
            .and_then(Value::as_str)
            .is_some_and(|m| !m.is_empty()),
        busy: flag("busy") || flag("main_turn_active"),
    }
}

/// Is the session busy (a turn active or queued) on this server?
pub fn busy(api: &Api, id: &str) -> Result<bool, String> {
    let r = api.get(&format!("/sessions/{id}"))?;
    if !r.ok() {
        return Err(r.reason());
    }
    let flag = |k: &str| r.data.get(k).and_then(Value::as_bool).unwrap_or(false);
    Ok(flag("busy") || flag("main_turn_active"))
}

/// An empty JSON object, the body of bodiless actions.
pub fn empty() -> Value {
    json!({})
}
