//! One huge line (a 20–50 MB base64 image) read in pieces, so indexing it
//! never holds it whole. Every byte goes once through
//!
//! - a resumable canonical hasher (equal to `canonical_hash` of the line),
//! - a resumable validator with the grammar of `scan::scan_object`: a JSON
//!   object with white space ` \t\r\n` between tokens; strings with the
//!   escapes `\" \\ \/ \b \f \n \r \t \uXXXX` (any other byte, raw control
//!   characters and invalid UTF-8 included, passes inside strings); literals
//!   `true false null`; numbers `-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?`;
//!   `,` and `:` where JSON puts them (no trailing commas); nesting at most
//!   128 values deep below the top-level object; only white space after it,
//! - a capture of the top-level fields the index reads (`role`, `id`,
//!   `token_count`, `tool_call_id`, `tool_calls`, `content`), wherever they
//!   sit in the line, each kept up to `keep` bytes. A longer value is kept
//!   as its beginning and marked cut: `content` then still gets the marker
//!   window check; the others count as absent (see `head::head_from_parts`).
//!
//! Differences from the whole-line path, all on lines no writer produces:
//! keys are compared as written, so an escaped key (`"r\u006fle"`) doesn't
//! count (the whole-line path re-parses such lines exactly); a line the
//! validator rejects is reported with a byte position, not serde's message.

use super::hash::CanonHasher;
use super::head::{self, Head};
use super::scan::Fields;

/// Same limit as the skim in `scan`.
const MAX_DEPTH: usize = 128;
/// The fields captured, in `Fields` order.
const KEYS: [&[u8]; 6] = [
    b"role",
    b"id",
    b"token_count",
    b"tool_call_id",
    b"tool_calls",
    b"content",
];
const CONTENT: usize = 5;
const TOOL_CALLS: usize = 4;
/// How many times `keep` the tool calls may take (64 KiB × 128 = 8 MiB).
const TOOL_CALLS_ROOM: usize = 128;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Num {
    Minus,
    Zero,
    Int,
    Dot,
    Frac,
    Exp,
    ExpSign,
    ExpDigits,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Leading white space, then `{`.
    Start,
    /// Just after `{`: a key or `}`.
    FirstKey,
    /// After `,` in an object.
    Key,
    Colon,
    /// After `:`, or after `,` in an array.
    Value,
    /// Just after `[`: a value or `]`.
    FirstValue,
    /// After a value: `,` or the container's closing bracket.
    After,
    Str {
        key: bool,
    },
    Esc {
        key: bool,
    },
    Hex {
        key: bool,
        left: u8,
    },
    Lit {
        word: &'static [u8],
        at: u8,
    },
    Num(Num),
    /// The top-level object closed: only white space may follow.
    Done,
    Bad,
}

/// A line being read in pieces; see the module doc.
#[derive(Clone)]
pub struct LineStream {
    hasher: CanonHasher,
    state: State,
    /// Open containers, `true` for objects; the top-level object is first.
    stack: Vec<bool>,
    /// The top-level key being read (only the first few bytes matter).
    key: Vec<u8>,
    /// The captured field the current top-level value goes to.
    slot: Option<usize>,
    capturing: bool,
    kept: [Vec<u8>; 6],
    cut: [bool; 6],
    keep: usize,
    /// Bytes fed, a held-back `\r` included.
    raw_len: u64,
    /// A `\r` ended the last piece: it belongs to the line only if more
    /// bytes follow (the indexer strips one `\r` before the newline).
    held_cr: bool,
    /// Every byte so far was ASCII white space.
    blank: bool,
    /// Bytes the validator saw (a held-back `\r` not yet).
    taken: u64,
    /// Where the validator gave up.
    bad_at: u64,
}

impl std::fmt::Debug for LineStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LineStream")
            .field("raw_len", &self.raw_len)
            .field("state", &self.state)
            .field("depth", &self.stack.len())
            .finish_non_exhaustive()
    }
}

/// What a streamed line turned into.
pub struct Streamed {
    pub result: Result<(Head, u64), String>,
    /// A warning about what the index couldn't read from a cut value.
    pub note: Option<String>,
}

impl LineStream {
    /// `keep`: bytes kept of each captured value (at least the marker window).
    pub fn new(keep: usize) -> Self {
        LineStream {
            hasher: CanonHasher::default(),
            state: State::Start,
            stack: Vec::new(),
            key: Vec::new(),
            slot: None,
            capturing: false,
            kept: Default::default(),
            cut: [false; 6],
            keep: keep.max(head::MARKER_WINDOW),
            raw_len: 0,
            held_cr: false,
            blank: true,
            taken: 0,
            bad_at: 0,
        }
    }

