//! DenwaRenji: the D-Mail post office inside an agent, with kimi-cli's exact
//! rules and messages (see docs/kimi-session-format.md).

use serde::{Deserialize, Serialize};

/// A D-Mail waiting to be applied at the end of the agent's current step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DMail {
    pub message: String,
    pub checkpoint_id: i64,
}

/// Why `send_dmail` refused; `Display` is kimi-cli's exact text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DenwaRenjiError {
    #[error("Only one D-Mail can be sent at a time")]
    AlreadyPending,
    #[error("The checkpoint ID can not be negative")]
    NegativeCheckpoint,
    #[error("There is no checkpoint with the given ID")]
    NoSuchCheckpoint,
}

#[derive(Debug, Default, Clone)]
pub struct DenwaRenji {
    pending: Option<DMail>,
    n_checkpoints: i64,
}

impl DenwaRenji {
    pub fn new() -> Self {
        Self::default()
    }

    /// Checks run in kimi-cli's order, so the first failing rule names the error.
    pub fn send_dmail(&mut self, dmail: DMail) -> Result<(), DenwaRenjiError> {
        if self.pending.is_some() {
            return Err(DenwaRenjiError::AlreadyPending);
        }
        if dmail.checkpoint_id < 0 {
            return Err(DenwaRenjiError::NegativeCheckpoint);
        }
        if dmail.checkpoint_id >= self.n_checkpoints {
            return Err(DenwaRenjiError::NoSuchCheckpoint);
        }
        self.pending = Some(dmail);
        Ok(())
    }

    /// The agent loop calls this at every step with the next checkpoint id.
    pub fn set_n_checkpoints(&mut self, n: i64) {
        self.n_checkpoints = n;
    }

    pub fn n_checkpoints(&self) -> i64 {
        self.n_checkpoints
    }

    pub fn pending(&self) -> Option<&DMail> {
        self.pending.as_ref()
    }

    /// Takes the pending D-Mail, leaving none.
    pub fn fetch_pending_dmail(&mut self) -> Option<DMail> {
        self.pending.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dm(id: i64) -> DMail {
        DMail {
            message: "m".into(),
            checkpoint_id: id,
        }
    }

    #[test]
    fn rules_in_kimi_order() {
        let mut r = DenwaRenji::new();
        assert_eq!(r.send_dmail(dm(0)), Err(DenwaRenjiError::NoSuchCheckpoint));
        r.set_n_checkpoints(3);
        assert_eq!(
            r.send_dmail(dm(-1)),
            Err(DenwaRenjiError::NegativeCheckpoint)
        );
        assert_eq!(r.send_dmail(dm(3)), Err(DenwaRenjiError::NoSuchCheckpoint));
        assert_eq!(r.send_dmail(dm(2)), Ok(()));
        // A pending D-Mail wins over every other rule.
        assert_eq!(r.send_dmail(dm(-1)), Err(DenwaRenjiError::AlreadyPending));
        assert_eq!(r.fetch_pending_dmail(), Some(dm(2)));
        assert_eq!(r.fetch_pending_dmail(), None);
        assert_eq!(
            DenwaRenjiError::NoSuchCheckpoint.to_string(),
            "There is no checkpoint with the given ID"
        );
    }
}
