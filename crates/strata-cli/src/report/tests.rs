//! Unit tests of the HTML report: escaping, clipping, the size budget and the page's structure.

use serde_json::json;
use strata_core::{log_stats, RawEvent, SeedOptions, Session, SessionHeader};

use super::*;

const INJECTED: &str = "</li><script>alert(\"x\")</script><img src=x onerror='y'> & done";

/// A small log: one turn, an injected user message, an assistant reply with usage, then a
/// second user message that replaces the first (seq 5 shadows seq 2).
fn session() -> Session {
    let rows = [
        json!({"type":"turn/start","seq":0,"time":1_700_000_000_000_i64,"data":{"turn":1}}),
        json!({"type":"step/start","seq":1,"time":1_700_000_000_001_i64,"data":{"turn":1,"step":1}}),
        json!({"type":"user/message","seq":2,"time":1_700_000_000_002_i64,"data":{"content":[{"type":"text","text":INJECTED}],"source":{"kind":"user"},"role":"user","id":"u1"},"surfaceOp":"append"}),
        json!({"type":"assistant/message","seq":3,"time":1_700_000_000_003_i64,"data":{"turn":1,"step":1,"message":{"role":"assistant","content":[{"type":"text","text":"hello"}],"source":{"kind":"model","provider":"p","model":"m"},"id":"a1"},"stream":[],"usage":{"inputTokens":1000,"outputTokens":50}},"surfaceOp":"append"}),
        json!({"type":"step/end","seq":4,"time":1_700_000_000_004_i64,"data":{"turn":1,"step":1}}),
        json!({"type":"user/message","seq":5,"time":1_700_000_000_005_i64,"data":{"content":[{"type":"text","text":"summary"}],"source":{"kind":"user"},"role":"user","id":"u2"},"sourceEventSeqs":[2],"surfaceOp":{"op":"replace","startSeq":2,"endSeq":2}}),
        json!({"type":"turn/end","seq":6,"time":1_700_000_000_006_i64,"data":{"turn":1,"reason":{"kind":"completed"}}}),
    ];
    Session::restore(
        SessionHeader::fresh("report-test", 1_700_000_000_000).expect("header"),
        rows.into_iter().map(RawEvent::from_value),
        SeedOptions::default(),
    )
    .expect("the test log is valid")
}

fn page_of(session: &Session) -> String {
    let events = &session.events().unwrap()[..7];
    let stats = log_stats(events).expect("stats");
    render(&Report {
        label: "dir/<log>.jsonl",
        header: session.header(),
        generation: "V3",
        events,
        stats: &stats,
    })
}

#[test]
fn escape_into_replaces_every_special_character() {
    let mut out = String::new();
    escape_into(&mut out, "<a href=\"x\">'&'</a>\u{0}\u{7}\n\tdéjà 数据");
    assert_eq!(
        out,
        "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;\u{FFFD}\u{FFFD}\n\tdéjà 数据"
    );
}

#[test]
fn clip_cuts_on_character_boundaries() {
    assert_eq!(clip("déjà 数据", 3), ("déj", true));
    assert_eq!(clip("数据", 2), ("数据", false));
    assert_eq!(clip("", 0), ("", false));
    assert_eq!(clip("ab", 0), ("", true));
}

#[test]
fn log_text_is_escaped_and_never_becomes_markup() {
    let page = page_of(&session());
    assert!(!page.contains(INJECTED));
    assert!(!page.contains("<script>alert"));
    assert!(!page.contains("<img"));
    assert!(page.contains("&lt;/li&gt;&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"));
    assert!(
        page.contains("dir/&lt;log&gt;.jsonl"),
        "the label is escaped too"
    );
    // The only script element is the inlined one.
    assert_eq!(page.matches("<script").count(), 1);
    assert_eq!(page.matches("</script>").count(), 1);
}

#[test]
fn page_is_self_contained() {
    let page = page_of(&session());
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(page.contains("Content-Security-Policy"));
    // No element that loads anything (the log's own `src=` text is escaped, so not matched).
    for needle in [
        "http://",
        "https://",
        "<link",
        "<img",
        "<iframe",
        "<object",
        "<embed",
        "<script src",
        "@import",
        "url(",
    ] {
        assert!(!page.contains(needle), "the page references {needle}");
    }
}

