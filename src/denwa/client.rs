//! A denwa/1 client: what the TUI and `worldline send` use to reach an agent.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use super::discovery;
use super::error::DenwaError;
use super::protocol::{encode_request, Hello, Request, Status, MAX_LINE, PROTOCOL};
use super::trust;

/// A server that does not answer within this long is treated as broken.
const TIMEOUT: Duration = Duration::from_secs(10);

/// A connection to one agent's DenwaRenji; requests go one at a time.
///
/// ```no_run
/// use worldline::denwa::DenwaClient;
///
/// let mut client = DenwaClient::connect_session("/path/to/session".as_ref())?;
/// let status = client.status()?;
/// match client.send_dmail("use the other API", status.n_checkpoints - 1)? {
///     Ok(()) => println!("pending"),
///     Err(reason) => println!("refused: {reason}"),
/// }
/// # Ok::<(), worldline::denwa::DenwaError>(())
/// ```
pub struct DenwaClient {
    socket: PathBuf,
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    next_id: u64,
    hello: Hello,
}

impl DenwaClient {
    /// Reads `<session_dir>/denwa.json` (a subagent directory works the same),
    /// checks that its pid is a live process of this user, connects to the
    /// socket it names if that socket passes the trust checks (absolute,
    /// ours, in a private directory, served by our uid), and says `hello`
    /// (the server must speak denwa/1 for the agent `denwa.json` names).
    pub fn connect_session(session_dir: &Path) -> Result<DenwaClient, DenwaError> {
        let ann = discovery::read_announcement(session_dir)?;
        let not_live = || DenwaError::NotLive {
            path: session_dir.to_owned(),
        };
        if !trust::pid_ours(ann.pid) {
            return Err(not_live());
        }
        // Checked before connect_socket makes it absolute against our cwd.
        trust::check_socket_path(&ann.socket)?;
        let client = match Self::connect_socket(&ann.socket) {
            Err(DenwaError::NotLive { .. }) => return Err(not_live()),
            other => other?,
        };
        if client.hello.agent != ann.agent {
            return Err(client.protocol(format!(
                "the server is agent {:?}, but {} names agent {:?}",
                client.hello.agent,
                discovery::DENWA_JSON,
                ann.agent
            )));
        }
        Ok(client)
    }

    /// Connects to a socket path directly (relative paths are taken from
    /// the current directory), with the same trust checks and `hello`.
    pub fn connect_socket(socket: &Path) -> Result<DenwaClient, DenwaError> {
        let socket = &std::path::absolute(socket).map_err(|e| DenwaError::io(socket, e))?;
        trust::check_socket_path(socket)?;
        let stream = UnixStream::connect(socket).map_err(|e| match e.kind() {
            ErrorKind::NotFound | ErrorKind::ConnectionRefused => DenwaError::NotLive {
                path: socket.to_owned(),
            },
            _ => DenwaError::io(socket, e),
        })?;
        // Before a single byte goes out: is the server one of ours?
        trust::check_peer(&stream, socket)?;
        let io = |e| DenwaError::io(socket, e);
        stream.set_read_timeout(Some(TIMEOUT)).map_err(io)?;
        stream.set_write_timeout(Some(TIMEOUT)).map_err(io)?;
        let writer = stream.try_clone().map_err(io)?;
        let mut client = DenwaClient {
            socket: socket.to_owned(),
            reader: BufReader::new(stream),
            writer,
            next_id: 0,
            hello: Hello {
                protocol: String::new(),
                session: String::new(),
                agent: String::new(),
                server: String::new(),
            },
        };
        let hello = client.hello()?;
        if hello.protocol != PROTOCOL {
            return Err(client.protocol(format!(
                "server speaks {:?}, not {PROTOCOL:?}",
                hello.protocol
            )));
        }
        client.hello = hello;
        Ok(client)
    }

    /// What the server said to the `hello` made on connecting.
    pub fn server_hello(&self) -> &Hello {
        &self.hello
    }

    /// The socket this client talks to.
    pub fn socket_path(&self) -> &Path {
        &self.socket
    }

    pub fn hello(&mut self) -> Result<Hello, DenwaError> {
        let reply = self.ok_reply(&Request::Hello)?;
        self.decode(reply)
    }

