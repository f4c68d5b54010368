//! The spans of messages (offers, jobs, settlements) and, with the `otel` feature, the
//! OpenTelemetry messaging semantic-convention fields on them: the one home of those names.
//!
//! A `tracing-opentelemetry` layer turns the fields into span attributes, `otel.kind` into the
//! span kind and `otel.name` into the span name (`{operation} {queue}`, as the conventions
//! name messaging spans). Without the feature the spans carry the `queue` field alone, so log
//! lines stay short.
//!
//! No trace context travels with a value: Redisson's byte format has no room for headers, so a
//! job's span starts a trace of its own rather than continuing its offer's.

// Without the feature the spans use none of the conventions' names and values.
#![cfg_attr(not(feature = "otel"), allow(dead_code))]

/// `messaging.system`: the conventions list no value for Redis lists, and allow one of the
/// system's own.
pub(crate) const SYSTEM: &str = "redis";

/// A messaging operation: its `messaging.operation.type` and the span kind the conventions
/// give it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Operation {
    /// Values handed to Redis (an offer): a PRODUCER span.
    Send,
    /// A value's handler run by a worker: a CONSUMER span.
    Process,
    /// A value's outcome handed to Redis (ack, retry, dead letter, give back): a CLIENT span.
    Settle,
}

impl Operation {
    /// The `messaging.operation.type` value.
    pub(crate) fn kind_of_operation(self) -> &'static str {
        match self {
            Operation::Send => "send",
            Operation::Process => "process",
            Operation::Settle => "settle",
        }
    }

    /// The `otel.kind` value `tracing-opentelemetry` reads.
    pub(crate) fn span_kind(self) -> &'static str {
        match self {
            Operation::Send => "producer",
            Operation::Process => "consumer",
            Operation::Settle => "client",
        }
    }
}

/// A span about messages of one queue: `messaging_span!(LEVEL, "name", Operation, "operation
/// name", queue, other fields…)`. `messaging.message.id` (an offer's handle) and
/// `messaging.batch.message_count` are declared empty, to be recorded once known.
#[cfg(feature = "otel")]
macro_rules! messaging_span {
    ($level:expr, $name:literal, $op:expr, $op_name:expr, $queue:expr $(, $($fields:tt)*)?) => {
        tracing::span!(
            $level,
            $name,
            queue = %$queue,
            otel.name = %$crate::telemetry::SpanName($op_name, &$queue),
            otel.kind = $op.span_kind(),
            messaging.system = $crate::telemetry::SYSTEM,
            messaging.destination.name = %$queue,
            messaging.operation.type = $op.kind_of_operation(),
            messaging.operation.name = $op_name,
            messaging.message.id = tracing::field::Empty,
            messaging.batch.message_count = tracing::field::Empty,
            $($($fields)*)?
        )
    };
}

#[cfg(not(feature = "otel"))]
macro_rules! messaging_span {
    ($level:expr, $name:literal, $op:expr, $op_name:expr, $queue:expr $(, $($fields:tt)*)?) => {{
        let _: ($crate::telemetry::Operation, &'static str) = ($op, $op_name);
        tracing::span!($level, $name, queue = %$queue, $($($fields)*)?)
    }};
}

pub(crate) use messaging_span;

/// A messaging span's name: `{operation name} {queue}`.
pub(crate) struct SpanName<'a, Q>(pub(crate) &'static str, pub(crate) &'a Q);

impl<Q: std::fmt::Display> std::fmt::Display for SpanName<'_, Q> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.0, self.1)
    }
}

/// Records an offer's handle as `messaging.message.id` (18 hex digits: the entry's id with its
/// length byte); a span without the field ignores it.
pub(crate) fn record_message_id(span: &tracing::Span, id: impl std::fmt::Display) {
    if cfg!(feature = "otel") {
        span.record("messaging.message.id", tracing::field::display(id));
    }
}

/// Records how many values one span's batch holds, when it holds more than one (the
/// conventions leave `messaging.batch.message_count` off single messages).
pub(crate) fn record_batch(span: &tracing::Span, count: usize) {
    if cfg!(feature = "otel") && count > 1 {
        span.record("messaging.batch.message_count", count);
    }
}
