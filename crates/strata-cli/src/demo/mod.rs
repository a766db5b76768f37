//! Pieces of `strata demo` that are not its orchestration (which lives in `cmd/demo.rs`): the
//! scratch project the tools work on, colours, and the compact views of turns and surfaces.
//! `script.json` here is the scripted model's script, embedded by `cmd/demo.rs`.

mod paint;
mod view;
mod workdir;

pub use paint::Paint;
pub use view::{describe_event, surface_line, thousands, wrap, TurnPrinter, LEAD};
pub use workdir::Workdir;