    /// Bytes of the line so far, as the file holds them.
    pub fn raw_len(&self) -> u64 {
        self.raw_len
    }

    /// Length of the line without a `\r` that may be its terminator's.
    pub fn len(&self) -> u64 {
        self.raw_len - u64::from(self.held_cr)
    }

    /// Only white space so far (such a line is skipped, like an empty one).
    pub fn is_blank(&self) -> bool {
        self.blank
    }

    pub fn feed(&mut self, mut piece: &[u8]) {
        if piece.is_empty() {
            return;
        }
        self.raw_len += piece.len() as u64;
        if self.held_cr {
            self.held_cr = false;
            self.take(b"\r");
        }
        if let Some(rest) = piece.strip_suffix(b"\r") {
            self.held_cr = true;
            piece = rest;
        }
        self.take(piece);
    }

    /// The line ended (a held-back `\r` was the terminator's).
    pub fn finish(self) -> Streamed {
        let size = self.len();
        if self.state != State::Done {
            let at = if self.state == State::Bad {
                self.bad_at
            } else {
                size
            };
            return Streamed {
                result: Err(format!(
                    "not a well-formed JSON object (at byte {at} of a {} line read in pieces)",
                    megabytes(size)
                )),
                note: None,
            };
        }
        let field = |k: usize| (!self.cut[k] && self.slot_seen(k)).then(|| &self.kept[k][..]);
        let fields = Fields {
            role: field(0),
            id: field(1),
            token_count: field(2),
            tool_call_id: field(3),
            tool_calls: field(TOOL_CALLS),
            content: field(CONTENT),
            spaced: false,
        };
        let content_start = self.cut[CONTENT].then(|| &self.kept[CONTENT][..]);
        match head::head_from_parts(&fields, content_start, self.cut[TOOL_CALLS]) {
            Ok((head, note)) => Streamed {
                result: Ok((head, self.hasher.digest())),
                note: note.map(|n| format!("{n} ({} line)", megabytes(size))),
            },
            Err(e) => Streamed {
                result: Err(e),
                note: None,
            },
        }
    }

    /// Whether the field appeared: its kept bytes start with the value's
    /// first byte, which no value lacks.
    fn slot_seen(&self, k: usize) -> bool {
        !self.kept[k].is_empty()
    }

    fn take(&mut self, piece: &[u8]) {
        if piece.is_empty() {
            return;
        }
        self.hasher.update(piece);
        if self.blank {
            self.blank = piece.iter().all(u8::is_ascii_whitespace);
        }
        let base = self.taken;
        self.taken += piece.len() as u64;
        self.validate(piece, base);
    }

