//! [`RecordMeta`]: one record's index entry in 40 bytes. A session of
//! millions of small records keeps one per record, so the common shapes
//! (a checkpoint, its note, a usage count, an assistant message with one
//! ordinary tool call, a tool result) fit inline: the offset shares its word
//! with the role, the kind of the one packed value and an interned tool
//! name, and that value is a checkpoint id, a token count, a note's
//! checkpoint or a tool call id's [`CallKey`]. Several plain calls (table
//! names, ids matched by key alone: parallel calls) go behind a small box
//! of their keys and names, the record staying inline otherwise. Anything
//! else (unknown roles, D-Mail and subagent calls, other markers, two
//! values at once) goes behind one box holding every field.

use std::borrow::Cow;
use std::fmt;

use super::names::NAMES;
use super::{DMailArgs, Marker, RecordParts, Role, ToolCallHead};

/// A tool call id as the index keeps it for matching a call with its
/// result: a 64-bit SipHash under a key drawn at random once per process,
/// so a session file cannot be written to make two ids collide. Not
/// ordered: its value differs from run to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CallKey(u64);

impl CallKey {
    pub fn of(id: &str) -> CallKey {
        use std::hash::BuildHasher;
        static KEY: std::sync::OnceLock<std::collections::hash_map::RandomState> =
            std::sync::OnceLock::new();
        CallKey(KEY.get_or_init(Default::default).hash_one(id))
    }

    /// The key's 64 bits (the wire log's table stores them).
    pub fn bits(self) -> u64 {
        self.0
    }
}

/// Tools whose call ids are shown or exported (D-Mail attempts, a
/// subagent's `parent_tool_call_id`), so the index keeps those ids as text.
/// Every other call is matched by its [`CallKey`] alone.
pub fn keeps_call_id(name: &str) -> bool {
    matches!(name, "SendDMail" | "Agent" | "Task")
}

/// A tool result's id is kept as text where something shows it: results
/// the graph interprets (D-Mail and subagent results).
fn keeps_result_id(marker: Option<&Marker>) -> bool {
    matches!(
        marker,
        Some(Marker::DMailResult(_) | Marker::AgentResult(_))
    )
}

// `packed`: bits 0..48 the offset, 48..51 the role, 51..54 what `value`
// holds, 54..64 the tool name's index in the name table.
const OFFSET_MASK: u64 = (1 << 48) - 1;
const ROLE_SHIFT: u32 = 48;
const KIND_SHIFT: u32 = 51;
const NAME_SHIFT: u32 = 54;
/// A role outside the packed tags: only in the box.
const OTHER_ROLE: u64 = 7;

/// What an inline record's `value` holds.
const PLAIN: u64 = 0;
const CHECKPOINT: u64 = 1;
const TOKENS: u64 = 2;
const NOTE: u64 = 3;
const CALL: u64 = 4;
const RESULT: u64 = 5;

static ROLES: [Role; 7] = [
    Role::SystemPrompt,
    Role::Checkpoint,
    Role::Usage,
    Role::User,
    Role::Assistant,
    Role::Tool,
    Role::System,
];

fn role_tag(role: &Role) -> u64 {
    match role {
        Role::SystemPrompt => 0,
        Role::Checkpoint => 1,
        Role::Usage => 2,
        Role::User => 3,
        Role::Assistant => 4,
        Role::Tool => 5,
        Role::System => 6,
        Role::Other(_) => OTHER_ROLE,
    }
}

/// One record of a context file: where it is and what the graph needs.
/// Read it through its accessors.
#[derive(Clone, PartialEq, Eq)]
pub struct RecordMeta {
    /// Offset, role, kind of `value`, tool name (see the constants above);
    /// only the role when the record is boxed.
    packed: u64,
    /// Hash of the record's JSON with insignificant white space removed, so
    /// the two spellings kimi-cli uses compare equal.
    hash: u64,
    value: u64,
    /// Several plain calls, or everything but the position and hash for
    /// records that don't fit.
    rare: Option<Box<Boxed>>,
    /// Length of the line without its line end (lines over 4 GiB are not
    /// indexed).
    len: u32,
    /// 1-based line number in its file.
    line: u32,
}

