//! The end of the trace, and GPU records as they come: what closes the trace (async ranges
//! still open, the GPU's notes, the last RSS sample, the run-end instant), the session's
//! stop, and the report `metadata.json` gets — whatever the size limit left out, every loss
//! counted.

use super::super::perfetto_session::PerfettoLoss;
use super::size_cap::set_cut_note;
use super::{PerfettoSink, METRON_SEQUENCE_ID, PROCESS_UUID, THREAD_SEQUENCE_BASE};
use crate::sink::{GpuRecord, RunInfo};
use serde_json::json;
use std::path::PathBuf;
use std::time::Instant;

impl PerfettoSink {
    /// Encodes GPU records now, each batch as it comes (nothing is kept for the end of the
    /// run). Under a size limit a batch goes in whole or, with everything after it, not at all.
    pub(super) fn write_gpu(&mut self, records: &[GpuRecord]) {
        if self.is_cut() {
            if let Some(cut) = self.cap.as_mut().and_then(|c| c.cut.as_mut()) {
                cut.gpu_records_left_out += records.len() as u64;
            }
            return;
        }
        let started = Instant::now();
        let first = records.iter().map(|r| r.start_ns).min().unwrap_or(0);
        self.ensure_sequence(first);
        let mark = self.mark();
        self.gpu
            .write(&mut self.enc, &mut self.counts, PROCESS_UUID, records);
        if !self.fits(self.cap.as_ref().map_or(0, |c| c.open)) {
            self.take_back(mark);
            self.cut(first);
            if let Some(cut) = self.cap.as_mut().and_then(|c| c.cut.as_mut()) {
                cut.gpu_records_left_out += records.len() as u64;
            }
        }
        self.counts.encode_ns += started.elapsed().as_nanos() as u64;
    }

