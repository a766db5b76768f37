//! Integration tests of the agent loop on real stores: a local HTTP server streaming SSE like
//! DeepSeek, the scripted model, crash and resume. One binary; one module per topic.

// The test server: hyper on 127.0.0.1:0, replaying scripted replies and recording requests.
#[path = "llm/server.rs"]
#[allow(dead_code)]
mod server;

// Building agents on stores, observing them, reading logs back.
#[path = "agent/support.rs"]
mod support;

// Full turns over HTTP: reasoning, parallel tool calls, tool round trips, exact event order.
#[path = "agent/turns.rs"]
mod turns;

// Failed attempts: 429 then success, mid-stream disconnect, a request that fails for good.
#[path = "agent/attempts.rs"]
mod attempts;

// Cancellation mid-stream and during tools.
#[path = "agent/cancel.rs"]
mod cancel;

// Resume after a crash inside a tool body; system prompt changes across turns.
#[path = "agent/resume.rs"]
mod resume;

// The request sent at each step equals the request the stored log rebuilds.
#[path = "agent/reconstruct.rs"]
mod reconstruct;

// Auto-compaction at the pre-step point with the LLM summarizer.
#[path = "agent/compaction.rs"]
mod compaction;