    fn validate(&mut self, b: &[u8], base: u64) {
        // Where the value being captured starts in this piece.
        let mut from = 0;
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            match self.state {
                State::Bad => return,
                State::Str { key } => {
                    let top_key = key && self.stack.len() == 1;
                    match memchr::memchr2(b'"', b'\\', &b[i..]) {
                        None => {
                            if top_key {
                                self.key_bytes(&b[i..]);
                            }
                            i = b.len();
                        }
                        Some(k) => {
                            if top_key {
                                self.key_bytes(&b[i..i + k]);
                            }
                            i += k;
                            if b[i] == b'"' {
                                i += 1;
                                if top_key {
                                    self.key_done();
                                }
                                if key {
                                    self.state = State::Colon;
                                } else {
                                    self.value_done(b, &mut from, i);
                                }
                            } else {
                                if top_key {
                                    self.key_bytes(b"\\");
                                }
                                i += 1;
                                self.state = State::Esc { key };
                            }
                        }
                    }
                    continue;
                }
                State::Esc { key } => {
                    self.state = match c {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {
                            State::Str { key }
                        }
                        b'u' => State::Hex { key, left: 4 },
                        _ => State::Bad,
                    };
                    if key && self.stack.len() == 1 {
                        self.key_bytes(&[c]);
                    }
                }
                State::Hex { key, left } => {
                    self.state = if !c.is_ascii_hexdigit() {
                        State::Bad
                    } else if left == 1 {
                        State::Str { key }
                    } else {
                        State::Hex {
                            key,
                            left: left - 1,
                        }
                    };
                    if key && self.stack.len() == 1 {
                        self.key_bytes(&[c]);
                    }
                }
                State::Lit { word, at } => {
                    if word.get(usize::from(at)) != Some(&c) {
                        self.state = State::Bad;
                    } else if usize::from(at) + 1 == word.len() {
                        self.value_done(b, &mut from, i + 1);
                    } else {
                        self.state = State::Lit { word, at: at + 1 };
                    }
                }
                State::Num(n) => match number_step(n, c) {
                    Step::More(next) => self.state = State::Num(next),
                    Step::Bad => self.state = State::Bad,
                    Step::Ended => {
                        // `c` follows the number: look at it again as such.
                        self.value_done(b, &mut from, i);
                        continue;
                    }
                },
                _ if matches!(c, b' ' | b'\t' | b'\n' | b'\r') => {}
                State::Start => {
                    if c == b'{' {
                        self.stack.push(true);
                        self.state = State::FirstKey;
                    } else {
                        self.state = State::Bad;
                    }
                }
                State::FirstKey | State::Key => match c {
                    b'}' if self.state == State::FirstKey => self.close(b, &mut from, i),
                    b'"' => {
                        if self.stack.len() == 1 {
                            self.key.clear();
                        }
                        self.state = State::Str { key: true };
                    }
                    _ => self.state = State::Bad,
                },
                State::Colon => {
                    self.state = if c == b':' { State::Value } else { State::Bad };
                }
                State::Value | State::FirstValue => {
                    if c == b']' && self.state == State::FirstValue {
                        self.close(b, &mut from, i);
                    } else {
                        self.value_start(c, i, &mut from);
                    }
                }
                State::After => match (c, self.stack.last()) {
                    (b',', Some(true)) => self.state = State::Key,
                    (b',', Some(false)) => self.state = State::Value,
                    (b'}', Some(true)) | (b']', Some(false)) => self.close(b, &mut from, i),
                    _ => self.state = State::Bad,
                },
                State::Done => self.state = State::Bad,
            }
            if self.state == State::Bad {
                self.bad_at = base + i as u64;
                return;
            }
            i += 1;
        }
        if self.capturing {
            self.keep_bytes(&b[from..]);
        }
    }

    fn key_bytes(&mut self, bytes: &[u8]) {
        // Longer keys match nothing; a few bytes past the longest will do.
        let room = 16usize.saturating_sub(self.key.len());
        self.key.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    fn key_done(&mut self) {
        self.slot = KEYS.iter().position(|k| *k == &self.key[..]);
    }

    fn value_start(&mut self, c: u8, i: usize, from: &mut usize) {
        if self.stack.len() > MAX_DEPTH {
            self.state = State::Bad;
            return;
        }
        if self.stack.len() == 1 {
            if let Some(k) = self.slot {
                // A key given twice keeps its last value, as in `scan`.
                self.kept[k].clear();
                self.cut[k] = false;
                self.capturing = true;
                *from = i;
            }
        }
        self.state = match c {
            b'"' => State::Str { key: false },
            b'{' => {
                self.stack.push(true);
                State::FirstKey
            }
            b'[' => {
                self.stack.push(false);
                State::FirstValue
            }
            b't' => State::Lit {
                word: b"true",
                at: 1,
            },
            b'f' => State::Lit {
                word: b"false",
                at: 1,
            },
            b'n' => State::Lit {
                word: b"null",
                at: 1,
            },
            b'-' => State::Num(Num::Minus),
            b'0' => State::Num(Num::Zero),
            b'1'..=b'9' => State::Num(Num::Int),
            _ => State::Bad,
        };
    }

    /// A closing bracket at `i`.
    fn close(&mut self, b: &[u8], from: &mut usize, i: usize) {
        self.stack.pop();
        if self.stack.is_empty() {
            self.state = State::Done;
        } else {
            self.value_done(b, from, i + 1);
        }
    }

    /// A value ended just before `end`.
    fn value_done(&mut self, b: &[u8], from: &mut usize, end: usize) {
        self.state = State::After;
        if self.capturing && self.stack.len() == 1 {
            self.keep_bytes(&b[*from..end]);
            self.capturing = false;
        }
    }

    fn keep_bytes(&mut self, bytes: &[u8]) {
        let Some(k) = self.slot else { return };
        let kept = &mut self.kept[k];
        // Tool calls carry whole file contents in their arguments (a 5 MB
        // WriteFile); their ids and names matter to the graph and the wire
        // join, so they get more room than the other fields.
        let limit = if k == TOOL_CALLS {
            self.keep.saturating_mul(TOOL_CALLS_ROOM)
        } else {
            self.keep
        };
        let room = limit.saturating_sub(kept.len());
        if bytes.len() > room {
            kept.extend_from_slice(&bytes[..room]);
            self.cut[k] = true;
        } else {
            kept.extend_from_slice(bytes);
        }
    }
}

