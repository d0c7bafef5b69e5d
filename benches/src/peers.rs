//! The peers, each set up the way its documentation sets it up for recording, with nothing
//! connected that would slow it down beyond its own hot path.

/// `tracing` 0.1 under a minimal custom subscriber.
///
/// The subscriber does the least a recording subscriber can: `new_span` returns a constant id,
/// and `enter` / `exit` store an `rdtsc` timestamp and the id into a preallocated thread-local
/// ring (the same 16-byte record Metron writes). `try_close` keeps tracing's default (no-op).
/// The pair is `tracing::info_span!("pair").entered()` dropped: `new_span`, `enter`, `exit`,
/// `try_close` through the global dispatcher.
pub mod tracing_impl {
    use crate::{rdtsc, Ring};
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Metadata, Subscriber};

    thread_local! {
        static RING: Ring = const { Ring::new() };
    }

    /// The minimal recording subscriber.
    pub struct MinimalSubscriber;

    impl Subscriber for MinimalSubscriber {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, _: &Event<'_>) {}
        fn enter(&self, id: &Id) {
            RING.with(|r| r.push(rdtsc(), id.into_u64()));
        }
        fn exit(&self, id: &Id) {
            RING.with(|r| r.push(rdtsc(), id.into_u64() | 1 << 63));
        }
    }

    /// Installs [`MinimalSubscriber`] as the global default.
    pub fn setup() {
        let _ = tracing::subscriber::set_global_default(MinimalSubscriber);
    }

    /// One span entered around `f`.
    #[inline(always)]
    pub fn around<R>(f: impl FnOnce() -> R) -> R {
        let _g = tracing::info_span!("pair").entered();
        f()
    }
}

/// `tracy-client` 0.19: a started client, no profiler connected (Tracy then keeps the events
/// in memory; the benches keep runs short). Built without broadcast, listening on localhost
/// only.
pub mod tracy_impl {
    /// Starts the client (it runs until the process exits: with `manual-lifetime` the handle
    /// does not stop it when dropped).
    pub fn setup() {
        let _client = tracy_client::Client::start();
    }

    /// One zone around `f`.
    #[inline(always)]
    pub fn around<R>(f: impl FnOnce() -> R) -> R {
        let _s = tracy_client::span!("pair");
        f()
    }
}

/// `fastrace` 0.7: a no-op reporter, a root span set as the thread's local parent, and
/// `LocalSpan::enter_with_local_parent` per pair. The root is replaced between chunks (a root
/// keeps at most 10,240 local spans; its drop hands them to the collector thread).
pub mod fastrace_impl {
    use fastrace::collector::{Config, Reporter, SpanContext};
    use fastrace::local::LocalParentGuard;
    use fastrace::prelude::{LocalSpan, Span, SpanRecord};
    use std::cell::RefCell;

    /// Drops every batch.
    pub struct NoopReporter;

    impl Reporter for NoopReporter {
        fn report(&mut self, spans: Vec<SpanRecord>) {
            std::hint::black_box(spans);
        }
    }

    thread_local! {
        static ROOT: RefCell<Option<(LocalParentGuard, Span)>> = const { RefCell::new(None) };
    }

    /// Sets the reporter and the first root.
    pub fn setup() {
        fastrace::set_reporter(NoopReporter, Config::default());
        new_root();
    }

    /// Ends the current root (its spans go to the collector) and starts a new one.
    pub fn new_root() {
        end_root();
        let root = Span::root("root", SpanContext::random());
        let guard = root.set_local_parent();
        ROOT.with(|r| *r.borrow_mut() = Some((guard, root)));
    }

    /// Ends the current root and flushes the collector.
    pub fn end_root() {
        if let Some((guard, root)) = ROOT.with(|r| r.borrow_mut().take()) {
            drop(guard);
            drop(root);
        }
        fastrace::flush();
    }

    /// One local span around `f`.
    #[inline(always)]
    pub fn around<R>(f: impl FnOnce() -> R) -> R {
        let _s = LocalSpan::enter_with_local_parent("pair");
        f()
    }
}

/// `puffin` 0.20: scopes on, `profile_scope!` per pair, a new frame between chunks.
pub mod puffin_impl {
    /// Turns the scopes on.
    pub fn setup() {
        puffin::set_scopes_on(true);
    }

    /// Ends the frame (puffin's per-frame housekeeping).
    pub fn new_frame() {
        puffin::GlobalProfiler::lock().new_frame();
    }

    /// One scope around `f`.
    #[inline(always)]
    pub fn around<R>(f: impl FnOnce() -> R) -> R {
        puffin::profile_scope!("pair");
        f()
    }
}

/// `perfetto-sdk` 1.x track events: the in-process backend, one registered category, an
/// in-process tracing session (1 MiB ring buffer) that enables it, and
/// `track_event_begin!` / `track_event_end!` per pair.
pub mod perfetto_impl {
    use perfetto_sdk::heap_buffer::HeapBuffer;
    use perfetto_sdk::pb_msg::{PbMsg, PbMsgWriter};
    use perfetto_sdk::producer::{Backends, Producer, ProducerInitArgsBuilder};
    use perfetto_sdk::protos::config::{
        data_source_config::DataSourceConfig,
        trace_config::{TraceConfig, TraceConfigBufferConfig, TraceConfigDataSource},
        track_event::track_event_config::TrackEventConfig,
    };
    use perfetto_sdk::tracing_session::TracingSession;
    use perfetto_sdk::track_event::TrackEvent;

    /// The category the slices go to (the macro's items carry no docs).
    #[allow(missing_docs)]
    mod categories {
        perfetto_sdk::track_event_categories! {
            pub mod bench_te_ns {
                ("bench", "Benchmark events", []),
            }
        }
    }
    use categories::bench_te_ns as perfetto_te_ns;

    fn session_config() -> Vec<u8> {
        let writer = PbMsgWriter::new();
        let hb = HeapBuffer::new(writer.stream_writer());
        let mut msg = PbMsg::new(&writer).expect("perfetto message");
        {
            let mut cfg = TraceConfig { msg: &mut msg };
            cfg.set_buffers(|buf: &mut TraceConfigBufferConfig| {
                buf.set_size_kb(1024);
            });
            cfg.set_data_sources(|ds: &mut TraceConfigDataSource| {
                ds.set_config(|c: &mut DataSourceConfig| {
                    c.set_name("track_event");
                    c.set_track_event_config(|te: &mut TrackEventConfig| {
                        te.set_enabled_categories("bench");
                    });
                });
            });
        }
        msg.finalize();
        let mut out = vec![0u8; writer.stream_writer().get_written_size()];
        hb.copy_into(&mut out);
        out
    }

    /// Initialises the backend, registers the category and starts a session (kept for the life
    /// of the process).
    pub fn setup() {
        Producer::init(
            ProducerInitArgsBuilder::new()
                .backends(Backends::IN_PROCESS)
                .build(),
        );
        TrackEvent::init();
        perfetto_te_ns::register().expect("register the perfetto category");
        let mut session = TracingSession::in_process().expect("perfetto in-process session");
        session.setup(&session_config());
        session.start_blocking();
        assert!(
            perfetto_te_ns::is_category_enabled(perfetto_te_ns::category_index("bench")),
            "the perfetto session did not enable the category"
        );
        std::mem::forget(session);
    }

    /// One slice around `f`.
    #[inline(always)]
    pub fn around<R>(f: impl FnOnce() -> R) -> R {
        perfetto_sdk::track_event_begin!("bench", "pair");
        let r = f();
        perfetto_sdk::track_event_end!("bench");
        r
    }
}
