//! `strata messages`: the derived messages the next request would send.

use super::{load_for_view, Status};
use crate::cli::Format;
use crate::output;

pub(crate) fn run(file: &std::path::Path, format: Format) -> anyhow::Result<Status> {
    let Some(loaded) = load_for_view(file, format)? else {
        return Ok(Status::Invalid);
    };
    let messages = loaded.session.derive_messages();
    if format.json {
        output::line(&serde_json::to_string(&messages)?)?;
        return Ok(Status::Ok);
    }
    for message in messages.iter() {
        output::line(&format!("── {} ({})", message.role(), message.id()))?;
        output::line(&output::message_text(message))?;
    }
    Ok(Status::Ok)
}
