//! A denwa/1 client: what the TUI and `worldline send` use to reach an agent.

use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::discovery;
use super::error::DenwaError;
use super::protocol::{encode_request, Hello, Request, Status, MAX_LINE, PROTOCOL};
use super::trust;

/// A server that does not take the connection, or answer a request in
/// full, within this long is treated as broken: one limit for the whole
/// connect and for each whole request, not per read (a server trickling a
/// byte a second cannot stretch it).
const TIMEOUT: Duration = Duration::from_secs(10);
/// How often a connect to a full listen backlog is tried again.
const CONNECT_RETRY: Duration = Duration::from_millis(10);

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
        let stream = connect_within(socket, TIMEOUT).map_err(|e| match e.kind() {
            ErrorKind::NotFound | ErrorKind::ConnectionRefused => DenwaError::NotLive {
                path: socket.to_owned(),
            },
            ErrorKind::TimedOut => DenwaError::Timeout {
                path: socket.to_owned(),
                secs: TIMEOUT.as_secs(),
            },
            _ => DenwaError::io(socket, e),
        })?;
        // Before a single byte goes out: is the server one of ours?
        trust::check_peer(&stream, socket)?;
        let io = |e| DenwaError::io(socket, e);
        // Reads and writes are given the time left of each request.
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
        let deadline = Instant::now() + TIMEOUT;
        self.write_by(&encoded, deadline)
            .map_err(|e| self.transport(e))?;
        let line = self.read_line_by(deadline).map_err(|e| self.transport(e))?;
        if line.is_empty() {
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

    /// Writes all of `bytes`, each write allowed only the time left.
    fn write_by(&mut self, mut bytes: &[u8], deadline: Instant) -> std::io::Result<()> {
        while !bytes.is_empty() {
            self.writer.set_write_timeout(Some(left(deadline)?))?;
            match self.writer.write(bytes) {
                Ok(0) => return Err(ErrorKind::WriteZero.into()),
                Ok(n) => bytes = &bytes[n..],
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// One reply line (with its newline; without it at EOF or past
    /// `MAX_LINE`), each read allowed only the time left.
    fn read_line_by(&mut self, deadline: Instant) -> std::io::Result<Vec<u8>> {
        let mut line = Vec::new();
        loop {
            self.reader
                .get_ref()
                .set_read_timeout(Some(left(deadline)?))?;
            let buf = match self.reader.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if buf.is_empty() {
                return Ok(line);
            }
            let room = MAX_LINE + 1 - line.len();
            let (take, done) = match memchr::memchr(b'\n', buf) {
                Some(i) if i < room => (i + 1, true),
                _ => (buf.len().min(room), buf.len() >= room),
            };
            line.extend_from_slice(&buf[..take]);
            self.reader.consume(take);
            if done {
                return Ok(line);
            }
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

/// The time left before `deadline`; past it, a timeout.
fn left(deadline: Instant) -> std::io::Result<Duration> {
    let d = deadline.saturating_duration_since(Instant::now());
    if d.is_zero() {
        return Err(ErrorKind::TimedOut.into());
    }
    Ok(d)
}

/// `UnixStream::connect` within `timeout`. A Unix socket whose listen
/// backlog is full (a server that never accepts) makes a blocking connect
/// wait forever and a non-blocking one fail with `EAGAIN`; it is tried
/// again until the deadline, so the wait is bounded.
fn connect_within(path: &Path, timeout: Duration) -> std::io::Result<UnixStream> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::io::FromRawFd;
    let deadline = Instant::now() + timeout;
    // SAFETY: plain socket(2); the descriptor is owned by `stream` at once.
    let fd = unsafe {
        libc::socket(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            0,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh socket nobody else owns.
    let stream = unsafe { UnixStream::from_raw_fd(fd) };
    // SAFETY: an all-zero sockaddr_un is valid; the path is copied in below.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let bytes = path.as_os_str().as_bytes();
    if bytes.len() >= addr.sun_path.len() || bytes.contains(&0) {
        return Err(std::io::Error::new(
            ErrorKind::InvalidInput,
            "socket path too long for a Unix socket",
        ));
    }
    for (d, s) in addr.sun_path.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    let len = std::mem::size_of::<libc::sa_family_t>() + bytes.len() + 1;
    loop {
        // SAFETY: `addr` is a valid sockaddr_un of at least `len` bytes.
        let r = unsafe {
            libc::connect(
                fd,
                (&raw const addr).cast::<libc::sockaddr>(),
                len as libc::socklen_t,
            )
        };
        if r == 0 {
            break;
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => {}
            Some(libc::EAGAIN) | Some(libc::EINPROGRESS) => {
                let wait = left(deadline)?;
                std::thread::sleep(wait.min(CONNECT_RETRY));
            }
            // A connect already under way (after EINPROGRESS) finished.
            Some(libc::EISCONN) => break,
            _ => return Err(e),
        }
    }
    stream.set_nonblocking(false)?;
    Ok(stream)
}
