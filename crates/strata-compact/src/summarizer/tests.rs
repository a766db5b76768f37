//! Unit tests of the summary request's fixed parts.

use super::*;

#[test]
fn instruction_names_every_section_in_order() {
    let text = instruction_text();
    let mut from = 0;
    for section in SUMMARY_SECTIONS {
        let at = text[from..].find(section).map(|offset| from + offset);
        assert!(at.is_some(), "missing or out of order: {section}");
        from = at.unwrap_or(from) + section.len();
    }
}

#[test]
fn instruction_message_is_a_plugin_user_message() {
    let request = SummaryRequest {
        header: None,
        context: None,
        messages: Vec::new(),
        shadowed_from: 0,
        shadowed: Vec::new(),
        instruction: "summarize".into(),
        max_tokens: 10,
    };
    let message = request.instruction_message();
    assert_eq!(message["role"], "user");
    assert_eq!(message["source"]["plugin"], INSTRUCTION_PLUGIN);
    assert_eq!(message["content"][0]["text"], "summarize");
}
