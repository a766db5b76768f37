//! Derived messages: the surface projected to messages, cached (session-core §7.1).
//!
//! The cache keeps the messages of the nodes it has already projected and,
//! after a pure tail append, projects only the new nodes. A replacement (or a
//! rolled-back batch) starts a new cache. Snapshots handed to callers are
//! `(shared log, length)` pairs over an append-only [`MessageLog`], so taking
//! one is O(1) whatever the surface size, and a snapshot never grows or
//! changes after it is taken.

use std::ops::Index;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use crate::message::Message;

/// Number of segments: segment `k` holds `FIRST << k` slots, enough for any log.
const SEGMENTS: usize = 48;
const FIRST: usize = 32;

/// An append-only message list that can be read while it grows.
///
/// Invariant: slots `0..len` are set and never change; only the cache owner pushes.
struct MessageLog {
    segments: [OnceLock<Box<[OnceLock<Message>]>>; SEGMENTS],
    len: AtomicUsize,
}

impl MessageLog {
    fn new() -> MessageLog {
        MessageLog {
            segments: std::array::from_fn(|_| OnceLock::new()),
            len: AtomicUsize::new(0),
        }
    }

    /// Segment and offset of slot `index`.
    fn locate(index: usize) -> (usize, usize) {
        let block = index / FIRST + 1;
        let segment = (usize::BITS - 1 - block.leading_zeros()) as usize;
        let segment_start = FIRST * ((1 << segment) - 1);
        (segment, index - segment_start)
    }

    fn push(&self, message: Message) {
        let index = self.len.load(Ordering::Acquire);
        let (segment, offset) = MessageLog::locate(index);
        let Some(slots) = self.segments.get(segment) else {
            return;
        };
        let slots = slots.get_or_init(|| (0..FIRST << segment).map(|_| OnceLock::new()).collect());
        if let Some(slot) = slots.get(offset) {
            let _ = slot.set(message);
            self.len.store(index + 1, Ordering::Release);
        }
    }

    fn get(&self, index: usize) -> Option<&Message> {
        let (segment, offset) = MessageLog::locate(index);
        self.segments.get(segment)?.get()?.get(offset)?.get()
    }
}

/// A frozen view of the derived messages at one point of the log.
///
/// Cloning is O(1); the view never changes, even as the session grows.
#[derive(Clone)]
pub struct DerivedMessages {
    log: Arc<MessageLog>,
    len: usize,
}

impl DerivedMessages {
    /// Number of messages.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no messages.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The message at `index`.
    pub fn get(&self, index: usize) -> Option<&Message> {
        if index < self.len {
            self.log.get(index)
        } else {
            None
        }
    }

    /// The messages in model order.
    pub fn iter(&self) -> impl Iterator<Item = &Message> + '_ {
        (0..self.len).filter_map(move |index| self.log.get(index))
    }

    /// The messages as an owned vector of handles.
    pub fn to_vec(&self) -> Vec<Message> {
        self.iter().cloned().collect()
    }

    /// The last message.
    pub fn last(&self) -> Option<&Message> {
        self.len.checked_sub(1).and_then(|index| self.get(index))
    }
}

impl Index<usize> for DerivedMessages {
    type Output = Message;
    fn index(&self, index: usize) -> &Message {
        match self.get(index) {
            Some(message) => message,
            None => panic!(
                "message index {index} out of range for {} messages",
                self.len
            ),
        }
    }
}

impl std::fmt::Debug for DerivedMessages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl PartialEq for DerivedMessages {
    fn eq(&self, other: &DerivedMessages) -> bool {
        self.len == other.len && self.iter().zip(other.iter()).all(|(a, b)| a == b)
    }
}

impl serde::Serialize for DerivedMessages {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

/// The incremental cache behind `Session::derive_messages`.
pub(crate) struct DerivedCache {
    log: Arc<MessageLog>,
    /// Invariant: the first `projected_nodes` surface nodes are projected into `log`.
    projected_nodes: usize,
    /// The session epoch the cache belongs to (bumped on replace and rollback).
    epoch: u64,
}

impl DerivedCache {
    pub(crate) fn new(epoch: u64) -> DerivedCache {
        DerivedCache {
            log: Arc::new(MessageLog::new()),
            projected_nodes: 0,
            epoch,
        }
    }

    /// Brings the cache up to date with `nodes` and returns a snapshot.
    pub(crate) fn refresh(
        &mut self,
        epoch: u64,
        node_count: usize,
        project_node: impl Fn(usize) -> Option<Message>,
    ) -> DerivedMessages {
        if epoch != self.epoch || node_count < self.projected_nodes {
            *self = DerivedCache::new(epoch);
        }
        for index in self.projected_nodes..node_count {
            if let Some(message) = project_node(index) {
                self.log.push(message);
            }
        }
        self.projected_nodes = node_count;
        DerivedMessages {
            len: self.log.len.load(Ordering::Acquire),
            log: self.log.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::MessageLog;

    #[test]
    fn locate_is_dense_and_monotone() {
        let mut previous = (0, 0);
        for index in 0..10_000 {
            let (segment, offset) = MessageLog::locate(index);
            assert!(offset < super::FIRST << segment);
            if index > 0 {
                assert!(
                    (segment == previous.0 && offset == previous.1 + 1)
                        || (segment == previous.0 + 1 && offset == 0),
                    "{index}: {previous:?} -> {:?}",
                    (segment, offset)
                );
            }
            previous = (segment, offset);
        }
    }
}
