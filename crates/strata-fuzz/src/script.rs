//! The model-script reader (the scripted model's JSON, `strata agent --script`).

use strata_agent::llm::ScriptedModel;

/// The script parser and its per-response checks.
pub fn model_script(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(model) = ScriptedModel::from_json_str(text) {
        let _ = model.n_remaining();
    }
}