// The point of the packing; `size_of` is checked by a test as well.
const _: () = assert!(std::mem::size_of::<RecordMeta>() <= 40);

/// Plain calls kept in the small box itself, at most.
const FEW: usize = 3;

/// What a record keeps behind its box.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Boxed {
    /// Two or three plain calls of a record otherwise inline: their keys
    /// and table names, an unused slot's name [`NO_NAME`].
    Few {
        keys: [CallKey; FEW],
        names: [u16; FEW],
    },
    /// More plain calls than that, likewise (one more box keeps the small
    /// one small).
    Many(Box<PlainCalls>),
    /// A record that doesn't fit inline: all its fields.
    Full(Box<Rare>),
}

/// No table index (the table holds fewer names).
const NO_NAME: u16 = u16::MAX;

#[derive(Debug, Clone, PartialEq, Eq)]
struct PlainCalls {
    keys: Box<[CallKey]>,
    names: Box<[u16]>,
}

/// A boxed record's fields.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rare {
    role: Role,
    offset: u64,
    checkpoint: Option<i64>,
    tokens: Option<u64>,
    calls: Box<[CallHead]>,
    result: Option<CallId>,
    marker: Option<Marker>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct CallHead {
    id: CallId,
    name: Name,
    dmail: Option<DMailArgs>,
}

/// A call id's key, and its text where something shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CallId {
    key: CallKey,
    text: Option<Box<str>>,
}

/// A tool name: in the table, or (table full, or too long) the record's own.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Name {
    Table(u16),
    Own(Box<str>),
}

impl Name {
    fn of(name: &str) -> Name {
        NAMES
            .intern(name)
            .map_or_else(|| Name::Own(name.into()), Name::Table)
    }

    fn as_str(&self) -> &str {
        match self {
            Name::Table(i) => NAMES.get(*i),
            Name::Own(s) => s,
        }
    }
}

/// The one value an inline record holds, or `None` when it needs the box.
/// `calls_boxed`: its calls are in the small box, not to be packed.
fn inline_value(parts: &RecordParts, calls_boxed: bool) -> Option<(u64, u64, u64)> {
    let mut found: Option<(u64, u64, u64)> = None;
    let mut put = |kind: u64, value: u64, name: u64| -> Option<()> {
        match found {
            Some(_) => None,
            None => {
                found = Some((kind, value, name));
                Some(())
            }
        }
    };
    if let Some(id) = parts.checkpoint {
        put(CHECKPOINT, id as u64, 0)?;
    }
    if let Some(n) = parts.tokens {
        put(TOKENS, n, 0)?;
    }
    match &parts.marker {
        None => {}
        Some(Marker::CheckpointNote(n)) => put(NOTE, *n as u64, 0)?,
        Some(_) => return None,
    }
    match parts.tool_calls.as_slice() {
        _ if calls_boxed => {}
        [] => {}
        [c] if c.dmail.is_none() && !keeps_call_id(&c.name) => {
            let name = NAMES.intern(&c.name)?;
            put(CALL, CallKey::of(&c.id).0, u64::from(name))?;
        }
        _ => return None,
    }
    if let Some(id) = &parts.tool_call_id {
        // Any marker but a note has sent the record to the box already, so
        // this id is one that is matched, never shown.
        put(RESULT, CallKey::of(id).0, 0)?;
    }
    Some(found.unwrap_or((PLAIN, 0, 0)))
}

/// The keys and table names of several calls when all are plain (no
/// D-Mail arguments, no id kept as text, names in the table); `None` for
/// fewer than two or any other call.
fn plain_calls(calls: &[ToolCallHead]) -> Option<Boxed> {
    if calls.len() < 2 {
        return None;
    }
    let mut keys = Vec::with_capacity(calls.len());
    let mut names = Vec::with_capacity(calls.len());
    for c in calls {
        if c.dmail.is_some() || keeps_call_id(&c.name) {
            return None;
        }
        names.push(NAMES.intern(&c.name)?);
        keys.push(CallKey::of(&c.id));
    }
    Some(match calls.len() {
        n @ ..=FEW => {
            let mut few = ([CallKey(0); FEW], [NO_NAME; FEW]);
            few.0[..n].copy_from_slice(&keys);
            few.1[..n].copy_from_slice(&names);
            Boxed::Few {
                keys: few.0,
                names: few.1,
            }
        }
        _ => Boxed::Many(Box::new(PlainCalls {
            keys: keys.into_boxed_slice(),
            names: names.into_boxed_slice(),
        })),
    })
}

