//! `state.json` of a Kimi Code session, read leniently through the guarded
//! open: a missing or broken file (or a FIFO, a device, a symlink, one over
//! the cap) means no title and no lineage, never a failure or a hang.

use std::path::Path;

use serde_json::Value;

use crate::read::guard;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentState {
    pub id: String,
    /// `"main"` or `"sub"`.
    pub kind: Option<String>,
    pub parent_agent: Option<String>,
    /// `labels.profileName`: the subagent type.
    pub profile: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionState {
    pub id: Option<String>,
    /// Absent for print-mode sessions.
    pub title: Option<String>,
    pub cwd: Option<String>,
    pub forked_from: Option<String>,
    /// In the file's order.
    pub agents: Vec<AgentState>,
    /// Why an existing `state.json` was not read, for a warning.
    pub problem: Option<String>,
}

impl SessionState {
    pub fn read(session_dir: &Path) -> SessionState {
        match guard::read_json_nofollow(&session_dir.join("state.json"), guard::STATE_JSON_CAP) {
            Ok(v) => v.map(|v| SessionState::from_value(&v)).unwrap_or_default(),
            Err(why) => SessionState {
                problem: Some(why),
                ..SessionState::default()
            },
        }
    }

    pub fn from_value(v: &Value) -> SessionState {
        let s = |v: &Value, k: &str| {
            v.get(k)
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
                .map(str::to_string)
        };
        let agents = v
            .get("agents")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(id, a)| AgentState {
                        id: id.clone(),
                        kind: s(a, "type"),
                        parent_agent: s(a, "parentAgentId"),
                        profile: a.get("labels").and_then(|l| s(l, "profileName")),
                    })
                    .collect()
            })
            .unwrap_or_default();
        SessionState {
            id: s(v, "id"),
            title: s(v, "title"),
            cwd: s(v, "cwd"),
            forked_from: s(v, "forkedFrom"),
            agents,
            problem: None,
        }
    }

    pub fn agent(&self, id: &str) -> Option<&AgentState> {
        self.agents.iter().find(|a| a.id == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_lineage_agents_and_tolerates_odd_shapes() {
        let st = SessionState::from_value(&json!({
            "id": "session_x", "title": "Fork: t", "forkedFrom": "session_y",
            "agents": {"main": {"type": "main"},
                       "agent-0": {"type": "sub", "parentAgentId": "main",
                                   "labels": {"profileName": "coder"}}},
            "createdAt": "2026-05-20T05:59:51.085Z"}));
        assert_eq!(st.forked_from.as_deref(), Some("session_y"));
        assert_eq!(st.agents.len(), 2);
        assert_eq!(
            st.agent("agent-0").unwrap().profile.as_deref(),
            Some("coder")
        );
        let odd = SessionState::from_value(&json!({"title": 3, "agents": []}));
        assert_eq!(odd, SessionState::default());
    }
}
