//! `worldline demo`: a scripted, offline agent that writes a live kimi-cli
//! session (D-Mail reverts included) at a pace a person can watch.

mod agent;
mod clock;
pub mod react;
pub mod rng;
mod run;
pub mod script;
mod subagent;

pub use agent::{DemoAgent, DemoConfig, DemoError, DemoEvent};
pub use clock::{Clock, FakeClock, SystemClock};
pub use run::{farewell, run, run_agent, AtEnd, DemoOptions};