impl Rare {
    fn from_parts(offset: u64, parts: RecordParts) -> Rare {
        let keep_result = keeps_result_id(parts.marker.as_ref());
        Rare {
            role: parts.role,
            offset,
            checkpoint: parts.checkpoint,
            tokens: parts.tokens,
            calls: parts
                .tool_calls
                .into_iter()
                .map(|c| {
                    let keep = c.dmail.is_some() || keeps_call_id(&c.name);
                    CallHead {
                        id: CallId {
                            key: CallKey::of(&c.id),
                            text: keep.then(|| c.id.into_boxed_str()),
                        },
                        name: Name::of(&c.name),
                        dmail: c.dmail,
                    }
                })
                .collect(),
            result: parts.tool_call_id.map(|id| CallId {
                key: CallKey::of(&id),
                text: keep_result.then(|| id.into_boxed_str()),
            }),
            marker: parts.marker,
        }
    }
}

impl RecordMeta {
    /// The index entry of the line at `offset` (`len` bytes, 1-based
    /// `line`) whose canonical hash is `hash`.
    pub fn new(offset: u64, len: u32, line: u32, hash: u64, parts: RecordParts) -> RecordMeta {
        let role = role_tag(&parts.role);
        if offset <= OFFSET_MASK && role != OTHER_ROLE {
            let calls = plain_calls(&parts.tool_calls);
            if let Some((kind, value, name)) = inline_value(&parts, calls.is_some()) {
                // Several plain calls go to the small box; the rest is
                // inline as if there were none.
                return RecordMeta {
                    packed: offset | role << ROLE_SHIFT | kind << KIND_SHIFT | name << NAME_SHIFT,
                    hash,
                    value,
                    rare: calls.map(Box::new),
                    len,
                    line,
                };
            }
        }
        RecordMeta {
            packed: role << ROLE_SHIFT,
            hash,
            value: 0,
            rare: Some(Box::new(Boxed::Full(Box::new(Rare::from_parts(
                offset, parts,
            ))))),
            len,
            line,
        }
    }

    /// A record's fields when it doesn't fit inline.
    fn full(&self) -> Option<&Rare> {
        match self.rare.as_deref() {
            Some(Boxed::Full(r)) => Some(r),
            _ => None,
        }
    }

    /// What `value` holds, for an inline record.
    fn kind(&self) -> u64 {
        (self.packed >> KIND_SHIFT) & 0b111
    }

    /// Byte offset of the line in its file.
    pub fn offset(&self) -> u64 {
        match self.full() {
            Some(r) => r.offset,
            None => self.packed & OFFSET_MASK,
        }
    }

    /// Moves the record `bytes` and `lines` later in its file (a piece
    /// indexed on its own, placed after the pieces before it).
    pub fn shift(&mut self, bytes: u64, lines: u32) {
        self.line = self.line.saturating_add(lines);
        let to = self.offset().saturating_add(bytes);
        if let Some(Boxed::Full(r)) = self.rare.as_deref_mut() {
            r.offset = to;
        } else if to <= OFFSET_MASK {
            self.packed = (self.packed & !OFFSET_MASK) | to;
        } else {
            // Past what the packed word holds: the record moves to the box.
            let rare = self.to_rare(to);
            self.packed &= 0b111 << ROLE_SHIFT;
            self.value = 0;
            self.rare = Some(Box::new(Boxed::Full(Box::new(rare))));
        }
    }

    /// An inline record's fields, boxed (its calls are plain: table names,
    /// no id text, no D-Mail arguments).
    fn to_rare(&self, offset: u64) -> Rare {
        let calls = self
            .tool_calls()
            .iter()
            .map(|c| CallHead {
                id: CallId {
                    key: c.key,
                    text: None,
                },
                name: Name::of(c.name),
                dmail: None,
            })
            .collect();
        Rare {
            role: self.role().clone(),
            offset,
            checkpoint: self.checkpoint(),
            tokens: self.tokens(),
            calls,
            result: self.tool_call_key().map(|key| CallId { key, text: None }),
            marker: self.marker().map(Cow::into_owned),
        }
    }

