//! The segments a producer finished and the reader has not yet taken, oldest first: a queue
//! linked through the segments themselves ([`Segment::next_sealed`]), so that handing a segment
//! over never allocates (a growable queue reallocated on the recording thread whenever the
//! reader fell behind). It is used under its producer's lock.

use super::segment::Segment;
use std::ptr;
use std::sync::atomic::Ordering;

/// Sealed segments, linked oldest to newest.
pub(crate) struct SealedQueue<R> {
    head: *mut Segment<R>,
    tail: *mut Segment<R>,
}

// SAFETY: the queue owns the segments linked in it (each is in exactly one place at a time:
// a producer's current, this queue, a spare slot or the free pool), and it is only reached
// under its producer's mutex, so moving it to the reader's thread moves that ownership.
unsafe impl<R: Send> Send for SealedQueue<R> {}

impl<R> SealedQueue<R> {
    /// An empty queue.
    pub(crate) const fn new() -> SealedQueue<R> {
        SealedQueue {
            head: ptr::null_mut(),
            tail: ptr::null_mut(),
        }
    }

    /// Appends `segment`, which the caller owns and hands over (from `Box::into_raw`).
    pub(crate) fn push_back(&mut self, segment: *mut Segment<R>) {
        // SAFETY: the caller owns `segment` (a live boxed segment) and gives it to the queue;
        // the tail, when there is one, is a segment the queue owns.
        unsafe {
            (*segment)
                .next_sealed
                .store(ptr::null_mut(), Ordering::Relaxed);
            if self.tail.is_null() {
                self.head = segment;
            } else {
                (*self.tail).next_sealed.store(segment, Ordering::Relaxed);
            }
        }
        self.tail = segment;
    }

    /// Takes every segment out, oldest first; the queue is empty after.
    pub(crate) fn take_all(&mut self) -> Taken<R> {
        let head = std::mem::replace(&mut self.head, ptr::null_mut());
        self.tail = ptr::null_mut();
        Taken { next: head }
    }
}

/// The segments taken out of a [`SealedQueue`], oldest first; each is the caller's.
pub(crate) struct Taken<R> {
    next: *mut Segment<R>,
}

impl<R> Iterator for Taken<R> {
    type Item = *mut Segment<R>;

    fn next(&mut self) -> Option<*mut Segment<R>> {
        if self.next.is_null() {
            return None;
        }
        let segment = self.next;
        // SAFETY: the segments of the list stay alive until the caller frees or recycles them,
        // which it does only after this step read the link (the link is read before the
        // segment is yielded).
        self.next = unsafe { (*segment).next_sealed.load(Ordering::Relaxed) };
        Some(segment)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_come_out_in_the_order_they_went_in_and_the_queue_is_empty_after() {
        let mut queue = SealedQueue::<u64>::new();
        let segments: Vec<*mut Segment<u64>> = (0..5)
            .map(|_| Box::into_raw(Segment::new(16).unwrap()))
            .collect();
        for &s in &segments[..3] {
            queue.push_back(s);
        }
        let first: Vec<_> = queue.take_all().collect();
        assert_eq!(first, segments[..3]);
        assert_eq!(queue.take_all().count(), 0);
        for &s in &segments[3..] {
            queue.push_back(s);
        }
        let second: Vec<_> = queue.take_all().collect();
        assert_eq!(second, segments[3..]);
        for s in segments {
            // SAFETY: each came from Box::into_raw above and was taken out of the queue.
            drop(unsafe { Box::from_raw(s) });
        }
    }
}