enum Step {
    More(Num),
    Ended,
    Bad,
}

/// JSON number grammar, one byte at a time.
fn number_step(n: Num, c: u8) -> Step {
    let digit = c.is_ascii_digit();
    match (n, c) {
        (Num::Minus, b'0') => Step::More(Num::Zero),
        (Num::Minus, b'1'..=b'9') => Step::More(Num::Int),
        (Num::Int, _) if digit => Step::More(Num::Int),
        (Num::Zero | Num::Int, b'.') => Step::More(Num::Dot),
        (Num::Dot | Num::Frac, _) if digit => Step::More(Num::Frac),
        (Num::Zero | Num::Int | Num::Frac, b'e' | b'E') => Step::More(Num::Exp),
        (Num::Exp, b'+' | b'-') => Step::More(Num::ExpSign),
        (Num::Exp | Num::ExpSign | Num::ExpDigits, _) if digit => Step::More(Num::ExpDigits),
        (Num::Zero | Num::Int | Num::Frac | Num::ExpDigits, _) => Step::Ended,
        _ => Step::Bad,
    }
}

fn megabytes(n: u64) -> String {
    format!("{:.1} MB", n as f64 / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::{canonical_hash, scan::scan_object};

    /// Feeds `line` cut at `cuts`; true when the validator accepted it.
    fn accepts(line: &[u8], cuts: &[usize]) -> (bool, u64) {
        let mut s = LineStream::new(0);
        let mut from = 0;
        for &c in cuts.iter().chain([&line.len()]) {
            let c = c.clamp(from, line.len());
            s.feed(&line[from..c]);
            from = c;
        }
        let hash = s.hasher.digest();
        (s.state == State::Done, hash)
    }

    #[test]
    fn nesting_limit_matches_the_skim() {
        for depth in [127, 128, 129] {
            let line = format!("{{\"a\":{}1{}}}", "[".repeat(depth), "]".repeat(depth));
            let b = line.as_bytes();
            assert_eq!(accepts(b, &[3, 70]).0, scan_object(b).is_some(), "{depth}");
            let line = format!("{{\"a\":{}{}}}", "[".repeat(depth), "]".repeat(depth));
            let b = line.as_bytes();
            assert_eq!(accepts(b, &[]).0, scan_object(b).is_some(), "{depth}");
        }
    }

    #[test]
    fn keeps_fields_after_a_long_value_and_cuts_long_ones() {
        let big = "A".repeat(5000);
        let line = format!(
            r#"{{"content":[{{"type":"image_url","image_url":{{"url":"{big}"}}}}],"role":"tool","tool_call_id":"c\"7","x":{{"role":"no"}}}}"#
        );
        let mut s = LineStream::new(0);
        for piece in line.as_bytes().chunks(7) {
            s.feed(piece);
        }
        assert_eq!(s.kept[0], br#""tool""#);
        assert_eq!(s.kept[3], br#""c\"7""#);
        assert!(s.cut[CONTENT] && !s.cut[0]);
        assert_eq!(s.kept[CONTENT].len(), head::MARKER_WINDOW);
        let out = s.finish();
        let (head, hash) = out.result.unwrap();
        assert_eq!(head.tool_call_id.as_deref(), Some("c\"7"));
        assert_eq!(hash, canonical_hash(line.as_bytes()));
        assert!(out.note.is_none());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]
        #[test]
        fn accepts_what_the_skim_accepts(
            line in r#"[{}\[\]":, \t\r0-9a-z\\.eE+-]{0,40}"#,
            cuts in proptest::collection::vec(0usize..40, 0..5),
        ) {
            let mut cuts = cuts;
            cuts.sort_unstable();
            let b = line.as_bytes();
            let whole = b.strip_suffix(b"\r").unwrap_or(b);
            let (ok, hash) = accepts(b, &cuts);
            proptest::prop_assert_eq!(ok, scan_object(whole).is_some(), "{:?}", line);
            proptest::prop_assert_eq!(hash, canonical_hash(whole));
        }
    }
}