    /// Length of the line without its line end.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> u32 {
        self.len
    }

    /// 1-based line number in its file.
    pub fn line(&self) -> u32 {
        self.line
    }

    /// Hash of the record's canonical JSON.
    pub fn hash(&self) -> u64 {
        self.hash
    }

    pub fn role(&self) -> &Role {
        match self.full() {
            Some(r) => &r.role,
            None => {
                let tag = (self.packed >> ROLE_SHIFT) & 0b111;
                // Tag 7 (an unknown role) is never inline.
                &ROLES[(tag as usize).min(ROLES.len() - 1)]
            }
        }
    }

    /// The inline value, when it is of `kind`.
    fn inline(&self, kind: u64) -> Option<u64> {
        (self.full().is_none() && self.kind() == kind).then_some(self.value)
    }

    /// `id` of a `_checkpoint` record.
    pub fn checkpoint(&self) -> Option<i64> {
        match self.full() {
            Some(r) => r.checkpoint,
            None => self.inline(CHECKPOINT).map(|v| v as i64),
        }
    }

    /// `token_count` of the record.
    pub fn tokens(&self) -> Option<u64> {
        match self.full() {
            Some(r) => r.tokens,
            None => self.inline(TOKENS),
        }
    }

    /// Tool calls of an assistant message.
    pub fn tool_calls(&self) -> ToolCalls<'_> {
        ToolCalls(match self.rare.as_deref() {
            Some(Boxed::Full(r)) => Calls::Many(&r.calls),
            Some(Boxed::Few { keys, names }) => {
                let n = names.iter().take_while(|&&n| n != NO_NAME).count();
                Calls::Plain {
                    keys: &keys[..n],
                    names: &names[..n],
                }
            }
            Some(Boxed::Many(p)) => Calls::Plain {
                keys: &p.keys,
                names: &p.names,
            },
            None => match self.inline(CALL) {
                Some(key) => Calls::One {
                    key: CallKey(key),
                    name: NAMES.get(((self.packed >> NAME_SHIFT) & 0x3ff) as u16),
                },
                None => Calls::Many(&[]),
            },
        })
    }

    /// The key of a tool message's `tool_call_id`, to find its call.
    pub fn tool_call_key(&self) -> Option<CallKey> {
        match self.full() {
            Some(r) => r.result.as_ref().map(|id| id.key),
            None => self.inline(RESULT).map(CallKey),
        }
    }

    /// Does this tool message answer the call with `key`?
    pub fn answers(&self, key: CallKey) -> bool {
        self.tool_call_key() == Some(key)
    }

    /// A tool message's `tool_call_id` as text, kept only for results the
    /// graph interprets (D-Mail and subagent results); match others by
    /// [`RecordMeta::tool_call_key`].
    pub fn tool_call_id(&self) -> Option<&str> {
        self.full()?.result.as_ref()?.text.as_deref()
    }

    /// The marker recognised in the record's text, if any.
    pub fn marker(&self) -> Option<Cow<'_, Marker>> {
        match self.full() {
            Some(r) => r.marker.as_ref().map(Cow::Borrowed),
            None => self
                .inline(NOTE)
                .map(|n| Cow::Owned(Marker::CheckpointNote(n as i64))),
        }
    }

    /// Heap bytes the record holds beyond its own size (its box, without
    /// the allocator's overhead): what benchmarks report per record.
    pub fn boxed_bytes(&self) -> usize {
        use std::mem::size_of;
        let r = match self.rare.as_deref() {
            None => return 0,
            Some(Boxed::Few { .. }) => return size_of::<Boxed>(),
            Some(Boxed::Many(p)) => {
                return size_of::<Boxed>()
                    + size_of::<PlainCalls>()
                    + size_of::<CallKey>() * p.keys.len()
                    + size_of::<u16>() * p.names.len()
            }
            Some(Boxed::Full(r)) => r,
        };
        let text = |s: Option<&str>| s.map_or(0, str::len);
        let role = match &r.role {
            Role::Other(name) => name.len(),
            _ => 0,
        };
        let calls: usize = r
            .calls
            .iter()
            .map(|c| {
                let name = match &c.name {
                    Name::Own(s) => s.len(),
                    Name::Table(_) => 0,
                };
                size_of::<CallHead>()
                    + text(c.id.text.as_deref())
                    + name
                    + c.dmail.as_ref().map_or(0, |d| d.message.len())
            })
            .sum();
        let marker = match &r.marker {
            Some(Marker::DMailInjection(s) | Marker::AgentResult(s))
            | Some(Marker::DMailResult(Err(s))) => s.len(),
            _ => 0,
        };
        let result = r.result.as_ref().map_or(0, |id| text(id.text.as_deref()));
        size_of::<Boxed>() + size_of::<Rare>() + role + calls + marker + result
    }

    /// Index records compare by role and content hash, never by bytes.
    pub fn same_record(&self, other: &RecordMeta) -> bool {
        self.hash == other.hash && self.role() == other.role()
    }
}