#[test]
fn every_event_has_a_row_marked_by_its_standing() {
    let page = page_of(&session());
    for seq in 0..7 {
        assert!(
            page.contains(&format!("<li id=e{seq} ")),
            "row of seq {seq}"
        );
    }
    assert!(page.contains("<li id=e2 class=s data-by=5><b>2</b><i>user/message</i>"));
    assert!(page.contains("<li id=e3 class=v><b>3</b>"));
    assert!(page.contains("<li id=e5 class=\"v r\"><b>5</b>"));
    assert!(page.contains("<li id=e0 class=l><b>0</b><i>turn/start</i></li>"));
    assert!(page.contains("shadowed by #5"));
    assert!(page.contains("replaces 2–2 (1)"));
}

#[test]
fn replacement_is_drawn_and_listed() {
    let page = page_of(&session());
    assert!(page.contains("<g class=\"rep\" data-rep=\"5\"><title>#5 replaced 2–2 (1 shadowed)"));
    assert!(page.contains("<tr id=\"r5\" data-rep=\"5\">"));
    assert!(page.contains("<td class=\"seqs\"><a href=\"#e2\">2</a></td>"));
}

#[test]
fn token_usage_is_charted_per_key() {
    let page = page_of(&session());
    assert!(page.contains("svg class=\"chart bars k0\""));
    assert!(page.contains("svg class=\"chart bars k1\""));
    assert!(page.contains("turn 1 step 1 (seq 3): 1,000 inputTokens"));
    assert!(page.contains("<i>assistant/message</i><em>in 1,000 · out 50</em>"));
}

#[test]
fn turns_and_steps_group_the_timeline() {
    let page = page_of(&session());
    assert_eq!(page.matches("<details class=turn open>").count(), 1);
    assert!(page.contains("<b>Turn 1</b><small>seqs 0–6 · 7 events · 1 step · <em>1 shadowed</em>"));
    assert_eq!(
        page.matches("<div class=step>").count(),
        3,
        "before, in and after step 1"
    );
    assert_eq!(page.matches("<h3>Step 1</h3>").count(), 1);
}

#[test]
fn budget_shrinks_with_the_log() {
    let small = Budget::for_events(130);
    assert_eq!(small.preview_chars, 200);
    assert_eq!(small.detail_chars, 4_000);
    assert_eq!(small.open_turns, usize::MAX);
    let big = Budget::for_events(100_000);
    assert_eq!(big.preview_chars, 40);
    assert_eq!(
        big.detail_chars, 0,
        "no folded full text on a 100k-event log"
    );
    assert_eq!(big.open_turns, 2);
    assert_eq!(Budget::for_events(0).preview_chars, 200);
}

#[test]
fn digits_are_grouped() {
    assert_eq!(group_digits(0), "0");
    assert_eq!(group_digits(999), "999");
    assert_eq!(group_digits(1_000), "1,000");
    assert_eq!(group_digits(1_234_567), "1,234,567");
}

#[test]
fn a_log_past_the_listing_cap_lists_its_newest_events() {
    assert_eq!(Budget::for_events(MAX_LISTED_EVENTS).listed_from, 0);
    let huge = Budget::for_events(10 * MAX_LISTED_EVENTS);
    assert_eq!(huge.listed_from, 9 * MAX_LISTED_EVENTS);
    assert_eq!(
        huge.preview_chars,
        Budget::for_events(MAX_LISTED_EVENTS).preview_chars,
        "the text budget is spent on the listed events"
    );

    let session = session();
    let events = &session.events().unwrap()[..7];
    let stats = log_stats(events).expect("stats");
    let report = Report {
        label: "log.jsonl",
        header: session.header(),
        generation: "V3",
        events,
        stats: &stats,
    };
    let budget = Budget {
        listed_from: 3,
        ..Budget::for_events(7)
    };
    let page = render_with(&report, budget);
    for seq in 0..3 {
        assert!(
            !page.contains(&format!("<li id=e{seq} ")),
            "seq {seq} listed"
        );
    }
    for seq in 3..7 {
        assert!(
            page.contains(&format!("<li id=e{seq} ")),
            "seq {seq} unlisted"
        );
    }
    assert!(page.contains(
        "<p class=unlisted><b>Seqs 0–2 are not listed</b> (3 events, turns 1–1, 1 shadowed): \
         this log has 7 events and the timeline lists the newest 4,"
    ));
    assert!(page.contains("The newest 4 events in log order"));
    assert!(page.contains("<b>Turn 1 (continued)</b><small>seqs 3–6 · 4 events"));
    // The charts still cover the whole log: the replacement of seq 2 is drawn and listed.
    assert!(page.contains("data-rep=5"));

    // Without the cap, nothing of that is written.
    let whole = render(&report);
    assert!(!whole.contains("class=unlisted"));
    assert!(!whole.contains("(continued)"));
    assert!(whole.contains("Every event in log order"));
}
