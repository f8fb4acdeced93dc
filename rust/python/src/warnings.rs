//! Warnings of the core (the `log` facade) handed to Python's `logging`, as logger `deltalog`.
//!
//! The core logs from Tokio worker threads while the calling thread has released the GIL, so
//! records are queued here and emitted by the calling thread once it holds the GIL again
//! ([`emit_pending`]): no worker ever waits for the GIL.

use std::collections::VecDeque;
use std::sync::Mutex;

use pyo3::prelude::*;

/// At most this many records wait; older ones are dropped first.
const CAPACITY: usize = 1024;

static PENDING: Mutex<VecDeque<(log::Level, String)>> = Mutex::new(VecDeque::new());

struct Queue;

impl log::Log for Queue {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::Level::Warn && metadata.target().starts_with("deltalog")
    }

    fn log(&self, record: &log::Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        if let Ok(mut queue) = PENDING.lock() {
            if queue.len() >= CAPACITY {
                queue.pop_front();
            }
            queue.push_back((record.level(), record.args().to_string()));
        }
    }

    fn flush(&self) {}
}

static QUEUE: Queue = Queue;

/// Installs the queue as the `log` logger (once per process; a logger some other extension
/// installed first is left alone).
pub fn install() {
    if log::set_logger(&QUEUE).is_ok() {
        log::set_max_level(log::LevelFilter::Warn);
    }
}

/// Emits the queued records through `logging.getLogger("deltalog")`. A failure to log is not
/// the caller's failure: it is ignored.
pub fn emit_pending(py: Python<'_>) {
    let records: Vec<_> = match PENDING.lock() {
        Ok(mut queue) if !queue.is_empty() => queue.drain(..).collect(),
        _ => return,
    };
    let Ok(logger) = py
        .import("logging")
        .and_then(|logging| logging.call_method1("getLogger", ("deltalog",)))
    else {
        return;
    };
    for (level, message) in records {
        let method = if level == log::Level::Error {
            "error"
        } else {
            "warning"
        };
        let _ = logger.call_method1(method, (message,));
    }
}