impl fmt::Debug for RecordMeta {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecordMeta")
            .field("offset", &self.offset())
            .field("len", &self.len)
            .field("line", &self.line)
            .field("role", self.role())
            .field("hash", &self.hash)
            .field("checkpoint", &self.checkpoint())
            .field("tokens", &self.tokens())
            .field("tool_calls", &self.tool_calls().iter().collect::<Vec<_>>())
            .field("tool_call_key", &self.tool_call_key())
            .field("tool_call_id", &self.tool_call_id())
            .field("marker", &self.marker())
            .field("boxed", &self.rare.is_some())
            .finish()
    }
}

/// The tool calls of one record, in the order written.
#[derive(Debug, Clone, Copy)]
pub struct ToolCalls<'a>(Calls<'a>);

#[derive(Debug, Clone, Copy)]
enum Calls<'a> {
    One {
        key: CallKey,
        name: &'a str,
    },
    /// Keys and table names, as many of each.
    Plain {
        keys: &'a [CallKey],
        names: &'a [u16],
    },
    Many(&'a [CallHead]),
}

impl<'a> ToolCalls<'a> {
    pub fn len(&self) -> usize {
        match self.0 {
            Calls::One { .. } => 1,
            Calls::Plain { keys, .. } => keys.len(),
            Calls::Many(calls) => calls.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn first(&self) -> Option<CallRef<'a>> {
        self.get(0)
    }

    pub fn get(&self, i: usize) -> Option<CallRef<'a>> {
        match self.0 {
            Calls::One { key, name } => (i == 0).then_some(CallRef {
                name,
                key,
                id: None,
                dmail: None,
            }),
            Calls::Plain { keys, names } => Some(CallRef {
                name: NAMES.get(*names.get(i)?),
                key: *keys.get(i)?,
                id: None,
                dmail: None,
            }),
            Calls::Many(calls) => calls.get(i).map(|c| CallRef {
                name: c.name.as_str(),
                key: c.id.key,
                id: c.id.text.as_deref(),
                dmail: c.dmail.as_ref(),
            }),
        }
    }

    pub fn iter(&self) -> CallIter<'a> {
        CallIter {
            calls: *self,
            at: 0,
        }
    }
}

impl<'a> IntoIterator for ToolCalls<'a> {
    type Item = CallRef<'a>;
    type IntoIter = CallIter<'a>;
    fn into_iter(self) -> CallIter<'a> {
        self.iter()
    }
}

impl<'a> IntoIterator for &ToolCalls<'a> {
    type Item = CallRef<'a>;
    type IntoIter = CallIter<'a>;
    fn into_iter(self) -> CallIter<'a> {
        self.iter()
    }
}

/// Iterates a record's [`ToolCalls`].
#[derive(Debug, Clone)]
pub struct CallIter<'a> {
    calls: ToolCalls<'a>,
    at: usize,
}

impl<'a> Iterator for CallIter<'a> {
    type Item = CallRef<'a>;
    fn next(&mut self) -> Option<CallRef<'a>> {
        let c = self.calls.get(self.at)?;
        self.at += 1;
        Some(c)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.calls.len().saturating_sub(self.at);
        (n, Some(n))
    }
}

impl ExactSizeIterator for CallIter<'_> {}

