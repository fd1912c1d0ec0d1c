//! One Pi line as serde reads it: the fallback of [`super::fast`], and the
//! fields both readers give [`super::file`].

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

/// A line as serde reads it (the fallback of [`super::fast`]).
#[derive(Deserialize)]
pub(super) struct Line<'a> {
    #[serde(rename = "type", borrow, default)]
    pub(super) ty: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) id: Option<Cow<'a, str>>,
    /// Missing (a version 1 entry) vs `null` (a root).
    #[serde(rename = "parentId", borrow, default, deserialize_with = "present")]
    pub(super) parent_id: Option<Option<Cow<'a, str>>>,
    #[serde(borrow, default)]
    pub(super) timestamp: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) message: Option<Msg<'a>>,
    #[serde(rename = "targetId", borrow, default)]
    pub(super) target_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) label: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) name: Option<Cow<'a, str>>,
    #[serde(rename = "firstKeptEntryId", borrow, default)]
    pub(super) first_kept: Option<Cow<'a, str>>,
    // The header's.
    #[serde(default)]
    pub(super) version: Option<u64>,
    #[serde(borrow, default)]
    pub(super) cwd: Option<Cow<'a, str>>,
    #[serde(rename = "parentSession", borrow, default)]
    pub(super) parent_session: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
pub(super) struct Msg<'a> {
    #[serde(borrow, default)]
    pub(super) role: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) content: Option<&'a RawValue>,
    #[serde(rename = "toolCallId", borrow, default)]
    pub(super) tool_call_id: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
pub(super) struct Block<'a> {
    #[serde(rename = "type", borrow, default)]
    pub(super) ty: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) name: Option<Cow<'a, str>>,
}

pub(super) fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// The fields of a line the index keeps, by either reader.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Fields<'a> {
    pub ty: Option<Cow<'a, str>>,
    pub id: Option<Cow<'a, str>>,
    pub parent_id: Option<Option<Cow<'a, str>>>,
    pub timestamp: Option<Cow<'a, str>>,
    pub message: Option<MsgFields<'a>>,
    pub target_id: Option<Cow<'a, str>>,
    pub label: Option<Cow<'a, str>>,
    pub name: Option<Cow<'a, str>>,
    pub first_kept: Option<Cow<'a, str>>,
    pub version: Option<u64>,
    pub cwd: Option<Cow<'a, str>>,
    pub parent_session: Option<Cow<'a, str>>,
}

#[derive(Debug, Default, PartialEq)]
pub(super) struct MsgFields<'a> {
    pub role: Option<Cow<'a, str>>,
    pub tool_call_id: Option<Cow<'a, str>>,
    /// `toolCall` blocks of `content` as `(id, name)` (none when the
    /// content is no list of blocks).
    pub calls: Vec<(Cow<'a, str>, Cow<'a, str>)>,
}

/// A line read by serde.
pub(super) fn serde_fields(line: &[u8]) -> serde_json::Result<Fields<'_>> {
    let l: Line = serde_json::from_slice(line)?;
    Ok(Fields {
        ty: l.ty,
        id: l.id,
        parent_id: l.parent_id,
        timestamp: l.timestamp,
        message: l.message.map(|m| MsgFields {
            role: m.role,
            tool_call_id: m.tool_call_id,
            calls: tool_calls(m.content),
        }),
        target_id: l.target_id,
        label: l.label,
        name: l.name,
        first_kept: l.first_kept,
        version: l.version,
        cwd: l.cwd,
        parent_session: l.parent_session,
    })
}

/// `toolCall` blocks of a message's content.
pub(super) fn tool_calls(content: Option<&RawValue>) -> Vec<(Cow<'_, str>, Cow<'_, str>)> {
    let Some(raw) = content else {
        return Vec::new();
    };
    if !raw.get().starts_with('[') {
        return Vec::new();
    }
    let Ok(blocks) = serde_json::from_str::<Vec<Block>>(raw.get()) else {
        return Vec::new();
    };
    blocks
        .into_iter()
        .filter(|b| b.ty.as_deref() == Some("toolCall"))
        .map(|b| (b.id.unwrap_or_default(), b.name.unwrap_or_default()))
        .collect()
}
