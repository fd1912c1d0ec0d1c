//! Sources: one module per agent's on-disk contract, each feeding the same
//! world-line builder.

pub mod kimi_code;