/// One tool call of a record, as the index keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallRef<'a> {
    name: &'a str,
    key: CallKey,
    id: Option<&'a str>,
    dmail: Option<&'a DMailArgs>,
}

impl<'a> CallRef<'a> {
    /// The tool's name.
    pub fn name(&self) -> &'a str {
        self.name
    }

    /// The key of the call's id, for finding its result.
    pub fn key(&self) -> CallKey {
        self.key
    }

    /// Is this the call with id `id`?
    pub fn is(&self, id: &str) -> bool {
        self.key == CallKey::of(id)
    }

    /// The call's id as text, kept only for the tools whose ids are shown
    /// or exported (see [`keeps_call_id`]) and calls with D-Mail arguments.
    pub fn id(&self) -> Option<&'a str> {
        self.id
    }

    /// SendDMail's arguments, when they could be read.
    pub fn dmail(&self) -> Option<&'a DMailArgs> {
        self.dmail
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ToolCallHead;

    fn parts(role: Role) -> RecordParts {
        RecordParts {
            role,
            checkpoint: None,
            tokens: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
            marker: None,
        }
    }

    fn call(id: &str, name: &str) -> ToolCallHead {
        ToolCallHead {
            id: id.into(),
            name: name.into(),
            dmail: None,
        }
    }

    fn meta(p: RecordParts) -> RecordMeta {
        RecordMeta::new(100, 10, 2, 7, p)
    }

    #[test]
    fn a_record_index_entry_stays_within_40_bytes() {
        assert!(std::mem::size_of::<RecordMeta>() <= 40);
    }

    #[test]
    fn the_common_shapes_are_inline_and_read_back() {
        let cp = meta(RecordParts {
            checkpoint: Some(-3),
            ..parts(Role::Checkpoint)
        });
        let note = meta(RecordParts {
            marker: Some(Marker::CheckpointNote(i64::MAX)),
            ..parts(Role::User)
        });
        let usage = meta(RecordParts {
            tokens: Some(u64::MAX),
            ..parts(Role::Usage)
        });
        let asks = meta(RecordParts {
            tool_calls: vec![call("call_1", "Shell")],
            ..parts(Role::Assistant)
        });
        let result = meta(RecordParts {
            tool_call_id: Some("call_1".into()),
            ..parts(Role::Tool)
        });
        for m in [&cp, &note, &usage, &asks, &result] {
            assert!(m.rare.is_none(), "{m:?}");
            assert_eq!((m.offset(), m.len(), m.line(), m.hash()), (100, 10, 2, 7));
        }
        assert_eq!((cp.role(), cp.checkpoint()), (&Role::Checkpoint, Some(-3)));
        assert_eq!(
            note.marker().as_deref(),
            Some(&Marker::CheckpointNote(i64::MAX))
        );
        assert_eq!(usage.tokens(), Some(u64::MAX));
        assert_eq!(usage.checkpoint(), None);
        let c = asks.tool_calls().first().unwrap();
        assert_eq!((c.name(), c.id(), c.dmail()), ("Shell", None, None));
        assert!(c.is("call_1") && !c.is("call_2"));
        assert!(result.answers(c.key()));
        assert_eq!(asks.boxed_bytes() + result.boxed_bytes(), 0);
        assert_eq!(result.tool_call_id(), None);
        assert!(asks.tool_call_key().is_none() && asks.marker().is_none());
    }

    #[test]
    fn calls_and_results_pair_by_key_alone() {
        let asks = meta(RecordParts {
            tool_calls: vec![call("a1", "Shell"), call("a2", "ReadFile")],
            ..parts(Role::Assistant)
        });
        let calls: Vec<_> = asks.tool_calls().iter().collect();
        assert_eq!(calls.len(), 2);
        assert_eq!(asks.tool_calls().iter().len(), 2);
        assert_ne!(calls[0].key(), calls[1].key());
        let answer = |id: &str| {
            meta(RecordParts {
                tool_call_id: Some(id.into()),
                ..parts(Role::Tool)
            })
        };
        let (first, second, stray) = (answer("a1"), answer("a2"), answer("zz"));
        let pair = |r: &RecordMeta| calls.iter().position(|c| r.answers(c.key()));
        assert_eq!(pair(&first), Some(0));
        assert_eq!(pair(&second), Some(1));
        assert_eq!(pair(&stray), None);
        // The names are the table's, the ids are not kept.
        assert_eq!(calls[1].name(), "ReadFile");
        assert_eq!(calls[0].id(), None);
    }

    #[test]
    fn ids_that_are_shown_are_kept_as_text() {
        let dmail = DMailArgs {
            message: "m".into(),
            checkpoint_id: 1,
        };
        let asks = meta(RecordParts {
            tool_calls: vec![
                ToolCallHead {
                    dmail: Some(dmail.clone()),
                    ..call("d1", "SendDMail")
                },
                call("t1", "Task"),
            ],
            ..parts(Role::Assistant)
        });
        let calls: Vec<_> = asks.tool_calls().iter().collect();
        assert_eq!(
            (calls[0].id(), calls[0].dmail()),
            (Some("d1"), Some(&dmail))
        );
        assert_eq!(calls[1].id(), Some("t1"));
        let agent = meta(RecordParts {
            tool_call_id: Some("t1".into()),
            marker: Some(Marker::AgentResult("sub".into())),
            ..parts(Role::Tool)
        });
        assert_eq!(agent.tool_call_id(), Some("t1"));
        assert!(agent.answers(calls[1].key()));
    }

    #[test]
    fn odd_records_keep_everything_in_the_box() {
        let odd = meta(RecordParts {
            checkpoint: Some(4),
            tokens: Some(9),
            tool_call_id: Some("x".into()),
            ..parts(Role::Other("narrator".into()))
        });
        assert!(odd.rare.is_some());
        assert!(odd.boxed_bytes() > "narrator".len());
        assert_eq!(*odd.role(), Role::Other("narrator".into()));
        assert_eq!((odd.checkpoint(), odd.tokens()), (Some(4), Some(9)));
        assert!(odd.answers(CallKey::of("x")));
        let long = "n".repeat(super::super::names::MAX_LEN + 1);
        let named = meta(RecordParts {
            tool_calls: vec![call("c", &long)],
            ..parts(Role::Assistant)
        });
        assert_eq!(named.tool_calls().first().map(|c| c.name()), Some(&*long));
    }

    /// The calls as (name, key, id, dmail), for comparing forms.
    fn calls_of(m: &RecordMeta) -> Vec<(String, CallKey, Option<String>, Option<DMailArgs>)> {
        m.tool_calls()
            .iter()
            .map(|c| {
                (
                    c.name().to_string(),
                    c.key(),
                    c.id().map(str::to_string),
                    c.dmail().cloned(),
                )
            })
            .collect()
    }

    #[test]
    fn several_plain_calls_go_to_the_small_box_and_read_back() {
        assert!(std::mem::size_of::<Boxed>() <= 32);
        for n in [2, 3, 4, 7] {
            let names = ["Bash", "Read", "Grep", "Edit", "Write", "Glob", "LS"];
            let heads: Vec<_> = (0..n)
                .map(|i| call(&format!("toolu_{i}"), names[i]))
                .collect();
            let m = meta(RecordParts {
                tool_calls: heads.clone(),
                ..parts(Role::Assistant)
            });
            match m.rare.as_deref() {
                Some(Boxed::Few { .. }) => assert!(n <= FEW),
                Some(Boxed::Many(p)) => {
                    assert!(n > FEW && p.keys.len() == n && p.names.len() == n)
                }
                other => panic!("{n} plain calls boxed as {other:?}"),
            }
            assert_eq!((m.offset(), m.len(), m.line(), m.hash()), (100, 10, 2, 7));
            assert_eq!(*m.role(), Role::Assistant);
            let want: Vec<_> = heads
                .iter()
                .map(|h| (h.name.clone(), CallKey::of(&h.id), None, None))
                .collect();
            assert_eq!(calls_of(&m), want);
            let calls = m.tool_calls();
            assert_eq!((calls.len(), calls.iter().len()), (n, n));
            assert!(calls.get(n).is_none());
            assert!(calls.first().unwrap().is("toolu_0"));
            assert!(m.checkpoint().is_none() && m.tokens().is_none());
            assert!(m.tool_call_key().is_none() && m.tool_call_id().is_none());
            assert!(m.marker().is_none());
            assert!(m.boxed_bytes() <= 64 + 10 * n);
            assert_eq!(m.clone(), m);
        }
    }

    #[test]
    fn the_small_box_leaves_the_one_value_inline() {
        let m = meta(RecordParts {
            tokens: Some(42),
            tool_calls: vec![call("a", "Bash"), call("b", "Bash")],
            ..parts(Role::Assistant)
        });
        assert!(matches!(m.rare.as_deref(), Some(Boxed::Few { .. })));
        assert_eq!(m.tokens(), Some(42));
        assert_eq!(m.tool_calls().len(), 2);
        // Two values besides the calls: everything in the full box.
        let both = meta(RecordParts {
            tokens: Some(42),
            checkpoint: Some(1),
            tool_calls: vec![call("a", "Bash"), call("b", "Bash")],
            ..parts(Role::Assistant)
        });
        assert!(matches!(both.rare.as_deref(), Some(Boxed::Full(_))));
        assert_eq!((both.tokens(), both.checkpoint()), (Some(42), Some(1)));
        assert_eq!(calls_of(&both), calls_of(&m));
    }

    #[test]
    fn a_call_that_keeps_more_sends_all_to_the_full_box() {
        let dmail = DMailArgs {
            message: "back".into(),
            checkpoint_id: 3,
        };
        let long = "n".repeat(super::super::names::MAX_LEN + 1);
        let odd = [
            ToolCallHead {
                dmail: Some(dmail.clone()),
                ..call("d", "SendDMail")
            },
            call("t", "Task"),
            call("g", "Agent"),
            call("l", &long),
        ];
        for c in odd {
            let heads = vec![call("a", "Bash"), c.clone(), call("b", "Read")];
            let m = meta(RecordParts {
                tool_calls: heads.clone(),
                ..parts(Role::Assistant)
            });
            assert!(matches!(m.rare.as_deref(), Some(Boxed::Full(_))), "{c:?}");
            let got = calls_of(&m);
            assert_eq!(got[1].0, c.name);
            assert_eq!(got[1].1, CallKey::of(&c.id));
            let kept = c.dmail.is_some() || keeps_call_id(&c.name);
            assert_eq!(got[1].2.as_deref(), kept.then_some(c.id.as_str()));
            assert_eq!(got[1].3, c.dmail);
            assert_eq!((got[0].2.as_deref(), got[2].0.as_str()), (None, "Read"));
        }
    }

    #[test]
    fn shifting_a_record_with_boxed_calls_keeps_them() {
        let mut m = meta(RecordParts {
            tool_calls: vec![call("a", "Bash"), call("b", "Read"), call("c", "Grep")],
            ..parts(Role::Assistant)
        });
        let before = calls_of(&m);
        m.shift(1 << 20, 1);
        assert!(matches!(m.rare.as_deref(), Some(Boxed::Few { .. })));
        assert_eq!(
            (m.offset(), m.line(), calls_of(&m)),
            (100 + (1 << 20), 3, before.clone())
        );
        m.shift(1 << 48, 0);
        assert!(matches!(m.rare.as_deref(), Some(Boxed::Full(_))));
        assert_eq!(m.offset(), 100 + (1 << 20) + (1 << 48));
        assert_eq!((calls_of(&m), m.role()), (before, &Role::Assistant));
    }

    #[test]
    fn shifting_keeps_the_fields_even_past_the_packed_offset() {
        let mut m = meta(RecordParts {
            tool_calls: vec![call("c9", "Grep")],
            ..parts(Role::Assistant)
        });
        let before = m.tool_calls().first().unwrap();
        let (name, key) = (before.name().to_string(), before.key());
        m.shift(1 << 20, 5);
        assert_eq!((m.offset(), m.line()), (100 + (1 << 20), 7));
        m.shift(1 << 48, 0);
        assert!(m.rare.is_some());
        assert_eq!(m.offset(), 100 + (1 << 20) + (1 << 48));
        let after = m.tool_calls().first().unwrap();
        assert_eq!((after.name(), after.key()), (name.as_str(), key));
        assert_eq!(*m.role(), Role::Assistant);
        let far = RecordMeta::new(1 << 50, 1, 1, 1, parts(Role::User));
        assert_eq!(far.offset(), 1 << 50);
    }
}