    pub(super) fn finish_trace(&mut self, run: &RunInfo) -> std::io::Result<Vec<PathBuf>> {
        if !self.ensure_session(Some(&run.output_dir)) {
            let why = self.failed.clone().unwrap_or_default();
            self.report = Some(json!({ "file": null, "error": why }));
            return Err(std::io::Error::other(why));
        }
        self.write_out();
        // Async ranges still open and the GPU's work go in whole, or (under a size limit)
        // not at all; then what closes the trace, in the room kept for it.
        let mark = self.mark();
        let (enc, seq, counts) = (&mut self.enc, &mut self.seq, &mut self.counts);
        let (_, open_async) = self.async_slices.finish(run.end_ns, enc, seq, counts);
        if self.is_cut() || !self.fits(self.cap.as_ref().map_or(0, |c| c.open)) {
            self.take_back(mark);
            self.cut(run.end_ns);
            self.left_out(open_async);
        }
        // The GPU's notes are worked out at the end of the run (its records went in as they
        // came): in whole or not at all.
        let notes = self.gpu.context.take_notes();
        if !notes.is_empty() {
            let mark = self.mark();
            let n = notes.len() as u64;
            self.gpu
                .write_notes(&mut self.enc, &mut self.counts, PROCESS_UUID, notes);
            if self.is_cut() || !self.fits(self.cap.as_ref().map_or(0, |c| c.open)) {
                self.take_back(mark);
                self.cut(run.end_ns);
                if let Some(cut) = self.cap.as_mut().and_then(|c| c.cut.as_mut()) {
                    cut.gpu_records_left_out += n;
                }
            }
        }
        self.sample_process(true);
        self.run_end(run);
        self.write_out();
        self.join_session(true);
        let started = Instant::now();
        let session = self.session.as_mut().expect("started above");
        session.stop();
        self.counts.drains += 1;
        self.counts.drain_ns += started.elapsed().as_nanos() as u64;
        let path = session.path.clone();
        let out = session.output();
        let mut loss: PerfettoLoss = out.scan.loss.clone();
        // Counted, not read back: every packet and track event encoded was in a write that
        // reached the file (its bytes all written), and no service packet claims one of
        // Metron's sequences.
        let tally = self.tally;
        let lost_events =
            tally.track_events_lost + self.counts.track_events.saturating_sub(tally.track_events);
        let packets_lost = tally.packets_lost + self.enc.packets.saturating_sub(tally.packets);
        let bytes_unwritten = tally.bytes.saturating_sub(out.own_bytes);
        let bytes = out.bytes;
        let malformed =
            out.scan.malformed + u64::from(out.scan.leftover() > 0) + out.scan.own_sequence;
        let service_packets = out.scan.packets;
        let io_error = out.error.clone();
        let service_bytes_left_out = out.cut_bytes;
        drop(out);
        let cut = self.cap.as_ref().and_then(|c| c.cut.clone());
        set_cut_note(cut.as_ref().map(|c| {
            let gpu = if c.gpu_records_left_out > 0 {
                format!(", {} GPU records", c.gpu_records_left_out)
            } else {
                String::new()
            };
            format!(
                "trace cut at {} bytes ({} records left out{gpu}; METRON_TRACE_MAX_SIZE={})",
                c.at_bytes,
                c.records_left_out,
                self.config.max_file_bytes.unwrap_or(0)
            )
        }));
        if lost_events > 0 && !loss.any() {
            // Counted by us even where the service's counters missed it.
            loss.trace_writer_packet_loss = loss.trace_writer_packet_loss.max(1);
        }
        let regions = self.counts.slices_ended;
        let encode_s = self.counts.encode_ns as f64 / 1e9;
        let total_s = (self.counts.encode_ns + self.counts.drain_ns) as f64 / 1e9;
        self.report = Some(json!({
            "file": path.file_name().map(|n| n.to_string_lossy().into_owned()),
            "bytes": bytes,
            "bytes_per_region": if regions > 0 { bytes as f64 / regions as f64 } else { 0.0 },
            "regions_per_second": if total_s > 0.0 { regions as f64 / total_s } else { 0.0 },
            "encode_regions_per_second": if encode_s > 0.0 { regions as f64 / encode_s } else { 0.0 },
            "counts": self.counts,
            "gpu": {
                "records_written": self.gpu.written,
                "tracks": self.gpu.track_count(),
                "out_of_order": self.gpu.out_of_order,
            },
            "samples": self.samples.counts,
            "track_events_written": self.counts.track_events - lost_events,
            "track_events_lost": lost_events,
            "packets_written": self.enc.packets - packets_lost,
            "packets_lost": packets_lost,
            "bytes_encoded": tally.bytes,
            "bytes_not_written": bytes_unwritten,
            "service_packets": service_packets,
            "sequence_id": METRON_SEQUENCE_ID,
            "thread_sequence_ids_from": THREAD_SEQUENCE_BASE,
            "perfetto_loss": loss,
            "malformed_framing": malformed,
            "perfetto_errors_logged": super::super::perfetto_session::PERFETTO_ERRORS
                .load(std::sync::atomic::Ordering::Relaxed),
            "session_buffer_bytes": self.buffer_bytes(),
            "session_started_ahead": self.started_ahead,
            "session": self.session_report(),
            "fill_policy": self.config.fill_policy,
            "categories": self.config.categories,
            "category_error": self.category_error,
            "max_file_bytes": self.config.max_file_bytes,
            "cut_at_max_size": cut,
            "service_bytes_left_out_at_max_size": service_bytes_left_out,
            "complete": cut.is_none()
                && service_bytes_left_out == 0
                && lost_events == 0
                && packets_lost == 0
                && bytes_unwritten == 0
                && !loss.any()
                && malformed == 0
                && io_error.is_none(),
        }));
        if lost_events > 0 || loss.any() {
            eprintln!(
                "metron: the Perfetto trace lost data: {lost_events} of {} track events missing \
                 (chunks overwritten {}, discarded {}, writer packet loss {}); raise \
                 METRON_TRACE_BUFFER_SIZE (now {} bytes)",
                self.counts.track_events,
                loss.chunks_overwritten,
                loss.chunks_discarded + loss.service_chunks_discarded,
                loss.trace_writer_packet_loss,
                self.buffer_bytes()
            );
        }
        if malformed > 0 {
            eprintln!("metron: the Perfetto trace data did not parse back ({malformed} pieces)");
        }
        if let Some(e) = io_error {
            return Err(std::io::Error::other(format!(
                "cannot write {}: {e}",
                path.display()
            )));
        }
        Ok(vec![path])
    }
}
