//! The seam between the agent loop and a model: one request in, one stream of events out.
//!
//! `stream` is a plain method returning a boxed stream rather than an `async fn`: the trait
//! stays object-safe (`Box<dyn ChatModel>`, `&dyn ChatModel`) without `async-trait`, nothing
//! happens until the stream is first polled, and every failure, whether opening the connection
//! or mid-body, arrives on the one channel, as the stream's last item. Dropping the stream
//! cancels the attempt (the HTTP connection is closed).

use std::pin::Pin;

use futures_util::Stream;

use super::{ChatRequest, LlmError, StreamEvent};

/// The events of one attempt. Owns everything it needs (`'static`), so it can be moved into a
/// task or outlive the borrow of the model.
///
/// Contract: zero or more `Ok` events, then the stream ends right after either an
/// `Ok(StreamEvent::Finish)` or one `Err`. Nothing is yielded after the terminal item.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, LlmError>> + Send + 'static>>;

/// Something that answers chat requests with streamed events: the HTTP client, the scripted
/// model, or a test double.
pub trait ChatModel: Send + Sync {
    /// Starts one attempt for `request`. Implementations copy what they need from `request`
    /// before returning; the call itself does no I/O.
    fn stream(&self, request: &ChatRequest) -> EventStream;
}

/// Shared models (the loop and a summarizer holding one client) are models too.
impl<M: ChatModel + ?Sized> ChatModel for std::sync::Arc<M> {
    fn stream(&self, request: &ChatRequest) -> EventStream {
        (**self).stream(request)
    }
}

/// Boxed models (`Box<dyn ChatModel>`, chosen at run time) are models too.
impl<M: ChatModel + ?Sized> ChatModel for Box<M> {
    fn stream(&self, request: &ChatRequest) -> EventStream {
        (**self).stream(request)
    }
}
