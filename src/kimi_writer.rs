//! Writing kimi-format session files exactly as kimi-cli does (not built yet).