    /// The server's `status`; a negative count or checkpoint is refused as
    /// a protocol error rather than shown.
    pub fn status(&mut self) -> Result<Status, DenwaError> {
        let reply = self.ok_reply(&Request::Status)?;
        let st: Status = self.decode(reply)?;
        if st.n_checkpoints < 0 {
            return Err(self.protocol(format!("negative n_checkpoints {}", st.n_checkpoints)));
        }
        if let Some(p) = st.pending.as_ref().filter(|p| p.checkpoint_id < 0) {
            return Err(self.protocol(format!(
                "pending D-Mail for negative checkpoint {}",
                p.checkpoint_id
            )));
        }
        Ok(st)
    }

    /// Outer `Err`: transport or protocol failure. Inner `Err`: DenwaRenji's
    /// refusal, verbatim (e.g. "Only one D-Mail can be sent at a time").
    pub fn send_dmail(
        &mut self,
        message: &str,
        checkpoint_id: i64,
    ) -> Result<Result<(), String>, DenwaError> {
        let reply = self.request(&Request::SendDMail {
            message: message.to_owned(),
            checkpoint_id,
        })?;
        Ok(match reply {
            Ok(_) => Ok(()),
            Err(reason) => Err(reason),
        })
    }

    /// A request whose `ok:false` is a server error rather than an answer.
    fn ok_reply(&mut self, request: &Request) -> Result<Value, DenwaError> {
        self.request(request)?
            .map_err(|message| DenwaError::Server {
                path: self.socket.clone(),
                message,
            })
    }

    /// Sends one request and reads its reply: `Ok(object)` for `ok:true`,
    /// `Err(text)` for `ok:false`.
    fn request(&mut self, request: &Request) -> Result<Result<Value, String>, DenwaError> {
        self.next_id += 1;
        let id = self.next_id;
        let encoded = encode_request(request, id);
        // The server closes on a longer line; say the limit, not "Broken pipe".
        if encoded.len() - 1 > MAX_LINE {
            return Err(DenwaError::TooLarge {
                path: self.socket.clone(),
                len: encoded.len() - 1,
                max: MAX_LINE,
            });
        }
        self.writer
            .write_all(&encoded)
            .map_err(|e| self.transport(e))?;
        let mut line = Vec::new();
        let n = (&mut self.reader)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
            .map_err(|e| self.transport(e))?;
        if n == 0 {
            return Err(self.protocol("connection closed before the reply".into()));
        }
        if line.last() != Some(&b'\n') && line.len() > MAX_LINE {
            return Err(self.protocol(format!("reply longer than {MAX_LINE} bytes")));
        }
        let reply: Value =
            serde_json::from_slice(&line).map_err(|e| self.protocol(format!("bad reply: {e}")))?;
        // Replies come in order, so a server that omits the id is still fine.
        if reply.get("id").is_some_and(|v| v.as_u64() != Some(id)) {
            return Err(self.protocol(format!("reply id does not match request id {id}")));
        }
        match reply.get("ok") {
            Some(Value::Bool(true)) => Ok(Ok(reply)),
            Some(Value::Bool(false)) => {
                let text = reply
                    .get("error")
                    .and_then(Value::as_str)
                    .unwrap_or("(no error text)");
                Ok(Err(text.to_owned()))
            }
            _ => Err(self.protocol("reply has no boolean \"ok\"".into())),
        }
    }

    fn decode<T: serde::de::DeserializeOwned>(&self, reply: Value) -> Result<T, DenwaError> {
        serde_json::from_value(reply).map_err(|e| self.protocol(format!("bad reply: {e}")))
    }

    /// An I/O failure on the socket; a timeout says so in words.
    fn transport(&self, e: std::io::Error) -> DenwaError {
        match e.kind() {
            ErrorKind::WouldBlock | ErrorKind::TimedOut => DenwaError::Timeout {
                path: self.socket.clone(),
                secs: TIMEOUT.as_secs(),
            },
            _ => DenwaError::io(&self.socket, e),
        }
    }

    fn protocol(&self, detail: String) -> DenwaError {
        DenwaError::Protocol {
            path: self.socket.clone(),
            detail,
        }
    }
}
