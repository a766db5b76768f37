//! Integration tests of the LLM client against a real HTTP server on 127.0.0.1 that streams
//! SSE the way DeepSeek's API does, plus the scripted model. One binary; one module per topic.

// The test server: hyper on 127.0.0.1:0, replaying scripted replies and recording requests.
#[path = "llm/server.rs"]
mod server;

// A full DeepSeek-shaped stream: reasoning, text, two parallel tool calls, usage, [DONE].
#[path = "llm/streaming.rs"]
mod streaming;

// Failures of one attempt, each mapped to its error code.
#[path = "llm/failures.rs"]
mod failures;

// Retrying across attempts, with every failed attempt reported.
#[path = "llm/retries.rs"]
mod retries;

// The scripted model: replay, injected errors, recorded requests, delays.
#[path = "llm/scripted.rs"]
mod scripted;

// House-style checks on the crate's own sources.
